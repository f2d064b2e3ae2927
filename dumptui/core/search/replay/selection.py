"""Selection and index ops: which elements are kept or where they go, decided by comparing values.

TopK, Sort, ArgSort, NMS (MindSpore's NMSWithMask, CANN's NonMaxSuppressionV3/V4/V5 and
BatchMultiClassNonMaxSuppression, ONNX's NonMaxSuppression, torchvision's nms, torch_npu's npu_batch_nms), GatherD/GatherNd and index-select by computed indices, Unique, MaskedSelect, Where and
OneHot, in MindSpore's kernel names and as msprobe names PyTorch's API calls (`topk`, `sort`, `argsort`,
`argmax`, `argmin`, `gather`, `index_select`, `masked_select`, `where`, `one_hot`, `unique`, `nms`).

Order, everywhere: a stable sort, ties (equal values, -0.0 and 0.0 included) in index order, NaN the greatest
value (as PyTorch and numpy's sort put it). A device need not break ties so: whether a dumped selection is one
the op may give from these inputs is `core/search/selection.py`'s question, not the kernel's.

Values come back as float64 (integers keep an integer type), indices as int64.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dumptui.core.search.replay.args import Kernel, OpArgs, normalise_axes
from dumptui.core.search.replay.numeric import as_float64, is_integral
from dumptui.core.search.replay.spec import ReplayUnsupported, within_budget

MAX_NMS_BOXES = 20_000  # pairwise IoU: boxes^2 float64 (3.2 GB at 20,000)


@dataclass(frozen=True)
class RankSpec:
    """What a ranking op (TopK, Sort, ArgSort, ArgMax...) selects: along `axis` (None: the flattened input),
    the first `k` (None: every one) in descending or ascending order, and which output slots hold the
    indices and the values (None: not an output); `keep` whether an arg-reduction keeps its axis."""

    axis: int | None
    k: int | None
    descending: bool
    index_slot: int | None
    value_slot: int | None
    keep: bool = True
    ordered: bool = True  # False: an unsorted TopK, whose order within the k is the device's


def rank_spec(args: OpArgs) -> RankSpec | None:
    """The ranking an op of `args` computes, read from its inputs and attributes as its kernel reads them;
    None for an op that is no ranking."""
    t = args.op_type
    if t in ("TopK", "TopkExt"):
        axis, k = args.integer(2, ("dim", "axis"), -1), args.integer(1, ("k",))
        ordered = args.flag(4, ("sorted",), True)
        return RankSpec(axis, k, args.flag(3, ("largest",), True), 1, 0, ordered=ordered)
    if t == "topk":
        k, dim = _int_arg(args, 1, "k"), _int_arg(args, 2, "dim", -1)
        ordered = _bool_arg(args, 4, "sorted", True)
        return RankSpec(dim, k, _bool_arg(args, 3, "largest", True), 1, 0, ordered=ordered)
    if t in ("Sort", "SortExt"):
        return RankSpec(args.integer(1, ("axis", "dim"), -1), None, args.flag(2, ("descending",), False), 1, 0)
    if t == "sort":
        return RankSpec(_int_arg(args, 1, "dim", -1), None, _bool_arg(args, 2, "descending", False), 1, 0)
    if t == "ArgSort":
        return RankSpec(args.integer(1, ("axis", "dim"), -1), None, args.flag(2, ("descending",), False), 0, None)
    if t == "argsort":
        return RankSpec(_int_arg(args, 1, "dim", -1), None, _bool_arg(args, 2, "descending", False), 0, None)
    if t in ("ArgMax", "ArgMin"):
        return RankSpec(args.integer(1, ("axis", "dimension"), -1), 1, t == "ArgMax", 0, None, keep=False)
    if t in ("ArgMaxWithValue", "ArgMinWithValue"):
        keep = args.flag(2, ("keep_dims",), False)
        return RankSpec(args.integer(1, ("axis", "dimension"), -1), 1, t == "ArgMaxWithValue", 0, 1, keep=keep)
    if t in ("argmax", "argmin"):
        return RankSpec(_opt_int_arg(args, 1, "dim"), 1, t == "argmax", 0, None, _bool_arg(args, 2, "keepdim", False))
    return None


# CANN's multi-class NMS of a batch (TensorFlow's CombinedNonMaxSuppression): GE graphs name it
# BatchMultiClassNonMaxSuppression, the ONNX/ATC operator list BatchMultiClassNMS, npu_batch_nms torch_npu's
# call; MindSpore's CombinedNonMaxSuppression is the same selection, its settings inputs 2-5
BATCH_NMS_TYPES = frozenset(
    {"BatchMultiClassNonMaxSuppression", "BatchMultiClassNMS", "npu_batch_nms", "CombinedNonMaxSuppression"}
)
NMS_TYPES = frozenset(
    {
        "NMSWithMask",
        "NonMaxSuppressionV3",
        "NonMaxSuppressionV4",
        "NonMaxSuppressionV5",
        "NonMaxSuppression",
        "NonMaxSuppressionV6",
        "nms",
        *BATCH_NMS_TYPES,
    }
)


def _values(a: np.ndarray) -> np.ndarray:
    """A selection's values: integers and booleans as int64, floats as float64 (exact either way)."""
    return a.astype(np.int64) if is_integral(a) else as_float64(a)


