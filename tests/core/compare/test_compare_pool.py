"""The app's statistics run in long-lived worker processes (core/io/executor.py `LocalProcesses` with
`offload`): the headers and the payloads are read there, the UI process only judges. Same numbers as a compare in one process, checked
against numpy; layouts resolved there equal the ones read here, problems included; and the workers never
outlive their parent, whether it closes the pool or ends without a word."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from helpers.common import REPO as REPO_PATH
from helpers.procs import alive, wait_gone

from dumptui.core.compare.batch import evaluate_all, resolve_layouts
from dumptui.core.io.executor import InProcess, LocalProcesses
from dumptui.core.model.dump import TensorRef
from dumptui.options.pair import PairOptions, make_session, open_pair
from dumptui.report.reasons import say

REPO = str(REPO_PATH)


def session_of(pair, executor=None):
    options = PairOptions(pair.ref, pair.target)
    ref, target = open_pair(options)
    session = make_session(options, ref, target)
    if executor is not None:
        session.executor = executor
    return session


@pytest.fixture
def pool():
    p = LocalProcesses(2, nice=5, offload=True)
    yield p
    p.close(kill=True)


def test_pool_gives_the_numbers_of_one_process_and_of_numpy(demo_pair, pool):
    in_pool, alone = session_of(demo_pair, pool), session_of(demo_pair)
    pooled = {r.pair.index: r for r in evaluate_all(in_pool, purpose="stats")}
    single = {r.pair.index: r for r in evaluate_all(alone)}
    assert pooled.keys() == single.keys() and len(pooled) > 50
    checked = 0
    for index, res in pooled.items():
        assert res.verdict == single[index].verdict, res.pair.name
        for t, u in zip(res.inputs + res.outputs, single[index].inputs + single[index].outputs):
            assert (t.verdict, t.label) == (u.verdict, u.label)
            if t.stats is None:
                continue
            x = np.load(t.ref.path).astype(np.float64).ravel()
            y = np.load(t.target.path).astype(np.float64).ravel()
            assert t.stats.max_abs == pytest.approx(float(np.max(np.abs(x - y))), rel=1e-12, abs=1e-300)
            cos = float(x @ y / (np.linalg.norm(x) * np.linalg.norm(y))) if x.any() and y.any() else None
            if cos is not None and t.stats.cos is not None:
                assert t.stats.cos == pytest.approx(cos, rel=1e-9)
            checked += 1
    assert checked > 100
    assert in_pool.ledger.count == alone.ledger.count  # every read booked in the parent, once


def test_layouts_resolved_in_the_workers_equal_the_ones_read_here(tmp_path, pool):
    good = tmp_path / "good.npy"
    np.save(good, np.arange(24, dtype=np.float16).reshape(2, 3, 4))
    cut = tmp_path / "cut.npy"
    np.save(cut, np.arange(100, dtype=np.float32))
    with open(cut, "r+b") as fh:
        fh.truncate(os.path.getsize(cut) - 7)
    for path in (good, cut):
        remote, local = TensorRef(str(path), "output", 0), TensorRef(str(path), "output", 0)
        assert remote.deferred_layout() is not None
        resolve_layouts(pool, [remote])
        assert remote.deferred_layout() is None  # kept: no second read
        assert remote.layout() == local.layout()
        assert (remote.dtype, remote.shape, remote.problem) == (local.dtype, local.shape, local.problem)
    assert TensorRef(str(good), "output", 0).layout().problem is None
    assert "payload" in say(TensorRef(str(cut), "output", 0).problem)


def test_layouts_from_the_workers_are_the_shared_instances(tmp_path, pool):
    """Tensors with the same header share one Layout (npy.py): copies sent back by a worker too."""
    paths = []
    for name in ("a", "b"):
        paths.append(tmp_path / f"{name}.npy")
        np.save(paths[-1], np.zeros((3, 5), dtype=np.float32))
    refs = [TensorRef(str(p), "output", 0) for p in paths]
    resolve_layouts(pool, refs)
    local = TensorRef(str(paths[0]), "output", 0).layout()
    assert refs[0].layout() is refs[1].layout() is local


def test_a_reader_s_own_layout_function_stays_in_this_process(tmp_path):
    ref = TensorRef(str(tmp_path / "x.bin"), "output", 0, layout_fn=lambda: None)  # type: ignore[arg-type]
    assert ref.deferred_layout() is None


def test_close_kill_ends_the_workers(demo_pair):
    pool = LocalProcesses(2, offload=True)
    evaluate_all(session_of(demo_pair, pool))
    assert pool._ex is not None
    pids = list(pool._ex._processes)
    assert pids and all(alive(pid) for pid in pids)
    pool.close(kill=True)
    assert not wait_gone(pids, 20)
    with pytest.raises(RuntimeError, match="closed"):
        evaluate_all(session_of(demo_pair, pool))


def test_a_run_in_progress_ends_when_the_pool_is_closed(tmp_path):
    """`q` closes the pool (killing its workers) while the statistics thread waits for results: that wait
    ends, with RuntimeError, instead of waiting for good on futures whose workers are gone (the thread was
    then joined at the interpreter's exit and the process never ended)."""
    import threading

    from dumptui.core.compare.metrics import ElementTolerance
    from dumptui.core.compare.processes import computed_on

    a = np.arange(4 << 20, dtype=np.float32)  # 16 MB a side: each job a chunk of its own, a good fraction of a second
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", a + 1)
    ref, target = TensorRef(str(tmp_path / "a.npy"), "output", 0), TensorRef(str(tmp_path / "b.npy"), "output", 0)
    jobs = [(ref, target, ElementTolerance(1e-5, 1e-5, 1e-5)) for i in range(200)]
    pool = LocalProcesses(2, offload=True)
    got: list = []
    ended: list = []
    first = threading.Event()

    def consume():
        try:
            for outcome in computed_on(pool, jobs, kl=False):
                got.append(outcome)
                first.set()
        except RuntimeError as e:
            ended.append(str(e))

    t = threading.Thread(target=consume, daemon=True)
    t.start()
    assert first.wait(60), "no result came back"
    pool.close(kill=True)
    t.join(10)
    assert not t.is_alive(), "the run still waits for the killed workers' results"
    assert ended and len(got) < len(jobs)  # "closed", or the executor's own "terminated abruptly"


def test_workers_end_with_a_parent_that_ends_without_closing_the_pool(demo_pair):
    """`q` ends the app with os._exit (tui/app.py `end_process`); a crash does not close the pool either."""
    script = textwrap.dedent(
        f"""
        import os, sys
        sys.path.insert(0, {REPO!r})
        from dumptui.core.compare.batch import evaluate_all
        from dumptui.core.io.executor import LocalProcesses
        from dumptui.options.pair import PairOptions, make_session, open_pair
        if __name__ == "__main__":
            options = PairOptions({demo_pair.ref!r}, {demo_pair.target!r})
            pool = LocalProcesses(2, offload=True)
            session = make_session(options, *open_pair(options))
            session.executor = pool
            evaluate_all(session)
            print(" ".join(str(pid) for pid in pool._ex._processes), flush=True)
            os._exit(0)
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    pids = [int(p) for p in done.stdout.split()]
    assert len(pids) == 2
    assert not wait_gone(pids, 30), "worker processes outlived their parent"


def test_a_pool_gets_the_pairs_slice_by_slice_with_the_same_results(demo_pair, pool, monkeypatch):
    """evaluate_all hands an offloading executor OFFLOAD_SLICE_JOBS tensor pairs at a time (their specs stay small):
    with slices of 7, every pair is still computed once, progress reaches the total, and the verdicts and
    numbers are those of one process."""
    from dumptui.core.compare import batch

    monkeypatch.setattr(batch, "OFFLOAD_SLICE_JOBS", 7)
    sliced, alone = session_of(demo_pair, pool), session_of(demo_pair)
    seen = []
    got = evaluate_all(sliced, progress=lambda done, total: seen.append((done, total)))
    want = evaluate_all(alone)
    total = seen[-1][1]
    assert total > 7 * 10 and seen[-1][0] == total and [d for d, _t in seen] == list(range(1, total + 1))
    assert [r.verdict for r in got] == [r.verdict for r in want]
    for r, s in zip(got, want):
        for t, u in zip(r.inputs + r.outputs, s.inputs + s.outputs):
            assert (t.stats is None) == (u.stats is None)
            if t.stats is not None:
                assert (t.stats.max_abs, t.stats.cos, t.stats.n_diff) == (u.stats.max_abs, u.stats.cos, u.stats.n_diff)
    assert sliced.ledger.count == alone.ledger.count


def _sigint_handler() -> str:
    import signal

    return "ignored" if signal.getsignal(signal.SIGINT) == signal.SIG_IGN else "default"


@pytest.mark.parametrize("offload", [True, False])
def test_workers_leave_ctrl_c_to_their_parent(offload):
    """Ctrl+C reaches the whole process group: a worker printed a KeyboardInterrupt traceback of its own
    (dumptui serve, issue 23.8); the workers ignore it, the parent ends them."""
    with LocalProcesses(1, offload=offload) as pool:
        assert [r for _i, r in pool.map(_sigint_handler_item, [0])] == ["ignored"]


def _sigint_handler_item(_item: object) -> str:
    return _sigint_handler()


def _pid(_item: object) -> int:
    return os.getpid()


def test_a_commands_runs_share_its_workers_which_end_with_it():
    with LocalProcesses(2) as ex:
        first = {pid for _i, pid in ex.map(_pid, list(range(8)))}
        second = {pid for _i, pid in ex.map(_pid, list(range(8)))}
        # the same processes, not new ones (one of them may have taken every item of a batch)
        assert first and len(first | second) <= 2 and os.getpid() not in first
    assert wait_gone(sorted(first), 30) == []  # ended with the `with`
    with LocalProcesses(2) as ex:
        alone = {pid for _i, pid in ex.map(_pid, list(range(4)))}
    assert alone.isdisjoint(first)  # another executor starts processes of its own


def test_compare_on_shared_processes_gives_the_answer_of_one_process(demo_pair, monkeypatch):
    # the demo pair is small: the byte thresholds are lowered so that the tensor pairs and the replays go to
    # worker processes (shared by compare_pair), and the answer is compared with a run in this process
    from dumptui.core.compare import batch
    from dumptui.core.search import compare_all
    from dumptui.core.search import replays as runner

    alone = compare_all.compare_pair(session_of(demo_pair, InProcess()))
    monkeypatch.setattr(batch, "MIN_BYTES_FOR_PROCESSES", 0)
    monkeypatch.setattr(runner, "MIN_BYTES_FOR_PROCESSES", 0)
    with LocalProcesses(2) as ex:
        shared = compare_all.compare_pair(session_of(demo_pair, ex))
    assert [r.pair.name for r in shared.roots] == [r.pair.name for r in alone.roots] != []
    assert [(r.pair.index, r.verdict) for r in shared.results] == [(r.pair.index, r.verdict) for r in alone.results]
    replayed = [i for i, le in alone.locals.items() if le.replay is not None]
    assert replayed and all(shared.locals[i].replay == alone.locals[i].replay for i in replayed)


def test_a_scan_in_the_pool_ends_when_the_pool_is_killed_meanwhile(demo_pair, monkeypatch):
    """The app's scan reads through spread.py on the pool's processes, waiting on each chunk's future: killed
    while it runs (`q`), the wait ends with an error, never for good (the app's thread would keep it alive)."""
    import threading

    from dumptui.core.compare import spread
    from dumptui.core.io.executor import BatchPolicy

    # a chunk a pair: most still to come at the first result
    monkeypatch.setattr(spread, "BATCH", BatchPolicy(items=1, most_items=1))
    pool = LocalProcesses(2, offload=True)
    session = session_of(demo_pair, pool)
    ended: list[BaseException | None] = []

    def kill_at_first_result(done: int, total: int) -> None:
        if done == 1:
            pool.close(kill=True)

    def run() -> None:
        try:
            evaluate_all(session, progress=kill_at_first_result, purpose="scan")
            ended.append(None)
        except Exception as e:  # the pool's futures cancelled or broken: RuntimeError, CancelledError...
            ended.append(e)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(60)
    assert not t.is_alive(), "the scan still waits for the killed pool"
    assert ended and ended[0] is not None, "it finished as if nothing happened"
