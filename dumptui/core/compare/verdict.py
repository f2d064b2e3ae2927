"""Every verdict rule: from statistics to `equal` / `close` / `diverged` and the other verdicts, ignore rules,
statistic-only comparisons.

A tensor pair is `equal` (bitwise), `close`, `diverged`, `shape mismatch`, `dtype mismatch`, `only in ref`,
`only in target`, `not comparable`, `unreadable` or `ignored`. On pairs that are not equal:

1. NaN/Inf at different positions -> diverged.
2. The error (mean |target - ref| without the largest 1 % of elements, divided by the reference's RMS)
   above the noise floor of the less precise dtype (noise.py: 2^-13 fp32, 2^-10 fp16, 2^-7 bf16) -> diverged.
3. More than `max_off` (10 %) of the elements off by more than 10x the floor -> diverged.
4. Otherwise close.

Whether a divergence is *born* at an op or carried in is the local-error rule (localerror.py); in a noisy
pair the floor follows the compute path, not only the tensor's own dtypes.
"""

from __future__ import annotations

import fnmatch
import functools
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, replace

import numpy as np

from dumptui.core.compare.elements import stats_within_rounding, within_rounding, within_rounding_rows
from dumptui.core.compare.metrics import CHUNK, ElementTolerance
from dumptui.core.compare.noise import ELEMENT_FACTOR, floor_of, least_precise, tensor_error
from dumptui.core.compare.pairstats import PairStats
from dumptui.core.io import dtypes
from dumptui.core.io.limits import MAX_OPTION_FILE
from dumptui.core.io.safeio import text_lines
from dumptui.core.model.dump import INOUT_NAMED, OUTPUT, SMALL_READ, InOut, Op, TensorRef, TensorStats
from dumptui.core.model.reason import Reason, Why, because
from dumptui.core.model.vocab import Word


class Verdict(Word):
    """The verdict of a tensor pair (and of an op, from its outputs).

    A `str` enum, so a verdict compares equal to its text ("diverged") and serialises as it. `severity` orders
    them worst first (an op or a folder shows the worst verdict of what it holds). How a verdict looks (its one-
    character mark, the colour role) is the renderers' business: report/looks.py.
    """

    severity: int

    # The default only lets mypy type `Verdict(text)`, the lookup by value (Enum swaps this __new__ out once the
    # class is built); every member gives both.
    def __new__(cls, text: str, severity: int = 0) -> Verdict:
        obj = str.__new__(cls, text)
        obj._value_ = text
        obj.severity = severity
        return obj

    DIVERGED = ("diverged", 0)
    SHAPE_MISMATCH = ("shape mismatch", 1)
    DTYPE_MISMATCH = ("dtype mismatch", 2)
    UNREADABLE = ("unreadable", 3)
    NOT_COMPARABLE = ("not comparable", 4)
    ONLY_REF = ("only in ref", 5)
    ONLY_TARGET = ("only in target", 6)
    PENDING = ("pending", 7)  # not computed yet
    # judged in context only: a selection (TopK, NMS...) that flipped on near-ties, each side's following from
    # its own inputs, and what its changed selection reaches (core/search/selection.py): no divergence
    FLIPPED = ("flipped", 8)
    CLOSE = ("close", 9)
    IGNORED = ("ignored", 10)
    EQUAL = ("equal", 11)

    @property
    def bad(self) -> bool:
        """A divergence a user must look at: the values, the shape or the dtype differ."""
        return self in (Verdict.DIVERGED, Verdict.SHAPE_MISMATCH, Verdict.DTYPE_MISMATCH)

    @property
    def good(self) -> bool:
        return self in (Verdict.EQUAL, Verdict.CLOSE, Verdict.FLIPPED)

    @classmethod
    def of(cls, text: str | Verdict | None) -> Verdict | None:
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
FLIPPED = Verdict.FLIPPED

VERDICTS = tuple(v for v in Verdict if v is not PENDING)
BAD = frozenset(v for v in Verdict if v.bad)
GOOD = frozenset(v for v in Verdict if v.good)


def severity(verdict: Verdict | str | None) -> int:
    v = Verdict.of(verdict)
    return v.severity if v is not None else 99


def worst(verdicts: Iterable[Verdict | None]) -> Verdict | None:
    vs = [v for v in verdicts if v]
    return min(vs, key=severity) if vs else None


