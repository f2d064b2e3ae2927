"""The one way work runs in parallel: an `Executor` takes module-level functions and their items and gives back
the results, on this machine's processes (`LocalProcesses`), here (`InProcess`) or on a Dask cluster
(core/compare/daskexec.py `DaskCluster`). Each run carries a `Cancel` (an event its caller sets: looked at
between tasks, and a wait for a task is woken by it; the tasks not started are dropped) and a `Progress` (a
count of items done). How items are grouped into tasks is one `BatchPolicy` (item count and bytes: many tiny
files a task, a big one alone).

The executor comes from the entry point: a command makes one for its run (`command_processes`) and hands it to
its session (`Session.executor`); the app keeps one for its life (`LocalProcesses(offload=True)`). Nothing
finds it through a module-level variable.

Why processes and not threads: the statistics are many short numpy calls; in threads they queue on the GIL
(two threads ran slower than one here). Worker processes are forked when that is safe (`fork_is_safe`: ~10 ms
a worker, every module imported), else spawned (~0.3 s of CPU each, numpy and the engine imported again).
"""

from __future__ import annotations

import contextlib
import math
import multiprocessing
import os
import queue
import sys
import threading
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import CancelledError, Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from functools import partial
from types import TracebackType
from typing import Any, Generic, NoReturn, Protocol, TypeVar

from dumptui.core.io.errors import DumptuiError
from dumptui.core.io.procs import single_threaded_blas, start_resource_tracker, worker_start

MIN_BYTES_FOR_PROCESSES = 64 << 20  # below this, starting workers costs more than it saves
MANAGER_END_SECONDS = 5.0  # the most a kill waits for a killed pool's own thread to end

A = TypeVar("A")
R = TypeVar("R")
R_co = TypeVar("R_co", covariant=True)
K = TypeVar("K")


class ExecutorClosed(RuntimeError):
    """The executor was closed (the app quit, ctrl+c) while its caller waited for results."""


class WorkerLost(DumptuiError, RuntimeError):
    """A worker process ended while it computed (killed, out of memory): its results will never come. A
    command says so and exits 2 (never waits for them)."""

    def __init__(self, reason: str):
        super().__init__("", reason)


# ------------------------------------------------------------------------------------------------ cancel


class Cancel:
    """A cancellation token: the caller sets it (escape, a new run, quitting), the work sees it between tasks
    and a wait for a task is woken by it (`watch`). `also`: a condition of the caller's that cancels too
    (looked at where the token is: the app's thread worker cancelled). Called, it says whether it is set."""

    def __init__(self, also: Callable[[], bool] | None = None) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._watchers: dict[int, Callable[[], None]] = {}
        self._next = 0
        self._also = also

    def set(self) -> None:
        with self._lock:
            if self._event.is_set():
                return
            self._event.set()
            watchers = list(self._watchers.values())
            self._watchers.clear()
        for fn in watchers:
            fn()

    def is_set(self) -> bool:
        if not self._event.is_set() and self._also is not None and self._also():
            self.set()
        return self._event.is_set()

    def __call__(self) -> bool:
        return self.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        return self._event.wait(timeout)

    def watch(self, fn: Callable[[], None]) -> Callable[[], None]:
        """`fn` called once when the token is set (now, when it is already); returns the call that forgets it."""
        with self._lock:
            if not self._event.is_set():
                key = self._next
                self._next += 1
                self._watchers[key] = fn

                def forget() -> None:
                    with self._lock:
                        self._watchers.pop(key, None)

                return forget
        fn()
        return lambda: None


# ------------------------------------------------------------------------------------------------ progress


class Progress:
    """Counted progress: `tick(n)` when n more items are done; `report(done, total)` told each time."""

    def __init__(self, total: int, report: Callable[[int, int], None] | None = None) -> None:
        self.total, self.done, self.report = total, 0, report

    def tick(self, n: int = 1) -> None:
        self.done += n
        if self.report is not None:
            self.report(self.done, self.total)


# ------------------------------------------------------------------------------------------------ batches


