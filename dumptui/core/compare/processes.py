"""Tensor-pair work as a worker runs it: what a job carries (`PairJob`: both tensors' specs and the tolerance)
and the functions an executor (core/io/executor.py) runs on it. Each job carries only what a worker needs to
read the two payloads (path, dtype, shape, offset); the statistics come back, the verdicts are made in the
parent.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator

import numpy as np

from dumptui.core.compare import sampling
from dumptui.core.compare.metrics import ElementTolerance, held_payload, held_values
from dumptui.core.compare.pairstats import PairStats
from dumptui.core.compare.samefiles import same_bytes, same_payload
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


# each side's values at the positions a replay compares (sampling.sample_positions) of an output pair read whole
Sampled = tuple[np.ndarray, np.ndarray] | None
# PairOutcome, True when the same files as its pair's (not computed), and its Sampled values
PairOrSame = tuple[int, "PairStats | None", "str | None", bool, Sampled]
# a pair job, and the jobs of the pairs whose files may be byte copies of its files (each side): the inputs its
# output feeds (a MindSpore dump holds each activation twice a side, as its producer's output and its
# consumer's input)
PairUnit = tuple[PairJob, bool, list[PairJob]]


def run_units(units: list[PairUnit]) -> list[list[PairOrSame]]:
    """run_pairs of each unit's pair, then its copies compared byte for byte with that pair's files, side by
    side, right after its statistics were computed from them: the payloads are still in memory
    (metrics.held_payload), only the copies' files are read. A copy whose files hold the same bytes is not
    computed (its pair's statistics are its own: (index, None, None, True, None)); one that differs, or whose pair
    could not be read, is computed as itself. A big output pair comes back with its values at a replay's
    sampled positions (_sampled). Units without copies and without such values are computed together (small
    pairs in rows). Each unit's outcomes in job order."""
    out: list[list[PairOrSame]] = [[] for _ in units]
    together = [not copies and not _sampled_output(job) for job, _kl, copies in units]
    shared = [k for k, flag in enumerate(together) if flag]
    for k, (index, st, err) in zip(shared, run_pairs([(units[k][0], units[k][1]) for k in shared])):
        out[k].append((index, st, err, False, None))
    for k, (job, kl, copies) in enumerate(units):
        if together[k]:
            continue
        index, st, err = run_pairs([(job, kl)])[0]
        out[k].append((index, st, err, False, _sampled(job) if st is not None else None))
        computed = []
        for copy in copies:
            if st is not None and _copies_files(copy, job):
                out[k].append((copy[0], None, None, True, None))
            else:
                computed.append((copy, kl))
        out[k].extend((i, s, e, False, None) for i, s, e in run_pairs(computed) if computed)
    return out


def _sampled_output(job: PairJob) -> bool:
    """Whether a replay of this output pair would compare it at sampled positions (a big output)."""
    return job[1][1] == InOut.OUTPUT and math.prod(job[1][4]) >= sampling.REPLAY_SAMPLED_FROM


def _sampled(job: PairJob) -> Sampled:
    """The job's values at the positions a replay compares, from the pair just read whole (metrics.held_values):
    the replay that may follow takes them, and reads neither file again; None when it was read otherwise."""
    if not _sampled_output(job):
        return None
    ref, target = held_values(job[1][0]), held_values(job[2][0])
    positions = sampling.sample_positions(math.prod(job[1][4]))
    if ref is None or target is None or positions is None or ref.size != target.size or ref.size <= positions.max():
        return None
    return ref[positions], target[positions]


def _copies_files(copy: PairJob, job: PairJob) -> bool:
    """Whether each side of `copy` is read as `job`'s (dtype, shape, storage, order, widening, decoder: all but
    the path, the role and the payload's offset) and its file holds the same payload: against the bytes `job`
    was just read as when they are still in memory, else against its file."""
    for mine, theirs in ((copy[1], job[1]), (copy[2], job[2])):
        if mine[3:6] + mine[7:] != theirs[3:6] + theirs[7:]:
            return False
        payload = held_payload(theirs[0])
        if not (same_payload(mine[0], mine[6], payload) if payload is not None else same_bytes(mine[0], theirs[0])):
            return False
    return True


def computed_or_same_on(
    ex: Executor,
    pairs: list[tuple[TensorRef, TensorRef, ElementTolerance]],
    copies: dict[int, int],
    kl: bool,
    cancel: Cancel | None = None,
    in_order: bool = False,
) -> Iterator[PairOrSame]:
    """computed_on, where pair i of `copies` may be a byte copy of pair copies[i] (each side): it goes in that
    pair's task and is compared with its files there (run_units); (index, None, None, True, None) when they are the
    same bytes."""
    jobs = [pair_job(i, r, t, tol, ex.where) for i, (r, t, tol) in enumerate(pairs)]
    # a copy of a copy is computed as itself (never found: a producer's output is no copy)
    attached = {i for i, source in copies.items() if source not in copies}
    of: dict[int, list[int]] = {}
    for i in sorted(attached):
        of.setdefault(copies[i], []).append(i)
    units: list[PairUnit] = [
        (jobs[i], kl, [jobs[c] for c in of.get(i, [])]) for i in range(len(jobs)) if i not in attached
    ]
    if not in_order:
        units.sort(key=lambda unit: -_unit_bytes(unit))
    ahead = IN_ORDER_AHEAD * ex.workers if in_order else None
    for _k, outcomes in ex.map_batched(run_units, units, nbytes=_unit_bytes, cancel=cancel, ahead=ahead):
        yield from outcomes


def _unit_bytes(unit: PairUnit) -> int:
    return sum(pair_bytes((job, unit[1])) for job in (unit[0], *unit[2]))


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
    for index, st, err, _same, _sampled in computed_or_same_on(ex, pairs, {}, kl, cancel, in_order):
        yield index, st, err