def order(x: np.ndarray, axis: int = -1, descending: bool = False) -> np.ndarray:
    """The permutation that sorts `x` along `axis` (int64): stable (ties in index order), -0.0 equal to 0.0,
    NaN greater than every number (first when descending, last when ascending)."""
    x = np.asarray(x)
    if x.ndim == 0:
        return np.zeros((), dtype=np.int64)
    moved = np.moveaxis(x, axis, -1)
    if moved.dtype == np.bool_:
        moved = moved.astype(np.int64)
    if np.issubdtype(moved.dtype, np.integer):
        ints = moved.astype(np.int64)
        idx = np.argsort(~ints if descending else ints, axis=-1, kind="stable")  # ~v: -v - 1, never overflows
    else:
        v = as_float64(moved)
        nan = np.isnan(v)
        key = np.where(nan, 0.0, -v if descending else v) + 0.0  # + 0.0: -0.0 becomes 0.0 (a tie)
        idx = np.argsort(key, axis=-1, kind="stable")
        if nan.any():
            # NaN last ascending, first descending: a second stable sort on "is NaN" keeps the order within each
            nan_key = np.take_along_axis(~nan if descending else nan, idx, axis=-1)
            idx = np.take_along_axis(idx, np.argsort(nan_key, axis=-1, kind="stable"), axis=-1)
    return np.moveaxis(idx.astype(np.int64), -1, axis)


# ------------------------------------------------------------------------------------------------ TopK, Sort


