"""Full compares in worker processes, and what any executor of tensor-pair work is (`PairExecutor`).

The statistics are many short numpy calls; in threads they queue on the GIL (two threads ran slower than one
here), so a full compare spreads its tensor pairs over processes instead. Each job carries only what a
worker needs to read the two payloads (path, dtype, shape, offset); the statistics come back, the verdicts
are made in the parent. Workers are spawned, not forked: the caller may be a threaded UI.

An executor takes the jobs (`PairJob`: both tensors' specs and the tolerance) and yields each job's statistics
as they are done, in any order. `ProcessPool` is the local one; `daskexec.DaskExecutor` runs the same jobs as
Dask distributed tasks. A session given an executor (`Session.executor`) sends every computed pair to it.
"""

from __future__ import annotations

import contextlib
import math
import multiprocessing
import os
import queue
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from contextlib import contextmanager
from contextvars import ContextVar
from functools import partial
from typing import Any, Protocol

import numpy as np

from dumptui.core.compare.metrics import ElementTolerance, compare_tensors
from dumptui.core.compare.pairstats import PairStats
from dumptui.core.compare.smallpairs import compare_tensor_pairs
from dumptui.core.io.fault import Fault
from dumptui.core.io.npy import Layout, PayloadDecoder, shared_layout
from dumptui.core.io.procs import single_threaded_blas, start_resource_tracker, worker_start
from dumptui.core.model.dump import InOut, TensorRef

MIN_BYTES_FOR_PROCESSES = 64 << 20  # below this, starting workers costs more than it saves


# what a worker needs to read one tensor (tensor_spec): path, io, slot, dtype, shape, the storage dtype (numpy's
# str), the payload's offset, Fortran order, bfloat16 bits to widen, the payload's decoder, why it was repaired
TensorSpec = tuple[
    str, InOut, int, "str | None", tuple[int, ...], str, int, bool, bool, "PayloadDecoder | None", "Fault | None"
]
PairJob = tuple[int, TensorSpec, TensorSpec, tuple[float, float, float]]  # index, ref, target, (atol, rtol, rms)
PairOutcome = tuple[int, "PairStats | None", "str | None"]  # index, statistics (None: failed), why it failed


class PairExecutor(Protocol):
    """Runs tensor-pair jobs somewhere (processes here, a cluster) and yields their outcomes as they finish."""

    def run(
        self, jobs: list[PairJob], kl: bool, cancelled: Callable[[], bool] | None = None
    ) -> Iterator[PairOutcome]: ...


def tensor_spec(t: TensorRef) -> TensorSpec:
    lay = t.layout()
    # callers pass readable tensors only (precheck: data, no problem); a Layout without storage has a problem
    assert lay.storage is not None
    return (
        t.path,
        t.io,
        t.slot,
        t.dtype,
        tuple(lay.shape or ()),
        lay.storage.str,
        lay.offset,
        lay.fortran,
        lay.widen_bf16,
        lay.decoder,
        lay.repaired,  # a repaired payload's storage differs from its record's dtype by design
    )


def pair_job(index: int, ref: TensorRef, target: TensorRef, tol: ElementTolerance) -> PairJob:
    return (index, tensor_spec(ref), tensor_spec(target), (tol.atol, tol.rtol, tol.rms_tol))


def from_spec(spec: TensorSpec) -> TensorRef:
    path, io, slot, dtype, shape, storage, offset, fortran, widen, decoder, repaired = spec
    layout = Layout(np.dtype(storage), shape, offset, fortran, repaired=repaired, widen_bf16=widen, decoder=decoder)
    return TensorRef(path, io, slot, dtype=dtype, shape=shape, layout_fn=lambda: layout)


def run_job(job: PairJob, kl: bool) -> PairOutcome:
    """One job where it runs (a worker process, a Dask worker): read both tensors, compute the statistics."""
    idx, ref_spec, tgt_spec, tol = job
    try:
        return idx, compare_tensors(from_spec(ref_spec), from_spec(tgt_spec), ElementTolerance(*tol), kl=kl), None
    except (OSError, ValueError) as e:
        return idx, None, f"read failed: {e}"


def _run(job_kl: tuple[PairJob, bool]) -> PairOutcome:
    return run_job(*job_kl)


def _new_executor(workers: int, forked: bool = False) -> ProcessPoolExecutor:
    """`workers` processes; `forked`: started by fork (see `fork_is_safe`), else spawned."""
    single_threaded_blas()
    ctx = multiprocessing.get_context("fork" if forked else "spawn")
    return ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=partial(worker_start, 0, os.getpid()))


