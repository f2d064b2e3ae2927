"""From statistics to verdicts: thresholds, dtype-aware tolerance, ignore rules, known-cause hints.

A tensor pair is `equal` (bitwise), `close`, `diverged`, `shape mismatch`, `dtype mismatch`, `only in ref`,
`only in target`, `not comparable`, `unreadable` or `ignored`. The rule for `close` vs `diverged`, on pairs
that are not equal:

1. NaN/Inf at different positions -> diverged.
2. Every element within `atol + rtol*|y| + rms_tol*rms(y)` -> close.
3. Cosine below `cos` (default 0.99), or undefined because one side is all zeros -> diverged.
4. More than `max_off` (default 10 %) of the elements outside that tolerance -> diverged: a uniform drift that
   a high cosine hides (a Sigmoid output 10 % off everywhere still has cos 0.996).
5. Otherwise close: a few outliers, which is what a discontinuous op (mod, floor, argmax) makes of tiny noise.

Scalars and one-element tensors have no meaningful cosine: they are compared by value (`atol + rtol*|y|`).
The tolerance follows the looser dtype of the pair (fp16/bf16 looser than fp32) unless set explicitly.
"""
from __future__ import annotations

import fnmatch
import math
import re
from dataclasses import dataclass, replace
from enum import Enum

from . import dtypes
from .metrics import ElementTolerance, PairStats, format_cos, stats_within_rounding, within_rounding
from .model import Op, TensorRef

class Verdict(str, Enum):
    """The verdict of a tensor pair (and of an op, from its outputs), with everything that shows it.

    A `str` enum, so a verdict compares equal to its text ("diverged") and serialises as it. `severity` orders
    them worst first (an op or a folder shows the worst verdict of what it holds); `mark` is one character,
    distinct without colour (an SSH session through a jump host may have none); `role` is what a renderer
    colours by (the app maps roles to theme variables, the headless report to rich styles).
    """

    mark: str
    severity: int
    role: str

    def __new__(cls, text: str, mark: str, severity: int, role: str) -> "Verdict":
        obj = str.__new__(cls, text)
        obj._value_ = text
        obj.mark = mark
        obj.severity = severity
        obj.role = role
        return obj

    DIVERGED = ("diverged", "✗", 0, "bad")
    SHAPE_MISMATCH = ("shape mismatch", "#", 1, "bad")
    DTYPE_MISMATCH = ("dtype mismatch", "%", 2, "bad")
    UNREADABLE = ("unreadable", "!", 3, "unreadable")
    NOT_COMPARABLE = ("not comparable", "?", 4, "incomparable")
    ONLY_REF = ("only in ref", "<", 5, "one-sided")
    ONLY_TARGET = ("only in target", ">", 6, "one-sided")
    PENDING = ("pending", "·", 7, "muted")        # not computed yet
    CLOSE = ("close", "≈", 8, "close")
    IGNORED = ("ignored", "-", 9, "muted")
    EQUAL = ("equal", "=", 10, "ok")

    __str__ = str.__str__            # "diverged", not "Verdict.DIVERGED", in f-strings and prints
    __format__ = str.__format__

    @property
    def bad(self) -> bool:
        return self.role == "bad"

    @property
    def good(self) -> bool:
        return self in (Verdict.EQUAL, Verdict.CLOSE)

    @classmethod
    def of(cls, text: "str | Verdict | None") -> "Verdict | None":
        """The verdict named by `text` (None for None or an unknown text)."""
        if text is None or isinstance(text, Verdict):
            return text
        try:
            return cls(text)
        except ValueError:
            return None


EQUAL, CLOSE, DIVERGED = Verdict.EQUAL, Verdict.CLOSE, Verdict.DIVERGED
SHAPE_MISMATCH, DTYPE_MISMATCH = Verdict.SHAPE_MISMATCH, Verdict.DTYPE_MISMATCH
ONLY_REF, ONLY_TARGET = Verdict.ONLY_REF, Verdict.ONLY_TARGET
NOT_COMPARABLE, UNREADABLE, IGNORED = Verdict.NOT_COMPARABLE, Verdict.UNREADABLE, Verdict.IGNORED
PENDING = Verdict.PENDING

