"""Selection ops judged by whether each side computed its selection from its own inputs.

TopK, Sort, ArgSort, ArgMax/ArgMin, NMS and Unique turn values into choices: which element is at each rank,
which box is kept. On a target that computes in float16 (or folds BatchNorm, or quantises to int8) two scores
that nearly tie can swap places, and everything gathered by those indices changes although no op computes
anything wrong. Such an op is judged here, not by the gain of its error:

- each side's selection is checked against what the op gives from that side's own inputs (replay/selection.py
  defines the op), ties resolved within the rounding of the inputs' own dtype (two values a rounding unit apart
  are a tie the kernel may break either way; an NMS overlap that near its threshold likewise);
- the target's selection is not one its own inputs give: the kernel is wrong (BROKEN: a root), with the ranks it
  got wrong and the values there;
- the reference's is not either: the op is not what is replayed here (UNMODELLED: nothing is concluded);
- both are: the op is no root. Where they differ it is a flip (FLIP): each rank or box that differs is named with
  the margin by which its two candidates were apart on the reference and the error the inputs carry there,
  which moved them past each other.

The selections are compared by source index, as sets and rank by rank ("14 of 16 selections equal"), never
element by element. Codes and numbers only: report/selection.py words them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np

from dumptui.core.model.dump import PairSide, Role, Roles, SourceKind
from dumptui.core.model.reason import Said, Why, because
from dumptui.core.model.vocab import Word
from dumptui.core.search import replay
from dumptui.core.search.replay.args import OpArgs
from dumptui.core.search.replay.selection import (
    BATCH_NMS_TYPES,
    NMS_TYPES,
    NmsSpec,
    RankSpec,
    batch_nms_spec,
    iou_matrix,
    nms_groups,
    nms_spec,
    order,
    rank_spec,
)

if TYPE_CHECKING:
    from dumptui.core.compare.session import Session
    from dumptui.core.graph.align import Alignment, OpPair
    from dumptui.core.model.dump import TensorRef

RANK_TYPES = frozenset(
    {
        "TopK",
        "TopkExt",
        "topk",
        "Sort",
        "SortExt",
        "sort",
        "ArgSort",
        "argsort",
        "ArgMax",
        "ArgMin",
        "ArgMaxWithValue",
        "ArgMinWithValue",
        "argmax",
        "argmin",
    }
)
SET_TYPES = frozenset({"Unique", "unique"})
SELECTION_TYPES = RANK_TYPES | NMS_TYPES | SET_TYPES
MAX_FLIPS = 64  # flips kept with their numbers (the rest are counted)
MAX_WRONG = 16
MAX_SELECTION_ELEMENTS = 1 << 24  # inputs larger than this are not judged here (float64 copies)
# CANN's BatchMultiClassNonMaxSuppression runs NMS on each class's top candidates only (its TBE kernel: the
# top min(UB size / 64, 4080) scores, 4080 on a 256 KB unified buffer; NonMaxSuppressionV6/V7's the top 2048);
# a smaller UB takes fewer: boxes ranked beyond this many are never held against it
CANN_NMS_CANDIDATES = 1024
TIE_UNITS = 2.0  # two values this many unit roundoffs apart (relative) are a tie (one rounding step each side)

_UNIT_ROUNDOFF = {"float16": 2.0**-11, "bfloat16": 2.0**-8, "float32": 2.0**-24, "float64": 2.0**-53}


class SelectionCode(Word):
    """What the judgement of a selection op found."""

    SAME = "selection-same"  # both sides select the same elements (their values may differ within noise)
    FLIP = "selection-flip"  # each side's selection follows from its own inputs, and they differ
    BROKEN = "selection-broken"  # the target's selection does not follow from the target's own inputs
    UNMODELLED = "selection-unmodelled"  # the reference's does not either: nothing is concluded


class FlipKind(Word):
    """Why one selection differs between the sides."""

    RANK = "rank"  # another element at this rank (TopK, Sort, ArgMax): their scores nearly tie
    SCORE = "score"  # NMS: a box kept on one side only, as two overlapping boxes' scores swapped order
    OVERLAP = "overlap"  # NMS: ... as their overlap (IoU) crossed the threshold
    CASCADE = "cascade"  # NMS: ... as the box that suppresses it was itself flipped
    LIMIT = "limit"  # NMS: ... as the limit of boxes kept fell between it and another box whose scores swapped
    MEMBER = "member"  # Unique: a value present on one side only (two values merged or split)
    THRESHOLD = "threshold"  # a comparison or a cast to integers: an element crossed its threshold
    KEPT = "kept"  # MaskedSelect: an element kept on one side only, as its mask differs there


@dataclass(frozen=True)
class Flip:
    """One selection that differs, with the numbers of its near-tie."""

    kind: FlipKind
    row: int  # the selection's row (its other axes flattened; an NMS group)
    rank: int  # the position within the row (RANK); -1 for a box or a value
    index: int  # the reference's element at that rank; for a box or a value: the one kept on one side only
    other: int  # the target's element at that rank; for a box: the box it competes with (-1: none)
    value: float  # the reference's input value (score) of `index`
    other_value: float  # the reference's input value of `other`
    margin: float  # how near the tie was on the reference: |value - other_value|, or |IoU - threshold|
    input_error: float  # how far the inputs' error moves it: |target - ref| at both elements, or of the IoU
    kept_by: PairSide | None = None  # a box or a value: the side that keeps it


@dataclass(frozen=True)
class Wrong:
    """A selection the target's own inputs do not give."""

    row: int
    rank: int  # position within the row (-1: a box)
    index: int  # the element the target selected there (-1: none or out of range)
    value: float  # its value in the target's inputs (NaN: none)
    expected: float  # the value that rank holds given the target's own inputs (NaN: a box)


