"""A comparison session: two dumps, their alignment, and cached verdicts per tensor pair and per op pair.

Everything that reads tensor data goes through `Session.tensor_result`, which caches by tensor pair and counts
the pairs it read, so bisection can report how little it read. Safe to call from worker threads.
"""
from __future__ import annotations

import math
import os
import threading
from dataclasses import dataclass, field
from typing import Callable, Iterable

from . import dtypes
from .align import Alignment, OpPair, align
from .metrics import (ElementTolerance, PairStats, compare_tensors, side_stats, stats_within_rounding,
                      within_rounding)
from .model import SMALL_READ, Dump, InputSource, TensorRef
from .parallel import MIN_BYTES_FOR_PROCESSES, compare_in_processes
from .verdict import (BAD, BUILTIN_IGNORES, CLOSE, DIVERGED, DTYPE_MISMATCH, EQUAL, GOOD, IGNORED,
                      NOT_COMPARABLE, ONLY_REF, ONLY_TARGET, SHAPE_MISMATCH, UNREADABLE, Hint, IgnoreRule,
                      Thresholds, attribute_diff, hints_for, judge, worst)


@dataclass
class TensorResult:
    io: str
    slot: int
    ref: TensorRef | None
    target: TensorRef | None
    verdict: str
    reason: str = ""
    stats: PairStats | None = None
    tolerance: ElementTolerance | None = None
    notes: list[str] = field(default_factory=list)
    statistics_only: bool = False
    stat_rel: dict[str, float | None] | None = None   # statistic-only comparisons: relative differences

    @property
    def label(self) -> str:
        return f"{self.io}.{self.slot}"

    @property
    def bad(self) -> bool:
        return self.verdict in BAD

    @property
    def good(self) -> bool:
        return self.verdict in GOOD


@dataclass
class OpResult:
    pair: OpPair
    inputs: list[TensorResult]
    outputs: list[TensorResult]
    verdict: str            # from the outputs
    input_verdict: str | None
    hints: list[Hint] = field(default_factory=list)


def op_verdict(results: list[TensorResult]) -> str | None:
    """An op's verdict from its outputs: the worst that counts (ignored outputs do not)."""
    counted = [r.verdict for r in results if r.verdict != IGNORED]
    if not counted:
        return IGNORED if results else None
    return worst(counted)


