"""Comparing many tensor pairs at once: every pair of an alignment for `compare` and the app's statistics.

Pairs decided without reading (one-sided, unreadable, statistic-only) are settled first; the rest are
computed by the session's executor (core/io/executor.py): on a Dask cluster (`daskexec.py`), on the worker
processes of a command or the app (read there too: spread.py), or here when there are too few bytes to pay for
sending them. Results land in the session's cache, so a later bisection reuses them.
"""

from __future__ import annotations

from collections.abc import Callable

from dumptui.core.compare.ledger import Purpose
from dumptui.core.compare.pairstats import PairStats
from dumptui.core.compare.processes import computed_or_same_on, resolve_layouts_of
from dumptui.core.compare.results import OpResult, TensorResult
from dumptui.core.compare.session import Prechecked, Session, pair_key
from dumptui.core.compare.smallpairs import compare_tensor_pairs
from dumptui.core.compare.spread import Alongside, EarlyResults, evaluate_spread, shippable
from dumptui.core.graph.align import OpPair
from dumptui.core.graph.dataflow import OriginKind, origins
from dumptui.core.io.executor import MIN_BYTES_FOR_PROCESSES, Cancel, Executor, Progress
from dumptui.core.io.npy import payloads_kept, shared_layout
from dumptui.core.model.dump import INPUT, OUTPUT, InOut, TensorRef

Job = tuple[OpPair, InOut, int, TensorRef, TensorRef]  # pair, io, slot, ref, target (both present)
# Tensor pairs handed to an offloading executor (the app's) at a time: enough tasks to keep every worker busy,
# few enough that their specs stay a few MB.
OFFLOAD_SLICE_JOBS = 4096
# From this many tensor pairs to compute, a batch on local worker processes is read and computed there
# (spread.py), whatever their bytes: a noisy scan's thousands of small pairs.
MIN_PAIRS_TO_SPREAD = 512
HERE_SLICE = 256  # tensor pairs computed here between looks at the cancel and progress reports


def evaluate_all(
    session: Session,
    pairs: list[OpPair] | None = None,
    progress: Callable[[int, int], None] | None = None,
    cancel: Cancel | None = None,
    purpose: Purpose = Purpose.COMPARE,
    ready: Callable[[OpResult], None] | None = None,
    along: Alongside | None = None,
) -> list[OpResult]:
    """Every tensor pair of `pairs` (default: all), then each op's result; reads are booked under `purpose`.
    The work runs on the session's executor: an offloading one (the app's) gets every file read, headers
    included (its UI process keeps only the verdicts' bookkeeping). `ready`: where the workers compute, told of
    each op whose result is known before the batch ends (spread.py's many small pairs, or a few big ones).
    `along`: where the workers read and compute many small pairs (spread.py), work they do on the files they
    have just read (spread.Alongside; elsewhere it is not done: its caller does it without)."""
    pairs = session.alignment.pairs if pairs is None else pairs
    ex = session.executor
    jobs = [
        (p, io, slot, r, t) for p in pairs for io, slot, r, t in session.tensor_pairs(p) if session.cached(r, t) is None
    ]
    counter = Progress(len(jobs), progress)
    if ex.offload:
        # a slice at a time: a job's specs (paths, shapes, headers to read) exist only while its slice runs
        # (all of a large pair's at once raised the app's peak). Each slice as a command's
        # scan runs (spread.py): the workers open each file once, for its header and its statistics,
        # while this process judges what came back (the headers first, then the pairs, was two opens a file
        # and this process and the pool taking turns); what they leave is computed there too.
        for start in range(0, len(jobs), OFFLOAD_SLICE_JOBS):
            if cancel is not None and cancel.is_set():
                break
            chunk = jobs[start : start + OFFLOAD_SLICE_JOBS]
            # the headers of the tensors no worker compares (one side only, ...) read there as well: the
            # precheck here reads no file
            alone = [ref for job in chunk if shippable(job) is None for ref in job[3:] if ref is not None]
            resolve_layouts(ex, alone, cancel)
            evaluate_spread(session, chunk, counter, cancel, purpose, ready, leftover=True, along=along)
        return [session.op_result(p, purpose=purpose) for p in pairs]
    if ex.local and ex.workers > 1 and len(jobs) >= MIN_PAIRS_TO_SPREAD:
        # the workers read and compute; this process judges what comes back
        evaluate_spread(session, jobs, counter, cancel, purpose, ready, along=along)
        return [session.op_result(p, purpose=purpose) for p in pairs]
    with payloads_kept():  # a small tensor's payload comes with its header: read once, not twice
        heavy = _settle_without_reading(session, jobs, counter, cancel, purpose)
        nbytes = sum(job[3].nbytes() + job[4].nbytes() for job, _pre in heavy)
        if heavy and (not ex.local or (ex.workers > 1 and len(heavy) > 1 and nbytes >= MIN_BYTES_FOR_PROCESSES)):
            _in_executor(session, ex, heavy, counter, cancel, purpose, ready)
        else:
            _here(session, heavy, counter, cancel, purpose)
    return [session.op_result(p, purpose=purpose) for p in pairs]