@dataclass(frozen=True)
class Thresholds:
    """Every number a verdict depends on; each has a flag.

    `gain`: an op is a root when its output error is this many times what its data inputs carry.
    `floor_scale`, `floors`: the noise floor per dtype (noise.FLOOR), scaled or overridden.
    `max_off`: a pair within the floor still diverges when more than this share of its elements is off by more
    than 10x the floor. `cos`: an extra alarm below this cosine (off unless given). `replay`: recompute ops
    to prove roots (off: the gain rule decides alone).
    """

    gain: float = 10.0
    floor_scale: float = 1.0
    floors: tuple[tuple[str, float], ...] = ()
    max_off: float = 0.10
    cos: float | None = None
    replay: bool = True  # prove roots by recomputing the op (localerror.py); off: the gain rule alone

    def floor(self, *dtype_names: str | None) -> tuple[float, str | None]:
        """(floor, dtype it comes from) for a pair of the given dtypes: the less precise one decides."""
        return _floor(dtype_names, self.floors, self.floor_scale)

    def tolerance(self, dtype_ref: str | None, dtype_target: str | None) -> ElementTolerance:
        """Per element: off when |x-y| > 10 x floor x (|y| + rms(y)) (the standard's max relative error)."""
        return _tolerance(self.floor(dtype_ref, dtype_target)[0] * ELEMENT_FACTOR)


@functools.lru_cache(maxsize=4096)
def _floor(
    dtype_names: tuple[str | None, ...], floors: tuple[tuple[str, float], ...], scale: float
) -> tuple[float, str | None]:
    """Thresholds.floor, once per dtype names (asked for several times per tensor pair by a scan)."""
    dt = least_precise(dtype_names)
    if dt is None and any(dtype_names):
        return 0.0, next(d for d in dtype_names if d)  # integers, booleans: exact
    return floor_of(dt, dict(floors), scale), dt or "float32"


@functools.lru_cache(maxsize=256)
def _tolerance(f: float) -> ElementTolerance:
    """One (immutable) tolerance object per value: a session keeps one with each of its results."""
    return ElementTolerance(atol=0.0, rtol=f, rms_tol=f)


@dataclass
class TensorVerdict:
    verdict: Verdict
    reason: Reason


def judge(st: PairStats, th: Thresholds, floor: float, floor_dtype: str | None = None) -> TensorVerdict:
    """The verdict of a compared pair (same element count, both readable), against the noise floor of its
    dtypes: close when its trimmed mean error is within the floor (and few elements are far off)."""
    if st.n == 0:
        return TensorVerdict(EQUAL if st.values_equal else NOT_COMPARABLE, because(Why.EMPTY_TENSOR))
    if st.bitwise_equal:
        return TensorVerdict(EQUAL, because(Why.BITWISE_EQUAL))
    if st.values_equal:
        return TensorVerdict(EQUAL, because(Why.VALUES_EQUAL))
    if st.nonfinite_mismatch:
        return TensorVerdict(DIVERGED, because(Why.NONFINITE_MISMATCH, st.nonfinite_mismatch))
    if st.compared == 0:
        return TensorVerdict(NOT_COMPARABLE, because(Why.NO_FINITE_PAIR))
    err = tensor_error(st)
    assert err is not None
    where = (floor_dtype or "", floor)
    if th.cos is not None and st.cos is not None and st.cos < th.cos:
        return TensorVerdict(DIVERGED, because(Why.COS_BELOW, st.cos, th.cos))
    if err.rel > floor:
        return TensorVerdict(DIVERGED, because(Why.ERROR_ABOVE_FLOOR, err.rel, *where, st.undefined.get("cos", "")))
    off_share = st.n_off / max(st.compared, 1)
    if st.compared > 1 and off_share > th.max_off:
        return TensorVerdict(DIVERGED, because(Why.OFF_SHARE_ABOVE, off_share, ELEMENT_FACTOR, *where, th.max_off))
    return TensorVerdict(CLOSE, because(Why.ERROR_WITHIN_FLOOR, err.rel, *where))


# ---------------------------------------------------------------------------------------------- ignore rules


@dataclass(frozen=True)
class IgnoreRule:
    """Tensors whose difference means nothing. `pattern` is a glob on the op name, optionally `:io.slot`."""

    pattern: str
    reason: Reason
    op_types: tuple[str, ...] = ()
    io: InOut | None = None
    slots: tuple[int, ...] | None = None

    def matches(self, op_name: str, op_type: str, io: InOut, slot: int) -> bool:
        if self.op_types and op_type not in self.op_types:
            return False
        if self.io and io != self.io:
            return False
        if self.slots is not None and slot not in self.slots:
            return False
        return fnmatch.fnmatchcase(op_name, self.pattern)


