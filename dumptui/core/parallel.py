"""Full compares in worker processes.

The statistics are many short numpy calls; in threads they queue on the GIL (two threads ran slower than one
here), so a full compare spreads its tensor pairs over processes instead. Each job carries only what a
worker needs to read the two payloads (path, dtype, shape, offset); the statistics come back, the verdicts
are made in the parent. Workers are spawned, not forked: the caller may be a threaded UI.
"""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor, as_completed
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
