"""Tensor-pair work on a Dask cluster (`compare --dask`): a `distributed.LocalCluster` of 2 worker processes
gives the same records as the local compare, on the shared fixtures and on a generated 4-rank pair, and a
worker killed in the middle of a compare costs nothing but time."""

from __future__ import annotations

import os
import signal

import pytest
from helpers.common import MS_DUMPS, run_cli

distributed = pytest.importorskip(
    "distributed", reason="Dask distributed not installed (pip install 'dumptui[dask]'): cluster tests skipped"
)

from dumptui.core.compare import daskexec  # noqa: E402
from dumptui.core.compare.batch import evaluate_all  # noqa: E402
from dumptui.core.compare.daskexec import DaskCluster, parse_path_map  # noqa: E402
from dumptui.core.demo.ranks import write_ranks_demo  # noqa: E402
from dumptui.core.io import executor as executors  # noqa: E402
from dumptui.core.io.errors import UsageError  # noqa: E402
from dumptui.core.search.compare_all import compare_pair  # noqa: E402
from dumptui.options.pair import PairOptions, make_session, open_pair  # noqa: E402


@pytest.fixture(scope="module")
def cluster():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as c:
        yield c


@pytest.fixture(scope="module")
def ranks_pair(tmp_path_factory):
    return write_ranks_demo(str(tmp_path_factory.mktemp("ranks4")), ranks=4, steps=1, bug_step=0, rows=64)


def records(comparison) -> list:
    """Everything a compare reports per tensor pair (repr: NaN statistics compare equal as text)."""
    out = []
    for r in comparison.results:
        for t in r.inputs + r.outputs:
            stats = t.stats.to_dict() if t.stats is not None else None
            out.append((r.pair.key, t.io, t.slot, t.verdict, t.reason, repr(stats), t.notes, t.statistics_only))
    return out + [("root", root.pair.key, root.why) for root in comparison.roots]


def compare(ref: str, target: str, executor=None, **selection) -> list:
    options = PairOptions(ref, target, **selection)
    session = make_session(options, *open_pair(options), kl=True)
    if executor is not None:
        session.executor = executor
    return records(compare_pair(session))


def test_same_records_as_the_local_compare_on_a_generated_4_rank_pair(cluster, ranks_pair):
    with DaskCluster(cluster.scheduler_address) as executor:
        assert executor.workers == 2
        for rank in range(4):
            local = compare(ranks_pair.ref, ranks_pair.target, rank=str(rank))
            assert compare(ranks_pair.ref, ranks_pair.target, executor, rank=str(rank)) == local
            assert any(rec[3] == "diverged" for rec in local)


def test_same_records_as_the_local_compare_on_the_shared_fixtures(cluster):
    if not MS_DUMPS.is_dir():
        pytest.skip(f"shared fixtures absent ({MS_DUMPS} not found): real-dump Dask compare skipped")
    with DaskCluster(cluster.scheduler_address) as executor:
        for other in ("B_pad", "C_fp16", "A_rerun"):
            ref, target = str(MS_DUMPS / "A"), str(MS_DUMPS / other)
            assert compare(ref, target, executor) == compare(ref, target), other


def test_a_worker_killed_mid_compare_is_replaced_and_the_result_complete(cluster, ranks_pair, monkeypatch):
    # one pair per task: many tasks in flight
    monkeypatch.setattr(executors, "BATCH", executors.BatchPolicy(items=1, most_items=1))
    options = PairOptions(ranks_pair.ref, ranks_pair.target, rank="1")
    local = make_session(options, *open_pair(options), kl=True)
    evaluate_all(local)
    session = make_session(options, *open_pair(options), kl=True)
    with DaskCluster(cluster.scheduler_address) as executor:
        session.executor = executor
        pids = executor.client.run(os.getpid)
        victim, pid = sorted(pids.items())[0]
        killed = []

        def kill_once(done: int, total: int) -> None:
            if not killed and done >= 1 and done < total - 2:
                os.kill(pid, signal.SIGKILL)
                killed.append(done)

        results = evaluate_all(session, progress=kill_once)
        assert killed, "the compare finished before a worker could be killed"
        executor.client.wait_for_workers(2, timeout=60)  # the nanny restarted it
        assert victim not in executor.client.scheduler_info()["workers"]
    got = [(r.pair.key, [(t.io, t.slot, t.verdict, repr(t.stats)) for t in r.inputs + r.outputs]) for r in results]
    want = [
        (r.pair.key, [(t.io, t.slot, t.verdict, repr(t.stats)) for t in r.inputs + r.outputs])
        for r in evaluate_all(local)
    ]
    assert got == want and all(t[2] != "unreadable" for _k, ts in got for t in ts)


def test_cli_compare_with_a_local_cluster_prints_what_the_local_run_prints(ranks_pair):
    args = ("compare", ranks_pair.ref, ranks_pair.target, "--rank", "3", "--json")
    local = run_cli(*args)
    on_dask = run_cli(*args, "--dask", "local:2")
    assert on_dask[:2] == local[:2] and local[0] == 1  # exit code and output (stderr: the cluster's log)


def test_path_map(tmp_path):
    assert parse_path_map([f"{tmp_path}=/mnt/dumps"]) == [(str(tmp_path), "/mnt/dumps")]
    where = parse_path_map([f"{tmp_path}=/mnt/dumps"])
    assert daskexec._mapped(str(tmp_path / "t0.npy"), where) == "/mnt/dumps/t0.npy"
    assert daskexec._mapped("/elsewhere/t0.npy", where) == "/elsewhere/t0.npy"
    with pytest.raises(UsageError, match="LOCAL=REMOTE"):
        parse_path_map(["nothing"])


def test_relative_paths_with_a_scheduler_and_workers_started_elsewhere(ranks_pair, tmp_path):
    """`dask scheduler` and `dask worker` started on their own, the worker in another folder (as on another
    host): dumps given as paths relative to where dumptui runs give the same answer, byte for byte, as the
    local run (each tensor is sent to the worker by its absolute path)."""
    import shutil
    import subprocess
    import sys

    dask = shutil.which("dask", path=os.path.dirname(sys.executable))
    if dask is None:
        pytest.skip("the `dask` command is not installed beside this Python")
    scheduler_file = tmp_path / "scheduler.json"
    elsewhere = tmp_path / "worker-home"
    elsewhere.mkdir()
    procs = [
        subprocess.Popen(
            [dask, "scheduler", "--scheduler-file", str(scheduler_file), "--port", "0", "--dashboard-address", ":0"],
            cwd=elsewhere,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    ]
    try:
        procs.append(
            subprocess.Popen(
                [dask, "worker", "--scheduler-file", str(scheduler_file), "--nthreads", "1", "--no-dashboard"],
                cwd=elsewhere,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        )
        # wait on the scheduler's own event: a client connects once the file exists, then waits for the worker
        with distributed.Client(scheduler_file=str(scheduler_file), timeout="120s") as client:
            client.wait_for_workers(1, timeout=120)
            address = client.scheduler.address
        base = os.path.dirname(ranks_pair.ref)
        ref, target = os.path.relpath(ranks_pair.ref, base), os.path.relpath(ranks_pair.target, base)
        args = ("compare", ref, target, "--rank", "2", "--json")
        local = run_cli(*args, cwd=base)
        on_dask = run_cli(*args, "--dask", address, cwd=base)
        assert local[0] == 1 and on_dask[:2] == local[:2], on_dask[2][-2000:]
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in procs:
            p.wait(timeout=60)