def resolve_layouts(ex: Executor, refs: list[TensorRef], cancel: Cancel | None = None) -> None:
    """The header reads of `refs` made by the executor's workers (`TensorRef.deferred_layout`); each layout is
    kept on its ref, so what the caller decides next (shapes, dtypes, tolerances) reads no file here."""
    calls = [(ref, call) for ref in refs if (call := ref.deferred_layout()) is not None]
    for i, layout in ex.map_batched(resolve_layouts_of, [call for _ref, call in calls], cancel=cancel):
        calls[i][0].adopt_layout(shared_layout(layout))


def _settle_without_reading(
    session: Session,
    jobs: list[tuple[OpPair, InOut, int, TensorRef | None, TensorRef | None]],
    counter: Progress,
    cancel: Cancel | None,
    purpose: Purpose,
) -> list[tuple[Job, Prechecked]]:
    """The jobs the precheck settles are stored; the others, with what the precheck found, are returned."""
    heavy: list[tuple[Job, Prechecked]] = []
    for job in jobs:
        if cancel is not None and cancel.is_set():
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
    counter: Progress,
    cancel: Cancel | None,
    purpose: Purpose,
) -> None:
    """The jobs computed in this process, HERE_SLICE at a time (small pairs together: smallpairs.py); the
    precheck's findings are used as they are (it is not run twice)."""
    for start in range(0, len(heavy), HERE_SLICE):
        if cancel is not None and cancel.is_set():
            break
        part = heavy[start : start + HERE_SLICE]
        outcomes = compare_tensor_pairs([(job[3], job[4], pre[0]) for job, pre in part], session.kl)
        for (job, pre), (st, err) in zip(part, outcomes):
            _keep(session, job, pre, st, err, purpose)
            counter.tick()