class Session:
    def __init__(self, ref: Dump, target: Dump, thresholds: Thresholds | None = None,
                 ignores: Iterable[IgnoreRule] = (), forced: list[tuple[str, str]] | None = None,
                 alignment: Alignment | None = None, kl: bool = True):
        self.ref = ref
        self.target = target
        self.thresholds = thresholds or Thresholds()
        self.ignores = list(BUILTIN_IGNORES) + list(ignores)
        self.alignment = alignment or align(ref, target, forced)
        self.kl = kl
        self._cache: dict[tuple[int, int], TensorResult] = {}
        self._lock = threading.Lock()
        self.tensors_read = 0
        self.read_log: list[str] = []

    # ------------------------------------------------------------------ tensors
    def tensor_pairs(self, pair: OpPair, io: str | None = None) -> list[tuple[str, int, TensorRef | None, TensorRef | None]]:
        out = []
        for side in ("input", "output"):
            if io and side != io:
                continue
            r = (pair.ref.inputs if side == "input" else pair.ref.outputs) if pair.ref else {}
            t = (pair.target.inputs if side == "input" else pair.target.outputs) if pair.target else {}
            for slot in sorted(set(r) | set(t)):
                out.append((side, slot, r.get(slot), t.get(slot)))
        return out

    def ignore_reason(self, pair: OpPair, io: str, slot: int) -> str | None:
        op = pair.ref or pair.target
        for rule in self.ignores:
            if rule.matches(op.name, op.op_type, io, slot):
                if rule.op_types and "BatchNorm" in rule.reason and self._batchnorm_training(pair):
                    continue
                return rule.reason
        return None

    def _batchnorm_training(self, pair: OpPair) -> bool:
        """BatchNorm's input 5 is is_training; its outputs 1-4 mean something only when training."""
        op = pair.ref or pair.target
        t = op.inputs.get(5)
        if t is None or t.problem or (t.size or 0) != 1:
            return False
        try:
            return bool(t.array().reshape(-1)[0])
        except (OSError, ValueError):
            return False

    def results(self) -> list[TensorResult]:
        """Every tensor pair compared so far."""
        with self._lock:
            return list(self._cache.values())

    def cached(self, ref: TensorRef | None, target: TensorRef | None) -> TensorResult | None:
        return self._cache.get((id(ref), id(target)))

    def tensor_result(self, pair: OpPair, io: str, slot: int, ref: TensorRef | None,
                      target: TensorRef | None, purpose: str = "") -> TensorResult:
        key = (id(ref), id(target))
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        res = self._evaluate(pair, io, slot, ref, target, purpose)
        with self._lock:
            self._cache.setdefault(key, res)
        return self._cache[key]

    def _evaluate(self, pair, io, slot, ref, target, purpose) -> TensorResult:
        pre = self._precheck(pair, io, slot, ref, target)
        if isinstance(pre, TensorResult):
            return pre
        tol, notes, ignored = pre
        try:
            st = compare_tensors(ref, target, tol, kl=self.kl)
        except (OSError, ValueError) as e:
            return TensorResult(io, slot, ref, target, UNREADABLE, f"read failed: {e}", notes=notes)
        return self._finish(pair, io, slot, ref, target, st, tol, notes, ignored, purpose)

    def _precheck(self, pair, io, slot, ref, target):
        """Everything decided without reading values: a final TensorResult, or (tolerance, notes, ignored)
        for a pair whose statistics must be computed."""
        if ref is None or target is None:
            return TensorResult(io, slot, ref, target, ONLY_TARGET if ref is None else ONLY_REF,
                                "no such tensor in the " + ("reference" if ref is None else "target"))
        ignored = self.ignore_reason(pair, io, slot)
        notes = []
        for side, t in (("ref", ref), ("target", target)):
            if t.has_data and t.repaired:
                notes.append(f"{side}: repaired data, {t.repaired}")
        problems = [f"{side}: {t.problem}" for side, t in (("ref", ref), ("target", target))
                    if t.has_data and t.problem]
        if problems:
            return TensorResult(io, slot, ref, target, IGNORED if ignored else UNREADABLE,
                                ignored or "; ".join(problems), notes=notes)
        if not ref.has_data or not target.has_data:
            return self._evaluate_statistics(pair, io, slot, ref, target, ignored, notes)
        rs, ts = ref.shape or (), target.shape or ()
        rn, tn = ref.size or 0, target.size or 0
        if dtypes.is_complex(ref.dtype) != dtypes.is_complex(target.dtype):
            return TensorResult(io, slot, ref, target, IGNORED if ignored else DTYPE_MISMATCH,
                                ignored or f"dtypes {ref.dtype} vs {target.dtype} cannot be compared", notes=notes)
        if rn != tn:
            return TensorResult(io, slot, ref, target, IGNORED if ignored else SHAPE_MISMATCH,
                                ignored or f"shapes {list(rs)} vs {list(ts)} ({rn} vs {tn} elements)", notes=notes)
        if ref.dtype != target.dtype:
            notes.append(f"dtypes differ: {ref.dtype} vs {target.dtype} (compared as values)")
        return self.thresholds.tolerance(ref.dtype, target.dtype), notes, ignored

    def _finish(self, pair, io, slot, ref, target, st: PairStats, tol, notes, ignored, purpose) -> TensorResult:
        with self._lock:
            self.tensors_read += 1
            self.read_log.append(f"{purpose or 'compare'}: {pair.name} {io}.{slot}")
        tv = judge(st, self.thresholds, tol)
        verdict, reason = tv.verdict, tv.reason
        rs, ts = ref.shape or (), target.shape or ()
        if tuple(rs) != tuple(ts):
            notes.append(f"shapes differ: {list(rs)} vs {list(ts)}, compared element by element")
            if verdict != EQUAL:
                verdict, reason = SHAPE_MISMATCH, f"shapes {list(rs)} vs {list(ts)}; values: {reason}"
        if ignored:
            verdict, reason = IGNORED, ignored
        return TensorResult(io, slot, ref, target, verdict, reason, st, tol, notes)

    def _evaluate_statistics(self, pair, io, slot, ref, target, ignored, notes) -> TensorResult:
        """Statistic-only dumps: compare max/min/mean/L2 (a weaker check, and said so)."""
        try:
            rstat = ref.stats if not ref.has_data else _stats_dict(side_stats(ref))
            tstat = target.stats if not target.has_data else _stats_dict(side_stats(target))
        except (OSError, ValueError) as e:
            return TensorResult(io, slot, ref, target, UNREADABLE, f"read failed: {e}", notes=notes)
        with self._lock:
            self.tensors_read += 1
        verdict, reason, rel = compare_statistics(rstat, tstat, self.thresholds.tolerance(ref.dtype, target.dtype))
        if ignored:
            verdict, reason = IGNORED, ignored
        notes.append("compared on statistics (max/min/mean/L2), a weaker check than on tensors")
        return TensorResult(io, slot, ref, target, verdict, "statistics only: " + reason, notes=notes,
                            statistics_only=True, stat_rel=rel)

    def identical(self, pair: OpPair, io: str, slot: int, purpose: str = "") -> TensorResult | None:
        """A cheap check first: an `equal` result when both files are byte-identical, else None.

        Comparing whole files needs no header parsing and no statistics: a model's 1,000 equal weights then
        cost one read each. Files that differ anywhere (even only in the header) go the full way.
        """
        r = (pair.ref.inputs if io == "input" else pair.ref.outputs).get(slot) if pair.ref else None
        t = (pair.target.inputs if io == "input" else pair.target.outputs).get(slot) if pair.target else None
        if r is None or t is None or not r.has_data or not t.has_data:
            return None
        try:
            size = os.path.getsize(r.path)
            if size != os.path.getsize(t.path) or size > SMALL_READ:
                return None
            with open(r.path, "rb") as a, open(t.path, "rb") as b:
                same = a.read() == b.read()
        except OSError:
            return None
        with self._lock:
            self.tensors_read += 1
            self.read_log.append(f"{purpose or 'compare'}: {pair.name} {io}.{slot}")
        return TensorResult(io, slot, r, t, EQUAL, "bitwise equal (identical files)") if same else None

    # ------------------------------------------------------------------ ops
    def op_result(self, pair: OpPair, inputs: bool = True, purpose: str = "") -> OpResult:
        ins, outs = [], []
        for io, slot, r, t in self.tensor_pairs(pair):
            if io == "input" and not inputs:
                continue
            res = self.tensor_result(pair, io, slot, r, t, purpose)
            (ins if io == "input" else outs).append(res)
        if not pair.paired:
            verdict = ONLY_REF if pair.target is None else ONLY_TARGET
        else:
            verdict = op_verdict(outs) or NOT_COMPARABLE
        return OpResult(pair, ins, outs, verdict, op_verdict(ins) if ins else None, self.hints(pair))

    def output_verdict(self, pair: OpPair, purpose: str = "") -> str:
        return self.op_result(pair, inputs=False, purpose=purpose).verdict

    def cached_verdict(self, pair: OpPair) -> str | None:
        """The op's verdict if all its outputs were already compared, else None (never reads)."""
        if not pair.paired:
            return ONLY_REF if pair.target is None else ONLY_TARGET
        res = []
        for _io, _slot, r, t in self.tensor_pairs(pair, "output"):
            c = self._cache.get((id(r), id(t)))
            if c is None:
                return None
            res.append(c)
        return op_verdict(res) or NOT_COMPARABLE

    def hints(self, pair: OpPair) -> list[Hint]:
        r, t = pair.ref, pair.target
        dts_r = [x.dtype for x in (r.tensors() if r else ())]
        dts_t = [x.dtype for x in (t.tensors() if t else ())]
        attr = attribute_diff(r.attrs, t.attrs) if r is not None and t is not None else None
        neigh: set[str] = set()
        if t is not None and self.target.graph is not None and t.key in self.target.graph:
            g = self.target.graph
            for k in list(g.predecessors(t.key)) + list(g.successors(t.key)):
                o = self.target.op(k)
                if o is not None and self.alignment.for_target(k) is not None and not self.alignment.for_target(k).paired:
                    neigh.add(o.op_type)
        return hints_for(r.op_type if r else None, t.op_type if t else None, dts_r, dts_t, attr, neigh)

    # ------------------------------------------------------------------ sources of inputs
    def input_source(self, pair: OpPair, slot: int) -> tuple[InputSource | None, InputSource | None]:
        rs = pair.ref.sources.get(slot) if pair.ref else None
        ts = pair.target.sources.get(slot) if pair.target else None
        return rs, ts

    def producer_pair(self, pair: OpPair, slot: int) -> OpPair | None:
        """The op pair whose output feeds this input (via either side's graph), if it is a kernel pair."""
        rs, ts = self.input_source(pair, slot)
        if rs is not None and rs.kind == "op":
            p = self.alignment.for_ref(rs.ref)
            if p is not None:
                return p
        if ts is not None and ts.kind == "op":
            return self.alignment.for_target(ts.ref)
        return None

    def unproduced(self, pair: OpPair, slot: int) -> str | None:
        """'parameter' / 'constant' when no op produces this input on either side (per the graph), else None."""
        rs, ts = self.input_source(pair, slot)
        kinds = {s.kind for s in (rs, ts) if s is not None}
        if not kinds or "op" in kinds:
            return None
        for k in ("parameter", "constant"):
            if k in kinds:
                return k
        return "input from outside the dump"

    def rounding_explains(self, res: TensorResult) -> str | None:
        """For a differing unproduced input: the fp16/bf16 format whose rounding explains it, or None."""
        if res.ref is None or res.target is None:
            return None
        if not res.ref.has_data or not res.target.has_data:
            if res.ref.stats is not None and res.target.stats is not None:
                return stats_within_rounding(res.ref.stats, res.target.stats)
            return None
        if res.ref.problem or res.target.problem or (res.ref.size or 0) != (res.target.size or 0):
            return None
        try:
            return within_rounding(res.ref, res.target)
        except (OSError, ValueError):
            return None

    # ------------------------------------------------------------------ all
    def evaluate_all(self, pairs: list[OpPair] | None = None, workers: int | None = None,
                     progress: Callable[[int, int], None] | None = None,
                     cancelled: Callable[[], bool] | None = None) -> list[OpResult]:
        """Every tensor pair of `pairs` (default: all). Large compares run in worker processes."""
        pairs = self.alignment.pairs if pairs is None else pairs
        jobs = [(p, io, slot, r, t) for p in pairs for io, slot, r, t in self.tensor_pairs(p)
                if self._cache.get((id(r), id(t))) is None]
        total, done = len(jobs), 0
        workers = workers or os.cpu_count() or 1
        heavy = []          # (job, tolerance, notes, ignored): statistics to compute
        for j in jobs:
            if cancelled and cancelled():
                break
            pre = self._precheck(*j)
            if isinstance(pre, TensorResult):
                self._store(j, pre)
                done += 1
                if progress:
                    progress(done, total)
            else:
                heavy.append((j, *pre))
        nbytes = sum(j[3].nbytes() + j[4].nbytes() for j, *_ in heavy)
        if workers > 1 and len(heavy) > 1 and nbytes >= MIN_BYTES_FOR_PROCESSES:
            specs = [(j[3], j[4], tol) for j, tol, _n, _i in heavy]
            for idx, st, err in compare_in_processes(specs, workers, self.kl, cancelled):
                j, tol, notes, ignored = heavy[idx]
                if st is None:
                    res = TensorResult(j[1], j[2], j[3], j[4], UNREADABLE, err or "read failed", notes=notes)
                else:
                    res = self._finish(*j, st, tol, notes, ignored, "compare")
                self._store(j, res)
                done += 1
                if progress:
                    progress(done, total)
        else:
            for j, *_ in heavy:
                if cancelled and cancelled():
                    break
                self.tensor_result(*j)
                done += 1
                if progress:
                    progress(done, total)
        return [self.op_result(p) for p in pairs]

    def _store(self, job, res: TensorResult) -> None:
        with self._lock:
            self._cache.setdefault((id(job[3]), id(job[4])), res)