def top_k(x: np.ndarray, k: int, axis: int = -1, largest: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """(values, indices) of the `k` largest (smallest) along `axis`, in order, ties in index order."""
    x = np.asarray(x)
    if x.ndim == 0:
        raise ReplayUnsupported("TopK of a 0-d tensor")
    (axis,) = normalise_axes((axis,), x.ndim, "TopK")
    n = x.shape[axis]
    if not 0 <= k <= n:
        raise ReplayUnsupported(f"TopK k = {k} is outside [0, {n}]")
    idx = np.take(order(x, axis, descending=largest), np.arange(k), axis=axis)
    values = np.take_along_axis(_values(x), idx, axis=axis)
    return values, idx


def _ms_topk(args: OpArgs) -> dict[int, np.ndarray]:
    """MindSpore TopK(x, k) over the last axis, largest first (attribute `sorted`: an unsorted TopK's order is
    the device's, compared as a set); TopkExt(x, k, dim, largest, sorted) takes them as inputs 2-4."""
    x = args.raw(0)
    k = args.integer(1, ("k",))
    axis = args.integer(2, ("dim", "axis"), -1)
    largest = args.flag(3, ("largest",), True)
    values, idx = top_k(x, k, axis, largest)
    return {0: values, 1: idx}


def _torch_topk(args: OpArgs) -> dict[int, np.ndarray]:
    """torch.topk(input, k, dim=-1, largest=True, sorted=True), as msprobe records it: the tensor is input.0,
    the numbers are attributes (`scalar input N` by position, else by name)."""
    x = args.raw(0)
    k, axis = _int_arg(args, 1, "k"), _int_arg(args, 2, "dim", -1)
    values, idx = top_k(x, k, axis, _bool_arg(args, 3, "largest", True))
    return {0: values, 1: idx}


def _sorted(x: np.ndarray, axis: int, descending: bool) -> dict[int, np.ndarray]:
    if x.ndim == 0:
        return {0: _values(x), 1: np.zeros((), dtype=np.int64)}
    (axis,) = normalise_axes((axis,), x.ndim, "Sort")
    idx = order(x, axis, descending)
    return {0: np.take_along_axis(_values(x), idx, axis=axis), 1: idx}


def _ms_sort(args: OpArgs) -> dict[int, np.ndarray]:
    """MindSpore Sort (attributes axis = -1, descending = False; SortExt: inputs dim, descending, stable)."""
    x = args.raw(0)
    return _sorted(x, args.integer(1, ("axis", "dim"), -1), args.flag(2, ("descending",), False))


def _torch_sort(args: OpArgs) -> dict[int, np.ndarray]:
    """torch.sort(input, dim=-1, descending=False, stable=False) / Tensor.sort."""
    x = args.raw(0)
    return _sorted(x, _int_arg(args, 1, "dim", -1), _bool_arg(args, 2, "descending", False))


def _ms_argsort(args: OpArgs) -> dict[int, np.ndarray]:
    """ArgSort(x, axis = -1, descending = False): Sort's indices only."""
    x = args.raw(0)
    return {0: _sorted(x, args.integer(1, ("axis", "dim"), -1), args.flag(2, ("descending",), False))[1]}


def _torch_argsort(args: OpArgs) -> dict[int, np.ndarray]:
    """torch.argsort(input, dim=-1, descending=False, stable=False)."""
    x = args.raw(0)
    dim, descending = _int_arg(args, 1, "dim", -1), _bool_arg(args, 2, "descending", False)
    return {0: _sorted(x, dim, descending)[1]}


def _torch_arg_extreme(largest: bool) -> Kernel:
    def kernel(args: OpArgs) -> dict[int, np.ndarray]:
        """torch.argmax / argmin(input, dim=None, keepdim=False): the first extreme (NaN the greatest, so the
        first NaN for both, as PyTorch answers); no dim: over the flattened input."""
        x = _values(args.raw(0))
        dim = _opt_int_arg(args, 1, "dim")
        keep = _bool_arg(args, 2, "keepdim", False)
        if x.size == 0:
            raise ReplayUnsupported("argmax/argmin of an empty tensor has no value")
        flat = dim is None
        data = x.reshape(-1) if flat else x
        axis = 0 if dim is None else normalise_axes((dim,), x.ndim, args.op_type)[0]
        if data.ndim == 0:
            return {0: np.zeros((), dtype=np.int64)}
        nan = np.isnan(data) if data.dtype.kind == "f" else np.zeros(data.shape, dtype=bool)
        # the first position of the extreme; a NaN anywhere along the axis wins (its first position)
        first = np.argmax(data, axis=axis) if largest else np.argmin(data, axis=axis)
        first_nan = np.argmax(nan, axis=axis)
        idx = np.where(nan.any(axis=axis), first_nan, first).astype(np.int64)
        if keep and not flat:
            idx = np.expand_dims(idx, axis)
        elif keep:
            idx = idx.reshape((1,) * x.ndim)
        return {0: idx}

    return kernel


# ------------------------------------------------------------------------------------------------ NMS


def iou_matrix(boxes: np.ndarray) -> np.ndarray:
    """Pairwise IoU of corner boxes (x0, y0, x1, y1), corners in either order; an empty union gives 0."""
    b = as_float64(boxes)
    x0, x1 = np.minimum(b[:, 0], b[:, 2]), np.maximum(b[:, 0], b[:, 2])
    y0, y1 = np.minimum(b[:, 1], b[:, 3]), np.maximum(b[:, 1], b[:, 3])
    area = (x1 - x0) * (y1 - y0)
    w = np.clip(np.minimum(x1[:, None], x1[None, :]) - np.maximum(x0[:, None], x0[None, :]), 0, None)
    h = np.clip(np.minimum(y1[:, None], y1[None, :]) - np.maximum(y0[:, None], y0[None, :]), 0, None)
    inter = w * h
    union = area[:, None] + area[None, :] - inter
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(union > 0, inter / np.where(union > 0, union, 1.0), 0.0)


def greedy_nms(iou: np.ndarray, ranked: np.ndarray, threshold: float, limit: int | None = None) -> np.ndarray:
    """The boxes kept, in `ranked` order: each box in turn is kept unless a kept box overlaps it by more than
    `threshold` (IoU > threshold suppresses); at most `limit`."""
    kept: list[int] = []
    for i in ranked.tolist():
        if limit is not None and len(kept) >= limit:
            break
        if not kept or not (iou[i, kept] > threshold).any():
            kept.append(i)
    return np.asarray(kept, dtype=np.int64)


def _nms_budget(op_type: str, n: int) -> None:
    within_budget(op_type, [("boxes", n, MAX_NMS_BOXES)])


def nms_with_mask(bboxes: np.ndarray, threshold: float, by_score: bool = True) -> dict[int, np.ndarray]:
    """NMSWithMask(bboxes (N, 5): x0, y0, x1, y1, score): (output_boxes, output_idx, selected_mask).
    On CPU and GPU (`by_score`) the boxes come sorted by score, highest first, `output_idx` their input
    indices and the mask over that order; on Ascend the score is ignored: the boxes stay in input order and
    each is kept unless an earlier kept box overlaps it (MindSpore's documentation of NMSWithMask)."""
    b = as_float64(bboxes)
    if b.ndim != 2 or b.shape[1] != 5:
        raise ReplayUnsupported(f"NMSWithMask boxes are {b.shape}, not (N, 5)")
    _nms_budget("NMSWithMask", b.shape[0])
    ranked = order(b[:, 4], 0, descending=True) if by_score else np.arange(b.shape[0], dtype=np.int64)
    kept = greedy_nms(iou_matrix(b[ranked, :4]), np.arange(b.shape[0], dtype=np.int64), threshold)
    mask = np.zeros(b.shape[0], dtype=bool)
    mask[kept] = True
    return {0: b[ranked], 1: ranked, 2: mask}


@dataclass(frozen=True)
class NmsSpec:
    """An NMS op's definition: IoU above `threshold` suppresses; scores at or under `floor` are left out; at
    most `limit` kept per group (None: no limit)."""

    threshold: float
    floor: float
    limit: int | None


def nms_spec(args: OpArgs) -> NmsSpec:
    t = args.op_type
    if t == "NMSWithMask":
        return NmsSpec(args.number(None, ("iou_threshold",), 0.5), -np.inf, None)
    if t in ("NonMaxSuppressionV3", "NonMaxSuppressionV4", "NonMaxSuppressionV5"):
        if t == "NonMaxSuppressionV5":
            _hard_nms(args)
        floor = args.number(4, ("score_threshold",), -np.inf)
        return NmsSpec(args.number(3, ("iou_threshold",)), floor, args.integer(2, ("max_output_size",)))
    if t in BATCH_NMS_TYPES:
        b = batch_nms_spec(args)
        return NmsSpec(b.iou_threshold, b.score_threshold, b.per_class)
    if t in ("NonMaxSuppression", "NonMaxSuppressionV6"):
        floor = args.number(4, ("score_threshold",), -np.inf)
        return NmsSpec(
            args.number(3, ("iou_threshold",), 0.0), floor, args.integer(2, ("max_output_boxes_per_class",), 0)
        )
    if t == "nms":
        return NmsSpec(_float_arg(args, 2, "iou_threshold"), -np.inf, None)
    raise ReplayUnsupported(f"{t} is no NMS")


def nms_groups(args: OpArgs) -> list[tuple[tuple[int, int], np.ndarray, np.ndarray]]:
    """Each group an NMS op selects within: ((batch, class), corner boxes (N, 4) as x0, y0, x1, y1, scores (N,)).
    One group but for ONNX's NonMaxSuppression (one per batch and class)."""
    t = args.op_type
    if t in BATCH_NMS_TYPES:
        boxes, scores, valid = batch_nms_inputs(args)
        q = boxes.shape[2]
        return [
            ((batch, c), boxes[batch, : valid[batch], 0 if q == 1 else c], scores[batch, : valid[batch], c])
            for batch in range(boxes.shape[0])
            for c in range(scores.shape[2])
        ]
    if t == "NMSWithMask":
        b = as_float64(args.raw(0))
        if b.ndim != 2 or b.shape[1] != 5:
            raise ReplayUnsupported(f"NMSWithMask boxes are {b.shape}, not (N, 5)")
        return [((0, 0), b[:, :4], b[:, 4])]
    boxes, scores = as_float64(args.raw(0)), as_float64(args.raw(1))
    if t in ("NonMaxSuppression", "NonMaxSuppressionV6"):
        if boxes.ndim != 3 or boxes.shape[2] != 4 or scores.ndim != 3 or scores.shape[::2] != boxes.shape[:2]:
            raise ReplayUnsupported(f"{t} boxes {boxes.shape} and scores {scores.shape} do not fit")
        out: list[tuple[tuple[int, int], np.ndarray, np.ndarray]] = []
        for batch in range(boxes.shape[0]):
            bx = boxes[batch]
            if args.integer(None, ("center_point_box",), 0):
                cx, cy, w, h = bx[:, 0], bx[:, 1], bx[:, 2], bx[:, 3]
                corners = np.stack([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], axis=1)
            else:
                corners = _tf_boxes(bx)
            out += [((batch, c), corners, scores[batch, c]) for c in range(scores.shape[1])]
        return out
    if boxes.ndim != 2 or boxes.shape[1] != 4 or scores.shape != (boxes.shape[0],):
        raise ReplayUnsupported(f"{t} boxes {boxes.shape} and scores {scores.shape} do not fit")
    return [((0, 0), _tf_boxes(boxes) if t.startswith("NonMaxSuppressionV") else boxes, scores)]


def _ms_nms_with_mask(args: OpArgs) -> dict[int, np.ndarray]:
    return nms_with_mask(args.raw(0), args.number(None, ("iou_threshold",), 0.5))


def _tf_boxes(boxes: np.ndarray) -> np.ndarray:
    """(y0, x0, y1, x1) boxes, TensorFlow's and CANN's order, as (x0, y0, x1, y1)."""
    return boxes[:, [1, 0, 3, 2]]


def _nms_v3(args: OpArgs) -> dict[int, np.ndarray]:
    """CANN NonMaxSuppressionV3/V4/V5 (TensorFlow's): boxes (N, 4) as (y0, x0, y1, x1), scores (N,),
    max_output_size, iou_threshold, score_threshold (inputs 2-4; V5: soft_nms_sigma input 5, replayed when 0,
    hard NMS): the indices kept, highest score first, boxes at or under score_threshold left out. V4 adds how
    many are valid (output.1), V5 the kept boxes' scores (output.1) and how many are valid (output.2); both pad
    their lists to max_output_size with 0 when the attribute pad_to_max_output_size says so."""
    boxes, scores = as_float64(args.raw(0)), as_float64(args.raw(1))
    if boxes.ndim != 2 or boxes.shape[1] != 4 or scores.shape != (boxes.shape[0],):
        raise ReplayUnsupported(f"{args.op_type} boxes {boxes.shape} and scores {scores.shape} do not fit")
    _nms_budget(args.op_type, boxes.shape[0])
    if args.op_type == "NonMaxSuppressionV5":
        _hard_nms(args)
    limit = args.integer(2, ("max_output_size",))
    threshold = args.number(3, ("iou_threshold",))
    floor = args.number(4, ("score_threshold",), -np.inf)
    ranked = order(scores, 0, descending=True)
    ranked = ranked[scores[ranked] > floor]
    kept = greedy_nms(iou_matrix(_tf_boxes(boxes)), ranked, threshold, limit)
    if args.op_type == "NonMaxSuppressionV3":
        return {0: kept}
    valid = np.asarray(kept.size, dtype=np.int64)
    kept_scores = scores[kept]
    if args.flag(None, ("pad_to_max_output_size",), False):
        kept = np.concatenate([kept, np.zeros(max(limit, 0) - kept.size, dtype=np.int64)])
        kept_scores = np.concatenate([kept_scores, np.zeros(kept.size - kept_scores.size)])
    if args.op_type == "NonMaxSuppressionV4":
        return {0: kept, 1: valid}
    return {0: kept, 1: kept_scores, 2: valid}


def _hard_nms(args: OpArgs) -> None:
    """NonMaxSuppressionV5's soft_nms_sigma (input 5): 0 is hard NMS; soft NMS (scores decayed by their
    overlaps, boxes reordered as they decay) is not replayed."""
    sigma = args.number(5, ("soft_nms_sigma",), 0.0)
    if sigma != 0.0:
        raise ReplayUnsupported(f"{args.op_type} with soft_nms_sigma = {sigma} (soft NMS) is not replayed")


@dataclass(frozen=True)
class BatchNmsSpec:
    """A multi-class NMS of a batch: per image and class, boxes scoring over `score_threshold` in turn, highest
    first, kept unless a kept box of the class overlaps it by more than `iou_threshold`, at most `per_class` of
    them; then the image's kept boxes of every class by score, highest first (ties: class, then rank), the
    first `total`."""

    score_threshold: float
    iou_threshold: float
    per_class: int
    total: int
    clip: bool = False  # the kept boxes written clipped to [0, 1] (CombinedNonMaxSuppression's clip_boxes)
    rows: int | None = None  # the outputs' rows when not `total` (pad_per_class: per_class x classes at most)


def batch_nms_spec(args: OpArgs) -> BatchNmsSpec:
    """Its settings: attributes in CANN's graphs, `scalar input N` as msprobe records torch_npu's call
    npu_batch_nms(boxes, scores, score_threshold, iou_threshold, max_size_per_class, max_total_size,
    change_coordinate_frame, transpose_box); CombinedNonMaxSuppression's inputs max_output_size_per_class,
    max_total_size, iou_threshold, score_threshold (2-5), attributes clip_boxes (true) and pad_per_class."""
    if args.op_type == "CombinedNonMaxSuppression":
        per_class, total = args.integer(2, ("max_output_size_per_class",)), args.integer(3, ("max_total_size",))
        if per_class < 0 or total < 0:
            raise ReplayUnsupported(f"{args.op_type} limits {per_class}, {total} are negative")
        classes = int(np.shape(args.raw(1))[-1]) if np.ndim(args.raw(1)) == 3 else 0
        rows = min(per_class * classes, total) if args.flag(None, ("pad_per_class",), False) else None
        return BatchNmsSpec(
            args.number(5, ("score_threshold",)),
            args.number(4, ("iou_threshold",)),
            per_class,
            total,
            clip=args.flag(None, ("clip_boxes",), True),
            rows=rows,
        )

    def setting(position: int, name: str) -> tuple[str, ...]:
        return (name, f"scalar input {position}")

    if args.flag(None, setting(7, "transpose_box"), False):
        raise ReplayUnsupported(f"{args.op_type} with transpose_box (boxes laid out (B, q, 4, N)) is not replayed")
    if args.flag(None, setting(6, "change_coordinate_frame"), False):
        raise ReplayUnsupported(f"{args.op_type} with change_coordinate_frame (boxes rescaled) is not replayed")
    if args.op_type != "npu_batch_nms" and args.has(2):  # (CombinedNonMaxSuppression returned above)
        raise ReplayUnsupported(f"{args.op_type} with a clip_window (boxes clipped first) is not replayed")
    per_class = args.integer(None, setting(4, "max_size_per_class"))
    total = args.integer(None, setting(5, "max_total_size"))
    if per_class < 0 or total < 0:
        raise ReplayUnsupported(f"{args.op_type} limits {per_class}, {total} are negative")
    return BatchNmsSpec(
        args.number(None, setting(2, "score_threshold"), -np.inf),
        args.number(None, setting(3, "iou_threshold")),
        per_class,
        total,
    )


def batch_nms_inputs(args: OpArgs) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """(boxes (B, N, q, 4) as x0, y0, x1, y1 (CombinedNonMaxSuppression: y0, x0, y1, x1, the same overlaps)
    with q 1 or the classes, scores (B, N, C), the valid boxes of each image: input num_valid_boxes (3) where
    dumped, else N), as float64."""
    boxes, scores = as_float64(args.raw(0)), as_float64(args.raw(1))
    if (
        boxes.ndim != 4
        or boxes.shape[3] != 4
        or scores.ndim != 3
        or scores.shape[:2] != boxes.shape[:2]
        or boxes.shape[2] not in (1, scores.shape[2])
    ):
        raise ReplayUnsupported(f"{args.op_type} boxes {boxes.shape} and scores {scores.shape} do not fit")
    _nms_budget(args.op_type, boxes.shape[1])
    n = boxes.shape[1]
    valid = [n] * boxes.shape[0]
    if args.op_type in ("BatchMultiClassNonMaxSuppression", "BatchMultiClassNMS") and args.has(3):
        given = np.asarray(args.raw(3)).astype(np.int64).reshape(-1)
        if given.size not in (1, boxes.shape[0]):
            raise ReplayUnsupported(f"{args.op_type} num_valid_boxes of {given.size} for a batch of {boxes.shape[0]}")
        valid = [int(np.clip(v, 0, n)) for v in np.broadcast_to(given, (boxes.shape[0],))]
    return boxes, scores, valid


def batch_nms_select(args: OpArgs) -> list[list[tuple[float, int, int]]]:
    """Per image, (score, class, box) of the boxes kept, in output order."""
    spec = batch_nms_spec(args)
    boxes, scores, valid = batch_nms_inputs(args)
    q = boxes.shape[2]
    out = []
    for b in range(boxes.shape[0]):
        found: list[tuple[float, int, int]] = []
        for c in range(scores.shape[2]):
            s = scores[b, : valid[b], c]
            ranked = order(s, 0, descending=True)
            ranked = ranked[s[ranked] > spec.score_threshold]
            iou = iou_matrix(boxes[b, : valid[b], 0 if q == 1 else c])
            found += [(float(s[i]), c, i) for i in greedy_nms(iou, ranked, spec.iou_threshold, spec.per_class).tolist()]
        by_score = order(np.asarray([f[0] for f in found], dtype=np.float64), 0, descending=True)
        out.append([found[i] for i in by_score.tolist()][: spec.total])
    return out


def _batch_nms(args: OpArgs) -> dict[int, np.ndarray]:
    """BatchMultiClassNonMaxSuppression(boxes, scores, clip_window, num_valid_boxes): nmsed_boxes (B, total,
    4), nmsed_scores and nmsed_classes (B, total; classes as numbers of the scores' type), nmsed_num (B,): each
    image's kept boxes in order, then zeros. CombinedNonMaxSuppression the same (valid_detections for
    nmsed_num), its boxes clipped to [0, 1] when clip_boxes, its rows per_class x classes at most when
    pad_per_class. (CANN's kernel runs NMS on each class's top 4080 or so candidates only: beyond them its
    answer is its own, which the judgement allows; this replay considers every box.)"""
    selected = batch_nms_select(args)
    boxes, scores, _valid = batch_nms_inputs(args)
    spec = batch_nms_spec(args)
    total = spec.total if spec.rows is None else spec.rows
    batch, q = boxes.shape[0], boxes.shape[2]
    out_boxes = np.zeros((batch, total, 4))
    out_scores = np.zeros((batch, total))
    out_classes = np.zeros((batch, total))
    for b, rows in enumerate(selected):
        for r, (score, c, i) in enumerate(rows[:total]):
            box = boxes[b, i, 0 if q == 1 else c]
            out_boxes[b, r] = np.clip(box, 0.0, 1.0) if spec.clip else box
            out_scores[b, r], out_classes[b, r] = score, c
    counts = np.asarray([len(rows) for rows in selected], dtype=np.int64)
    return {0: out_boxes, 1: out_scores, 2: out_classes, 3: counts}


def _onnx_nms(args: OpArgs) -> dict[int, np.ndarray]:
    """NonMaxSuppression (ONNX's, CANN's NonMaxSuppressionV6): boxes (B, N, 4), scores (B, C, N),
    max_output_boxes_per_class, iou_threshold, score_threshold (inputs 2-4), attribute center_point_box
    (0: y0, x0, y1, x1; 1: x_center, y_center, width, height): rows (batch, class, box), per batch and class
    highest score first; boxes at or under score_threshold left out."""
    boxes, scores = as_float64(args.raw(0)), as_float64(args.raw(1))
    if boxes.ndim != 3 or boxes.shape[2] != 4 or scores.ndim != 3 or scores.shape[::2] != boxes.shape[:2]:
        raise ReplayUnsupported(f"NonMaxSuppression boxes {boxes.shape} and scores {scores.shape} do not fit")
    _nms_budget(args.op_type, boxes.shape[1])
    limit = args.integer(2, ("max_output_boxes_per_class",), 0)
    threshold = args.number(3, ("iou_threshold",), 0.0)
    floor = args.number(4, ("score_threshold",), -np.inf)
    centre = args.integer(None, ("center_point_box",), 0)
    rows: list[tuple[int, int, int]] = []
    for b in range(boxes.shape[0]):
        bx = boxes[b]
        if centre:
            cx, cy, w, h = bx[:, 0], bx[:, 1], bx[:, 2], bx[:, 3]
            corners = np.stack([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], axis=1)
        else:
            corners = _tf_boxes(bx)
        iou = iou_matrix(corners)
        for c in range(scores.shape[1]):
            s = scores[b, c]
            ranked = order(s, 0, descending=True)
            ranked = ranked[s[ranked] > floor]
            for i in greedy_nms(iou, ranked, threshold, limit if limit > 0 else 0).tolist():
                rows.append((b, c, i))
    return {0: np.asarray(rows, dtype=np.int64).reshape(-1, 3)}


def _torchvision_nms(args: OpArgs) -> dict[int, np.ndarray]:
    """torchvision.ops.nms(boxes (N, 4) x0, y0, x1, y1, scores (N,), iou_threshold): kept, highest first."""
    boxes, scores = as_float64(args.raw(0)), as_float64(args.raw(1))
    if boxes.ndim != 2 or boxes.shape[1] != 4 or scores.shape != (boxes.shape[0],):
        raise ReplayUnsupported(f"nms boxes {boxes.shape} and scores {scores.shape} do not fit")
    _nms_budget("nms", boxes.shape[0])
    threshold = _float_arg(args, 2, "iou_threshold")
    return {0: greedy_nms(iou_matrix(boxes), order(scores, 0, descending=True), threshold)}


# ------------------------------------------------------------------------------------------------ gathers


def _indices(a: np.ndarray, what: str) -> np.ndarray:
    if not np.issubdtype(a.dtype, np.integer):
        raise ReplayUnsupported(f"{what} indices are {a.dtype}, not integers")
    return a.astype(np.int64)


def gather_d(x: np.ndarray, axis: int, index: np.ndarray, what: str = "GatherD") -> np.ndarray:
    """out[..., i, ...] = x[..., index[..., i, ...], ...] along `axis` (index of x's rank, no larger on the
    other axes). Negative indices count from the end (PyTorch's and MindSpore's rule); out of range is refused
    (devices answer it differently)."""
    x = _values(np.asarray(x))
    index = _indices(np.asarray(index), what)
    if index.ndim != x.ndim:
        raise ReplayUnsupported(f"{what} index has rank {index.ndim}, the input {x.ndim}")
    (axis,) = normalise_axes((axis,), x.ndim, what)
    n = x.shape[axis]
    if index.size and (index.min() < -n or index.max() >= n):
        raise ReplayUnsupported(f"{what} index out of range [-{n}, {n}): device-dependent result")
    if any(i > s for d, (i, s) in enumerate(zip(index.shape, x.shape)) if d != axis):
        raise ReplayUnsupported(f"{what} index {index.shape} is larger than the input {x.shape}")
    index = np.where(index < 0, index + n, index)
    sliced = x[tuple(slice(0, s) if d != axis else slice(None) for d, s in enumerate(index.shape))]
    return np.take_along_axis(sliced, index, axis=axis)


def _ms_gather_d(args: OpArgs) -> dict[int, np.ndarray]:
    """GatherD(x, dim, index): dim is input.1 (a constant) or attribute dim."""
    return {0: gather_d(args.raw(0), args.integer(1, ("dim", "axis")), args.raw(2))}


def _torch_gather(args: OpArgs) -> dict[int, np.ndarray]:
    """torch.gather(input, dim, index): the index tensor is input.1 (dim is a number, not a tensor)."""
    return {0: gather_d(args.raw(0), _int_arg(args, 1, "dim"), args.raw(1), "gather")}


def _gather_nd(args: OpArgs) -> dict[int, np.ndarray]:
    """GatherNd(x, indices): indices (..., m) index x's first m axes; out (..., x.shape[m:])."""
    x = _values(args.raw(0))
    idx = _indices(args.raw(1), "GatherNd")
    if idx.ndim == 0 or idx.shape[-1] > x.ndim:
        raise ReplayUnsupported(f"GatherNd indices {idx.shape} do not fit the input {x.shape}")
    m = idx.shape[-1]
    bounds = np.asarray(x.shape[:m], dtype=np.int64)
    if idx.size and ((idx < 0).any() or (idx >= bounds).any()):
        raise ReplayUnsupported("GatherNd index out of range: device-dependent result")
    flat = idx.reshape(-1, m)
    out = x[tuple(flat[:, j] for j in range(m))]
    return {0: out.reshape(idx.shape[:-1] + x.shape[m:])}


def _torch_index_select(args: OpArgs) -> dict[int, np.ndarray]:
    """torch.index_select(input, dim, index): the index tensor is input.1."""
    x = _values(args.raw(0))
    idx = _indices(args.raw(1), "index_select").reshape(-1)
    (axis,) = normalise_axes((_int_arg(args, 1, "dim"),), max(x.ndim, 1), "index_select")
    n = x.shape[axis] if x.ndim else 1
    if idx.size and (idx.min() < 0 or idx.max() >= n):
        raise ReplayUnsupported(f"index_select index out of range [0, {n}): device-dependent result")
    return {0: np.take(x, idx, axis=axis)}


# ------------------------------------------------------------------------------------------------ sets, masks


def _unique(x: np.ndarray) -> dict[int, np.ndarray]:
    """(the distinct values in ascending order, each element's position among them, each value's count).
    NaN: each NaN is its own value (NaN != NaN), last, as PyTorch's sorted unique gives them."""
    v = _values(x).reshape(-1)
    if v.dtype.kind == "f":
        v = v + 0.0  # -0.0 and 0.0 are one value
    values, inverse, counts = np.unique(v, return_inverse=True, return_counts=True, equal_nan=False)
    return {0: values, 1: inverse.reshape(np.shape(x)).astype(np.int64), 2: counts.astype(np.int64)}


def _ms_unique(args: OpArgs) -> dict[int, np.ndarray]:
    """MindSpore Unique(x) of a 1-d x: (y, idx) with x = y[idx]; y's order is compared as a set."""
    out = _unique(args.raw(0))
    return {0: out[0], 1: out[1]}


def _torch_unique(args: OpArgs) -> dict[int, np.ndarray]:
    """torch.unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None): its outputs are
    the unique values, then the inverse and the counts when asked for, in that order."""
    if _opt_int_arg(args, 4, "dim") is not None:
        raise ReplayUnsupported("torch.unique along a dim is not replayed")
    out = _unique(args.raw(0))
    result = {0: out[0]}
    if _bool_arg(args, 2, "return_inverse", False):
        result[len(result)] = out[1]
    if _bool_arg(args, 3, "return_counts", False):
        result[len(result)] = out[2]
    return result


def _masked_select(args: OpArgs) -> dict[int, np.ndarray]:
    """MaskedSelect(x, mask) / torch.masked_select: x broadcast with mask, the elements where it is true, 1-d."""
    x, mask = _values(args.raw(0)), args.raw(1)
    if mask.dtype != np.bool_:
        raise ReplayUnsupported(f"{args.op_type} mask is {mask.dtype}, not bool")
    try:
        xb, mb = np.broadcast_arrays(x, mask)
    except ValueError as e:
        raise ReplayUnsupported(f"{args.op_type} of {x.shape} and a mask of {mask.shape}: {e}") from e
    return {0: xb[mb]}


def _torch_where(args: OpArgs) -> dict[int, np.ndarray]:
    """torch.where(condition, input, other) with three tensors (numbers in their place are not replayed; the
    one-argument form is nonzero)."""
    if not (args.has(0) and args.has(1) and args.has(2)):
        raise ReplayUnsupported("where with a number for input or other, or with one argument, is not replayed")
    cond, x, y = args.raw(0), args.raw(1), args.raw(2)
    if cond.dtype != np.bool_:
        raise ReplayUnsupported(f"where condition is {cond.dtype}, not bool")
    if is_integral(x) and is_integral(y):
        return {0: np.where(cond, x, y)}
    return {0: np.where(cond, as_float64(x), as_float64(y))}


_TORCH_COMPARE = {
    "gt": np.greater,
    "ge": np.greater_equal,
    "lt": np.less,
    "le": np.less_equal,
    "eq": np.equal,
    "ne": np.not_equal,
}
# as msprobe names them: Torch.gt, Torch.greater..., Tensor.__gt__ (`x > t`), Tensor.gt
TORCH_COMPARE_NAMES = {
    **{name: name for name in _TORCH_COMPARE},
    **{f"__{name}__": name for name in _TORCH_COMPARE},
    "greater": "gt",
    "greater_equal": "ge",
    "less": "lt",
    "less_equal": "le",
    "not_equal": "ne",
}


def compare_other(args: OpArgs) -> np.ndarray:
    """The second operand of a PyTorch comparison: input.1 when a tensor, else the number msprobe records
    (`scalar input 1`, or the keyword `other`)."""
    if args.has(1):
        return args.raw(1)
    value = _scalar_arg(args, 1, "other")
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ReplayUnsupported(f"{args.op_type} compares with {value!r}, not a number")
    return np.asarray(value)


def _torch_compare(args: OpArgs) -> dict[int, np.ndarray]:
    """torch.gt/ge/lt/le/eq/ne (and their names as operators): elementwise, broadcast, bool; NaN compares
    unequal, -0.0 equals 0.0; two integer tensors compared exactly."""
    fn = _TORCH_COMPARE[TORCH_COMPARE_NAMES[args.op_type]]
    x, y = args.raw(0), compare_other(args)
    try:
        return {0: np.asarray(fn(_values(x), _values(y)))}
    except ValueError as e:
        raise ReplayUnsupported(f"{args.op_type} of {x.shape} and {y.shape}: {e}") from e


def one_hot(indices: np.ndarray, depth: int, on: object = 1, off: object = 0, axis: int = -1) -> np.ndarray:
    """`depth` classes on a new axis (`axis`, -1 the last): `on` where the class is the index, else `off`; an
    index outside [0, depth) gives a row of `off` (MindSpore's and TensorFlow's rule)."""
    idx = _indices(np.asarray(indices), "OneHot")
    if depth < 0:
        raise ReplayUnsupported(f"OneHot depth {depth} is negative")
    nd = idx.ndim + 1
    (axis,) = normalise_axes((axis,), nd, "OneHot")
    hot = idx[..., None] == np.arange(depth, dtype=np.int64)
    hot = np.moveaxis(hot, -1, axis)
    on_a, off_a = np.asarray(on), np.asarray(off)
    if is_integral(on_a) and is_integral(off_a):
        return np.where(hot, on_a.astype(np.int64), off_a.astype(np.int64))
    return np.where(hot, as_float64(on_a), as_float64(off_a))


def _ms_one_hot(args: OpArgs) -> dict[int, np.ndarray]:
    """OneHot(indices, depth, on_value, off_value), attribute axis (-1)."""
    depth = args.integer(1, ("depth",))
    return {0: one_hot(args.raw(0), depth, args.raw(2), args.raw(3), args.integer(None, ("axis",), -1))}


def _torch_one_hot(args: OpArgs) -> dict[int, np.ndarray]:
    """torch.nn.functional.one_hot(tensor, num_classes=-1): int64; -1 takes the largest index + 1."""
    idx = _indices(args.raw(0), "one_hot")
    depth = _int_arg(args, 1, "num_classes", -1)
    if idx.size and idx.min() < 0:
        raise ReplayUnsupported("one_hot of a negative index: PyTorch refuses it")
    if depth < 0:
        depth = int(idx.max()) + 1 if idx.size else 0
    elif idx.size and idx.max() >= depth:
        raise ReplayUnsupported("one_hot index at or beyond num_classes: PyTorch refuses it")
    return {0: one_hot(idx, depth)}


# ------------------------------------------------------------------------------------------------ arguments


def _scalar_arg(args: OpArgs, position: int, name: str, default: object = ...) -> object:
    """A number argument of a PyTorch call as msprobe records it: `scalar input N` by position (N counts
    every argument, tensors included), else the keyword; `default` when absent (required when not given)."""
    for key in (f"scalar input {position}", name):
        value = args.attr(key)
        if value is not None:
            return value
    if default is ...:
        raise ReplayUnsupported(f"{args.op_type} needs its argument {name}, and it is not recorded")
    return default


scalar_arg = _scalar_arg  # (torchcalls.py reads its numbers so too)


def _int_arg(args: OpArgs, position: int, name: str, default: object = ...) -> int:
    value = _scalar_arg(args, position, name, default)
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ReplayUnsupported(f"{args.op_type} argument {name} = {value!r} is not an integer")
    return int(value)


def _opt_int_arg(args: OpArgs, position: int, name: str) -> int | None:
    return None if _scalar_arg(args, position, name, None) is None else _int_arg(args, position, name)


def _bool_arg(args: OpArgs, position: int, name: str, default: bool) -> bool:
    value = _scalar_arg(args, position, name, default)
    if not isinstance(value, (bool, int, np.bool_, np.integer)):
        raise ReplayUnsupported(f"{args.op_type} argument {name} = {value!r} is not a boolean")
    return bool(value)


def _float_arg(args: OpArgs, position: int, name: str) -> float:
    value = _scalar_arg(args, position, name)
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ReplayUnsupported(f"{args.op_type} argument {name} = {value!r} is not a number")
    return float(value)


def kernels() -> dict[str, Kernel]:
    """Every kernel of this module, by op type (MindSpore and CANN kernel names, msprobe's PyTorch API names)."""
    return {
        "TopK": _ms_topk,
        "TopkExt": _ms_topk,
        "topk": _torch_topk,
        "Sort": _ms_sort,
        "SortExt": _ms_sort,
        "sort": _torch_sort,
        "ArgSort": _ms_argsort,
        "argsort": _torch_argsort,
        "argmax": _torch_arg_extreme(True),
        "argmin": _torch_arg_extreme(False),
        "NMSWithMask": _ms_nms_with_mask,
        "NonMaxSuppressionV3": _nms_v3,
        "NonMaxSuppressionV4": _nms_v3,
        "NonMaxSuppressionV5": _nms_v3,
        **dict.fromkeys(BATCH_NMS_TYPES, _batch_nms),
        "NonMaxSuppression": _onnx_nms,
        "NonMaxSuppressionV6": _onnx_nms,
        "nms": _torchvision_nms,
        "GatherD": _ms_gather_d,
        "gather": _torch_gather,
        "GatherNd": _gather_nd,
        "index_select": _torch_index_select,
        "Unique": _ms_unique,
        "unique": _torch_unique,
        "MaskedSelect": _masked_select,
        "masked_select": _masked_select,
        "where": _torch_where,
        "OneHot": _ms_one_hot,
        "one_hot": _torch_one_hot,
        **dict.fromkeys(TORCH_COMPARE_NAMES, _torch_compare),
    }