def fork_is_safe() -> bool:
    """Whether worker processes may be forked from this process now: on Linux, where only this thread runs (a
    fork copies locks held by other threads: a progress bar's, a UI's). A forked worker starts in ~10 ms with
    every module already imported; a spawned one imports numpy and the engine, ~0.3 s of CPU each (two
    workers were a fifth of the CPU of a noisy 3,000-kernel bisect)."""
    # Linux only: macOS offers fork, but its system libraries (Accelerate's BLAS among them) are not safe in a
    # forked child, which is why Python spawns there by default
    return sys.platform.startswith("linux") and threading.active_count() == 1


class SharedProcesses:
    """Worker processes started at a command's first batch (or at once: `start`) and kept for its later ones:
    within `with shared_processes():`, ProcessPool, map_in_processes and the scan's reads (spread.py) run on
    them instead of starting their own. Each spawned start imports numpy and the engine in every process
    (~0.3 s of CPU each): a 1 GB compare started two workers for its tensor pairs and two more for its
    replays. Started while only the main thread runs, they are forked instead (`fork_is_safe`)."""

    def __init__(self) -> None:
        self._ex: ProcessPoolExecutor | None = None
        self.workers = 0

    def start(self, workers: int) -> None:
        """The processes started now (forked when it is safe): a command starts them before its progress bar's
        thread, and before it reads its index, which they need not copy."""
        ex = self.executor(workers)
        for _ in range(self.workers):  # a spawned pool starts its processes as work comes (not waited for)
            ex.submit(os.getpid)

    def executor(self, workers: int) -> ProcessPoolExecutor:
        if self._ex is None or self.workers < workers:
            self.close()
            _flush_std_streams()  # a forked child would write what is buffered again
            self._ex, self.workers = _new_executor(workers, forked=fork_is_safe()), workers
        return self._ex

    def close(self) -> None:
        if self._ex is not None:
            self._ex.shutdown(wait=True, cancel_futures=True)
            self._ex = None

    def end_now(self) -> None:
        """Ctrl+C: the processes killed at once (they leave SIGINT to us)."""
        if self._ex is not None:
            end_now(self._ex)
            self._ex = None


def _flush_std_streams() -> None:
    for stream in (sys.stdout, sys.stderr):
        if stream is not None:  # None when the command runs with its stdout closed
            with contextlib.suppress(
                OSError, ValueError
            ):  # a closed pipe or file: nothing of ours is buffered to write twice
                stream.flush()


_SHARED: ContextVar[SharedProcesses | None] = ContextVar("dumptui_shared_processes", default=None)


@contextmanager
def shared_processes(start: int = 0) -> Iterator[SharedProcesses]:
    """The worker processes of the batches run within the `with` started once, ended at its end; `start`: that
    many started at once. Within another `with shared_processes()`, the outer one's processes."""
    outer = _SHARED.get()
    if outer is not None:
        yield outer
        return
    shared = SharedProcesses()
    token = _SHARED.set(shared)
    try:
        if start > 1:
            shared.start(start)
        yield shared
    except KeyboardInterrupt:
        shared.end_now()
        raise
    finally:
        _SHARED.reset(token)
        shared.close()


def current_shared_processes() -> SharedProcesses | None:
    """The processes of the open `shared_processes()`, if any."""
    return _SHARED.get()


@contextmanager
def _processes(workers: int) -> Iterator[ProcessPoolExecutor]:
    """The shared processes when a `shared_processes()` is open, else processes for this batch alone."""
    shared = _SHARED.get()
    if shared is not None:
        yield shared.executor(workers)
        return
    with _new_executor(workers) as ex:
        yield ex


class ProcessPool:
    """`workers` spawned processes on this machine, biggest tensors first."""

    def __init__(self, workers: int):
        self.workers = workers

    def run(self, jobs: list[PairJob], kl: bool, cancelled: Callable[[], bool] | None = None) -> Iterator[PairOutcome]:
        order = sorted(jobs, key=lambda job: -math.prod(job[1][4]))
        with _processes(self.workers) as ex:
            futs = [ex.submit(_run, (job, kl)) for job in order]
            try:
                for f in as_completed(futs):
                    if cancelled and cancelled():
                        break
                    yield f.result()
            except KeyboardInterrupt:
                end_now(ex)  # ctrl+c: the workers (which leave SIGINT to us) end at once, not after their job
                raise
            finally:
                for f in futs:
                    f.cancel()