def _stats_dict(s) -> dict:
    return {"max": s.max, "min": s.min, "mean": s.mean, "l2": s.l2, "nan": s.nan, "pos_inf": s.pos_inf,
            "neg_inf": s.neg_inf}


STAT_KEYS = ("max", "min", "mean", "l2")


def compare_statistics(ref: dict, tgt: dict, tol: ElementTolerance) -> tuple[str, str, dict[str, float | None]]:
    """Relative differences `(t - r) / |r|` of max, min, mean and L2; the verdict uses the largest.

    Close when every available statistic is within `max(rms_tol, 10 * rtol)` relative (or `atol` absolute
    for statistics near zero); equal when all are identical.
    """
    rel: dict[str, float | None] = {}
    worst_key, worst_val = None, 0.0
    equal = True
    usable = 0
    lim = max(tol.rms_tol, 10 * tol.rtol)
    for k in STAT_KEYS:
        a, b = ref.get(k), tgt.get(k)
        if not isinstance(a, (int, float)) or not isinstance(b, (int, float)) or a is None or b is None:
            rel[k] = None
            continue
        if not (math.isfinite(a) and math.isfinite(b)):
            rel[k] = None
            if (a != b) and not (math.isnan(a) and math.isnan(b)):
                return DIVERGED, f"{k} {a} vs {b}", rel
            continue
        usable += 1
        if a != b:
            equal = False
        d = abs(b - a)
        r = d / abs(a) if abs(a) > tol.atol else (0.0 if d <= tol.atol else math.inf)
        rel[k] = (b - a) / abs(a) if a != 0 else (0.0 if b == 0 else math.inf)
        if r > worst_val:
            worst_key, worst_val = k, r
    for k in ("nan", "pos_inf", "neg_inf"):
        a, b = ref.get(k), tgt.get(k)
        if isinstance(a, (int, float)) and isinstance(b, (int, float)) and a != b:
            return DIVERGED, f"{k} count {int(a)} vs {int(b)}", rel
    if usable == 0:
        return NOT_COMPARABLE, "no statistic available on both sides", rel
    if equal:
        return EQUAL, "all statistics identical", rel
    if worst_val <= lim:
        return CLOSE, f"largest relative difference {worst_val:.3g} ({worst_key}) <= {lim:.3g}", rel
    return DIVERGED, f"{worst_key} differs by {worst_val:.3g} relative (limit {lim:.3g})", rel