@dataclass(frozen=True)
class BatchPolicy:
    """How items are grouped into tasks. Each task costs the caller a pickling and a wait (the pool's threads
    take the interpreter lock to send it), so many small items go together: about `per_worker` tasks per
    worker when the count is known, never fewer than `items` items a task (but the last) nor more than
    `most_items`; and a task is closed once it holds `bytes` (a big item is a task alone: the work spreads)."""

    items: int = 128
    most_items: int = 2048
    bytes: int = 8 << 20
    per_worker: int = 8

    def task_items(self, total: int | None, workers: int) -> int:
        """Items a task for `total` items (None: not known, items are sent as they come) on `workers`."""
        if total is None:
            return self.items
        return max(self.items, min(self.most_items, -(-total // (max(1, workers) * self.per_worker))))

    def bounds(self, total: int, workers: int, nbytes: Callable[[int], int] | None = None) -> list[tuple[int, int]]:
        """The tasks of `total` items as (start, end) positions; `nbytes(i)`: item i's bytes."""
        most = self.task_items(total, workers)
        out: list[tuple[int, int]] = []
        start, size = 0, 0
        for i in range(total):
            n = nbytes(i) if nbytes is not None else 0
            if i > start and (i - start >= most or size + n > self.bytes):
                out.append((start, i))
                start, size = i, 0
            size += n
        if total > start:
            out.append((start, total))
        return out


BATCH = BatchPolicy()


# ------------------------------------------------------------------------------------------------ executors


class Task(Protocol[R_co]):
    """A submitted task: a concurrent.futures Future, or a Dask one."""

    def result(self) -> R_co: ...

    def cancel(self) -> bool: ...

    def done(self) -> bool: ...

    def add_done_callback(self, fn: Callable[[Any], object]) -> None: ...


class Executor(Protocol):
    """Where work runs. `workers`: how many tasks at once; `local`: its workers read this machine's files
    (a worker may be handed a TensorRef's own description); `offload`: every file read goes to the workers,
    none here (the app: its process draws the UI). `where(path)`: the path a worker opens for a file here."""

    @property
    def workers(self) -> int: ...

    @property
    def local(self) -> bool: ...

    @property
    def offload(self) -> bool: ...

    def where(self, path: str) -> str: ...

    def submit(self, fn: Callable[[A], R], item: A) -> Task[R]: ...

    def map(
        self,
        fn: Callable[[A], R],
        items: Iterable[A],
        *,
        cancel: Cancel | None = None,
        progress: Progress | None = None,
        ordered: bool = False,
        ahead: int | None = None,
    ) -> Iterator[tuple[int, R]]: ...

    def map_batched(
        self,
        fn_many: Callable[[list[A]], list[R]],
        items: list[A],
        *,
        batch: BatchPolicy | None = None,
        nbytes: Callable[[A], int] | None = None,
        cancel: Cancel | None = None,
        progress: Progress | None = None,
        ahead: int | None = None,
    ) -> Iterator[tuple[int, R]]: ...

    def stream(self, fn_many: Callable[[list[A]], list[R]], batch: BatchPolicy | None = None) -> Stream[Any, A, R]: ...

    def close(self, kill: bool = False) -> None: ...


class Runs(ABC):
    """What every executor does with its `submit`: map, map_batched, stream, and the waits, which a `Cancel`
    or the executor's close wakes (never a polled flag). An executor has its `submit` and `close`."""

    workers: int = 1

    def __init__(self) -> None:
        self.closed = False
        self._waits: set[queue.SimpleQueue[Any]] = set()
        self._waits_lock = threading.Lock()

    # the parts each executor has
    @abstractmethod
    def submit(self, fn: Callable[[A], R], item: A) -> Task[R]:
        """`fn(item)` sent to a worker (here: computed now)."""

    @abstractmethod
    def close(self, kill: bool = False) -> None:
        """The workers ended (`kill`: at once, their tasks dropped); a run still waiting ends with ExecutorClosed."""

    def start(self) -> None:  # noqa: B027 (a hook: nothing to do unless the executor has processes)
        """The workers started now, when the executor has workers of its own to start (LocalProcesses)."""

    def _lost(self, e: BaseException) -> None:  # noqa: B027 (a hook: nothing to do unless the executor has processes)
        """A task's worker was lost (`e`): the executor made ready for the next run."""

    def _worker_lost(self, e: BrokenProcessPool) -> NoReturn:
        self._lost(e)
        raise WorkerLost(f"a worker process ended while it computed (killed, or out of memory?): {e}") from e

    def _interrupted(self) -> None:  # noqa: B027 (a hook: nothing to do unless the executor has processes)
        """Ctrl+C while a run waited: its workers end at once (they leave SIGINT to us)."""

    # the waits
    @contextlib.contextmanager
    def _woken(self, wake: queue.SimpleQueue[Any], cancel: Cancel | None) -> Iterator[None]:
        forget = cancel.watch(lambda: wake.put(None)) if cancel is not None else None
        with self._waits_lock:
            self._waits.add(wake)
        try:
            yield
        except KeyboardInterrupt:
            self._interrupted()
            raise
        finally:
            with self._waits_lock:
                self._waits.discard(wake)
            if forget is not None:
                forget()

    def _wake_all(self) -> None:
        with self._waits_lock:
            waits = list(self._waits)
        for wake in waits:
            wake.put(None)

    def _await(self, wake: queue.SimpleQueue[Any], cancel: Cancel | None, want: Task[Any] | None) -> Task[Any] | None:
        """The next finished task (`want`: that one), or None when `cancel` is set. Raises ExecutorClosed when
        the executor is closed meanwhile (a killed worker's task may never finish)."""
        while True:
            if cancel is not None and cancel.is_set():
                return None
            if self.closed:
                raise ExecutorClosed("the worker processes were closed while they computed")
            if want is not None and want.done():
                return want
            got = wake.get()
            if got is not None and want is None:
                return got  # type: ignore[no-any-return]

    def _outcome(self, task: Task[R]) -> R:
        try:
            return task.result()
        except BrokenProcessPool as e:
            self._worker_lost(e)
        except CancelledError:  # only closing the executor cancels a task a run still waits for
            raise ExecutorClosed("the worker processes were closed while they computed") from None

    # the runs
    def map(
        self,
        fn: Callable[[A], R],
        items: Iterable[A],
        *,
        cancel: Cancel | None = None,
        progress: Progress | None = None,
        ordered: bool = False,
        ahead: int | None = None,
    ) -> Iterator[tuple[int, R]]:
        """(index, fn(item)) for each item, a task each: as they finish, or in order (`ordered`). `ahead`: at
        most this many tasks submitted and not yet yielded (items taken from `items` as they go). On cancel the
        tasks not started are dropped."""
        source = iter(enumerate(items))
        limit = math.inf if ahead is None else max(1, ahead)
        wake: queue.SimpleQueue[Any] = queue.SimpleQueue()
        index: dict[Task[R], int] = {}
        order: deque[Task[R]] = deque()  # submitted and not yielded, in order (ordered runs)

        def fill() -> None:
            while len(index) < limit:
                nxt = next(source, None)
                if nxt is None:
                    return
                task = self.submit(fn, nxt[1])
                index[task] = nxt[0]
                if ordered:
                    order.append(task)
                task.add_done_callback(wake.put)

        with self._woken(wake, cancel):
            try:
                fill()
                while index:
                    done = self._await(wake, cancel, order[0] if ordered else None)
                    if done is None:
                        return
                    if ordered:
                        order.popleft()
                    i = index.pop(done)
                    result = self._outcome(done)
                    fill()  # the next task sent before this one's result is used: the workers stay busy
                    if progress is not None:
                        progress.tick()
                    yield i, result
            finally:
                for task in index:
                    task.cancel()

    def map_batched(
        self,
        fn_many: Callable[[list[A]], list[R]],
        items: list[A],
        *,
        batch: BatchPolicy | None = None,
        nbytes: Callable[[A], int] | None = None,
        cancel: Cancel | None = None,
        progress: Progress | None = None,
        ahead: int | None = None,
    ) -> Iterator[tuple[int, R]]:
        """(index, result) for each item, as tasks finish: `fn_many` (module-level) takes a task's items and
        returns their results in order; the tasks are made by `batch` (default: BATCH). `ahead`: as `map`'s
        (tasks the caller submits meanwhile then wait behind at most this many)."""
        spans = (batch or BATCH).bounds(
            len(items), self.workers, (lambda i: nbytes(items[i])) if nbytes is not None else None
        )
        for k, results in self.map(fn_many, (items[a:b] for a, b in spans), cancel=cancel, ahead=ahead):
            start = spans[k][0]
            if progress is not None:
                progress.tick(len(results))
            yield from zip(range(start, start + len(results)), results)

    def stream(self, fn_many: Callable[[list[A]], list[R]], batch: BatchPolicy | None = None) -> Stream[Any, A, R]:
        """Items sent as the caller finds them (`Stream.add`), their results afterwards (`Stream.results`)."""
        return Stream(self, fn_many, batch or BATCH)

    def where(self, path: str) -> str:
        return path


class Stream(Generic[K, A, R]):
    """Items sent to an executor as the caller finds them, `batch.items` (or `batch.bytes`) a task: they are
    computed while the caller goes on. `results` gives (key, result) in the order they were added."""

    def __init__(self, ex: Runs, fn_many: Callable[[list[A]], list[R]], batch: BatchPolicy) -> None:
        self.ex, self.fn_many, self.batch = ex, fn_many, batch
        self.count = 0
        self._pending: list[tuple[K, A]] = []
        self._size = 0
        self._sent: list[tuple[list[K], Task[list[R]]]] = []

    def add(self, key: K, item: A, nbytes: int = 0) -> None:
        self.count += 1
        if self._pending and self._size + nbytes > self.batch.bytes:
            self._send()
        self._pending.append((key, item))
        self._size += nbytes
        if len(self._pending) >= self.batch.items:
            self._send()

    def _send(self, parts: int = 1) -> None:
        """The pending items sent as `parts` tasks (fewer when there are fewer items)."""
        pending, self._pending, self._size = self._pending, [], 0
        size = max(1, -(-len(pending) // parts))
        for start in range(0, len(pending), size):
            part = pending[start : start + size]
            self._sent.append(([k for k, _item in part], self.ex.submit(self.fn_many, [item for _k, item in part])))

    def results(self, cancel: Cancel | None = None) -> Iterator[tuple[K, R]]:
        """(key, result) of every item added, in order. The last items are split among the workers: nothing
        else is left for them, and the caller waits for these (as one task, one worker ran them all)."""
        self._send(parts=self.ex.workers)
        wake: queue.SimpleQueue[Any] = queue.SimpleQueue()
        for _keys, task in self._sent:
            task.add_done_callback(wake.put)
        with self.ex._woken(wake, cancel):
            try:
                for keys, task in self._sent:
                    if self.ex._await(wake, cancel, task) is None:
                        return
                    yield from zip(keys, self.ex._outcome(task))
            finally:
                for _keys, task in self._sent:
                    task.cancel()


class InProcess(Runs):
    """Everything here, one item at a time (one worker, or dumps too small to pay for starting processes)."""

    workers = 1
    local = True
    offload = False

    def submit(self, fn: Callable[[A], R], item: A) -> Task[R]:
        if self.closed:
            raise ExecutorClosed("the executor is closed")
        f: Future[R] = Future()
        try:
            f.set_result(fn(item))
        except Exception as e:  # the caller gets it from result(), as from a worker
            f.set_exception(e)
        return f

    def map(
        self,
        fn: Callable[[A], R],
        items: Iterable[A],
        *,
        cancel: Cancel | None = None,
        progress: Progress | None = None,
        ordered: bool = False,
        ahead: int | None = None,
    ) -> Iterator[tuple[int, R]]:
        for i, item in enumerate(items):  # computed as they are asked for: the cancel looked at between
            if cancel is not None and cancel.is_set():
                return
            result = fn(item)
            if progress is not None:
                progress.tick()
            yield i, result

    def close(self, kill: bool = False) -> None:
        self.closed = True
        self._wake_all()

    def __enter__(self) -> InProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def fork_is_safe() -> bool:
    """Whether worker processes may be forked from this process now: on Linux, where only this thread runs (a
    fork copies locks held by other threads: a progress bar's, a UI's). A forked worker starts in ~10 ms with
    every module already imported; a spawned one imports numpy and the engine, ~0.3 s of CPU each (two
    workers were a fifth of the CPU of a noisy 3,000-kernel bisect)."""
    # Linux only: macOS offers fork, but its system libraries (Accelerate's BLAS among them) are not safe in a
    # forked child, which is why Python spawns there by default
    return sys.platform.startswith("linux") and threading.active_count() == 1


class LocalProcesses(Runs):
    """`workers` processes on this machine, started at the first task (or at once: `start`) and kept until
    `close`: a command's batches, replays and reads all run on the same ones. Forked when it is safe
    (`fork_is_safe`), else spawned. `nice`: how much lower they run than this process (the app: keys first).
    `offload`: every file read goes to them (the app). `close(kill=True)` ends them at once (quitting, ctrl+c)."""

    local = True

    def __init__(
        self,
        workers: int | None = None,
        *,
        nice: int = 0,
        offload: bool = False,
        setup: Callable[[], None] | None = None,
    ) -> None:
        """`setup`: run in each worker as it starts (module-level or a partial of one: what a worker keeps for
        its tasks, as indexing's shared progress board)."""
        super().__init__()
        self.workers = max(1, workers or os.cpu_count() or 1)
        self.nice = nice
        self.offload = offload
        self.setup = setup
        self._ex: ProcessPoolExecutor | None = None
        self._lock = threading.Lock()

    def pool(self) -> ProcessPoolExecutor:
        """The processes (started now when they are not running)."""
        with self._lock:
            if self.closed:
                raise ExecutorClosed("the worker processes are closed")
            if self._ex is None:
                forked = fork_is_safe()
                single_threaded_blas()
                if forked:
                    _flush_std_streams()  # a forked child would write what is buffered again
                else:
                    start_resource_tracker()
                self._ex = ProcessPoolExecutor(
                    max_workers=self.workers,
                    mp_context=multiprocessing.get_context("fork" if forked else "spawn"),
                    initializer=partial(_worker_start, self.nice, os.getpid(), self.setup),
                )
            return self._ex

    def start(self) -> None:
        """The processes started now (forked when it is safe): a command starts them before its progress bar's
        thread, and before it reads its index, which they need not copy."""
        if self.workers < 2:
            return
        ex = self.pool()
        for _ in range(self.workers):  # a spawned pool starts its processes as work comes (not waited for)
            ex.submit(os.getpid)

    def submit(self, fn: Callable[[A], R], item: A) -> Task[R]:
        try:
            return self.pool().submit(fn, item)
        except BrokenProcessPool as e:  # a worker died since the last task was sent
            self._worker_lost(e)

    def _lost(self, e: BaseException) -> None:
        with self._lock:
            ex, self._ex = self._ex, None
        if ex is not None:
            ex.shutdown(wait=False, cancel_futures=True)

    def _interrupted(self) -> None:
        with self._lock:
            ex, self._ex = self._ex, None
        if ex is not None:
            end_now(ex)

    def close(self, kill: bool = False) -> None:
        with self._lock:
            self.closed = True
            ex, self._ex = self._ex, None
        self._wake_all()
        if ex is None:
            return
        if kill:
            end_now(ex)
        else:
            ex.shutdown(wait=True, cancel_futures=True)

    def __enter__(self) -> LocalProcesses:
        return self

    def __exit__(self, kind: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.close(kill=kind is KeyboardInterrupt)


def _worker_start(nice: int, parent: int, setup: Callable[[], None] | None) -> None:
    worker_start(nice, parent)
    if setup is not None:
        setup()


def command_processes(workers: int) -> LocalProcesses | InProcess:
    """The executor of a command's run: `workers` local processes, or everything here for one. The command
    closes it at its end (a `with`). (Tests share one across a module's commands: conftest.py.)"""
    return LocalProcesses(workers) if workers > 1 else InProcess()


def _flush_std_streams() -> None:
    for stream in (sys.stdout, sys.stderr):
        if stream is not None:  # None when the command runs with its stdout closed
            with contextlib.suppress(OSError, ValueError):  # a closed pipe or file: nothing buffered to write twice
                stream.flush()


def end_now(ex: ProcessPoolExecutor) -> None:
    """The pool's queued work dropped and its worker processes killed (quitting, ctrl+c: never wait for them)."""
    procs = list((getattr(ex, "_processes", None) or {}).values())
    manager = getattr(ex, "_executor_manager_thread", None)  # shutdown forgets it
    ex.shutdown(wait=False, cancel_futures=True)
    for p in procs:
        p.kill()
    # The pool's own thread ends soon after its processes, closing its wake-up pipe. Left running, it raced
    # the interpreter's exit, which wakes it through that pipe: "OSError: Bad file descriptor" printed after
    # ctrl+c (1 run in 6). It is waited for, a moment at most: its processes are gone.
    if manager is not None and manager is not threading.current_thread():
        manager.join(timeout=MANAGER_END_SECONDS)