VERDICTS = tuple(v for v in Verdict if v is not PENDING)
BAD = frozenset(v for v in Verdict if v.bad)
GOOD = frozenset(v for v in Verdict if v.good)


def severity(verdict: "str | None") -> int:
    v = Verdict.of(verdict)
    return v.severity if v is not None else 99


def mark(verdict: "str | None") -> str:
    """One character per verdict; not computed yet (None) is the neutral `·`, an unknown text `?`."""
    if verdict is None:
        return PENDING.mark
    v = Verdict.of(verdict)
    return v.mark if v is not None else "?"


def role(verdict: "str | None") -> str:
    v = Verdict.of(verdict)
    return v.role if v is not None else "muted"


def worst(verdicts) -> str | None:
    vs = [v for v in verdicts if v]
    return min(vs, key=severity) if vs else None


# Default element tolerance per dtype: (atol, rtol, rms_tol)
DTYPE_TOLERANCE = {
    "float64": (1e-9, 1e-7, 0.05),
    "float32": (1e-6, 1e-4, 0.05),
    "float16": (1e-4, 1e-3, 0.10),
    "bfloat16": (1e-3, 8e-3, 0.10),
}
INTEGER_TOLERANCE = (0.0, 0.0, 0.0)


@dataclass(frozen=True)
class Thresholds:
    cos: float = 0.99
    max_off: float = 0.10
    atol: float | None = None      # None: by dtype
    rtol: float | None = None
    rms_tol: float | None = None

    def tolerance(self, dtype_ref: str | None, dtype_target: str | None) -> ElementTolerance:
        dt = dtypes.looser(dtype_ref, dtype_target)
        atol, rtol, rms_tol = DTYPE_TOLERANCE.get(dt or "", INTEGER_TOLERANCE if dt and not dtypes.is_float(dt)
                                                  and not dtypes.is_complex(dt) else DTYPE_TOLERANCE["float32"])
        return ElementTolerance(atol=self.atol if self.atol is not None else atol,
                                rtol=self.rtol if self.rtol is not None else rtol,
                                rms_tol=self.rms_tol if self.rms_tol is not None else rms_tol)


@dataclass
class TensorVerdict:
    verdict: str
    reason: str = ""


def judge(st: PairStats, th: Thresholds, tol: ElementTolerance) -> TensorVerdict:
    """The verdict of a compared pair (same element count, both readable)."""
    if st.n == 0:
        return TensorVerdict(EQUAL if st.values_equal else NOT_COMPARABLE, "empty tensor")
    if st.bitwise_equal:
        return TensorVerdict(EQUAL, "bitwise equal")
    if st.values_equal:
        return TensorVerdict(EQUAL, "values equal (dtypes or NaN payloads differ)")
    if st.nonfinite_mismatch:
        return TensorVerdict(DIVERGED, f"NaN/Inf at different positions ({st.nonfinite_mismatch} elements)")
    if st.compared == 0:
        return TensorVerdict(NOT_COMPARABLE, "no element is finite on both sides")
    if st.n == 1 or st.compared == 1:
        y, x = st.max_abs_ref, st.max_abs_target
        lim = tol.atol + tol.rtol * abs(y if y is not None else 0.0)
        if st.max_abs is not None and st.max_abs <= lim:
            return TensorVerdict(CLOSE, f"one element: |diff| {st.max_abs:.3g} <= {lim:.3g}")
        return TensorVerdict(DIVERGED, f"one element: {_g(y)} vs {_g(x)} (|diff| {_g(st.max_abs)} > {lim:.3g})")
    if st.n_off == 0:
        return TensorVerdict(CLOSE, "every element within tolerance")
    off_share = st.n_off / max(st.compared, 1)
    if st.cos is None:
        return TensorVerdict(DIVERGED, st.undefined.get("cos", "cosine undefined"))
    if st.cos < th.cos:
        return TensorVerdict(DIVERGED, f"cosine {st.cos:.6f} < {th.cos}")
    if off_share > th.max_off:
        return TensorVerdict(DIVERGED, f"{off_share:.1%} of elements off by more than the tolerance (limit {th.max_off:.0%})")
    return TensorVerdict(CLOSE, f"cosine {format_cos(st.cos)}; {st.n_off} of {st.compared} elements outside tolerance")


