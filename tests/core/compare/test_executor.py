"""The one execution interface (core/io/executor.py): the batch policy, results in order or as they finish on
every executor, a cancel seen between tasks and waking a waiting run (events, never a polled flag or a sleep),
a worker killed mid-run as a clear error (never a hang), and the same `compare --json`, byte for byte, on one
worker, two local processes and a Dask cluster."""

from __future__ import annotations

import os
import select
import signal
import textwrap
import threading

import pytest
from helpers.common import run_cli
from helpers.procs import wait_gone

from dumptui.core.io.executor import (
    BatchPolicy,
    Cancel,
    ExecutorClosed,
    InProcess,
    LocalProcesses,
    Progress,
    WorkerLost,
)

# ------------------------------------------------------------------------------------------------ the tasks
# (module-level: a worker process unpickles them by name)


def _square(x: int) -> int:
    return x * x


def _squares(xs: list[int]) -> list[int]:
    return [x * x for x in xs]


def _pid(_x: object) -> int:
    return os.getpid()


def _blocked(item: tuple[str, int]) -> int:
    """Tells the test (a FIFO) that it runs, then waits for good on a pipe nobody writes (only a kill ends it)."""
    fifo, i = item
    fd = os.open(fifo, os.O_WRONLY)
    os.write(fd, f"{os.getpid()}\n".encode())
    os.close(fd)
    never, _w = os.pipe()
    os.read(never, 1)
    return i


def _dies_at(item: tuple[int, int]) -> int:
    """Item `at` kills its own worker process (as the kernel's OOM killer would)."""
    i, at = item
    if i == at:
        os.kill(os.getpid(), signal.SIGKILL)
    return i


# ------------------------------------------------------------------------------------------------ batches


def test_the_batch_policy_groups_tiny_items_and_sends_a_big_one_alone():
    policy = BatchPolicy(items=4, most_items=8, bytes=100, per_worker=2)
    assert policy.task_items(None, 2) == 4  # items as they come: the least a task
    assert policy.task_items(10, 2) == 4 and policy.task_items(20, 2) == 5 and policy.task_items(1000, 2) == 8
    tiny = policy.bounds(10, 2, lambda i: 1)
    assert tiny == [(0, 4), (4, 8), (8, 10)]
    sizes = [10, 10, 500, 10, 10, 10, 10, 10, 90]
    spans = policy.bounds(len(sizes), 1, lambda i: sizes[i])
    assert (2, 3) in spans  # the big item is a task of its own
    assert [i for a, b in spans for i in range(a, b)] == list(range(len(sizes)))  # every item once, in order
    assert all(sum(sizes[a:b]) <= 100 or b - a == 1 for a, b in spans)


# ------------------------------------------------------------------------------------------------ runs


@pytest.fixture(scope="module")
def processes():
    with LocalProcesses(2) as ex:
        yield ex


@pytest.mark.parametrize("where", ["here", "processes"])
def test_map_in_order_as_finished_and_batched_give_every_result_under_its_index(where, processes):
    ex = InProcess() if where == "here" else processes
    items = list(range(50))
    ordered = list(ex.map(_square, items, ordered=True, ahead=3))
    assert ordered == [(i, i * i) for i in items]  # in order, never more than 3 ahead
    assert sorted(ex.map(_square, items)) == ordered
    progress = Progress(len(items))
    batched = dict(ex.map_batched(_squares, items, batch=BatchPolicy(items=7, most_items=7), progress=progress))
    assert batched == dict(ordered) and progress.done == len(items)
    stream = ex.stream(_squares, BatchPolicy(items=4))
    for i in items:
        stream.add(f"key {i}", i)
    assert list(stream.results()) == [(f"key {i}", i * i) for i in items]


def test_one_worker_runs_here_and_starts_no_process():
    ex = InProcess()
    assert {pid for _i, pid in ex.map(_pid, range(5))} == {os.getpid()}
    assert ex.workers == 1 and ex.local and not ex.offload


# ------------------------------------------------------------------------------------------------ cancel


def test_a_cancel_is_seen_between_tasks_here():
    cancel = Cancel()
    seen = []

    def work(i: int) -> int:
        seen.append(i)
        if i == 2:
            cancel.set()  # the caller's event, set while the run goes on
        return i

    assert [i for i, _r in InProcess().map(work, range(10), cancel=cancel)] == [0, 1, 2]
    assert seen == [0, 1, 2]  # the items after the cancel are never computed


def test_a_cancel_wakes_a_run_waiting_for_its_workers_and_drops_the_pending_tasks(tmp_path):
    """Every worker is busy for good and more tasks wait: setting the cancel (from another thread, as the app's
    escape does) ends the waiting run at once, with nothing; the tasks not started never start; closing the
    executor ends the busy workers."""
    fifo = str(tmp_path / "running")
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    keep_open = os.open(fifo, os.O_WRONLY)  # a writer always there: select wakes on data, never on an EOF
    ex = LocalProcesses(2)
    cancel = Cancel()
    got: list = []
    ended = threading.Event()

    def run() -> None:
        got.extend(ex.map(_blocked, [(fifo, i) for i in range(6)], cancel=cancel))
        ended.set()

    try:
        threading.Thread(target=run, daemon=True).start()
        told = b""
        while told.count(b"\n") < 2:  # woken by each worker's word, never by polling
            ready, _w, _x = select.select([reader], [], [], 60)
            assert ready, "the workers did not start"
            told += os.read(reader, 64)
        pids = [int(p) for p in told.split()]
        cancel.set()
        assert ended.wait(30), "the run still waits for its workers after the cancel"
        assert got == []
        assert cancel.is_set() and cancel()  # the token, also as the callable older signatures take
    finally:
        ex.close(kill=True)
        os.close(reader)
        os.close(keep_open)
    assert wait_gone(pids, 30) == []


