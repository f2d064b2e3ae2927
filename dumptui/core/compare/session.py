"""A comparison session: two dumps, their alignment, and the cached result of every tensor pair compared.

Everything that reads tensor data goes through `Session.tensor_result` (or `identical`, a byte compare), which
caches by tensor pair and books the read in the `ReadLedger`, so bisection can prove how little it read.
Verdict rules live in `verdict.py`; running many compares at once (processes) in `batch.py`. Safe to call
from worker threads.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from functools import partial
from typing import cast

import numpy as np

from dumptui.core.compare.hints import Hint, attribute_diff, hints_for
from dumptui.core.compare.ledger import Purpose, ReadLedger
from dumptui.core.compare.metrics import ElementTolerance, compare_tensors, side_stats
from dumptui.core.compare.pairstats import PairStats, SideStats
from dumptui.core.compare.results import OpResult, TensorResult, op_verdict
from dumptui.core.compare.samefiles import SameFiles
from dumptui.core.compare.verdict import (
    BUILTIN_IGNORES,
    DTYPE_MISMATCH,
    EQUAL,
    IGNORED,
    NOT_COMPARABLE,
    ONLY_REF,
    ONLY_TARGET,
    SHAPE_MISMATCH,
    UNREADABLE,
    IgnoreMatcher,
    IgnoreRule,
    Thresholds,
    Verdict,
    compare_statistics,
    judge,
)
from dumptui.core.graph.align import Alignment, OpPair, align
from dumptui.core.graph.dataflow import unpaired_neighbour_types
from dumptui.core.io import dtypes
from dumptui.core.io.executor import Executor, InProcess
from dumptui.core.io.fault import Fault, Flaw, of_error
from dumptui.core.model import recordstats
from dumptui.core.model.dump import INPUT, OUTPUT, Dump, InOut, TensorRef
from dumptui.core.model.reason import Reason, Said, Why, because
from dumptui.core.model.recordstats import RecordStats
from dumptui.core.model.slotmap import EMPTY, slots_of_both

TensorPair = tuple[InOut, int, "TensorRef | None", "TensorRef | None"]  # io, slot, ref, target
Prechecked = tuple[ElementTolerance, list[Said], "Reason | None"]  # tolerance, notes, ignore reason


SAMPLED_KEPT = 256  # big output pairs whose sampled values wait for their replay (32 KB each in float32)
# the reason of a one-sided tensor pair, by whether the reference lacks it: two values, one object each (a
# session keeps a result per pair: 2,400 of them on the 20,000-op demo pair)
_NO_SUCH_TENSOR = {lacks: because(Why.NO_SUCH_TENSOR, lacks) for lacks in (False, True)}


def pair_key(ref: TensorRef | None, target: TensorRef | None) -> int:
    """The cache key of a tensor pair: both objects' ids in one int (a tuple of two ints took three objects
    per cached result)."""
    return id(ref) << 64 | id(target)


class Session:
    def __init__(
        self,
        ref: Dump,
        target: Dump,
        thresholds: Thresholds | None = None,
        ignores: Iterable[IgnoreRule] = (),
        forced: list[tuple[str, str]] | None = None,
        alignment: Alignment | None = None,
        kl: bool = True,
        remember_same_files: bool = False,
    ):
        self.ref = ref
        self.target = target
        self.thresholds = thresholds or Thresholds()
        self.ignores = list(BUILTIN_IGNORES) + list(ignores)
        self._ignore_matcher = IgnoreMatcher(self.ignores)
        self.alignment = alignment or align(ref, target, forced)
        self.kl = kl
        self.ledger = ReadLedger()
        self.same_files = SameFiles(ref.root, target.root, remember=remember_same_files)
        # where the work of many tensor pairs and replays runs (core/io/executor.py): given by the entry point
        # (a command's processes, the app's, a Dask cluster); here by default
        self.executor: Executor = InProcess()
        self._cache: dict[int, TensorResult] = {}  # by pair_key(ref, target)
        # (ref path, target path) of a big output pair -> its values at a replay's sampled positions, as the
        # worker that computed its statistics read them (processes.run_units), until its replay takes them
        self._sampled: dict[tuple[str, str], tuple[np.ndarray, np.ndarray]] = {}
        # an op's hints depend only on the two dumps: made once (a scan asks for every op's result twice)
        # (the pair itself kept with them: its id cannot be another pair's while it is a key)
        self._hints: dict[int, tuple[OpPair, tuple[Hint, ...]]] = {}
        self._lock = threading.Lock()
        # op pair key -> (floor, precision kind) where a precision kind without a dtype of its own sets an op's
        # floor: an op that uses an int8 weight (noise.quantisation_floor), found by the preconditions
        self.op_floors: dict[str, tuple[float, str]] = {}
        # tensor pairs compared against a transformed reference whose verdict is final: a wrongly folded or
        # quantised weight stays diverged (no "carried precision noise" in context), and is the preconditions'
        self.final: set[int] = set()
        # training dumps: (the earlier step, the largest relative error seen in it) when this rank already
        # differed one step before: its optimizer updated these weights with that error (ranks/allunits.py)
        self.carried_from_step: tuple[str, float] | None = None
        # the statistics records of the results cached packed (pairstats.PairStats.pack): the app's session,
        # which keeps every tensor pair's record for as long as it runs (a record of ~50 float64 values a
        # quarter of its size; a field then reads a few hundred nanoseconds slower)
        self.compact_records = False

    @property
    def tensors_read(self) -> int:
        return self.ledger.count

    # ------------------------------------------------------------------ tensors
    @staticmethod
    def tensor_pairs(pair: OpPair, io: InOut | None = None) -> list[TensorPair]:
        out: list[TensorPair] = []
        ref, target = pair.ref, pair.target
        for side in (INPUT, OUTPUT):
            if io and side != io:
                continue
            r = (ref.inputs if side == INPUT else ref.outputs) if ref else EMPTY
            t = (target.inputs if side == INPUT else target.outputs) if target else EMPTY
            r_get, t_get = r.get, t.get
            out.extend([(side, slot, r_get(slot), t_get(slot)) for slot in slots_of_both(r, t)])
        return out

    def ignore_reason(self, pair: OpPair, io: InOut, slot: int) -> Reason | None:
        op = pair.ref or pair.target
        return self._ignore_matcher.reason(op, io, slot) if op is not None else None

    def results(self) -> list[TensorResult]:
        """Every tensor pair compared so far."""
        with self._lock:
            return list(self._cache.values())

    def cached(self, ref: TensorRef | None, target: TensorRef | None) -> TensorResult | None:
        return self._cache.get(pair_key(ref, target))

    def tensor_result(
        self,
        pair: OpPair,
        io: InOut,
        slot: int,
        ref: TensorRef | None,
        target: TensorRef | None,
        purpose: Purpose = Purpose.COMPARE,
    ) -> TensorResult:
        key = pair_key(ref, target)
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        return self.store(pair, ref, target, self._evaluate(pair, io, slot, ref, target, purpose))

    def store(self, pair: OpPair, ref: TensorRef | None, target: TensorRef | None, res: TensorResult) -> TensorResult:
        """Cache a result (the first one stored for a tensor pair wins) and return the cached one."""
        if self.compact_records and res.stats is not None:
            res.stats.pack()
        with self._lock:
            return self._cache.setdefault(pair_key(ref, target), res)

    def _evaluate(
        self, pair: OpPair, io: InOut, slot: int, ref: TensorRef | None, target: TensorRef | None, purpose: Purpose
    ) -> TensorResult:
        pre = self.precheck(pair, io, slot, ref, target, purpose)
        if isinstance(pre, TensorResult):
            return pre
        assert ref is not None and target is not None  # precheck settles one-sided pairs
        tol, notes, ignored = pre
        try:
            st = compare_tensors(ref, target, tol, kl=self.kl)
        except (OSError, ValueError) as e:
            return self.read_failed(io, slot, ref, target, f"read failed: {e}", notes)
        return self.finish(pair, io, slot, ref, target, st, pre, purpose)

    @staticmethod
    def read_failed(
        io: InOut, slot: int, ref: TensorRef, target: TensorRef, reason: str, notes: list[Said]
    ) -> TensorResult:
        """A pair whose values could not be read although their headers could: the file that fails is found
        and marked unreadable with the reason, so that it is listed with its path wherever damaged files are."""
        failed = []
        for side, t in (("ref", ref), ("target", target)):
            try:
                next(iter(t.chunks(1 << 16)), None)
            except (OSError, ValueError) as e:
                t.refuse(Fault(Flaw.READ_FAILED, (of_error(e),)))
                failed.append(f"{side}: read failed: {e}")
        return TensorResult(io, slot, ref, target, UNREADABLE, "; ".join(failed) or reason, notes=notes)

    def keep_sampled(self, ref: TensorRef, target: TensorRef, values: tuple[np.ndarray, np.ndarray]) -> None:
        """An output pair's values at a replay's sampled positions, kept for that replay (take_sampled): the
        newest SAMPLED_KEPT pairs (a scan replays an op moments after its pairs are known)."""
        with self._lock:
            self._sampled[(ref.path, target.path)] = values
            while len(self._sampled) > SAMPLED_KEPT:
                del self._sampled[next(iter(self._sampled))]

    def take_sampled(self, ref: TensorRef, target: TensorRef) -> tuple[np.ndarray | None, np.ndarray | None]:
        """The values keep_sampled kept for this output pair, given once; (None, None) when there are none."""
        with self._lock:
            got = self._sampled.pop((ref.path, target.path), None)
        return (None, None) if got is None else got

    def precheck(
        self,
        pair: OpPair,
        io: InOut,
        slot: int,
        ref: TensorRef | None,
        target: TensorRef | None,
        purpose: Purpose = Purpose.COMPARE,
    ) -> TensorResult | Prechecked:
        """Everything decided without reading tensor values: a final TensorResult (statistic-only pairs are
        compared here, on their statistics), or (tolerance, notes, ignored) for a pair whose statistics must
        be computed."""
        if ref is None or target is None:
            return TensorResult(
                io,
                slot,
                ref,
                target,
                ONLY_TARGET if ref is None else ONLY_REF,
                _NO_SUCH_TENSOR[ref is None],
            )
        ignored = self.ignore_reason(pair, io, slot)
        r_layout = ref.layout() if ref.has_data else None
        t_layout = target.layout() if target.has_data else None
        notes: list[Said] = []
        problems: list[tuple[str, Fault]] = []
        for side, lay in (("ref", r_layout), ("target", t_layout)):
            if lay is not None and (lay.repaired or lay.problem):  # rare: most pairs skip both lists' work
                if lay.repaired:
                    notes.append(because(Why.REPAIRED, side, lay.repaired))
                if lay.problem:
                    problems.append((side, lay.problem))
        if problems:
            return TensorResult(
                io,
                slot,
                ref,
                target,
                IGNORED if ignored else UNREADABLE,
                ignored or because(Why.UNREADABLE_SIDES, problems),
                notes=notes,
            )
        if not ref.has_data or not target.has_data:
            return self._evaluate_statistics(pair, io, slot, ref, target, ignored, notes, purpose)
        rs, ts = ref.shape or (), target.shape or ()
        rn, tn = ref.size or 0, target.size or 0
        if dtypes.is_complex(ref.dtype) != dtypes.is_complex(target.dtype):
            return TensorResult(
                io,
                slot,
                ref,
                target,
                IGNORED if ignored else DTYPE_MISMATCH,
                ignored or because(Why.DTYPES_INCOMPARABLE, ref.dtype, target.dtype),
                notes=notes,
            )
        if rn != tn:
            return TensorResult(
                io,
                slot,
                ref,
                target,
                IGNORED if ignored else SHAPE_MISMATCH,
                ignored or because(Why.SHAPES_INCOMPARABLE, tuple(rs), tuple(ts), rn, tn),
                notes=notes,
            )
        if ref.dtype != target.dtype:
            notes.append(because(Why.DTYPES_DIFFER, ref.dtype, target.dtype))
        return self.thresholds.tolerance(ref.dtype, target.dtype), notes, ignored

    def finish(
        self,
        pair: OpPair,
        io: InOut,
        slot: int,
        ref: TensorRef,
        target: TensorRef,
        st: PairStats,
        pre: Prechecked,
        purpose: Purpose,
    ) -> TensorResult:
        """The verdict of computed statistics (here or in a worker process); books the read."""
        tol, notes, ignored = pre
        self.ledger.book(purpose, pair.key, io, slot)
        tv = judge(st, self.thresholds, *self.thresholds.floor(ref.dtype, target.dtype))
        verdict, reason = tv.verdict, cast(Said, tv.reason)
        rs, ts = ref.shape or (), target.shape or ()
        if tuple(rs) != tuple(ts):
            notes = [*notes, because(Why.SHAPES_DIFFER_NOTE, tuple(rs), tuple(ts))]
            if verdict != EQUAL:
                verdict, reason = SHAPE_MISMATCH, because(Why.SHAPES_DIFFER, tuple(rs), tuple(ts), reason)
        if ignored:
            verdict, reason = IGNORED, ignored
        return TensorResult(io, slot, ref, target, verdict, reason, st, tol, notes)

    def _evaluate_statistics(
        self,
        pair: OpPair,
        io: InOut,
        slot: int,
        ref: TensorRef,
        target: TensorRef,
        ignored: Reason | None,
        notes: list[Said],
        purpose: Purpose,
    ) -> TensorResult:
        """Statistic-only dumps: compare max/min/mean/L2 (a weaker check, and said so)."""
        try:
            rstat = ref.stats if not ref.has_data else _stats_dict(side_stats(ref))
            tstat = target.stats if not target.has_data else _stats_dict(side_stats(target))
        except (OSError, ValueError) as e:
            return TensorResult(io, slot, ref, target, UNREADABLE, f"read failed: {e}", notes=notes)
        self.ledger.book(purpose, pair.key, io, slot)
        reason: Reason
        verdict, reason, differences = compare_statistics(
            rstat or {}, tstat or {}, self.thresholds.floor(ref.dtype, target.dtype)[0], ref.size
        )
        if ignored:
            verdict, reason = IGNORED, ignored
        rel: Mapping[str, float | None] = differences
        if tuple(differences) == recordstats.KEYS:  # kept for the session, one per pair: packed (recordstats.py)
            mx, mn, mean, l2 = differences.values()
            rel = RecordStats(recordstats.pack((mx, mn, mean, l2)))
        notes.append(because(Why.ON_STATISTICS))
        return TensorResult(
            io,
            slot,
            ref,
            target,
            verdict,
            because(Why.STATISTICS_ONLY, reason),
            notes=notes,
            statistics_only=True,
            stat_rel=rel,
        )

    def substitute(self, res: TensorResult, final: bool = False) -> TensorResult:
        """Put a result computed elsewhere in place of the cached one (a tensor compared with the reference
        transformed as the target's compiler transformed it: a folded or quantised weight, a folded output).
        `final`: no verdict in context replaces it."""
        key = pair_key(res.ref, res.target)
        if self.compact_records and res.stats is not None:
            res.stats.pack()
        with self._lock:
            self._cache[key] = res
            if final:
                self.final.add(key)
        return res

    def is_final(self, res: TensorResult) -> bool:
        return pair_key(res.ref, res.target) in self.final

    def identical(self, pair: OpPair, io: InOut, slot: int, purpose: Purpose = Purpose.COMPARE) -> TensorResult | None:
        """A cheap check first: an `equal` result when both files are byte-identical, else None.

        Comparing whole files needs no header parsing and no statistics: a model's 1,000 equal weights then
        cost one streamed read each, and none on the next run of the same pair (samefiles.py). Files that
        differ anywhere (even only in the header) go the full way.
        """
        r = (pair.ref.inputs if io == INPUT else pair.ref.outputs).get(slot) if pair.ref else None
        t = (pair.target.inputs if io == INPUT else pair.target.outputs).get(slot) if pair.target else None
        if r is None or t is None or not r.has_data or not t.has_data:
            return None
        if r.refused or t.refused:  # a tensor refused while indexing is never taken for equal
            return None
        if not self.same_files.identical(r.path, t.path):  # regular files only (samefiles reads through safeio)
            return None
        self.ledger.book(purpose, pair.key, io, slot)
        return TensorResult(io, slot, r, t, EQUAL, because(Why.IDENTICAL_FILES))

    # ------------------------------------------------------------------ ops
    def op_result(self, pair: OpPair, inputs: bool = True, purpose: Purpose = Purpose.COMPARE) -> OpResult:
        return self.assembled(pair, *self.tensor_results(pair, inputs, purpose))

    def tensor_results(
        self, pair: OpPair, inputs: bool = True, purpose: Purpose = Purpose.COMPARE
    ) -> tuple[list[TensorResult], list[TensorResult]]:
        """The op's (input results, output results), each pair compared now unless it was before (what
        `op_result` assembles; a caller that only reads the tensors' results spares the op's verdicts)."""
        ins: list[TensorResult] = []
        outs: list[TensorResult] = []
        for io, slot, r, t in self.tensor_pairs(pair):
            if io == INPUT and not inputs:
                continue
            res = self.tensor_result(pair, io, slot, r, t, purpose)
            (ins if io == INPUT else outs).append(res)
        return ins, outs

    def assembled(self, pair: OpPair, ins: list[TensorResult], outs: list[TensorResult]) -> OpResult:
        """The op's result from its tensors' results (inputs and outputs in `tensor_pairs` order)."""
        verdict: Verdict
        if not pair.paired:
            verdict = ONLY_REF if pair.target is None else ONLY_TARGET
        else:
            verdict = op_verdict(outs) or NOT_COMPARABLE
        return OpResult(pair, ins, outs, verdict, op_verdict(ins) if ins else None, partial(self.hints, pair))

    def cached_verdict(
        self, pair: OpPair, judged: Callable[[TensorResult], TensorResult] | None = None
    ) -> Verdict | None:
        """The op's verdict if all its outputs were already compared, else None (never reads). `judged`: the
        search's verdicts in context (a bisection's `judged`), so a tree mark says what the panes say."""
        if not pair.paired:
            return ONLY_REF if pair.target is None else ONLY_TARGET
        res = []
        for _io, _slot, r, t in self.tensor_pairs(pair, OUTPUT):
            c = self._cache.get(pair_key(r, t))
            if c is None:
                return None
            res.append(c if judged is None else judged(c))
        return op_verdict(res) or NOT_COMPARABLE

    def hints(self, pair: OpPair) -> list[Hint]:
        known = self._hints.get(id(pair))
        if known is None or known[0] is not pair:
            known = self._hints[id(pair)] = (pair, tuple(self._make_hints(pair)))
        return list(known[1])

    def _make_hints(self, pair: OpPair) -> list[Hint]:
        r, t = pair.ref, pair.target
        dts_r = [x.dtype for x in (r.tensors() if r else ())]
        dts_t = [x.dtype for x in (t.tensors() if t else ())]
        attr = attribute_diff(r.attrs, t.attrs) if r is not None and t is not None else None
        neigh = unpaired_neighbour_types(self.target, self.alignment, pair)
        return hints_for(r.op_type if r else None, t.op_type if t else None, dts_r, dts_t, attr, neigh)


def _stats_dict(s: SideStats) -> dict[str, float | None]:
    return {
        "max": s.max,
        "min": s.min,
        "mean": s.mean,
        "l2": s.l2,
        "nan": s.nan,
        "pos_inf": s.pos_inf,
        "neg_inf": s.neg_inf,
    }
