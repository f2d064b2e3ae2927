"""Full compares in worker processes.

The statistics are many short numpy calls; in threads they queue on the GIL (two threads ran slower than one
here), so a full compare spreads its tensor pairs over processes instead. Each job carries only what a
worker needs to read the two payloads (path, dtype, shape, offset); the statistics come back, the verdicts
are made in the parent. Workers are spawned, not forked: the caller may be a threaded UI.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import threading
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from functools import partial
from typing import Callable, Iterator

import numpy as np

from .metrics import ElementTolerance, PairStats, compare_tensors
from .model import TensorRef
from .npy import Layout

MIN_BYTES_FOR_PROCESSES = 64 << 20  # below this, starting workers costs more than it saves


def tensor_spec(t: TensorRef) -> tuple:
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
    )


def _from_spec(spec: tuple) -> TensorRef:
    path, io, slot, dtype, shape, storage, offset, fortran, widen, decoder = spec
    layout = Layout(np.dtype(storage), shape, offset, fortran, widen_bf16=widen, decoder=decoder)
    return TensorRef(path, io, slot, dtype=dtype, shape=shape, layout_fn=lambda: layout)


def _run(job: tuple) -> tuple[int, PairStats | None, str | None]:
    idx, ref_spec, tgt_spec, tol, kl = job
    try:
        return idx, compare_tensors(_from_spec(ref_spec), _from_spec(tgt_spec), ElementTolerance(*tol), kl=kl), None
    except (OSError, ValueError) as e:
        return idx, None, f"read failed: {e}"


def _run_many(jobs: list[tuple]) -> list[tuple[int, PairStats | None, str | None]]:
    return [_run(job) for job in jobs]


def _resolve_many(calls: list[Callable[[], Layout]]) -> list[Layout]:
    return [call() for call in calls]


PARENT_CHECK_SECONDS = 0.5


def _worker_start(nice: int, parent: int) -> None:
    """A pool worker's initializer: below the UI process in the scheduler's eyes (keys first, statistics
    after), and gone soon after its parent. A spawned worker holds both ends of its job queue, so it never
    sees the parent's end as closed: when the parent ends without closing the pool (killed, `os._exit`),
    only this watch ends the worker. `parent` comes from the parent itself: a worker that starts after its
    parent has ended must see that too."""
    try:
        os.nice(nice)
    except OSError:
        pass

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_CHECK_SECONDS)
        os._exit(0)

    threading.Thread(target=watch, name="dumptui-parent-watch", daemon=True).start()


def _start_resource_tracker() -> None:
    """multiprocessing's resource tracker, started with the real stderr: a UI that captures sys.stderr (Textual
    does) gives it a file number of -1, and spawning then fails with "bad value(s) in fds_to_keep"."""
    from multiprocessing import resource_tracker

    captured = sys.stderr
    sys.stderr = sys.__stderr__
    try:
        resource_tracker.ensure_running()
    finally:
        sys.stderr = captured


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
            for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
                os.environ[var] = "1"
            _start_resource_tracker()
            self._ex = ProcessPoolExecutor(
                max_workers=self.workers,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=partial(_worker_start, self.nice, os.getpid()),
            )
        return self._ex

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
            for f in as_completed(futs):
                if cancelled and cancelled():
                    break
                for (ref, _call), layout in zip(futs[f], f.result()):
                    ref.adopt_layout(layout)
        finally:
            for f in futs:
                f.cancel()

    def compare(
        self,
        jobs: list[tuple[TensorRef, TensorRef, ElementTolerance]],
        kl: bool,
        cancelled: Callable[[], bool] | None = None,
    ) -> Iterator[tuple[int, PairStats | None, str | None]]:
        """Yields (job index, stats or None, error or None) chunk by chunk as workers finish."""
        chunks: list[list[tuple]] = [[]]
        size = 0
        for i, (ref, tgt, tol) in enumerate(jobs):
            if len(chunks[-1]) >= self.CHUNK_JOBS or size >= self.CHUNK_BYTES:
                chunks.append([])
                size = 0
            chunks[-1].append((i, tensor_spec(ref), tensor_spec(tgt), (tol.atol, tol.rtol, tol.rms_tol), kl))
            size += ref.nbytes() + tgt.nbytes()
        ex = self._executor()
        futs = [ex.submit(_run_many, c) for c in chunks if c]
        try:
            for f in as_completed(futs):
                if cancelled and cancelled():
                    break
                yield from f.result()
        finally:
            for f in futs:
                f.cancel()

    def close(self, kill: bool = False) -> None:
        self.closed = True
        ex, self._ex = self._ex, None
        if ex is None:
            return
        procs = list((getattr(ex, "_processes", None) or {}).values())
        ex.shutdown(wait=False, cancel_futures=True)
        if kill:
            for p in procs:
                p.kill()


def compare_in_processes(
    jobs: list[tuple[TensorRef, TensorRef, ElementTolerance]],
    workers: int,
    kl: bool,
    cancelled: Callable[[], bool] | None = None,
) -> Iterator[tuple[int, PairStats | None, str | None]]:
    """Yields (job index, stats or None, error or None) as workers finish, biggest tensors first."""
    order = sorted(range(len(jobs)), key=lambda i: -(jobs[i][0].size or 0))
    # One BLAS thread per worker: the workers are the parallelism (OpenBLAS threads spin and oversubscribe).
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = "1"
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as ex:
        futs = [
            ex.submit(
                _run,
                (
                    i,
                    tensor_spec(jobs[i][0]),
                    tensor_spec(jobs[i][1]),
                    (jobs[i][2].atol, jobs[i][2].rtol, jobs[i][2].rms_tol),
                    kl,
                ),
            )
            for i in order
        ]
        try:
            for f in as_completed(futs):
                if cancelled and cancelled():
                    break
                yield f.result()
        finally:
            for f in futs:
                f.cancel()