@dataclass(frozen=True)
class SelectionProof:
    """A selection op judged by what each side's own inputs give (codes and numbers; report/ words them)."""

    code: SelectionCode
    op_type: str
    selected: int = 0  # selections compared (ranks of every row, or boxes/values kept on either side)
    equal: int = 0  # the same source element at the same rank (a box or value: kept on both sides)
    common: int = 0  # selected on both sides, whatever the rank (compared as sets)
    differing: int = 0  # selections that differ (`flips` holds the first MAX_FLIPS)
    flips: tuple[Flip, ...] = ()
    wrong_count: int = 0  # target selections its own inputs do not give (`wrong` holds the first MAX_WRONG)
    wrong: tuple[Wrong, ...] = ()
    ref_wrong: int = 0  # the same count on the reference (UNMODELLED)
    input_error: float = 0.0  # the largest |target - reference| of the scores the op selects by
    input_slot: int = 0  # the input holding those scores
    tolerance: float = 0.0  # the tie tolerance used on the target (relative)
    unmodelled: Wrong | None = field(default=None, compare=False)  # the reference's first wrong selection
    unmodelled_box: bool = field(default=False, compare=False)  # ...a box NMS kept or left out

    @property
    def broken(self) -> bool:
        return self.code == SelectionCode.BROKEN

    @property
    def conclusive(self) -> bool:
        return self.code != SelectionCode.UNMODELLED

    @property
    def flipped(self) -> bool:
        return self.code == SelectionCode.FLIP

    @property
    def margin(self) -> float:
        """The widest near-tie that flipped (0 when none)."""
        return max((f.margin for f in self.flips), default=0.0)


@dataclass
class Side:
    """One side's op as the judgement needs it: inputs and outputs by slot, the inputs' dtype names."""

    inputs: dict[int, np.ndarray]
    outputs: dict[int, np.ndarray]
    dtypes: dict[int, str | None] = field(default_factory=dict)


class Unjudged(Exception):
    """The selection cannot be judged here (its outputs are not laid out as the op defines them); why in words
    of the replay's kind (a note, as ReplayUnsupported gives)."""


def is_selection(op_type: str | None) -> bool:
    return op_type in SELECTION_TYPES


def tie_tolerance(dtype: str | None) -> float:
    """Two values within this relative distance tie (TIE_UNITS unit roundoffs of the dtype; 0 for integers)."""
    return TIE_UNITS * _UNIT_ROUNDOFF.get(dtype or "", 0.0)