BUILTIN_IGNORES = (
    IgnoreRule(
        "*",
        because(Why.BATCHNORM_UNINITIALISED),
        op_types=("BatchNorm", "FusedBatchNorm", "BatchNormInfer", "BNInfer", "FusedBatchNormEx"),
        io=OUTPUT,
        slots=(1, 2, 3, 4),
    ),
)


_GLOB_CHARS = re.compile(r"[*?\[\]\0]")
_BRACKET_SET = re.compile(r"\[!?\]?[^\]]*\]")  # fnmatch's [abc], [!abc], []x]: one character, not literal


def _literal_chunk(pattern: str) -> str:
    """The longest run of the glob that must appear as written in every name it matches ("" when none).
    Splitting at more places than needed only shortens the run (still in every match): safe."""
    if not pattern:
        return ""
    return max(_GLOB_CHARS.split(_BRACKET_SET.sub("\0", pattern)), key=len)


class IgnoreMatcher:
    """The ignore rules, matched fast when there are many (an ignore file of 100k patterns): a rule can match
    a name only when the name holds its longest literal run, so per op name only those rules are tried, in
    their order (the first that matches gives the reason, as a plain loop over every rule would)."""

    def __init__(self, rules: list[IgnoreRule] | tuple[IgnoreRule, ...]):
        self.rules = list(rules)
        self._chunks = [_literal_chunk(r.pattern) for r in self.rules]
        # op name -> its candidate rules, kept for the session (a tuple: most names have none, and every empty
        # one is the same object, where an empty list each was 1.6 MB of the 20,000-op demo pair)
        self._by_name: dict[str, tuple[IgnoreRule, ...]] = {}
        # ...and the names with the same candidates share one tuple (a few distinct ones for 28,000 names)
        self._same: dict[tuple[int, ...], tuple[IgnoreRule, ...]] = {}

    def candidates(self, op_name: str) -> tuple[IgnoreRule, ...]:
        found = self._by_name.get(op_name)
        if found is None:
            which = tuple(i for i, chunk in enumerate(self._chunks) if chunk in op_name)
            found = self._same.get(which)
            if found is None:
                found = self._same[which] = tuple(self.rules[i] for i in which)
            self._by_name[op_name] = found
        return found

    def reason(self, op: Op, io: InOut, slot: int) -> Reason | None:
        return ignore_reason(self.candidates(op.name), op, io, slot)


def ignore_reason(rules: list[IgnoreRule] | tuple[IgnoreRule, ...], op: Op, io: InOut, slot: int) -> Reason | None:
    """Why tensor `io.slot` of `op` means nothing (an ignore rule matches), or None.

    BatchNorm's input 5 is is_training; its outputs 1-4 are results only when training, so the built-in rule
    steps aside for a training BatchNorm."""
    for rule in rules:
        if rule.matches(op.name, op.op_type, io, slot):
            if rule in BUILTIN_IGNORES and _batchnorm_training(op):
                continue
            return rule.reason
    return None


def _batchnorm_training(op: Op) -> bool:
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
        return IgnoreRule(
            m.group(1), because(Why.IGNORED_BY_USER, spec.strip()), io=INOUT_NAMED[m.group(2)], slots=slots
        )
    return IgnoreRule(spec.strip(), because(Why.IGNORED_BY_USER, spec.strip()))


def read_ignore_file(path: str) -> list[IgnoreRule]:
    rules = []
    with text_lines(path, MAX_OPTION_FILE) as fh:  # regular, bounded: never a FIFO or /dev/zero
        for line in fh:
            s = line.split("#", 1)[0].strip()
            if s:
                rules.append(parse_user_ignore(s))
    return rules


def parse_floors(specs: list[str]) -> tuple[tuple[str, float], ...]:
    """`float16=1e-3` items of --floor as Thresholds.floors; ValueError names a bad item."""
    out = []
    for spec in specs:
        name, _, value = spec.partition("=")
        try:
            out.append((dtypes.canonical(name.strip()) or name.strip(), float(value)))
        except ValueError:
            raise ValueError(f"--floor {spec}: expected DTYPE=NUMBER, e.g. float16=1e-3") from None
    return tuple(out)


def with_overrides(th: Thresholds, **overrides: object) -> Thresholds:
    """`th` with the given fields replaced (None values keep the default)."""
    return replace(th, **{k: v for k, v in overrides.items() if v is not None})  # type: ignore[arg-type]  # fields as the options name them


