"""A batch of many tensor pairs (a noisy scan's thousands of small ones) read and computed in the command's
local worker processes (the session's executor, core/io/executor.py): each file opened once there, its header and a small payload
in one read, the statistics of the small pairs computed together (smallpairs.py), and sent back as their
records with each file's layout. This process adopts the layouts, runs the same precheck on them (it reads
no file then) and judges. A worker's statistics are used only where this process's precheck asks for
statistics with the same tolerance the worker computed them with; any other pair is settled or computed
here, as in one process. The results, their order in the session and the reads booked are those of one
process (tests/core/compare/test_spread.py).

A noisy 3,000-kernel bisect spent half of its CPU time reading headers and payloads and computing the
statistics of 9,000 pairs of 256 elements, on one core; here that half runs on both cores while this
process judges what has come back.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Protocol

from dumptui.core.compare.ledger import Purpose
from dumptui.core.compare.metrics import ElementTolerance
from dumptui.core.compare.pairstats import PairStats
from dumptui.core.compare.processes import computed_on
from dumptui.core.compare.results import OpResult, TensorResult
from dumptui.core.compare.session import Prechecked, Session, pair_key
from dumptui.core.compare.smallpairs import compare_tensor_pairs
from dumptui.core.compare.verdict import Thresholds
from dumptui.core.graph.align import OpPair
from dumptui.core.io import dtypes
from dumptui.core.io.executor import BATCH, Cancel, Progress
from dumptui.core.io.npy import Layout, kept_for_reuse, payloads_kept, shared_layout
from dumptui.core.model.dump import InOut, TensorRef, WorkerSpec

Job = tuple[OpPair, InOut, int, "TensorRef | None", "TensorRef | None"]  # pair, io, slot, ref, target
# Tensor pairs a worker reads and computes at a time: the executor's batch policy (about `per_worker` tasks
# each), by count only: a pair's bytes are known once the worker has read its headers. Each submit costs this
# process a wait (the pool's threads take the interpreter lock to send it).
IN_FLIGHT = 3  # chunks submitted per worker ahead of the one this process judges
# (index in the chunk, tolerance used, statistics or None, why the read failed or None)
Computed = tuple[int, ElementTolerance, "PairStats | None", "str | None"]
# More work on a chunk's files in its worker (Alongside): a module-level function, called there as
# fn(argument, the chunk's tensors, their statistics); its argument; the positions of the shipped pairs it reads
AlongTask = tuple[Callable[[Any, list[tuple[TensorRef, TensorRef]], list["PairStats | None"]], Any], Any, list[int]]
ChunkResult = tuple[list[tuple["Layout | None", "Layout | None"]], list[Computed], Any]
Chunk = tuple[Thresholds, bool, list[tuple[WorkerSpec, WorkerSpec]], "AlongTask | None"]


class Alongside(Protocol):
    """Work a batch's caller wants done with some of the files a chunk's worker has just read (a scan's
    replays, the preconditions' rounding check): done in the same task, after the chunk's statistics, those
    files' payloads kept for it (npy.kept_for_reuse), so that none is opened twice nor read in this process."""

    def task(self, jobs: list[Job]) -> AlongTask | None:
        """The work for a chunk whose shipped jobs are `jobs` (in the worker's order), or None: none."""

    def got(self, jobs: list[Job], result: Any) -> None:
        """What the work gave for those jobs, here, before the chunk's pairs are judged."""


def shippable(job: Job) -> tuple[WorkerSpec, WorkerSpec] | None:
    """Both tensors as a worker makes them, or None when this process must settle or read the pair itself."""
    _pair, _io, _slot, r, t = job
    if r is None or t is None:
        return None
    rs, ts = r.worker_spec(), t.worker_spec()
    return None if rs is None or ts is None else (rs, ts)


def read_and_compare(chunk: Chunk) -> ChunkResult:
    """In a worker process: each pair's layouts resolved (the npy headers read, each file's small payload
    kept from the same read), and the statistics of the pairs the precheck would have computed (both
    readable, both real or both complex, as many elements), with the tolerance it would have chosen; then the
    caller's work alongside (Alongside), if any, and its result."""
    thresholds, kl, items, along = chunk
    layouts: list[tuple[Layout | None, Layout | None]] = []
    refs: list[tuple[TensorRef, TensorRef]] = []
    jobs: list[tuple[TensorRef, TensorRef, ElementTolerance]] = []
    where: list[int] = []
    reread = [spec[0] for k in along[2] for spec in items[k]] if along is not None else []
    extra = None
    with payloads_kept(), kept_for_reuse(reread):
        for k, (rs, ts) in enumerate(items):
            (r, read_r), (t, read_t) = TensorRef.from_worker_spec(rs), TensorRef.from_worker_spec(ts)
            layouts.append((read_r, read_t))
            refs.append((r, t))
            if r.problem or t.problem:
                continue
            if dtypes.is_complex(r.dtype) != dtypes.is_complex(t.dtype) or (r.size or 0) != (t.size or 0):
                continue
            jobs.append((r, t, thresholds.tolerance(r.dtype, t.dtype)))
            where.append(k)
        outcomes = compare_tensor_pairs(jobs, kl)
        if along is not None:
            stats: list[PairStats | None] = [None] * len(items)
            for k, (st, _err) in zip(where, outcomes):
                stats[k] = st
            extra = along[0](along[1], refs, stats)
    return layouts, [(k, tol, st, err) for k, (_r, _t, tol), (st, err) in zip(where, jobs, outcomes)], extra


def evaluate_spread(
    session: Session,
    jobs: list[Job],
    counter: Progress,
    cancel: Cancel | None,
    purpose: Purpose,
    ready: Callable[[OpResult], None] | None = None,
    leftover: bool = False,
    along: Alongside | None = None,
) -> None:
    """Every job's result stored in the session, as batch.evaluate_all stores them in one process: the pairs
    the precheck settles first, in job order, then the computed ones in job order. The chunks run on the
    session's executor (a local one: its workers read the files TensorRefs describe).

    `ready`: given each op's result as soon as every tensor pair of the op is known (settled here, or computed
    by a worker and judged here), before it is stored: the caller's work on it (a scan measures the op's local
    error) runs while the workers compute the next chunks, not after them all. Never for an op with a pair left
    to compute here at the end, or a pair that two jobs share (the one stored would be the other's).

    `leftover`: the pairs the workers did not compute are computed on the executor at the end too (the app:
    never the process that draws the UI); else here.

    `along`: more work on some of a chunk's files, done by its worker after the chunk's statistics."""
    ex = session.executor
    size = BATCH.task_items(len(jobs), ex.workers)
    chunks = [jobs[i : i + size] for i in range(0, len(jobs), size)]
    shipped: list[list[int]] = []  # per chunk: the positions of its shipped jobs

    def tasks() -> Iterator[Chunk]:
        for chunk in chunks:  # made as the executor takes them: while the first chunks are computed
            items, positions = [], []
            for k, job in enumerate(chunk):
                spec = shippable(job)
                if spec is not None:
                    items.append(spec)
                    positions.append(k)
            shipped.append(positions)
            work = along.task([chunk[k] for k in positions]) if along is not None else None
            yield session.thresholds, session.kl, items, work

    # (job, precheck, result judged from a worker's statistics | None: computed or failed here at the end)
    heavy: list[tuple[Job, Prechecked, TensorResult | None, str | None]] = []
    early = EarlyResults(session, jobs) if ready is not None else None
    for c, (layouts, computed, extra) in ex.map(
        read_and_compare, tasks(), cancel=cancel, ordered=True, ahead=IN_FLIGHT * ex.workers
    ):
        chunk = chunks[c]
        _adopt_layouts(chunk, layouts, shipped[c])
        if along is not None and extra is not None:
            along.got([chunk[k] for k in shipped[c]], extra)
        got: dict[int, Computed] = {shipped[c][item[0]]: item for item in computed}
        heavy += _judge_chunk(session, chunk, got, counter.tick, early, purpose)
        if early is not None and ready is not None:
            for res in early.complete():
                ready(res)
    _finish_here(session, heavy, counter.tick, purpose, leftover, cancel)


def _adopt_layouts(chunk: list[Job], layouts: list[tuple[Layout | None, Layout | None]], positions: list[int]) -> None:
    """The layouts a worker read, adopted by the chunk's tensors. A chunk's layouts come as a few objects (pickle
    sends an object used twice once): each made the shared one once."""
    mine_of: dict[int, Layout] = {}
    for (read_r, read_t), k in zip(layouts, positions):
        _pair, _io, _slot, r, t = chunk[k]
        assert r is not None and t is not None  # shipped jobs have both sides
        for ref, read in ((r, read_r), (t, read_t)):
            if read is not None:
                kept = mine_of.get(id(read))
                if kept is None:
                    kept = mine_of[id(read)] = shared_layout(read)
                ref.adopt_layout(kept)


def _judge_chunk(
    session: Session,
    chunk: list[Job],
    got: dict[int, Computed],
    tick: Callable[[], None],
    early: EarlyResults | None,
    purpose: Purpose,
) -> list[tuple[Job, Prechecked, TensorResult | None, str | None]]:
    """A chunk's jobs in order: those the precheck settles stored now; the others judged from the statistics a
    worker computed, or left to compute here at the end (returned, in job order, for _finish_here)."""
    heavy: list[tuple[Job, Prechecked, TensorResult | None, str | None]] = []
    for k, job in enumerate(chunk):
        pair, io, slot, r, t = job
        pre = session.precheck(pair, io, slot, r, t, purpose)
        if isinstance(pre, TensorResult):
            session.store(pair, r, t, pre)
            tick()
            if early is not None:
                early.known(pair)
            continue
        assert r is not None and t is not None  # precheck settles a one-sided pair with a TensorResult
        mine = got.get(k)
        if mine is not None and mine[1] == pre[0] and mine[2] is not None:
            judged = session.finish(pair, io, slot, r, t, mine[2], pre, purpose)
            heavy.append((job, pre, judged, None))
            tick()
            if early is not None:
                early.known(pair, pair_key(r, t), judged)
        else:  # not computed there (or its read failed there): here, at the end, as in one process
            heavy.append((job, pre, None, None if mine is None else mine[3]))
            if early is not None:
                early.left_here(pair)
    return heavy


class EarlyResults:
    """Which ops of a batch have every tensor pair known, and their results (before they are stored, in a
    spread batch; as soon as their last pair is kept, on the big pairs' path: batch._in_executor)."""

    def __init__(self, session: Session, jobs: list[Job]):
        self.session = session
        self.left: dict[int, int] = {}  # op pair index -> its jobs not known yet
        seen: dict[int, int] = {}
        for pair, _io, _slot, r, t in jobs:
            self.left[pair.index] = self.left.get(pair.index, 0) + 1
            key = pair_key(r, t)
            seen[key] = seen.get(key, 0) + 1
        shared = {key for key, n in seen.items() if n > 1}
        self.never = {pair.index for pair, _io, _slot, r, t in jobs if pair_key(r, t) in shared}
        self.computed: dict[int, TensorResult] = {}  # pair_key -> judged here from a worker's statistics
        self._complete: list[OpPair] = []

    def known(self, pair: OpPair, key: int = 0, computed: TensorResult | None = None) -> None:
        """One job of `pair` known: stored in the session, or `computed` (not stored yet) for its pair `key`."""
        if computed is not None:
            self.computed[key] = computed
        self.left[pair.index] -= 1
        if self.left[pair.index] == 0 and pair.index not in self.never:
            self._complete.append(pair)

    def left_here(self, pair: OpPair) -> None:
        self.never.add(pair.index)
        self.left[pair.index] -= 1

    def complete(self) -> list[OpResult]:
        """The results of the ops completed since the last call."""
        out = []
        for pair in self._complete:
            ins: list[TensorResult] = []
            outs: list[TensorResult] = []
            for io, _slot, r, t in self.session.tensor_pairs(pair):
                res = self.session.cached(r, t) or self.computed.get(pair_key(r, t))
                if res is None:  # not a job of this batch and not known before it: left to the caller
                    break
                (ins if io == "input" else outs).append(res)
            else:
                out.append(self.session.assembled(pair, ins, outs))
        self._complete.clear()
        return out


def _both(job: Job) -> tuple[TensorRef, TensorRef]:
    """A heavy job's two tensors (a job reaches the heavy list with both: the precheck sets the others aside)."""
    r, t = job[3], job[4]
    assert r is not None and t is not None
    return r, t


def _finish_here(
    session: Session,
    heavy: list[tuple[Job, Prechecked, TensorResult | None, str | None]],
    tick: Callable[[], None],
    purpose: Purpose,
    leftover: bool = False,
    cancel: Cancel | None = None,
) -> None:
    """The pairs left to this process computed (a read that failed in a worker is tried again here: which
    file fails, and why, is found and said as in one process), then every computed pair stored in job order.
    `leftover`: computed on the session's executor instead (cancelled there: the pairs it did not compute are
    not stored)."""
    todo = [i for i, (_job, _pre, res, _err) in enumerate(heavy) if res is None]
    done: dict[int, tuple[PairStats | None, str | None]] = {}
    if leftover and todo:
        pairs = [(*_both(heavy[i][0]), heavy[i][1][0]) for i in todo]
        for k, st, err in computed_on(session.executor, pairs, session.kl, cancel):
            done[todo[k]] = (st, err)
    else:
        outcomes = compare_tensor_pairs([(*_both(heavy[i][0]), heavy[i][1][0]) for i in todo], session.kl)
        done = dict(zip(todo, outcomes))
    for i, (job, pre, res, _err) in enumerate(heavy):
        pair, io, slot, r, t = job
        assert r is not None and t is not None
        if res is None:
            if i not in done:  # cancelled where it was computed: not stored, as a cancelled batch leaves it
                continue
            st, err = done[i]
            if st is None:
                res = session.read_failed(io, slot, r, t, err or "read failed", pre[1])
            else:
                res = session.finish(pair, io, slot, r, t, st, pre, purpose)
            tick()
        session.store(pair, r, t, res)