def _ties(a: np.ndarray, b: np.ndarray, tol: float) -> np.ndarray:
    """Elementwise: a and b are the same value within `tol` (relative), NaN tying NaN."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        near = np.abs(a - b) <= tol * np.maximum(np.abs(a), np.abs(b))
    tied: np.ndarray = (a == b) | near | (np.isnan(a) & np.isnan(b))
    return tied


# ------------------------------------------------------------------------------------------------ the entry


def judge(op_type: str, attrs: dict[str, str], constants: dict[int, str], ref: Side, target: Side) -> SelectionProof:
    """The selection op judged from both sides' tensors (the reference's definition: its attributes and
    constants for both). Raises Unjudged (or ReplayUnsupported) when it cannot be."""
    specs = [OpArgs(replay.ReplayInputs(op_type, side.inputs, attrs, constants)) for side in (ref, target)]
    if op_type in RANK_TYPES:
        spec = rank_spec(specs[0])
        assert spec is not None  # every RANK_TYPES op has one
        return _judge_ranks(op_type, spec, ref, target)
    if op_type in NMS_TYPES:
        return _judge_nms(op_type, specs, ref, target)
    if op_type in SET_TYPES:
        return _judge_unique(op_type, ref, target)
    raise Unjudged(f"{op_type} is no selection op")


def selection_proof(session: Session, pair: OpPair, roles: Roles) -> tuple[SelectionProof | None, Said]:
    """The selection judgement of one op pair from its dumped tensors: (proof, "") or (None, why not)."""
    ref, tgt = pair.ref, pair.target
    if ref is None or tgt is None or not is_selection(ref.op_type):
        return None, ""
    if ref.backward_call or tgt.backward_call:
        return None, because(Why.NO_REPLAY_BACKWARD, ref.op_type)
    n = sum(t.size or 0 for op in (ref, tgt) for t in (*op.inputs.values(), *op.outputs.values()))
    if n > MAX_SELECTION_ELEMENTS:
        return None, because(Why.SELECTION_TOO_LARGE, n, MAX_SELECTION_ELEMENTS)
    try:
        sides, constants = read_side(pair, roles)
        return judge(ref.op_type, dict(ref.attrs), constants, *sides), ""
    except (Unjudged, replay.ReplayUnsupported, OSError, ValueError, IndexError) as e:
        return None, because(Why.SELECTION_NOT_JUDGED, str(e))


def read_side(pair: OpPair, roles: Roles) -> tuple[tuple[Side, Side], dict[int, str]]:
    """Both sides of a pair of ops as the judgement reads them, and the reference's undumped constants. A
    constant input is the reference's on both sides: the op's definition is the reference's (k, axis,
    thresholds)."""
    ref, tgt = pair.ref, pair.target
    assert ref is not None and tgt is not None
    ref_in = {s: _read(t) for s, t in ref.inputs.items()}
    tgt_in = {s: _read(t) for s, t in tgt.inputs.items()}
    for s, role in roles.items():
        if role == Role.CONSTANT and s in ref_in:
            tgt_in[s] = ref_in[s]
    sides = (
        Side(ref_in, {s: _read(t) for s, t in ref.outputs.items()}, {s: t.dtype for s, t in ref.inputs.items()}),
        Side(tgt_in, {s: _read(t) for s, t in tgt.outputs.items()}, {s: t.dtype for s, t in tgt.inputs.items()}),
    )
    constants = {
        s: src.ref for s, src in ref.sources.items() if src.kind == SourceKind.CONSTANT and s not in ref.inputs
    }
    return sides, constants


def _read(t: TensorRef) -> np.ndarray:
    a = np.asarray(t.read())
    return a.reshape(t.shape) if t.shape is not None and a.size == int(np.prod(t.shape)) else a


# ------------------------------------------------------------------------------------------------ rankings


@dataclass
class _Ranked:
    """One side of a ranking op as rows: the scores (R, n), the selected indices (R, k), the canonical ones."""

    scores: np.ndarray
    picked: np.ndarray
    canonical: np.ndarray
    values: np.ndarray | None  # the dumped values output as rows, when there is one
    tol: float


def _rows(spec: RankSpec, side: Side, op_type: str) -> _Ranked:
    if 0 not in side.inputs:
        raise Unjudged(f"{op_type} input.0 is not dumped")
    x = np.asarray(side.inputs[0])
    if spec.index_slot is None or spec.index_slot not in side.outputs:
        raise Unjudged(f"{op_type} has no indices output to judge")
    scores = x.astype(np.float64) if x.dtype != np.bool_ else x.astype(np.float64)
    if spec.axis is None or x.ndim == 0:
        rows = scores.reshape(1, -1)
        axis = None
    else:
        (axis,) = [spec.axis % x.ndim] if -x.ndim <= spec.axis < x.ndim else [None]
        if axis is None:
            raise Unjudged(f"{op_type} axis {spec.axis} is out of range for rank {x.ndim}")
        rows = np.moveaxis(scores, axis, -1).reshape(-1, x.shape[axis])
    n = rows.shape[1]
    k = n if spec.k is None else spec.k
    if not 0 <= k <= n:
        raise Unjudged(f"{op_type} k = {k} is outside [0, {n}]")
    canonical = order(rows, -1, spec.descending)[:, :k]

    def as_rows(a: np.ndarray) -> np.ndarray:
        a = np.asarray(a)
        if a.size != rows.shape[0] * k:
            raise Unjudged(f"{op_type} output of {a.size} elements, {rows.shape[0] * k} expected")
        if axis is None:
            return a.reshape(rows.shape[0], k)
        shape = list(x.shape)
        shape[axis] = k
        if not spec.keep and k == 1:
            a = a.reshape([s for i, s in enumerate(shape) if i != axis])
            a = np.expand_dims(a, axis)
        return np.moveaxis(a.reshape(shape), axis, -1).reshape(rows.shape[0], k)

    picked = as_rows(side.outputs[spec.index_slot])
    if picked.dtype.kind not in "iu":
        raise Unjudged(f"{op_type} indices are {picked.dtype}, not integers")
    values = None
    if spec.value_slot is not None and spec.value_slot in side.outputs:
        values = as_rows(side.outputs[spec.value_slot]).astype(np.float64)
    return _Ranked(rows, picked.astype(np.int64), canonical, values, tie_tolerance(side.dtypes.get(0) or str(x.dtype)))


def _wrong_ranks(r: _Ranked, ordered: bool, out_tol: float) -> list[Wrong]:
    """The selections of one side its own inputs do not give (empty: it reproduces)."""
    rows, n = r.scores.shape
    wrong: list[Wrong] = []
    valid = (r.picked >= 0) & (r.picked < n)
    got = np.where(valid, np.take_along_axis(r.scores, np.clip(r.picked, 0, max(n - 1, 0)), axis=1), np.nan)
    want = np.take_along_axis(r.scores, r.canonical, axis=1) if n else np.zeros_like(got)
    if ordered:
        ok = valid & _ties(got, want, r.tol)
    else:  # an unsorted selection: the same values whatever their order
        ok = valid & _ties(np.sort(got, axis=1), np.sort(want, axis=1), r.tol)
    for i in range(rows):  # an element selected twice is no selection
        seen: set[int] = set()
        for j, idx in enumerate(r.picked[i].tolist()):
            if idx in seen:
                ok[i, j] = False
            seen.add(idx)
    if r.values is not None:  # the values output holds the values of the indices it gives
        ok &= _ties(r.values, got, max(out_tol, r.tol))
    for i, j in zip(*np.nonzero(~ok)):
        wrong.append(Wrong(int(i), int(j), int(r.picked[i, j]), float(got[i, j]), float(want[i, j])))
    return wrong


def _judge_ranks(op_type: str, spec: RankSpec, ref: Side, target: Side) -> SelectionProof:
    sides = [_rows(spec, s, op_type) for s in (ref, target)]
    out_tol = [
        tie_tolerance(str(s.outputs[spec.value_slot].dtype)) if spec.value_slot in s.outputs else 0.0
        for s in (ref, target)
    ]
    wrong_ref = _wrong_ranks(sides[0], spec.ordered, out_tol[0])
    wrong_tgt = _wrong_ranks(sides[1], spec.ordered, out_tol[1])
    r, t = sides
    selected = int(t.picked.size)
    same_shape = r.scores.shape == t.scores.shape and r.picked.shape == t.picked.shape
    input_error = _input_error(r.scores, t.scores) if r.scores.shape == t.scores.shape else math.inf
    base = SelectionProof(SelectionCode.SAME, op_type, selected=selected, input_error=input_error, tolerance=t.tol)
    if wrong_ref:
        return replace(base, code=SelectionCode.UNMODELLED, ref_wrong=len(wrong_ref), unmodelled=wrong_ref[0])
    if not same_shape:
        if wrong_tgt:
            return replace(
                base, code=SelectionCode.BROKEN, wrong_count=len(wrong_tgt), wrong=tuple(wrong_tgt[:MAX_WRONG])
            )
        raise Unjudged(f"{op_type} selects from {r.scores.shape} on the reference, {t.scores.shape} on the target")
    equal, common, differing, flips = _compare_ranks(spec, r, t)
    if wrong_tgt:  # compared as selections too, but its differences are no flips
        return replace(
            base,
            code=SelectionCode.BROKEN,
            wrong_count=len(wrong_tgt),
            wrong=tuple(wrong_tgt[:MAX_WRONG]),
            equal=equal,
            common=common,
            differing=differing,
        )
    code = SelectionCode.FLIP if differing else SelectionCode.SAME
    return replace(base, code=code, equal=equal, common=common, differing=differing, flips=tuple(flips))


def _compare_ranks(spec: RankSpec, r: _Ranked, t: _Ranked) -> tuple[int, int, int, list[Flip]]:
    """(equal, common, differing, flips) of two sides' selections of the same scores' shape: rank by rank where
    the op orders them, as sets where it does not."""
    flips: list[Flip] = []
    equal = common = differing = 0
    n = r.scores.shape[1]
    for i in range(r.picked.shape[0]):
        a_row, b_row = r.picked[i].tolist(), t.picked[i].tolist()
        common += len(set(a_row) & set(b_row))
        if spec.ordered:
            pairs = [(j, a, b) for j, (a, b) in enumerate(zip(a_row, b_row))]
            equal += sum(a == b for _j, a, b in pairs)
            pairs = [p for p in pairs if p[1] != p[2]]
        else:  # compared as sets: each element only one side selects, against one only the other selects
            only_r = sorted(set(a_row) - set(b_row), key=lambda e: -r.scores[i, e] if 0 <= e < n else 0.0)
            only_t = sorted(set(b_row) - set(a_row), key=lambda e: -r.scores[i, e] if 0 <= e < n else 0.0)
            equal += len(a_row) - len(only_r)
            pairs = [(-1, a, b) for a, b in zip(only_r, only_t)]
        differing += len(pairs)
        for j, a, b in pairs:
            if len(flips) < MAX_FLIPS and 0 <= a < n and 0 <= b < n:
                va, vb = float(r.scores[i, a]), float(r.scores[i, b])
                moved = abs(float(t.scores[i, a]) - va) + abs(float(t.scores[i, b]) - vb)
                flips.append(Flip(FlipKind.RANK, i, j, a, b, va, vb, abs(va - vb), moved))
    return equal, common, differing, flips


def _input_error(a: np.ndarray, b: np.ndarray) -> float:
    with np.errstate(invalid="ignore", over="ignore"):
        d = np.abs(np.asarray(b, dtype=np.float64) - np.asarray(a, dtype=np.float64))
    d = d[np.isfinite(d)]
    return float(d.max()) if d.size else 0.0


# ------------------------------------------------------------------------------------------------ NMS


@dataclass
class _Group:
    """One NMS group of one side: corner boxes, scores, the boxes kept in the order given, the processing
    rank of every box (kept or not: where it stands in the op's order), the tolerances."""

    boxes: np.ndarray
    scores: np.ndarray
    kept: list[int]
    rank: np.ndarray | None  # None: by score (tied scores may come in any order)
    tol: float
    iou_tol: float
    limit: int | None = None  # at most this many kept in the group (None: no limit)
    # a multi-class NMS whose image kept its total: the score (this side's) of the last box it kept, and
    # where that box is (group, box); boxes under it may be left out for that alone
    cut: float | None = None
    cut_box: tuple[int, int] | None = None
    # CANN's multi-class kernel selects among its top candidates of each class only: a box left out that ranks
    # at or beyond this many higher-scored boxes is no error (None: every box is a candidate)
    candidates: int | None = None


def _kept_lists(
    op_type: str, side: Side, groups: list[tuple[int, int]], n: int
) -> tuple[list[list[int]], list[np.ndarray]]:
    """The kept boxes of each group as the dumped outputs give them, and for NMSWithMask its order."""
    out = side.outputs
    if op_type == "NMSWithMask":
        if not {1, 2} <= set(out):
            raise Unjudged("NMSWithMask outputs 1 and 2 (indices, mask) are not dumped")
        idx = np.asarray(out[1]).astype(np.int64).reshape(-1)
        mask = np.asarray(out[2]).astype(bool).reshape(-1)
        if idx.size != n or mask.size != n:
            raise Unjudged(f"NMSWithMask outputs of {idx.size} and {mask.size} elements, {n} expected")
        return [idx[mask].tolist()], [idx]
    if 0 not in out:
        raise Unjudged(f"{op_type} output.0 is not dumped")
    sel = np.asarray(out[0]).astype(np.int64)
    if op_type in ("NonMaxSuppression", "NonMaxSuppressionV6"):
        rows = sel.reshape(-1, 3).tolist()
        return [[i for b, c, i in rows if (b, c) == g] for g in groups], []
    sel = sel.reshape(-1)
    valid_slot = {"NonMaxSuppressionV4": 1, "NonMaxSuppressionV5": 2}.get(op_type)
    if valid_slot in out:
        valid = int(np.asarray(out[valid_slot]).reshape(-1)[0])
        if not 0 <= valid <= sel.size:
            raise Unjudged(f"{op_type} says {valid} boxes are valid of {sel.size}")
        sel = sel[:valid]
    return [sel.tolist()], []


def _nms_sides(op_type: str, args: OpArgs, side: Side) -> list[_Group]:
    groups = nms_groups(args)
    n = groups[0][1].shape[0] if groups else 0
    dtype = side.dtypes.get(0) or str(np.asarray(side.inputs[0]).dtype)
    tol = tie_tolerance(dtype)
    iou_tol = max(8 * tol, 1e-12)  # an IoU is a ratio of sums of products: a few roundings of its inputs'
    limit = nms_spec(args).limit
    if op_type in BATCH_NMS_TYPES:
        return _batch_groups(args, side, groups, tol, iou_tol)
    kept, orders = _kept_lists(op_type, side, [g for g, _b, _s in groups], n)
    out = []
    for (_key, boxes, scores), k in zip(groups, kept):
        rank = None
        if orders:  # NMSWithMask: the order it processed the boxes in (by score, or the input's on Ascend)
            idx = orders[0]
            if sorted(idx.tolist()) != list(range(n)):
                raise Unjudged("NMSWithMask output.1 is not a permutation of the boxes")
            rank = np.empty(n, dtype=np.int64)
            rank[idx] = np.arange(n)
        group = _Group(boxes, scores, [int(i) for i in k], rank, tol, iou_tol, limit or None)
        if op_type == "NonMaxSuppressionV6":  # CANN's ONNX NMS: its TBE kernel's top 2048 candidates too
            group.candidates = CANN_NMS_CANDIDATES
        out.append(group)
    return out


def _batch_groups(
    args: OpArgs, side: Side, groups: list[tuple[tuple[int, int], np.ndarray, np.ndarray]], tol: float, iou_tol: float
) -> list[_Group]:
    """A multi-class NMS of a batch: its outputs hold copies of the kept boxes, scores and classes, not indices.
    Each output row is matched to the input box of its class with that box and score (within the rounding of
    the output's dtype and the input's); a row that matches none is kept as box -1 (no selection the inputs
    give). When an image kept its total, the last box kept marks where the total cut."""
    spec = batch_nms_spec(args)
    out = side.outputs
    if not groups:
        return []
    if not {0, 1, 2, 3} <= set(out):
        raise Unjudged(f"{args.op_type} outputs 0-3 (boxes, scores, classes, count) are not dumped")
    batch = len({key[0] for key, _b, _s in groups})
    classes_n = len(groups) // batch
    o_boxes, o_scores, o_classes = (np.asarray(out[j], dtype=np.float64) for j in (0, 1, 2))
    try:
        o_boxes, o_scores, o_classes = (
            a.reshape(batch, -1, *tail) for a, tail in ((o_boxes, (4,)), (o_scores, ()), (o_classes, ()))
        )
    except ValueError as e:
        raise Unjudged(f"{args.op_type} outputs do not fit a batch of {batch} images: {e}") from e
    counts = np.asarray(out[3]).astype(np.int64).reshape(-1)
    if counts.size != batch or o_boxes.shape[1] != o_scores.shape[1] or o_scores.shape != o_classes.shape:
        raise Unjudged(f"{args.op_type} outputs do not fit a batch of {batch} images")
    match_tol = max(tol, tie_tolerance(str(np.asarray(out[0]).dtype)))
    seen = [np.clip(boxes, 0.0, 1.0) if spec.clip else boxes for _key, boxes, _s in groups]  # as written out
    kept: list[list[int]] = [[] for _ in groups]
    cuts: list[tuple[float, tuple[int, int]] | None] = [None] * batch
    for b in range(batch):
        rows = range(min(max(int(counts[b]), 0), o_scores.shape[1]))
        used: set[tuple[int, int]] = set()
        last: tuple[float, tuple[int, int]] | None = None
        for r in rows:
            c = float(o_classes[b, r])
            known = c.is_integer() and 0 <= c < classes_n
            g = b * classes_n + (int(c) if known else 0)
            _key, _boxes, scores = groups[g]
            ok = _ties(seen[g], o_boxes[b, r][None, :], match_tol).all(axis=1) & _ties(
                scores, o_scores[b, r], match_tol
            )
            found = [i for i in np.flatnonzero(ok).tolist() if (g, i) not in used] if known else []
            kept[g].append(found[0] if found else -1)
            if found:
                used.add((g, found[0]))
                last = (float(scores[found[0]]), (g, found[0]))
        if counts[b] != len(rows) or counts[b] < 0:
            kept[b * classes_n].append(-1)  # a count beyond the rows it has
        if spec.total and len(rows) >= spec.total:
            cuts[b] = last
    out_groups = []
    for g, ((b, _c), boxes, scores) in enumerate(groups):
        cut = cuts[b]
        out_groups.append(
            _Group(
                boxes,
                scores,
                kept[g],
                None,
                tol,
                iou_tol,
                spec.per_class,
                None if cut is None else cut[0],
                None if cut is None else cut[1],
                None if args.op_type == "CombinedNonMaxSuppression" else CANN_NMS_CANDIDATES,
            )
        )
    return out_groups


def _nms_wrong(g: _Group, spec: NmsSpec, by_score_order: bool) -> list[Wrong]:
    """The kept/not-kept decisions of one group its own inputs do not give (empty: it reproduces)."""
    n = g.scores.size
    kept = g.kept
    if any(not 0 <= i < n for i in kept) or len(set(kept)) != len(kept):
        return [Wrong(0, -1, -1, math.nan, math.nan)]
    if spec.limit is not None and len(kept) > max(spec.limit, 0):
        return [Wrong(0, -1, kept[-1], float(g.scores[kept[-1]]), math.nan)]  # more kept than the op may keep
    return _nms_order_wrong(g, by_score_order) + _nms_kept_wrong(g, spec) + _nms_left_out_wrong(g, spec)


def _near(g: _Group, a: float, b: float) -> bool:
    return bool(_ties(np.array([a]), np.array([b]), g.tol)[0])


def _processed_before(g: _Group, j: int, i: int) -> bool:
    """j is processed before i: by the op's order where it gives one, else by score (ties either way)."""
    if g.rank is not None:
        return bool(g.rank[j] < g.rank[i])
    return bool(g.scores[j] > g.scores[i] or _near(g, g.scores[j], g.scores[i]))


def _nms_order_wrong(g: _Group, by_score_order: bool) -> list[Wrong]:
    """Boxes processed (or listed as kept) out of score order, highest first, ties either way."""
    s = g.scores
    if g.rank is None:
        steps = list(zip(g.kept[:-1], g.kept[1:]))
    elif by_score_order:
        ranked = np.argsort(g.rank).tolist()
        steps = list(zip(ranked[:-1], ranked[1:]))
    else:
        return []
    return [
        Wrong(0, -1 if g.rank is None else int(g.rank[b]), b, float(s[b]), float(s[a]))
        for a, b in steps
        if s[a] < s[b] and not _near(g, s[a], s[b])
    ]


def _nms_kept_wrong(g: _Group, spec: NmsSpec) -> list[Wrong]:
    """Boxes kept though under the score threshold, or though an earlier kept box suppresses them."""
    s, wrong = g.scores, []
    iou = iou_matrix(g.boxes)
    for pos, i in enumerate(g.kept):
        if s[i] <= spec.floor and not _near(g, s[i], spec.floor):
            wrong.append(Wrong(0, -1, i, float(s[i]), math.nan))
        earlier = g.kept[:pos] if g.rank is None else [j for j in g.kept if j != i and _processed_before(g, j, i)]
        if any(iou[i, j] > spec.threshold + g.iou_tol for j in earlier):
            wrong.append(Wrong(0, -1, i, float(s[i]), math.nan))
    return wrong


def _nms_left_out_wrong(g: _Group, spec: NmsSpec) -> list[Wrong]:
    """Boxes left out though over the score threshold, before the limits were reached, and suppressed by no
    kept box processed before them."""
    s, kept = g.scores, set(g.kept)
    iou = iou_matrix(g.boxes)
    full = spec.limit is not None and len(kept) >= spec.limit
    low = min((s[j] for j in kept), default=math.inf)
    wrong = []
    for i in range(s.size):
        if i in kept or (s[i] <= spec.floor and not _near(g, s[i], spec.floor)):
            continue
        if full and (s[i] <= low or _near(g, s[i], low)):
            continue  # the group's limit was reached before it
        if g.cut is not None and (s[i] <= g.cut or _near(g, s[i], g.cut)):
            continue  # the image's total was reached before it
        if g.candidates is not None and int((s > s[i]).sum()) >= g.candidates:
            continue  # not among the kernel's candidates
        if not any(iou[i, j] > spec.threshold - g.iou_tol for j in kept if _processed_before(g, j, i)):
            wrong.append(Wrong(0, -1, i, float(s[i]), math.nan))
    return wrong


def _judge_nms(op_type: str, args: Sequence[OpArgs], ref: Side, target: Side) -> SelectionProof:
    spec = nms_spec(args[0])
    groups = [_nms_sides(op_type, a, side) for a, side in zip(args, (ref, target))]
    wrong = []
    for side_groups in groups:
        found: list[Wrong] = []
        for row, g in enumerate(side_groups):
            # NMSWithMask: sorted by score (CPU, GPU) or in the input's order (Ascend): either definition
            ws = _nms_wrong(g, spec, by_score_order=True)
            if ws and g.rank is not None and (g.rank == np.arange(g.rank.size)).all():
                ws = _nms_wrong(g, spec, by_score_order=False)
            found += [Wrong(row, w.rank, w.index, w.value, w.expected) for w in ws]
        wrong.append(found)
    r_groups, t_groups = groups
    same_shape = [g.scores.shape for g in r_groups] == [g.scores.shape for g in t_groups]
    input_error = (
        max((_input_error(a.scores, b.scores) for a, b in zip(r_groups, t_groups)), default=0.0)
        if same_shape
        else math.inf
    )
    tol = t_groups[0].tol if t_groups else 0.0
    base = SelectionProof(
        SelectionCode.SAME,
        op_type,
        input_error=input_error,
        tolerance=tol,
        input_slot=0 if op_type == "NMSWithMask" else 1,
    )
    if wrong[0]:
        return replace(
            base, code=SelectionCode.UNMODELLED, ref_wrong=len(wrong[0]), unmodelled=wrong[0][0], unmodelled_box=True
        )
    kept_r = [set(g.kept) for g in r_groups]
    kept_t = [set(g.kept) for g in t_groups]
    selected = sum(len(a | b) for a, b in zip(kept_r, kept_t))
    if wrong[1]:
        return replace(
            base,
            code=SelectionCode.BROKEN,
            selected=selected,
            equal=sum(len(a & b) for a, b in zip(kept_r, kept_t)),
            common=sum(len(a & b) for a, b in zip(kept_r, kept_t)),
            differing=sum(len(a ^ b) for a, b in zip(kept_r, kept_t)),
            wrong_count=len(wrong[1]),
            wrong=tuple(wrong[1][:MAX_WRONG]),
        )
    if not same_shape:
        raise Unjudged(f"{op_type} selects among different numbers of boxes on the two sides")
    flips: list[Flip] = []
    differing = equal = 0
    for row, (rg, tg) in enumerate(zip(r_groups, t_groups)):
        a, b = kept_r[row], kept_t[row]
        equal += len(a & b)
        only = sorted(a ^ b)
        differing += len(only)
        iou_r, iou_t = iou_matrix(rg.boxes), iou_matrix(tg.boxes)
        for i in only:
            if len(flips) < MAX_FLIPS:
                kept_by = PairSide.REF if i in a else PairSide.TARGET
                f = _nms_flip(row, i, kept_by, rg, tg, iou_r, iou_t, a, b, spec)
                if f.kind == FlipKind.CASCADE and f.other < 0:  # nothing suppresses it there: a limit may
                    f = _limit_flip(row, i, kept_by, r_groups, t_groups) or f
                flips.append(f)
    code = SelectionCode.FLIP if differing else SelectionCode.SAME
    return replace(
        base, code=code, selected=selected, equal=equal, common=equal, differing=differing, flips=tuple(flips)
    )


def _nms_flip(
    row: int,
    i: int,
    kept_by: PairSide,
    rg: _Group,
    tg: _Group,
    iou_r: np.ndarray,
    iou_t: np.ndarray,
    kept_r: set[int],
    kept_t: set[int],
    spec: NmsSpec,
) -> Flip:
    """Why box `i`, kept on one side only, is suppressed on the other: the kept box j that suppresses it there,
    and which of the near-ties moved: their overlap across the threshold, their scores' order, or j's own flip."""
    suppressing_kept = kept_t if kept_by == PairSide.REF else kept_r
    iou_there = iou_t if kept_by == PairSide.REF else iou_r
    js = [j for j in suppressing_kept if j != i and iou_there[i, j] > spec.threshold - tg.iou_tol]
    if not js:
        return Flip(FlipKind.CASCADE, row, -1, i, -1, float(rg.scores[i]), math.nan, math.nan, math.nan, kept_by)
    si = float(rg.scores[i])

    def candidate(j: int) -> Flip:
        sj = float(rg.scores[j])
        crossed = (iou_r[i, j] - spec.threshold) * (iou_t[i, j] - spec.threshold) <= 0
        if crossed:
            margin, moved = abs(float(iou_r[i, j]) - spec.threshold), abs(float(iou_t[i, j] - iou_r[i, j]))
            return Flip(FlipKind.OVERLAP, row, -1, i, j, si, sj, margin, moved, kept_by)
        if _before(rg, j, i) == _before(tg, j, i):  # the same order on both sides: j's own flip decided
            return Flip(FlipKind.CASCADE, row, -1, i, j, si, sj, math.nan, math.nan, kept_by)
        moved = abs(float(tg.scores[i]) - si) + abs(float(tg.scores[j]) - sj)
        return Flip(FlipKind.SCORE, row, -1, i, j, si, sj, abs(si - sj), moved, kept_by)

    found = [candidate(j) for j in js]
    decided = [f for f in found if f.kind != FlipKind.CASCADE]
    return min(decided, key=lambda f: f.margin) if decided else found[0]


def _limit_flip(row: int, i: int, kept_by: PairSide, r_groups: list[_Group], t_groups: list[_Group]) -> Flip | None:
    """Box `i` of group `row`, kept on one side only and suppressed by nothing on the other: that side reached
    its limit (the group's, or the image's total in a multi-class NMS) at a box j kept in its place; their
    scores are the near-tie (None: no limit was reached there)."""
    there = t_groups[row] if kept_by == PairSide.REF else r_groups[row]
    here = r_groups[row] if kept_by == PairSide.REF else t_groups[row]
    if there.limit is not None and there.kept and len(there.kept) >= there.limit:
        # the box kept in its place: kept there only, the lowest there (else the last kept)
        only = [j for j in there.kept if j not in set(here.kept)]
        at = (row, min(only, key=lambda j: (float(there.scores[j]), -j)) if only else there.kept[-1])
    elif there.cut_box is not None:
        at = there.cut_box
    else:
        return None
    g, j = at
    si, sj = float(r_groups[row].scores[i]), float(r_groups[g].scores[j])
    moved = abs(float(t_groups[row].scores[i]) - si) + abs(float(t_groups[g].scores[j]) - sj)
    return Flip(FlipKind.LIMIT, row, -1, i, j if g == row else -1, si, sj, abs(si - sj), moved, kept_by)


def _before(g: _Group, j: int, i: int) -> bool:
    """Whether box j comes before box i in the side's processing order (by score, ties in index order, where
    the op does not say its order)."""
    if g.rank is not None:
        return bool(g.rank[j] < g.rank[i])
    return bool(g.scores[j] > g.scores[i] or (g.scores[j] == g.scores[i] and j < i))


# ------------------------------------------------------------------------------------------------ Unique


def _judge_unique(op_type: str, ref: Side, target: Side) -> SelectionProof:
    """Unique: each side's distinct values are its input's, and its inverse (when dumped) rebuilds the input."""
    wrong: list[list[Wrong]] = []
    sets = []
    for side in (ref, target):
        if 0 not in side.inputs or 0 not in side.outputs:
            raise Unjudged(f"{op_type} input.0 or output.0 is not dumped")
        x = np.asarray(side.inputs[0], dtype=np.float64).reshape(-1) + 0.0
        y = np.asarray(side.outputs[0], dtype=np.float64).reshape(-1) + 0.0
        want = set(x[~np.isnan(x)].tolist())
        got = y[~np.isnan(y)].tolist()
        found = [Wrong(0, j, -1, v, math.nan) for j, v in enumerate(got) if v not in want]
        if len(set(got)) != len(got) or set(got) != want:
            found.append(Wrong(0, -1, -1, math.nan, math.nan))
        inv = side.outputs.get(1)
        if inv is not None:
            inv_a = np.asarray(inv).astype(np.int64).reshape(-1)
            ok = inv_a.size == x.size and (inv_a >= 0).all() and (inv_a < y.size).all()
            if not ok or not _ties(y[inv_a], x, 0.0).all():
                found.append(Wrong(0, -1, -1, math.nan, math.nan))
        wrong.append(found)
        sets.append(want)
    x_r, x_t = (np.asarray(s.inputs[0], dtype=np.float64) for s in (ref, target))
    input_error = _input_error(x_r, x_t) if x_r.shape == x_t.shape else math.inf
    base = SelectionProof(SelectionCode.SAME, op_type, input_error=input_error, tolerance=0.0)
    if wrong[0]:
        return replace(base, code=SelectionCode.UNMODELLED, ref_wrong=len(wrong[0]))
    selected = len(sets[0] | sets[1])
    if wrong[1]:
        return replace(
            base,
            code=SelectionCode.BROKEN,
            selected=selected,
            wrong_count=len(wrong[1]),
            wrong=tuple(wrong[1][:MAX_WRONG]),
        )
    only = sorted(sets[0] ^ sets[1])
    ordered_ref = np.array(sorted(sets[0] | sets[1]))
    flips = []
    for v in only[:MAX_FLIPS]:
        others = ordered_ref[ordered_ref != v]
        margin = float(np.min(np.abs(others - v))) if others.size else math.nan
        flips.append(
            Flip(
                FlipKind.MEMBER,
                0,
                -1,
                -1,
                -1,
                v,
                math.nan,
                margin,
                input_error,
                PairSide.REF if v in sets[0] else PairSide.TARGET,
            )
        )
    equal = len(sets[0] & sets[1])
    code = SelectionCode.FLIP if only else SelectionCode.SAME
    return replace(
        base, code=code, selected=selected, equal=equal, common=equal, differing=len(only), flips=tuple(flips)
    )


# ------------------------------------------------------------------------------------------------ downstream


def flip_reach(
    flips: Sequence[bool], carried: Sequence[bool], predecessors: Callable[[int], set[int]]
) -> list[int | None]:
    """For each position of a scan's order, the position of the flip whose changed selection reaches it
    (itself for a flip op; the earliest when several do; None when none does). `flips[p]`: the op at p is a
    flip; `carried[p]`: a root's divergence reaches p (tainted), which then decides there and below, not a flip."""
    out: list[int | None] = []
    for pos, flipped in enumerate(flips):
        if carried[pos]:
            out.append(None)
            continue
        if flipped:
            out.append(pos)
            continue
        came = [f for p in predecessors(pos) if p < len(out) and (f := out[p]) is not None]
        out.append(min(came) if came else None)
    return out


# ------------------------------------------------------------------------------------------------ per run

# ops that carry a value on without computing it: the precision feeding a near-tie is made before them
_CARRIERS = frozenset(
    {
        "Reshape",
        "Transpose",
        "ExpandDims",
        "Squeeze",
        "Flatten",
        "Cast",
        "Identity",
        "TensorMove",
        "Depend",
        "StridedSlice",
        "Gather",
        "GatherV2",
        "Concat",
        "Load",
        "view",
        "reshape",
        "transpose",
        "flatten",
        "squeeze",
        "unsqueeze",
        "to",
        "contiguous",
        "permute",
        "float",
        "half",
        # comparisons decide, they compute nothing to keep in float32: what feeds a flipped mask feeds them
        "Equal",
        "NotEqual",
        "Greater",
        "GreaterEqual",
        "Less",
        "LessEqual",
        "gt",
        "ge",
        "lt",
        "le",
        "eq",
        "ne",
        "__gt__",
        "__ge__",
        "__lt__",
        "__le__",
        "__eq__",
        "__ne__",
    }
)
MAX_FEEDING = 2  # computing ops named as feeding a near-tie
MAX_CARRIER_HOPS = 16


class SelectionReason(Word):
    """The reason code of a tensor judged in context where a selection flip decides its verdict."""

    FLIP = "selection-flip"  # an output of the op whose selection flipped
    AFTER_FLIP = "after-selection-flip"  # a tensor downstream that the flipped selection reaches


class FlipReason(str):
    """A tensor's reason where a flip decides it: its code (the str every view and the JSON get) with the
    numbers report/selection.py words it from (the flip op, the tensor's own error)."""

    code: SelectionReason
    site: str  # the name of the op whose selection flipped
    error: float  # the tensor's own error (relative to its RMS; NaN when not measured)

    def __new__(cls, code: SelectionReason, site: str, error: float = math.nan) -> FlipReason:
        self = super().__new__(cls, code.value)
        self.code, self.site, self.error = code, site, error
        return self

    def __getnewargs__(self) -> tuple[SelectionReason, str, float]:  # type: ignore[override]  # not str's (str,)
        return self.code, self.site, self.error


@dataclass(frozen=True)
class FlipSite:
    """One op whose selection flipped, in one run: its judgement, what its changed selection reaches and the
    ops whose precision feeds its near-ties (a benign reason of the run, rendered by report/selection.py)."""

    index: int  # pair index of the op
    name: str  # its name (the reference's)
    op_type: str
    proof: SelectionProof
    reached: tuple[int, ...]  # pair indices of the ops downstream the flipped selection reaches (no root between)
    worst: int | None  # the reached op whose output error is largest (pair index)
    worst_name: str
    worst_error: float  # its output error, relative to its RMS
    feeding: tuple[str, ...]  # names of the computing ops whose output the scores are (nearest first)
    feeding_target: tuple[str, ...] = ()  # the same ops' names on the target (what a device's config names)


def feeding_ops(alignment: Alignment, pair: OpPair, slot: int) -> tuple[OpPair, ...]:
    """The computing ops whose precision feeds input `slot` of `pair`: its producer, looking through ops that
    only carry values (Reshape, Transpose, Cast...), then that op's own data producer, up to MAX_FEEDING."""
    from dumptui.core.graph.dataflow import producer_pair

    out: list[OpPair] = []
    current, at = pair, slot
    for _ in range(MAX_CARRIER_HOPS):
        prod = producer_pair(alignment, current, at)
        if prod is None or prod is current:
            break
        if prod.op_type not in _CARRIERS:
            out.append(prod)
            if len(out) >= MAX_FEEDING:
                break
        current, at = prod, 0
    return tuple(out)


def flip_sites(
    order: Sequence[OpPair],
    locals_: Sequence[object],
    reach: Sequence[int | None],
    feeding: Callable[[OpPair, int], tuple[OpPair, ...]],
) -> tuple[FlipSite, ...]:
    """Every op of a scan whose selection flipped, with what it reaches (`reach`: flip_reach's answer) and the
    ops feeding it. `locals_` are the scan's LocalErrors (read by their `selection`, `out_rel`)."""
    sites: list[FlipSite] = []
    for pos, le in enumerate(locals_):
        proof = getattr(le, "selection", None)
        if proof is None or not proof.flipped or reach[pos] != pos:
            continue
        pair = order[pos]
        reached = [p for p in range(pos + 1, len(order)) if reach[p] == pos]
        errors = [(getattr(locals_[p], "out_rel", None) or 0.0, p) for p in reached]
        feeds = feeding(pair, proof.input_slot)
        worst_error, worst = max(errors, default=(0.0, None))
        sites.append(
            FlipSite(
                index=pair.index,
                name=pair.name,
                op_type=pair.op_type,
                proof=proof,
                reached=tuple(order[p].index for p in reached),
                worst=None if worst is None else order[worst].index,
                worst_name="" if worst is None else order[worst].name,
                worst_error=float(worst_error),
                feeding=tuple(p.name for p in feeds),
                feeding_target=tuple((p.target or p.op).name for p in feeds),
            )
        )
    return tuple(sites)