# ---------------------------------------------------------------------------------------------- statistics only

STAT_KEYS = ("max", "min", "mean", "l2")


def compare_statistics(
    ref: TensorStats, tgt: TensorStats, floor: float, n: int | None
) -> tuple[Verdict, Reason, dict[str, float | None]]:
    """Relative differences of max, min, mean and L2, each `(t - r) / max(|r|, rms)` with rms = L2 / sqrt(n)
    of the reference (so a mean near zero is not blown up); the verdict uses the largest.

    Close when every available statistic is within 10x the floor; equal when all are identical.
    """
    rel: dict[str, float | None] = {}
    worst_key, worst_val = None, 0.0
    equal = True
    usable = 0
    lim = ELEMENT_FACTOR * floor
    l2 = ref.get("l2")
    rms = abs(l2) / math.sqrt(n) if isinstance(l2, (int, float)) and math.isfinite(l2) and n else 0.0
    for k in STAT_KEYS:
        a, b = ref.get(k), tgt.get(k)
        if not isinstance(a, (int, float)) or not isinstance(b, (int, float)):
            rel[k] = None
            continue
        if not (math.isfinite(a) and math.isfinite(b)):
            rel[k] = None
            if (a != b) and not (math.isnan(a) and math.isnan(b)):
                return DIVERGED, because(Why.STAT_NONFINITE, k, a, b), rel
            continue
        usable += 1
        if a != b:
            equal = False
        scale = max(abs(a), rms)
        r = (b - a) / scale if scale > 0 else (0.0 if b == a else math.inf)
        rel[k] = r
        if abs(r) > worst_val:
            worst_key, worst_val = k, abs(r)
    for k in ("nan", "pos_inf", "neg_inf"):
        a, b = ref.get(k), tgt.get(k)
        if isinstance(a, (int, float)) and isinstance(b, (int, float)) and a != b:
            return DIVERGED, because(Why.STAT_NONFINITE_COUNT, k, int(a), int(b)), rel
    if usable == 0:
        return NOT_COMPARABLE, because(Why.NO_STATISTIC), rel
    if equal:
        return EQUAL, because(Why.STATISTICS_IDENTICAL), rel
    if worst_val <= lim:
        return CLOSE, because(Why.STAT_WITHIN, worst_val, worst_key, lim), rel
    return DIVERGED, because(Why.STAT_DIFFERS, worst_key, worst_val, lim), rel


def roundings_explain(pairs: list[tuple[TensorRef, TensorRef]]) -> list[str | None]:
    """rounding_explains of each pair, the small ones read whole and judged together
    (elements.within_rounding_rows: the same answers)."""
    out: list[str | None] = [None] * len(pairs)
    rows: list[tuple[np.ndarray, np.ndarray]] = []
    where: list[int] = []
    for i, (ref, target) in enumerate(pairs):
        if not (
            _in_rows(ref) and _in_rows(target) and ref.size == target.size == ref.layout().size == target.layout().size
        ):
            out[i] = rounding_explains(ref, target)
            continue
        try:
            rows.append((ref.read(), target.read()))
        except (OSError, ValueError):
            continue  # as rounding_explains says of a pair it cannot read
        where.append(i)
    for i, fmt in zip(where, within_rounding_rows(rows)):
        out[i] = fmt
    return out


def _in_rows(t: TensorRef) -> bool:
    """A tensor within_rounding reads in one chunk, in memory, as read() gives it (a plain small payload)."""
    if not t.has_data or t.problem:
        return False
    lay = t.layout()
    return (
        lay.storage is not None
        and lay.storage.kind in "fiu"
        and lay.decoder is None
        and not lay.fortran
        and 0 < lay.size <= CHUNK
        and 0 < t.nbytes() <= SMALL_READ
    )


def rounding_explains(ref: TensorRef | None, target: TensorRef | None) -> str | None:
    """For a differing unproduced input (weight, network input): the fp16/bf16 format whose rounding explains
    the difference (as a deliberate conversion would give), or None."""
    if ref is None or target is None:
        return None
    if not ref.has_data or not target.has_data:
        if ref.stats is not None and target.stats is not None:
            return stats_within_rounding(ref.stats, target.stats, ref.size if ref.size == target.size else None)
        return None
    if ref.problem or target.problem or (ref.size or 0) != (target.size or 0):
        return None
    try:
        return within_rounding(ref, target)
    except (OSError, ValueError):
        return None
