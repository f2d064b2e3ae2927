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

import math
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Callable, Iterator, Protocol

import numpy as np

from .metrics import ElementTolerance, PairStats, compare_tensors
from .model import TensorRef
from .npy import Layout

MIN_BYTES_FOR_PROCESSES = 64 << 20  # below this, starting workers costs more than it saves


TensorSpec = tuple  # what a worker needs to read one tensor (see tensor_spec)
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
    )


def pair_job(index: int, ref: TensorRef, target: TensorRef, tol: ElementTolerance) -> PairJob:
    return (index, tensor_spec(ref), tensor_spec(target), (tol.atol, tol.rtol, tol.rms_tol))


def _from_spec(spec: TensorSpec) -> TensorRef:
    path, io, slot, dtype, shape, storage, offset, fortran, widen, decoder = spec
    layout = Layout(np.dtype(storage), shape, offset, fortran, widen_bf16=widen, decoder=decoder)
    return TensorRef(path, io, slot, dtype=dtype, shape=shape, layout_fn=lambda: layout)


def run_job(job: PairJob, kl: bool) -> PairOutcome:
    """One job where it runs (a worker process, a Dask worker): read both tensors, compute the statistics."""
    idx, ref_spec, tgt_spec, tol = job
    try:
        return idx, compare_tensors(_from_spec(ref_spec), _from_spec(tgt_spec), ElementTolerance(*tol), kl=kl), None
    except (OSError, ValueError) as e:
        return idx, None, f"read failed: {e}"


def _run(job_kl: tuple[PairJob, bool]) -> PairOutcome:
    return run_job(*job_kl)


def single_threaded_blas() -> None:
    """One BLAS thread per worker: the workers are the parallelism (OpenBLAS threads spin and oversubscribe)."""
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = "1"


class ProcessPool:
    """`workers` spawned processes on this machine, biggest tensors first."""

    def __init__(self, workers: int):
        self.workers = workers

    def run(self, jobs: list[PairJob], kl: bool, cancelled: Callable[[], bool] | None = None) -> Iterator[PairOutcome]:
        order = sorted(jobs, key=lambda job: -math.prod(job[1][4]))
        single_threaded_blas()
        ctx = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=self.workers, mp_context=ctx) as ex:
            futs = [ex.submit(_run, (job, kl)) for job in order]
            try:
                for f in as_completed(futs):
                    if cancelled and cancelled():
                        break
                    yield f.result()
            finally:
                for f in futs:
                    f.cancel()


def compare_in_processes(
    jobs: list[tuple[TensorRef, TensorRef, ElementTolerance]],
    workers: int,
    kl: bool,
    cancelled: Callable[[], bool] | None = None,
) -> Iterator[PairOutcome]:
    """Yields (job index, stats or None, error or None) as workers finish, biggest tensors first."""
    specs = [pair_job(i, ref, target, tol) for i, (ref, target, tol) in enumerate(jobs)]
    yield from ProcessPool(workers).run(specs, kl, cancelled)
