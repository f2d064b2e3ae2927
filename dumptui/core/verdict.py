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
from .metrics import ElementTolerance, PairStats, format_cos

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


# ---------------------------------------------------------------------------------------------- hints

@dataclass(frozen=True)
class Hint:
    text: str
    kind: str = "known cause"


DISCONTINUOUS = {"FloorMod", "Mod", "Floor", "Ceil", "Round", "Sign", "ArgMax", "ArgMin", "Argmax", "Argmin",
                 "ArgMaxWithValue", "ArgMinWithValue", "Greater", "GreaterEqual", "Less", "LessEqual", "Equal",
                 "NotEqual", "TopK", "Sort", "Cast_to_int", "FloorDiv", "TruncateDiv", "TruncateMod", "Rint"}


def hints_for(op_type_ref: str | None, op_type_target: str | None, dtypes_ref: list[str | None],
              dtypes_target: list[str | None], attr_diff: dict[str, tuple[str, str]] | None = None,
              neighbour_types_target: set[str] | None = None) -> list[Hint]:
    """Known causes (FORMATS.md §6) that match an op pair."""
    out: list[Hint] = []
    types = {t for t in (op_type_ref, op_type_target) if t}
    if "Mod" in types:
        out.append(Hint("ops.Mod gives different results on Ascend310 and Ascend910 for the same inputs; "
                        "ops.FloorMod is the suggested replacement"
                        + (" (the reference uses FloorMod here)" if op_type_ref == "FloorMod" and op_type_target == "Mod" else "")))
    if types & {"Conv2D", "Conv2d", "Conv3D", "DepthwiseConv2dNative", "Conv2DBackpropInput"}:
        low = {"float16", "bfloat16"}
        if (low & set(dtypes_target)) and not (low & set(dtypes_ref)) or (neighbour_types_target and "Cast" in neighbour_types_target):
            out.append(Hint("Ascend310 runs Conv2D in fp16 (a Cast to fp16 before it and back after): "
                            "expect cosine about 0.9999, not 1", "precision"))
    if types & {"Sigmoid", "Exp", "Softmax", "Tanh"}:
        out.append(Hint("through an fp16 Exp, Sigmoid saturates: many identical outputs, usually harmless for the "
                        "final result", "precision"))
    if types & DISCONTINUOUS:
        out.append(Hint(f"{'/'.join(sorted(types & DISCONTINUOUS))} is discontinuous: tiny benign input noise can move "
                        "some outputs by a whole step", "discontinuous"))
    if attr_diff:
        items = ", ".join(f"{k}: {a} vs {b}" for k, (a, b) in sorted(attr_diff.items()))
        out.append(Hint(f"graph attributes differ between the two sides: {items}", "attributes"))
    return out


_VOLATILE_ATTRS = {"instance name", "input_names", "output_names", "IsFeatureMapInputList", "IsFeatureMapOutput",
                   "checkpoint", "is_dynamic_len", "is_backend_cast"}


def attribute_diff(a: dict[str, str], b: dict[str, str]) -> dict[str, tuple[str, str]]:
    """Attributes present on both sides with different values (bookkeeping attributes left out)."""
    out = {}
    for k in sorted(set(a) & set(b)):
        if k in _VOLATILE_ATTRS:
            continue
        if a[k] != b[k]:
            out[k] = (a[k], b[k])
    return out


def with_overrides(th: Thresholds, cos: float | None = None, atol: float | None = None, rtol: float | None = None,
                   max_off: float | None = None, rms_tol: float | None = None) -> Thresholds:
    kw = {k: v for k, v in dict(cos=cos, atol=atol, rtol=rtol, max_off=max_off, rms_tol=rms_tol).items()
          if v is not None}
    return replace(th, **kw)


def finite_or_none(v: float | None) -> float | None:
    return v if v is not None and math.isfinite(v) else None
