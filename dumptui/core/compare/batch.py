"""Comparing many tensor pairs at once: every pair of an alignment for `compare` and the app's statistics.

Pairs decided without reading (one-sided, unreadable, statistic-only) are settled first; the rest are
computed by the session's executor when it has one (a Dask cluster: `daskexec.py`), else here, or in worker
processes when there are enough bytes to pay for starting them (`processes.py`). Results land in the session's
cache, so a later bisection reuses them.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from dumptui.core.compare.ledger import Purpose
from dumptui.core.compare.pairstats import PairStats
from dumptui.core.compare.processes import (
    MIN_BYTES_FOR_PROCESSES,
    ComparePool,
    PairExecutor,
    ProcessPool,
    current_shared_processes,
    pair_job,
)
from dumptui.core.compare.results import OpResult, TensorResult
from dumptui.core.compare.session import Prechecked, Session
from dumptui.core.compare.smallpairs import compare_tensor_pairs
from dumptui.core.compare.spread import evaluate_spread, shippable
from dumptui.core.graph.align import OpPair
from dumptui.core.io.npy import payloads_kept
from dumptui.core.model.dump import InOut, TensorRef

Job = tuple[OpPair, InOut, int, TensorRef, TensorRef]  # pair, io, slot, ref, target (both present)
# Tensor pairs handed to a long-lived pool at a time: enough chunks (ComparePool.CHUNK_JOBS) to keep every
# worker busy, few enough that their specs stay a few MB.
POOL_SLICE_JOBS = 4096
# From this many tensor pairs to compute, a batch within the command's worker processes (shared_processes) is
# read and computed there (spread.py), whatever their bytes: a noisy scan's thousands of small pairs.
MIN_PAIRS_TO_SPREAD = 512
HERE_SLICE = 256  # tensor pairs computed here between looks at `cancelled` and progress reports


def evaluate_all(
    session: Session,
    pairs: list[OpPair] | None = None,
    workers: int | ComparePool | None = None,
    progress: Callable[[int, int], None] | None = None,
    cancelled: Callable[[], bool] | None = None,
    purpose: Purpose = Purpose.COMPARE,
    ready: Callable[[OpResult], None] | None = None,
) -> list[OpResult]:
    """Every tensor pair of `pairs` (default: all), then each op's result; reads are booked under `purpose`.
    `workers`: a number of processes (started for big batches only), or a long-lived `ComparePool` that gets
    every file read, headers included (the app: its UI process keeps only the verdicts' bookkeeping).
    `ready`: where the command's processes compute (spread.py), told of ops whose result is known early."""
    pairs = session.alignment.pairs if pairs is None else pairs
    jobs = [
        (p, io, slot, r, t) for p in pairs for io, slot, r, t in session.tensor_pairs(p) if session.cached(r, t) is None
    ]
    counter = _Progress(len(jobs), progress)
    if isinstance(workers, ComparePool):
        # a slice at a time: a job's specs (paths, shapes, headers to read) exist only while its slice runs
        # (all of a large pair's at once raised the app's peak). Each slice as a command's
        # scan runs (spread.py): the pool's processes open each file once, for its header and its statistics,
        # while this process judges what came back (the headers first, then the pairs, was two opens a file
        # and this process and the pool taking turns); what they leave is computed in the pool too.
        ex = workers.executor()
        for start in range(0, len(jobs), POOL_SLICE_JOBS):
            if cancelled and cancelled():
                break
            chunk = jobs[start : start + POOL_SLICE_JOBS]
            # the headers of the tensors no worker compares (one side only, ...) read in the pool as well: the
            # precheck here reads no file
            alone = [ref for job in chunk if shippable(job) is None for ref in job[3:] if ref is not None]
            workers.resolve_layouts(alone, cancelled)
            evaluate_spread(
                session, chunk, ex, workers.workers, counter.tick, cancelled, purpose, ready, leftover=workers
            )
        return [session.op_result(p, purpose=purpose) for p in pairs]
    workers = workers or os.cpu_count() or 1
    shared = current_shared_processes()
    if session.executor is None and shared is not None and workers > 1 and len(jobs) >= MIN_PAIRS_TO_SPREAD:
        # the command's worker processes read and compute; this process judges what comes back
        evaluate_spread(session, jobs, shared.executor(workers), workers, counter.tick, cancelled, purpose, ready)
        return [session.op_result(p, purpose=purpose) for p in pairs]
    with payloads_kept():  # a small tensor's payload comes with its header: read once, not twice
        heavy = _settle_without_reading(session, jobs, counter, cancelled, purpose)
        nbytes = sum(job[3].nbytes() + job[4].nbytes() for job, _pre in heavy)
        if session.executor is not None and heavy:
            _in_executor(session, session.executor, heavy, counter, cancelled, purpose)
        elif workers > 1 and len(heavy) > 1 and nbytes >= MIN_BYTES_FOR_PROCESSES:
            _in_executor(session, ProcessPool(workers), heavy, counter, cancelled, purpose)
        else:
            _here(session, heavy, counter, cancelled, purpose)
    return [session.op_result(p, purpose=purpose) for p in pairs]


def _settle_without_reading(
    session: Session,
    jobs: list[tuple[OpPair, InOut, int, TensorRef | None, TensorRef | None]],
    counter: _Progress,
    cancelled: Callable[[], bool] | None,
    purpose: Purpose,
) -> list[tuple[Job, Prechecked]]:
    """The jobs the precheck settles are stored; the others, with what the precheck found, are returned."""
    heavy: list[tuple[Job, Prechecked]] = []
    for job in jobs:
        if cancelled and cancelled():
            break
        pair, io, slot, r, t = job
        pre = session.precheck(pair, io, slot, r, t, purpose)
        if isinstance(pre, TensorResult):
            session.store(pair, r, t, pre)
            counter.tick()
        else:
            assert r is not None and t is not None  # precheck settles a one-sided pair with a TensorResult
            heavy.append(((pair, io, slot, r, t), pre))
    return heavy


def _here(
    session: Session,
    heavy: list[tuple[Job, Prechecked]],
    counter: _Progress,
    cancelled: Callable[[], bool] | None,
    purpose: Purpose,
) -> None:
    """The jobs computed in this process, HERE_SLICE at a time (small pairs together: smallpairs.py); the
    precheck's findings are used as they are (it is not run twice)."""
    for start in range(0, len(heavy), HERE_SLICE):
        if cancelled and cancelled():
            break
        part = heavy[start : start + HERE_SLICE]
        outcomes = compare_tensor_pairs([(job[3], job[4], pre[0]) for job, pre in part], session.kl)
        for (job, pre), (st, err) in zip(part, outcomes):
            _keep(session, job, pre, st, err, purpose)
            counter.tick()


def _in_executor(
    session: Session,
    executor: PairExecutor,
    heavy: list[tuple[Job, Prechecked]],
    counter: _Progress,
    cancelled: Callable[[], bool] | None,
    purpose: Purpose,
) -> None:
    jobs = [pair_job(i, job[3], job[4], pre[0]) for i, (job, pre) in enumerate(heavy)]
    for idx, st, err in executor.run(jobs, session.kl, cancelled):
        job, pre = heavy[idx]
        _keep(session, job, pre, st, err, purpose)
        counter.tick()


def _keep(session: Session, job: Job, pre: Prechecked, st: PairStats | None, err: str | None, purpose: Purpose) -> None:
    """One computed pair's result (or why it could not be read) judged and kept in the session."""
    pair, io, slot, r, t = job
    if st is None:
        res = session.read_failed(io, slot, r, t, err or "read failed", pre[1])
    else:
        res = session.finish(pair, io, slot, r, t, st, pre, purpose)
    session.store(pair, r, t, res)


class _Progress:
    def __init__(self, total: int, report: Callable[[int, int], None] | None):
        self.total, self.done, self.report = total, 0, report

    def tick(self) -> None:
        self.done += 1
        if self.report:
            self.report(self.done, self.total)
