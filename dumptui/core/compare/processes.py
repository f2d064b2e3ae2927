"""Tensor-pair work as a worker runs it: what a job carries (`PairJob`: both tensors' specs and the tolerance)
and the functions an executor (core/io/executor.py) runs on it. Each job carries only what a worker needs to
read the two payloads (path, dtype, shape, offset); the statistics come back, the verdicts are made in the
parent.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator

import numpy as np

from dumptui.core.compare.metrics import ElementTolerance
from dumptui.core.compare.pairstats import PairStats
from dumptui.core.compare.samefiles import same_bytes
from dumptui.core.compare.smallpairs import compare_tensor_pairs
from dumptui.core.io.executor import Cancel, Executor
from dumptui.core.io.fault import Fault
from dumptui.core.io.npy import Layout, PayloadDecoder
from dumptui.core.model.dump import InOut, TensorRef

# what a worker needs to read one tensor (tensor_spec): path, io, slot, dtype, shape, the storage dtype (numpy's
# str), the payload's offset, Fortran order, bfloat16 bits to widen, the payload's decoder, why it was repaired
TensorSpec = tuple[
    str, InOut, int, "str | None", tuple[int, ...], str, int, bool, bool, "PayloadDecoder | None", "Fault | None"
]
PairJob = tuple[int, TensorSpec, TensorSpec, tuple[float, float, float]]  # index, ref, target, (atol, rtol, rms)
PairOutcome = tuple[int, "PairStats | None", "str | None"]  # index, statistics (None: failed), why it failed
IN_ORDER_AHEAD = 2  # tasks a worker submitted ahead of the results used, for computed_on's in_order


def tensor_spec(t: TensorRef, where: Callable[[str], str] | None = None) -> TensorSpec:
    """`where`: the path a worker opens for the tensor's file (an executor's `where`)."""
    lay = t.layout()
    # callers pass readable tensors only (precheck: data, no problem); a Layout without storage has a problem
    assert lay.storage is not None
    return (
        t.path if where is None else where(t.path),
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


def pair_job(
    index: int, ref: TensorRef, target: TensorRef, tol: ElementTolerance, where: Callable[[str], str] | None = None
) -> PairJob:
    return (index, tensor_spec(ref, where), tensor_spec(target, where), (tol.atol, tol.rtol, tol.rms_tol))


def from_spec(spec: TensorSpec) -> TensorRef:
    path, io, slot, dtype, shape, storage, offset, fortran, widen, decoder, repaired = spec
    layout = Layout(np.dtype(storage), shape, offset, fortran, repaired=repaired, widen_bf16=widen, decoder=decoder)
    return TensorRef(path, io, slot, dtype=dtype, shape=shape, layout_fn=lambda: layout)


def run_pairs(jobs: list[tuple[PairJob, bool]]) -> list[PairOutcome]:
    """A task of pair jobs in a worker (all with the same `kl`), the small pairs computed together."""
    kl = jobs[0][1] if jobs else False
    pairs = [(from_spec(ref), from_spec(tgt), ElementTolerance(*tol)) for (_i, ref, tgt, tol), _kl in jobs]
    return [(job[0], st, err) for (job, _kl), (st, err) in zip(jobs, compare_tensor_pairs(pairs, kl))]


# a pair job whose two files may be byte copies of another pair's (its producer's output, each side): their
# paths as the worker opens them, or None
SameAs = tuple[str, str] | None
PairOrSame = tuple[int, "PairStats | None", "str | None", bool]  # PairOutcome, and True: same files, not computed


def run_pairs_or_same(jobs: list[tuple[PairJob, bool, SameAs]]) -> list[PairOrSame]:
    """run_pairs, where a job that names another pair's files is first compared with them byte for byte:
    when both sides hold the same bytes, nothing is computed (the other pair's statistics are this one's:
    a MindSpore dump holds each activation twice a side, as its producer's output and its consumer's input),
    else its statistics as usual. Results in job order."""
    out: list[PairOrSame | None] = [None] * len(jobs)
    todo: list[tuple[int, tuple[PairJob, bool]]] = []
    for k, (job, kl, same_as) in enumerate(jobs):
        if same_as is not None and same_bytes(job[1][0], same_as[0]) and same_bytes(job[2][0], same_as[1]):
            out[k] = (job[0], None, None, True)
        else:
            todo.append((k, (job, kl)))
    for (k, _job), (index, st, err) in zip(todo, run_pairs([job for _k, job in todo])):
        out[k] = (index, st, err, False)
    return [o for o in out if o is not None]


def computed_or_same_on(
    ex: Executor,
    pairs: list[tuple[TensorRef, TensorRef, ElementTolerance]],
    same_as: dict[int, tuple[TensorRef, TensorRef]],
    kl: bool,
    cancel: Cancel | None = None,
    in_order: bool = False,
) -> Iterator[PairOrSame]:
    """computed_on, where pair i of `same_as` is first compared byte for byte with the files of the pair named
    there (run_pairs_or_same): (index, None, None, True) when they are the same bytes."""
    jobs = [
        (
            pair_job(i, r, t, tol, ex.where),
            kl,
            None if i not in same_as else (ex.where(same_as[i][0].path), ex.where(same_as[i][1].path)),
        )
        for i, (r, t, tol) in enumerate(pairs)
    ]
    if not in_order:
        jobs.sort(key=lambda job: -_job_bytes(job))
    ahead = IN_ORDER_AHEAD * ex.workers if in_order else None
    for _k, outcome in ex.map_batched(run_pairs_or_same, jobs, nbytes=_job_bytes, cancel=cancel, ahead=ahead):
        yield outcome


def _job_bytes(job: tuple[PairJob, bool, SameAs]) -> int:
    return pair_bytes((job[0], job[1]))


def resolve_layouts_of(calls: list[Callable[[], Layout]]) -> list[Layout]:
    """A task of header reads in a worker (`TensorRef.deferred_layout`)."""
    return [call() for call in calls]


def pair_bytes(job_kl: tuple[PairJob, bool]) -> int:
    """Both payloads' bytes of a job (the batch policy's measure)."""
    job = job_kl[0]
    return sum(math.prod(spec[4]) * np.dtype(spec[5]).itemsize for spec in (job[1], job[2]))


def computed_on(
    ex: Executor,
    pairs: list[tuple[TensorRef, TensorRef, ElementTolerance]],
    kl: bool,
    cancel: Cancel | None = None,
    in_order: bool = False,
) -> Iterator[PairOutcome]:
    """(index in `pairs`, statistics or None, why the read failed or None) as the executor's tasks finish,
    the biggest pairs sent first (a big pair is a task alone: the batch policy's bytes). `in_order`: sent in
    the order of `pairs`, a few tasks a worker ahead, so that work the caller submits for the first pairs'
    results (a scan's replays) runs between these tasks, not after them all."""
    for index, st, err, _same in computed_or_same_on(ex, pairs, {}, kl, cancel, in_order):
        yield index, st, err