def _g(v) -> str:
    return "undefined" if v is None else f"{v:.6g}"


# ---------------------------------------------------------------------------------------------- ignore rules

@dataclass(frozen=True)
class IgnoreRule:
    """Tensors whose difference means nothing. `pattern` is a glob on the op name, optionally `:io.slot`."""

    pattern: str
    reason: str
    op_types: tuple[str, ...] = ()
    io: str | None = None
    slots: tuple[int, ...] | None = None

    def matches(self, op_name: str, op_type: str, io: str, slot: int) -> bool:
        if self.op_types and op_type not in self.op_types:
            return False
        if self.io and io != self.io:
            return False
        if self.slots is not None and slot not in self.slots:
            return False
        return fnmatch.fnmatchcase(op_name, self.pattern)


BUILTIN_IGNORES = (
    IgnoreRule("*", "BatchNorm in inference: outputs 1-4 are uninitialised memory and differ run to run",
               op_types=("BatchNorm", "FusedBatchNorm", "BatchNormInfer", "BNInfer", "FusedBatchNormEx"),
               io="output", slots=(1, 2, 3, 4)),
)


def ignore_reason(rules: "list[IgnoreRule] | tuple[IgnoreRule, ...]", op: "Op", io: str, slot: int) -> str | None:
    """Why tensor `io.slot` of `op` means nothing (an ignore rule matches), or None.

    BatchNorm's input 5 is is_training; its outputs 1-4 are results only when training, so the built-in rule
    steps aside for a training BatchNorm."""
    for rule in rules:
        if rule.matches(op.name, op.op_type, io, slot):
            if rule in BUILTIN_IGNORES and _batchnorm_training(op):
                continue
            return rule.reason
    return None


def _batchnorm_training(op: "Op") -> bool:
    t = op.inputs.get(5)
    if t is None or t.problem or (t.size or 0) != 1:
        return False
    try:
        return bool(t.array().reshape(-1)[0])
    except (OSError, ValueError):
        return False


def parse_user_ignore(spec: str) -> IgnoreRule:
    """`GLOB` or `GLOB:output.1` / `GLOB:input.*` from --ignore or an ignore file line."""
    m = re.match(r"^(.*?):(input|output)\.(\d+|\*)$", spec.strip())
    if m:
        slots = None if m.group(3) == "*" else (int(m.group(3)),)
        return IgnoreRule(m.group(1), f"ignored by the user ({spec.strip()})", io=m.group(2), slots=slots)
    return IgnoreRule(spec.strip(), f"ignored by the user ({spec.strip()})")


def read_ignore_file(path: str) -> list[IgnoreRule]:
    rules = []
    with open(path, "r", encoding="utf-8") as fh:
        for line in fh:
            s = line.split("#", 1)[0].strip()
            if s:
                rules.append(parse_user_ignore(s))
    return rules


def with_overrides(th: Thresholds, cos: float | None = None, atol: float | None = None, rtol: float | None = None,
                   max_off: float | None = None, rms_tol: float | None = None) -> Thresholds:
    kw = {k: v for k, v in dict(cos=cos, atol=atol, rtol=rtol, max_off=max_off, rms_tol=rms_tol).items()
          if v is not None}
    return replace(th, **kw)


def finite_or_none(v: float | None) -> float | None:
    return v if v is not None and math.isfinite(v) else None


# ---------------------------------------------------------------------------------------------- statistics only

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


def rounding_explains(ref: TensorRef | None, target: TensorRef | None) -> str | None:
    """For a differing unproduced input (weight, network input): the fp16/bf16 format whose rounding explains
    the difference (as a deliberate conversion would give), or None."""
    if ref is None or target is None:
        return None
    if not ref.has_data or not target.has_data:
        if ref.stats is not None and target.stats is not None:
            return stats_within_rounding(ref.stats, target.stats)
        return None
    if ref.problem or target.problem or (ref.size or 0) != (target.size or 0):
        return None
    try:
        return within_rounding(ref, target)
    except (OSError, ValueError):
        return None