def test_a_callers_own_condition_cancels_as_the_token_does():
    stop = threading.Event()
    cancel = Cancel(also=stop.is_set)
    assert not cancel.is_set()
    woken = threading.Event()
    cancel.watch(woken.set)
    stop.set()
    assert cancel.is_set() and woken.is_set()  # seen where the token is looked at, and its watchers told


def test_closing_the_executor_ends_a_waiting_run_with_an_error(tmp_path):
    fifo = str(tmp_path / "running")
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    keep_open = os.open(fifo, os.O_WRONLY)
    ex = LocalProcesses(1)
    errors: list[BaseException] = []
    ended = threading.Event()

    def run() -> None:
        try:
            list(ex.map(_blocked, [(fifo, 0)]))
        except ExecutorClosed as e:
            errors.append(e)
        ended.set()

    try:
        threading.Thread(target=run, daemon=True).start()
        ready, _w, _x = select.select([reader], [], [], 60)
        assert ready, "the worker did not start"
        pid = int(os.read(reader, 64).split()[0])
        ex.close(kill=True)  # the app's `q`
        assert ended.wait(30), "the run still waits for the killed worker"
        assert errors and "closed" in str(errors[0])
    finally:
        os.close(reader)
        os.close(keep_open)
    assert wait_gone([pid], 30) == []
    with pytest.raises(ExecutorClosed):
        list(ex.map(_square, [1]))


# ------------------------------------------------------------------------------------------------ a lost worker


def test_a_worker_killed_mid_run_is_a_clear_error_and_the_next_run_has_workers_again():
    with LocalProcesses(2) as ex:
        with pytest.raises(WorkerLost, match="worker process ended"):
            list(ex.map(_dies_at, [(i, 3) for i in range(8)]))
        assert sorted(ex.map(_square, range(4))) == [(i, i * i) for i in range(4)]


# ------------------------------------------------------------------------------------------------ the same bytes


@pytest.fixture(scope="module")
def scanned_pair(tmp_path_factory):
    """A noisy demo pair with enough tensor pairs (over batch.MIN_PAIRS_TO_SPREAD) that two workers read and
    compute them (spread.py) and the replays go to them too."""
    from dumptui.core.compare.batch import MIN_PAIRS_TO_SPREAD
    from dumptui.core.demo.residual import write_demo

    pair = write_demo(str(tmp_path_factory.mktemp("executor")), n_ops=200, size=256)
    assert len(os.listdir(os.path.join(pair.ref, "rank_0", "Net", "0", "0"))) > MIN_PAIRS_TO_SPREAD
    return pair


def test_one_worker_and_two_give_the_same_compare_json(scanned_pair):
    one = run_cli("compare", scanned_pair.ref, scanned_pair.target, "--json", "--workers", "1")
    two = run_cli("compare", scanned_pair.ref, scanned_pair.target, "--json", "--workers", "2")
    assert one[0] == 1 and '"roots"' in one[1]
    assert two[:2] == one[:2]


def test_dask_and_local_processes_give_the_same_compare_json(scanned_pair):
    pytest.importorskip("distributed", reason="Dask distributed not installed (pip install 'dumptui[dask]')")
    local = run_cli("compare", scanned_pair.ref, scanned_pair.target, "--json")
    # the cluster's workers import dumptui from this checkout (run_cli puts it first on PYTHONPATH, which the
    # LocalCluster's spawned workers inherit)
    on_dask = run_cli("compare", scanned_pair.ref, scanned_pair.target, "--json", "--dask", "local:2")
    assert local[0] == 1 and on_dask[:2] == local[:2], on_dask[2][-2000:]


KILLED_WORKER = textwrap.dedent(
    """
    import os, signal, sys

    from dumptui.core.compare import batch, spread

    batch.MIN_PAIRS_TO_SPREAD = 0  # a small pair: its scan read by the workers all the same

    def killed(chunk):
        os.kill(os.getpid(), signal.SIGKILL)  # as the kernel's OOM killer ends a worker

    spread.read_and_compare = killed
    sys.argv = ["dumptui", "bisect", sys.argv[1], sys.argv[2], "-q"]
    from dumptui.cli import command_line

    command_line()
    """
)


def test_a_command_whose_worker_is_killed_says_so_and_exits_2(demo_pair):
    """A worker killed while a bisect's scan waits for it: exit 2 with the reason, no traceback, no hang (the
    subprocess's timeout would fail the test)."""
    import subprocess
    import sys

    from helpers.common import REPO

    env = dict(os.environ, PYTHONPATH=str(REPO))
    done = subprocess.run(
        [sys.executable, "-c", KILLED_WORKER, demo_pair.ref, demo_pair.target],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert "a worker process ended while it computed" in done.stderr and "Traceback" not in done.stderr