def _in_executor(
    session: Session,
    ex: Executor,
    heavy: list[tuple[Job, Prechecked]],
    counter: Progress,
    cancel: Cancel | None,
    purpose: Purpose,
    ready: Callable[[OpResult], None] | None = None,
) -> None:
    """The jobs computed on the executor's workers, kept as they finish. `ready`: told of each op whose tensor
    pairs are all known once its last job is kept (a scan measures it and sends its replay while the workers
    compute the next pairs: the 0.6 GB conv compare's replays all ran after its compares, 0.2 s of its wall
    time); the jobs then go in op order."""
    pairs = [(job[3], job[4], pre[0]) for job, pre in heavy]
    early = EarlyResults(session, [job for job, _pre in heavy]) if ready is not None else None
    copies = _copies(session, heavy)
    known: dict[int, tuple[PairStats | None, str | None]] = {}  # a copied pair's outcome, by its index
    waits: dict[int, list[int]] = {}  # a copied pair's index -> the copies that wait for its outcome
    again: list[int] = []  # copies of a pair whose read failed: computed here at the end, as themselves

    def kept(idx: int, st: PairStats | None, err: str | None) -> None:
        job, pre = heavy[idx]
        _keep(session, job, pre, st, err, purpose)
        counter.tick()
        if early is not None and ready is not None:
            early.known(job[0])
            for res in early.complete():
                ready(res)

    def copied(idx: int, outcome: tuple[PairStats | None, str | None]) -> None:
        st, _err = outcome
        if st is None:
            again.append(idx)
        else:
            kept(idx, st.copy(), None)

    copied_from = set(copies.values())
    in_order = ready is not None
    for idx, st, err, same, sampled in computed_or_same_on(ex, pairs, copies, session.kl, cancel, in_order):
        if sampled is not None:  # kept for the op's replay, which then reads neither output file again
            session.keep_sampled(pairs[idx][0], pairs[idx][1], sampled)
        if same:  # the same bytes as the pair it copies: that pair's statistics, once they are known
            source = copies[idx]
            if source in known:
                copied(idx, known[source])
            else:
                waits.setdefault(source, []).append(idx)
            continue
        if idx in copied_from:
            known[idx] = (st, err)
        kept(idx, st, err)
        for waiting_copy in waits.pop(idx, []):
            copied(waiting_copy, (st, err))
    for idx, (st, err) in zip(again, compare_tensor_pairs([pairs[i] for i in again], session.kl)):
        kept(idx, st, err)


# An input pair of at least this many bytes whose files may be copies of its producer's output files (each
# side) is first compared with them byte for byte (processes.run_units): reading two files again
# costs a fraction of computing a big pair's statistics; below this, it costs as much.
COPIES_FROM = 1 << 20


def _copies(session: Session, heavy: list[tuple[Job, Prechecked]]) -> dict[int, int]:
    """heavy index -> the heavy index of the pair its files may be copies of: an input pair fed, on each side,
    by the same output of the same op pair, that output pair computed in this batch with the same tolerance,
    of the same dtypes and shapes (so equal bytes give equal statistics, its maximum at the same place)."""
    outputs = {pair_key(job[3], job[4]): i for i, (job, _pre) in enumerate(heavy) if job[1] == OUTPUT}
    out: dict[int, int] = {}
    for i, ((pair, io, slot, r, t), pre) in enumerate(heavy):
        if io != INPUT or r.nbytes() + t.nbytes() < COPIES_FROM:
            continue
        o_ref, o_target = origins(session.ref, session.target, session.alignment, pair, slot)
        p = o_ref.pair
        if (
            o_ref.kind != OriginKind.PAIR
            or o_target.kind != OriginKind.PAIR
            or p is None
            or o_target.pair is not p
            or o_ref.out_slot != o_target.out_slot
            or p.ref is None
            or p.target is None
        ):
            continue
        src_r, src_t = p.ref.outputs.get(o_ref.out_slot), p.target.outputs.get(o_ref.out_slot)
        j = outputs.get(pair_key(src_r, src_t)) if src_r is not None and src_t is not None else None
        if j is None or src_r is None or src_t is None or src_r is r or src_t is t or heavy[j][1][0] != pre[0]:
            continue
        if (src_r.dtype, src_t.dtype, src_r.shape, src_t.shape) == (r.dtype, t.dtype, r.shape, t.shape):
            out[i] = j
    return out


def _keep(session: Session, job: Job, pre: Prechecked, st: PairStats | None, err: str | None, purpose: Purpose) -> None:
    """One computed pair's result (or why it could not be read) judged and kept in the session."""
    pair, io, slot, r, t = job
    if st is None:
        res = session.read_failed(io, slot, r, t, err or "read failed", pre[1])
    else:
        res = session.finish(pair, io, slot, r, t, st, pre, purpose)
    session.store(pair, r, t, res)