def _run_many(jobs: list[tuple[PairJob, bool]]) -> list[PairOutcome]:
    """A chunk of jobs in a worker process (all with the same `kl`), the small pairs computed together."""
    kl = jobs[0][1] if jobs else False
    pairs = [(from_spec(ref), from_spec(tgt), ElementTolerance(*tol)) for (_i, ref, tgt, tol), _kl in jobs]
    return [(job[0], st, err) for (job, _kl), (st, err) in zip(jobs, compare_tensor_pairs(pairs, kl))]


def _resolve_many(calls: list[Callable[[], Layout]]) -> list[Layout]:
    return [call() for call in calls]


POLL_SECONDS = 0.25  # how often a wait for the pool's results looks whether it was cancelled or closed
MANAGER_END_SECONDS = 5.0  # the most end_now waits for a killed pool's own thread to end


class ComparePool:
    """Long-lived spawned worker processes for many small compares (the app's statistics and scan), so the
    numpy work leaves the process that draws the UI. Jobs go in chunks (one future per chunk: the parent's
    share of the work stays small), results stream back as each chunk finishes. `nice`: how much lower the
    workers run than their parent. `close(kill=True)` ends them at once (quitting never waits for them)."""

    CHUNK_JOBS = 128
    CHUNK_BYTES = 32 << 20

    def __init__(self, workers: int | None = None, nice: int = 0):
        self.workers = max(1, workers or os.cpu_count() or 1)
        self.nice = nice
        self._ex: ProcessPoolExecutor | None = None
        self.closed = False

    def _executor(self) -> ProcessPoolExecutor:
        if self.closed:
            raise RuntimeError("the compare pool is closed")
        if self._ex is None:
            single_threaded_blas()
            start_resource_tracker()
            self._ex = ProcessPoolExecutor(
                max_workers=self.workers,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=partial(worker_start, self.nice, os.getpid()),
            )
        return self._ex

    def executor(self) -> ProcessPoolExecutor:
        """The pool's processes, for work sent to them directly (a scan's chunks: spread.py)."""
        return self._executor()

    def resolve_layouts(self, refs: list[TensorRef], cancelled: Callable[[], bool] | None = None) -> None:
        """The header reads of `refs` made by the workers (`TensorRef.deferred_layout`); each layout is kept on
        its ref, so what the caller decides next (shapes, dtypes, tolerances) reads no file here."""
        calls = [(ref, call) for ref in refs if (call := ref.deferred_layout()) is not None]
        if not calls:
            return
        ex = self._executor()
        step = self.CHUNK_JOBS * 4  # a header read is far cheaper than a compare
        chunks = [calls[i : i + step] for i in range(0, len(calls), step)]
        futs = {ex.submit(_resolve_many, [call for _ref, call in chunk]): chunk for chunk in chunks}
        try:
            for f in self._finished(futs, cancelled):
                for (ref, _call), layout in zip(futs[f], f.result()):
                    ref.adopt_layout(shared_layout(layout))
        except KeyboardInterrupt:
            self.close(kill=True)  # ctrl+c: the workers leave SIGINT to us; end them now
            raise
        finally:
            for f in futs:
                f.cancel()

    def compare(
        self,
        jobs: list[tuple[TensorRef, TensorRef, ElementTolerance]],
        kl: bool,
        cancelled: Callable[[], bool] | None = None,
    ) -> Iterator[PairOutcome]:
        """Yields (job index, stats or None, error or None) chunk by chunk as workers finish."""
        yield from self.run([pair_job(i, ref, tgt, tol) for i, (ref, tgt, tol) in enumerate(jobs)], kl, cancelled)

    def run(self, jobs: list[PairJob], kl: bool, cancelled: Callable[[], bool] | None = None) -> Iterator[PairOutcome]:
        """The `PairExecutor` form: jobs in chunks of at most CHUNK_JOBS jobs or CHUNK_BYTES of payload."""
        chunks: list[list[tuple[PairJob, bool]]] = [[]]
        size = 0
        for job in jobs:
            if len(chunks[-1]) >= self.CHUNK_JOBS or size >= self.CHUNK_BYTES:
                chunks.append([])
                size = 0
            chunks[-1].append((job, kl))
            size += sum(math.prod(spec[4]) * np.dtype(spec[5]).itemsize for spec in (job[1], job[2]))
        ex = self._executor()
        futs = [ex.submit(_run_many, c) for c in chunks if c]
        try:
            for f in self._finished(futs, cancelled):
                yield from f.result()
        except KeyboardInterrupt:
            self.close(kill=True)  # ctrl+c: the workers leave SIGINT to us; end them now
            raise
        finally:
            for f in futs:
                f.cancel()

    def map(
        self, fn: Callable[[Any], Any], items: list[Any], cancelled: Callable[[], bool] | None = None
    ) -> Iterator[tuple[int, Any]]:
        """(index, fn(item)) as the workers finish, one item per task (`fn` a module-level function, each item
        a few MB at most: the replays of a scan)."""
        ex = self._executor()
        futs = {ex.submit(fn, item): i for i, item in enumerate(items)}
        try:
            for f in self._finished(futs, cancelled):
                yield futs[f], f.result()
        except KeyboardInterrupt:
            self.close(kill=True)  # ctrl+c: the workers leave SIGINT to us; end them now
            raise
        finally:
            for f in futs:
                f.cancel()

    def map_chunks(
        self,
        fn_many: Callable[[list[Any]], list[Any]],
        items: list[Any],
        per_task: int,
        cancelled: Callable[[], bool] | None = None,
    ) -> Iterator[tuple[int, Any]]:
        """(index, result) for each item, `per_task` items a task: `fn_many` (module-level) takes a list of
        items and returns their results in order. Many small items: a task each costs the parent more in
        pickling and waiting than the items' own work."""
        chunks = [items[i : i + per_task] for i in range(0, len(items), per_task)]
        for k, results in self.map(fn_many, chunks, cancelled):
            yield from zip(range(k * per_task, k * per_task + len(results)), results)

    def _finished(self, futs: Iterable[Future[Any]], cancelled: Callable[[], bool] | None) -> Iterator[Future[Any]]:
        """The futures as they finish, until the caller cancels. Never waits for good: when the pool is
        closed meanwhile (`q` kills the workers), the futures of killed workers may never finish, and a
        thread left waiting on them kept the app's process from ending; then RuntimeError.

        Each future reports itself to one queue when it finishes: `concurrent.futures.wait` on the pending
        set installed and removed a waiter on every pending future at each call, O(n) a result and O(n^2) a
        batch, which a scan's thousands of replays (one future each) paid in CPU doing only that."""
        futs = list(futs)
        finished: queue.SimpleQueue[Future[Any]] = queue.SimpleQueue()
        for f in futs:
            f.add_done_callback(finished.put)
        for _ in futs:
            while True:
                if cancelled and cancelled():
                    return
                try:
                    f = finished.get(timeout=POLL_SECONDS)
                    break
                except queue.Empty:
                    if self.closed:
                        raise RuntimeError("the compare pool was closed while it computed") from None
            if cancelled and cancelled():
                return
            if f.cancelled():  # only closing the pool cancels its futures (kill: shutdown with cancel_futures)
                raise RuntimeError("the compare pool was closed while it computed")
            yield f

    def close(self, kill: bool = False) -> None:
        self.closed = True
        ex, self._ex = self._ex, None
        if ex is None:
            return
        if kill:
            end_now(ex)
        else:
            ex.shutdown(wait=False, cancel_futures=True)


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


def compare_in_processes(
    jobs: list[tuple[TensorRef, TensorRef, ElementTolerance]],
    workers: int,
    kl: bool,
    cancelled: Callable[[], bool] | None = None,
) -> Iterator[PairOutcome]:
    """Yields (job index, stats or None, error or None) as workers finish, biggest tensors first."""
    specs = [pair_job(i, ref, target, tol) for i, (ref, target, tol) in enumerate(jobs)]
    yield from ProcessPool(workers).run(specs, kl, cancelled)


def map_in_processes(
    fn: Callable[[Any], Any], items: list[Any], workers: int, cancelled: Callable[[], bool] | None = None
) -> Iterator[tuple[int, Any]]:
    """(index, fn(item)) from `workers` spawned processes, started for this call and ended after it (or the
    shared ones: `shared_processes`)."""
    with _processes(workers) as ex:
        futs = {ex.submit(fn, item): i for i, item in enumerate(items)}
        try:
            for f in as_completed(futs):
                if cancelled and cancelled():
                    break
                yield futs[f], f.result()
        except KeyboardInterrupt:
            end_now(ex)  # ctrl+c: the workers leave SIGINT to us; end them now
            raise
        finally:
            for f in futs:
                f.cancel()
