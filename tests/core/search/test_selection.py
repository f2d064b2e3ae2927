"""Selection ops judged by what each side's own inputs give (core/search/selection.py): a tie broken another
way or a near-tie that flipped is no root; a kernel that selects what its inputs do not give is; a reference
that does not follow its own inputs concludes nothing. The numbers of each flip (ranks, margin, input error)
and the selections compared as sets."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dumptui.core.compare.noise import TensorError
from dumptui.core.model.reason import Why, because
from dumptui.core.search.localerror import LocalError, LocalKind, LocalRule, classify
from dumptui.core.search.replay.selection import nms_with_mask
from dumptui.core.search.selection import (
    FlipKind,
    SelectionCode,
    Side,
    Unjudged,
    flip_reach,
    judge,
    tie_tolerance,
)
from dumptui.report.selection import proof_sentence

RNG = np.random.default_rng(33)


def topk_side(x: np.ndarray, k: int, order_key=None, dtype: str = "float32") -> Side:
    """A TopK as a device computes it: the k largest of the last axis, ties broken by `order_key`."""
    v = x.astype(np.float64)
    idx = np.stack([np.lexsort((order_key(row) if order_key else np.arange(row.size), -row))[:k] for row in v])
    vals = np.take_along_axis(x, idx, axis=-1)
    return Side({0: x, 1: np.array(k, dtype=np.int64)}, {0: vals, 1: idx.astype(np.int32)}, {0: dtype})


def test_exact_ties_broken_the_other_way_are_a_flip_of_margin_zero_not_a_root():
    x = np.array([[0.5, 0.9, 0.5, 0.1, 0.5]], dtype=np.float16)
    ref = topk_side(x, 3)  # ties in index order: 1, 0, 2
    tgt = topk_side(x, 3, order_key=lambda r: -np.arange(r.size), dtype="float16")  # 1, 4, 2
    proof = judge("TopK", {}, {}, ref, tgt)
    assert proof.code == SelectionCode.FLIP and proof.conclusive and not proof.broken
    assert (proof.selected, proof.equal, proof.common, proof.differing) == (3, 2, 2, 1)
    (f,) = proof.flips
    assert (f.kind, f.rank, f.index, f.other) == (FlipKind.RANK, 1, 0, 4)
    assert f.margin == 0.0 and f.input_error == 0.0


def test_near_tie_flipped_by_input_noise_names_ranks_margin_and_input_error():
    base = np.linspace(0.9, 0.3, 20)  # element i at rank i
    ref_x = base.copy()
    ref_x[15], ref_x[16] = 0.4123, 0.4119  # ranks 15 and 16 nearly tie
    tgt_x = ref_x.copy()
    tgt_x[16] += 0.008  # the target's inputs carry 8e-3 there
    proof = judge("TopK", {}, {}, topk_side(ref_x[None], 18), topk_side(tgt_x[None], 18))
    assert proof.code == SelectionCode.FLIP
    assert proof.equal == 16 and proof.common == 18 and proof.differing == 2
    ranks = sorted(f.rank for f in proof.flips)
    assert ranks == [15, 16]
    first = next(f for f in proof.flips if f.rank == 15)
    assert (first.index, first.other) == (15, 16)
    assert first.value == pytest.approx(0.4123) and first.other_value == pytest.approx(0.4119)
    assert first.margin == pytest.approx(4e-4, rel=1e-6)
    assert first.input_error == pytest.approx(0.008, rel=1e-6) and first.margin < first.input_error
    assert proof.input_error == pytest.approx(0.008, rel=1e-6)
    assert proof.margin == pytest.approx(4e-4, rel=1e-6)


def test_a_kernel_returning_the_wrong_kth_element_is_broken_and_says_where():
    x = np.sort(RNG.uniform(0, 1, 40))[::-1].copy()[None]
    good = topk_side(x, 8)
    bad = topk_side(x, 8)
    bad.outputs[1][0, 7] = 20  # the element ranked 21st at rank 8
    bad.outputs[0][0, 7] = x[0, 20]
    proof = judge("TopK", {}, {}, good, bad)
    assert proof.code == SelectionCode.BROKEN and proof.broken and proof.wrong_count == 1
    assert (proof.selected, proof.equal, proof.common, proof.differing) == (8, 7, 7, 1)
    (w,) = proof.wrong
    assert (w.rank, w.index) == (7, 20) and w.value == x[0, 20] and w.expected == x[0, 7]


def test_values_output_that_disagrees_with_its_indices_is_broken():
    x = RNG.uniform(0, 1, (2, 10)).astype(np.float32)
    tgt = topk_side(x, 3)
    tgt.outputs[0] = tgt.outputs[0] * np.float32(1.01)
    assert judge("TopK", {}, {}, topk_side(x, 3), tgt).code == SelectionCode.BROKEN


def test_a_reference_that_does_not_follow_its_inputs_concludes_nothing():
    x = RNG.uniform(0, 1, (1, 10)).astype(np.float32)
    ref = topk_side(x, 3)
    ref.outputs[1] = ref.outputs[1][:, ::-1].copy()  # smallest first: another op than TopK's definition
    ref.outputs[0] = ref.outputs[0][:, ::-1].copy()
    proof = judge("TopK", {}, {}, ref, topk_side(x, 3))
    assert proof.code == SelectionCode.UNMODELLED and not proof.conclusive and proof.ref_wrong == 2
    # the first wrong rank, said with its numbers: rank 0 holds the third largest where the largest belongs
    w = proof.unmodelled
    order = np.argsort(-x[0], kind="stable")
    assert w is not None and (w.row, w.rank, w.index) == (0, 0, int(order[2]))
    assert w.value == pytest.approx(float(x[0, order[2]])) and w.expected == pytest.approx(float(x[0, order[0]]))
    assert f"row 0 rank 0: index {int(order[2])} value {w.value!r}" in proof_sentence(proof)


def test_ties_within_the_inputs_rounding_but_not_beyond():
    assert tie_tolerance("float16") == pytest.approx(2 * 2.0**-11) and tie_tolerance("int32") == 0.0
    x = np.array([[1.0, 1.0 + 2.0**-10, 0.2]], dtype=np.float64)
    swapped = topk_side(x, 1, dtype="float16")
    swapped.outputs = {0: x[:, :1].copy(), 1: np.array([[0]], dtype=np.int32)}  # 1.0 for 1 + 2^-10: one fp16 step
    assert judge("TopK", {}, {}, topk_side(x, 1), swapped).code == SelectionCode.FLIP
    far = topk_side(x, 1, dtype="float16")
    far.outputs = {0: x[:, 2:3].copy(), 1: np.array([[2]], dtype=np.int32)}
    assert judge("TopK", {}, {}, topk_side(x, 1), far).code == SelectionCode.BROKEN


def test_nan_is_the_largest_and_ties_with_nan():
    x = np.array([[0.3, np.nan, 0.9, np.nan]], dtype=np.float32)
    ref = topk_side(x, 2, order_key=None)
    ref.outputs = {0: np.array([[np.nan, np.nan]], dtype=np.float32), 1: np.array([[1, 3]], dtype=np.int32)}
    tgt = Side(dict(ref.inputs), {0: ref.outputs[0], 1: np.array([[3, 1]], dtype=np.int32)}, {0: "float32"})
    proof = judge("TopK", {}, {}, ref, tgt)
    assert proof.code == SelectionCode.FLIP and math.isnan(proof.flips[0].value)


def test_unsorted_topk_compares_sets_and_sort_with_k_n():
    x = RNG.uniform(0, 1, (1, 12)).astype(np.float32)
    ref = topk_side(x, 5)
    tgt = topk_side(x, 5)
    tgt.outputs = {0: tgt.outputs[0][:, ::-1].copy(), 1: tgt.outputs[1][:, ::-1].copy()}
    unsorted = judge("TopK", {"sorted": "Bool(0)"}, {}, ref, tgt)
    assert unsorted.code == SelectionCode.SAME and unsorted.equal == 5
    assert judge("TopK", {}, {}, ref, tgt).code == SelectionCode.BROKEN  # sorted: the order is the op's
    s = np.argsort(x, axis=-1, kind="stable")
    side = Side({0: x}, {0: np.take_along_axis(x, s, -1), 1: s.astype(np.int32)}, {0: "float32"})
    assert judge("Sort", {}, {}, side, side).code == SelectionCode.SAME


def test_argmax_without_keep_dims_and_with_value():
    x = np.array([[[1.0, 5.0], [5.0, 2.0]], [[0.0, 0.0], [3.0, 1.0]]], dtype=np.float32)  # argmax over axis 1
    ref = Side({0: x}, {0: np.array([[1, 0], [1, 1]], dtype=np.int32)}, {0: "float32"})
    tied = Side({0: x}, {0: np.array([[1, 0], [1, 1]], dtype=np.int32)}, {0: "float32"})
    assert judge("ArgMax", {"axis": "I64(1)"}, {}, ref, tied).code == SelectionCode.SAME
    wrong = Side({0: x}, {0: np.array([[0, 0], [1, 1]], dtype=np.int32)}, {0: "float32"})
    assert judge("ArgMax", {"axis": "I64(1)"}, {}, ref, wrong).code == SelectionCode.BROKEN
    with_value = Side(
        {0: x, 1: np.int64(1)}, {0: ref.outputs[0], 1: np.array([[5.0, 5.0], [3.0, 1.0]])}, {0: "float32"}
    )
    assert judge("ArgMaxWithValue", {}, {}, with_value, with_value).code == SelectionCode.SAME


def test_an_index_output_of_another_size_is_not_judged():
    x = np.zeros((1, 6), dtype=np.float32)
    side = Side({0: x, 1: np.int64(3)}, {0: x[:, :2], 1: np.zeros((1, 2), np.int32)}, {})
    with pytest.raises(Unjudged, match="expected"):
        judge("TopK", {}, {}, side, side)


# ------------------------------------------------------------------------------------------------ NMS


def nms_side(boxes: np.ndarray, scores: np.ndarray, reverse_ties: bool = False) -> Side:
    b = np.concatenate([boxes, scores[:, None]], axis=1).astype(np.float32)
    out = nms_with_mask(b, 0.5)
    if reverse_ties:
        s = b[:, 4].astype(np.float64)
        ranked = np.lexsort((-np.arange(s.size), -s))
        redo = nms_with_mask(b[ranked], 0.5, by_score=False)
        out = {0: b[ranked], 1: ranked, 2: redo[2]}
    return Side({0: b}, {0: out[0], 1: out[1].astype(np.int32), 2: out[2]}, {0: "float32"})


def test_nms_ties_broken_the_other_way_and_a_score_swap_and_an_overlap_crossing():
    boxes = np.array([[0, 0, 10, 10], [1, 0, 11, 10], [30, 30, 40, 40], [31, 30, 41, 40], [60, 60, 70, 70]], float)
    scores = np.array([0.80, 0.80, 0.61, 0.60, 0.3])
    ref = nms_side(boxes, scores)
    tie = judge("NMSWithMask", {"iou_threshold": "F32(0.5)"}, {}, ref, nms_side(boxes, scores, reverse_ties=True))
    assert tie.code == SelectionCode.FLIP and {f.index for f in tie.flips} == {0, 1}
    assert all(f.kind == FlipKind.SCORE and f.margin == 0.0 for f in tie.flips)
    swapped = scores.copy()
    swapped[3] = 0.62  # boxes 2 and 3 overlap: their order decides which is kept
    sw = judge("NMSWithMask", {"iou_threshold": "F32(0.5)"}, {}, ref, nms_side(boxes, swapped))
    assert sw.code == SelectionCode.FLIP and sw.differing == 2 and sw.equal == 2
    f = next(f for f in sw.flips if f.kept_by == "ref")
    assert (f.kind, f.index, f.other) == (FlipKind.SCORE, 2, 3)
    assert f.margin == pytest.approx(0.01, abs=1e-6) and f.input_error == pytest.approx(0.02, abs=1e-6)
    # boxes 0 and 4 made to overlap at IoU just under 0.5 on the reference, just over on the target
    near = boxes.copy()
    near[4] = [0, 0, 10, 20.2]  # IoU with box 0: 100 / 202 = 0.495
    over = near.copy()
    over[4] = [0, 0, 10, 19.8]  # 100 / 198 = 0.505
    s2 = np.array([0.9, 0.1, 0.61, 0.05, 0.5])
    ov = judge("NMSWithMask", {"iou_threshold": "F32(0.5)"}, {}, nms_side(near, s2), nms_side(over, s2))
    (g,) = [f for f in ov.flips if f.index == 4]
    assert g.kind == FlipKind.OVERLAP and g.kept_by == "ref" and g.other == 0
    assert g.margin == pytest.approx(0.5 - 100 / 202, rel=1e-3)


def test_nms_that_keeps_a_suppressed_box_is_broken_and_the_ascend_form_is_accepted():
    boxes = np.array([[0, 0, 10, 10], [1, 0, 11, 10], [30, 30, 40, 40]], float)
    scores = np.array([0.9, 0.8, 0.7])
    ref = nms_side(boxes, scores)
    bad = nms_side(boxes, scores)
    bad.outputs[2] = np.array([True, True, True])  # box 1 kept though box 0 overlaps it by 0.82
    proof = judge("NMSWithMask", {"iou_threshold": "F32(0.5)"}, {}, ref, bad)
    assert proof.code == SelectionCode.BROKEN and proof.wrong[0].index == 1
    b = np.concatenate([boxes, scores[::-1, None]], axis=1).astype(np.float32)  # input order != score order
    ascend = nms_with_mask(b, 0.5, by_score=False)
    side = Side({0: b}, {0: ascend[0], 1: ascend[1].astype(np.int32), 2: ascend[2]}, {0: "float32"})
    assert judge("NMSWithMask", {"iou_threshold": "F32(0.5)"}, {}, side, side).code == SelectionCode.SAME


def test_cann_nms_v3_lists_and_the_limit():
    boxes = np.array([[0, 0, 10, 10], [0, 1, 10, 11], [30, 30, 40, 40], [50, 50, 60, 60]], float)  # (y0, x0, ...)
    scores = np.array([0.9, 0.85, 0.7, 0.6])
    ins = {0: boxes, 1: scores, 2: np.int32(2), 3: np.float32(0.5), 4: np.float32(0.0)}
    ref = Side(ins, {0: np.array([0, 2], dtype=np.int32)}, {0: "float32"})
    assert judge("NonMaxSuppressionV3", {}, {}, ref, ref).code == SelectionCode.SAME
    missing = Side(ins, {0: np.array([0], dtype=np.int32)}, {0: "float32"})  # box 2 left out for nothing
    assert judge("NonMaxSuppressionV3", {}, {}, ref, missing).code == SelectionCode.BROKEN


def test_unique_compared_as_sets():
    x = np.array([3.0, 1.0, 3.0, 2.0], dtype=np.float32)
    ref = Side({0: x}, {0: np.array([1.0, 2.0, 3.0]), 1: np.array([2, 0, 2, 1])}, {})
    other_order = Side({0: x}, {0: np.array([3.0, 1.0, 2.0]), 1: np.array([0, 1, 0, 2])}, {})
    assert judge("Unique", {}, {}, ref, other_order).code == SelectionCode.SAME
    merged_x = np.array([3.0, 1.0, 3.0, 3.0], dtype=np.float32)
    merged = Side({0: merged_x}, {0: np.array([1.0, 3.0]), 1: np.array([1, 0, 1, 1])}, {})
    proof = judge("Unique", {}, {}, ref, merged)
    assert proof.code == SelectionCode.FLIP and proof.differing == 1 and proof.flips[0].value == 2.0
    lying = Side({0: x}, {0: np.array([1.0, 3.0]), 1: np.array([1, 0, 1, 0])}, {})
    assert judge("Unique", {}, {}, ref, lying).code == SelectionCode.BROKEN


# ------------------------------------------------------------------------------------------------ the rule


def local(selection) -> LocalError:
    out = TensorError(0.3, 0.3, 0.3, 0.3, 0, 16)
    inp = TensorError(0.003, 0.003, 0.003, 0.003, 0, 256)
    le = LocalError(None, out, 1, inp, 0, 1e-3, "float16")  # type: ignore[arg-type]
    le.selection = selection
    return classify(le, 10.0)


def test_classify_a_flip_carries_a_broken_selection_is_a_root_unmodelled_falls_to_the_gain_rule():
    x = np.array([[0.5, 0.9, 0.5, 0.1, 0.5]], dtype=np.float16)
    flip = judge("TopK", {}, {}, topk_side(x, 3), topk_side(x, 3, order_key=lambda r: -np.arange(r.size)))
    le = local(flip)
    assert (le.kind, le.rule, le.why) == (
        LocalKind.CARRIES,
        LocalRule.SELECTION_FLIP,
        because(Why.SELECTION, LocalRule.SELECTION_FLIP),
    )
    bad = topk_side(x, 3)
    bad.outputs[1] = np.array([[3, 1, 0]], dtype=np.int32)
    bad.outputs[0] = np.take_along_axis(x, bad.outputs[1].astype(np.int64), -1)
    le = local(judge("TopK", {}, {}, topk_side(x, 3), bad))
    assert (le.kind, le.rule) == (LocalKind.ROOT, LocalRule.SELECTION_BROKEN)
    le = local(judge("TopK", {}, {}, bad, topk_side(x, 3)))
    assert le.rule == LocalRule.GAIN and le.kind == LocalKind.ROOT  # x100 what came in, nothing concluded


def test_flip_reach_follows_the_dataflow_and_stops_where_a_root_reaches():
    # 0 -> 1 (flip) -> 2 -> 4 ; 3 (root) -> 5 ; 1 -> 3 ; 2 -> 5 (tainted by 3)
    preds = {0: set(), 1: {0}, 2: {1}, 3: {1}, 4: {2}, 5: {2, 3}}
    tainted = [False, False, False, True, False, True]
    reach = flip_reach([False, True, False, False, False, False], tainted, preds.__getitem__)
    assert reach == [None, 1, 1, None, 1, None]


# ------------------------------------------------------------------------------------------------ CANN's NMS forms


def v5_side(tf_boxes: np.ndarray, scores: np.ndarray, limit: int = 4, pad: bool = True) -> Side:
    """A NonMaxSuppressionV5 as the replay computes it from these inputs, dumped as CANN lays it out."""
    from dumptui.core.search.replay import ReplayInputs, replay

    ins = {0: tf_boxes, 1: scores, 2: np.int32(limit), 3: np.float32(0.5), 4: np.float32(0.0), 5: np.float32(0)}
    out = replay(ReplayInputs("NonMaxSuppressionV5", ins, {"pad_to_max_output_size": str(pad)}))
    dumped = {0: out[0].astype(np.int32), 1: out[1].astype(np.float16), 2: out[2].astype(np.int32)}
    return Side(ins, dumped, {0: "float16", 1: "float16"})


V5_ATTRS = {"pad_to_max_output_size": "True"}


def test_nms_v5_near_tie_flip_is_benign_with_its_margin_and_a_wrong_kernel_is_named():
    # (y0, x0, y1, x1): boxes 0 and 1 overlap (IoU 0.82), their scores nearly tie; 2 and 3 stand apart
    tf = np.array([[0, 0, 10, 10], [0, 1, 10, 11], [30, 30, 40, 40], [60, 60, 70, 70]], dtype=np.float16)
    ref_s = np.array([0.6006, 0.5996, 0.3, 0.2], dtype=np.float16)
    tgt_s = np.array([0.5996, 0.6006, 0.3, 0.2], dtype=np.float16)  # fp16 noise of ~1e-3 swapped them
    ref, tgt = v5_side(tf, ref_s), v5_side(tf, tgt_s)
    assert ref.outputs[0].tolist() == [0, 2, 3, 0] and tgt.outputs[0].tolist() == [1, 2, 3, 0]  # padded
    proof = judge("NonMaxSuppressionV5", V5_ATTRS, {}, ref, tgt)
    assert proof.code == SelectionCode.FLIP and (proof.equal, proof.differing) == (2, 2)
    f = next(f for f in proof.flips if f.kept_by == "ref")
    assert (f.kind, f.index, f.other) == (FlipKind.SCORE, 0, 1)
    assert f.margin == pytest.approx(float(ref_s[0]) - float(ref_s[1]), rel=1e-6) and f.input_error > f.margin
    assert "swapped order" in proof_sentence(proof)
    unpadded = v5_side(tf, tgt_s, pad=False)  # the other layout: as many indices as are valid
    assert unpadded.outputs[0].tolist() == [1, 2, 3]
    assert judge("NonMaxSuppressionV5", {}, {}, ref, unpadded).code == SelectionCode.FLIP
    bad = v5_side(tf, tgt_s)
    bad.outputs[0] = np.array([1, 0, 2, 3], dtype=np.int32)  # box 0 kept though box 1 suppresses it
    bad.outputs[2] = np.int32(4)
    broken = judge("NonMaxSuppressionV5", V5_ATTRS, {}, ref, bad)
    assert broken.code == SelectionCode.BROKEN and broken.wrong[0].index == 0
    soft = {**ref.inputs, 5: np.float32(0.5)}
    with pytest.raises(Exception, match="soft"):
        judge("NonMaxSuppressionV5", V5_ATTRS, {}, Side(soft, ref.outputs, {}), Side(soft, tgt.outputs, {}))


BATCH_ATTRS = {
    "score_threshold": "F32(0.1)",
    "iou_threshold": "F32(0.5)",
    "max_size_per_class": "I64(3)",
    "max_total_size": "I64(3)",
}


def batch_side(boxes: np.ndarray, scores: np.ndarray, attrs: dict[str, str] = BATCH_ATTRS) -> Side:
    from dumptui.core.search.replay import ReplayInputs, replay

    out = replay(ReplayInputs("BatchMultiClassNonMaxSuppression", {0: boxes, 1: scores}, attrs))
    dumped = {0: out[0].astype(np.float16), 1: out[1].astype(np.float16), 2: out[2].astype(np.float16)}
    dumped[3] = out[3].astype(np.int32)
    return Side({0: boxes, 1: scores}, dumped, {0: "float16", 1: "float16"})


def batch_case() -> tuple[np.ndarray, np.ndarray]:
    """One image, 5 boxes shared by 2 classes (x0, y0, x1, y1): boxes 0 and 1 overlap; the total of 3 kept
    falls between class 0's box 3 and class 1's box 4, whose scores nearly tie."""
    boxes = np.array([[0, 0, 10, 10], [1, 0, 11, 10], [30, 30, 40, 40], [60, 60, 70, 70], [90, 90, 99, 99]])
    scores = np.zeros((1, 5, 2), dtype=np.float16)
    scores[0, :, 0] = [0.9, 0.8, 0.7, 0.4004, 0.0]
    scores[0, :, 1] = [0.0, 0.0, 0.0, 0.0, 0.3999]
    return boxes[None, :, None, :].astype(np.float16), scores


def test_batch_nms_cut_by_its_total_on_a_near_tie_is_a_limit_flip_with_its_margin():
    boxes, ref_s = batch_case()
    tgt_s = ref_s.copy()
    tgt_s[0, 3, 0], tgt_s[0, 4, 1] = 0.3999, 0.4004  # swapped by the target's noise
    ref, tgt = batch_side(boxes, ref_s), batch_side(boxes, tgt_s)
    assert judge("BatchMultiClassNonMaxSuppression", BATCH_ATTRS, {}, ref, ref).code == SelectionCode.SAME
    proof = judge("BatchMultiClassNonMaxSuppression", BATCH_ATTRS, {}, ref, tgt)
    assert proof.code == SelectionCode.FLIP and (proof.equal, proof.differing) == (2, 2)
    by_box = {(f.row, f.index): f for f in proof.flips}
    f = by_box[(0, 3)]  # class 0's box 3, kept by the reference only
    assert f.kind == FlipKind.LIMIT and f.kept_by == "ref" and f.other == -1
    assert f.margin == pytest.approx(float(ref_s[0, 3, 0]) - float(ref_s[0, 4, 1]), rel=1e-6)
    assert f.input_error == pytest.approx(2 * f.margin, rel=1e-6)
    assert by_box[(1, 4)].kind == FlipKind.LIMIT and by_box[(1, 4)].kept_by == "target"
    words = proof_sentence(proof)
    assert "group 1: box 4 kept by the target only: the limit of boxes kept fell between" in words


def test_batch_nms_overlap_flip_and_kernels_that_are_wrong():
    boxes, ref_s = batch_case()
    near, over = boxes.astype(np.float32), boxes.astype(np.float32)
    near[0, 2, 0] = [0, 0, 10, 20.2]  # IoU with box 0: 100 / 202 = 0.495
    over[0, 2, 0] = [0, 0, 10, 19.8]  # 100 / 198 = 0.505
    ref, tgt = batch_side(near, ref_s), batch_side(over, ref_s)
    proof = judge("BatchMultiClassNonMaxSuppression", BATCH_ATTRS, {}, ref, tgt)
    assert proof.code == SelectionCode.FLIP
    f = next(f for f in proof.flips if f.index == 2)
    assert f.kind == FlipKind.OVERLAP and f.other == 0 and f.margin == pytest.approx(0.5 - 100 / 202, rel=1e-3)
    # a kernel that keeps box 1, which box 0 suppresses, in place of box 3
    bad = batch_side(boxes, ref_s)
    bad.outputs[0][0, 2] = boxes[0, 1, 0]
    bad.outputs[1][0, 2] = ref_s[0, 1, 0]
    broken = judge("BatchMultiClassNonMaxSuppression", BATCH_ATTRS, {}, batch_side(boxes, ref_s), bad)
    assert broken.code == SelectionCode.BROKEN and {w.index for w in broken.wrong} >= {1}
    # a kernel whose output row is no input box of its class
    stray = batch_side(boxes, ref_s)
    stray.outputs[0][0, 0] += np.float16(3.0)
    assert judge("BatchMultiClassNonMaxSuppression", BATCH_ATTRS, {}, stray, stray).code == SelectionCode.UNMODELLED
    assert (
        judge("BatchMultiClassNonMaxSuppression", BATCH_ATTRS, {}, batch_side(boxes, ref_s), stray).code
        == SelectionCode.BROKEN
    )


def test_combined_nms_of_mindspore_judged_on_its_clipped_boxes():
    from dumptui.core.search.replay import ReplayInputs, replay

    boxes, ref_s = batch_case()
    unit = (boxes.astype(np.float32) / 50.0 - 0.02).astype(np.float32)  # box 0 reaches below 0: written clipped
    tgt_s = ref_s.copy()
    tgt_s[0, 3, 0], tgt_s[0, 4, 1] = 0.3999, 0.4004

    def side(scores):
        ins = {0: unit, 1: scores, 2: np.int32(3), 3: np.int32(3), 4: np.float32(0.5), 5: np.float32(0.1)}
        out = replay(ReplayInputs("CombinedNonMaxSuppression", ins, {}))
        dumped = {j: out[j].astype(np.float32) for j in (0, 1, 2)}
        dumped[3] = out[3].astype(np.int32)
        return Side(ins, dumped, {0: "float32", 1: "float16"})

    ref = side(ref_s)
    assert (ref.outputs[0] == 0.0).any()  # a clipped corner: matched to its input box clipped
    assert judge("CombinedNonMaxSuppression", {}, {}, ref, ref).code == SelectionCode.SAME
    proof = judge("CombinedNonMaxSuppression", {}, {}, ref, side(tgt_s))
    assert proof.code == SelectionCode.FLIP and {f.kind for f in proof.flips} == {FlipKind.LIMIT}


def test_nms_v3_limit_flip_names_the_box_kept_in_its_place():
    """max_output_size 3 of 4 boxes apart, the last three scores a near-tie: the reference keeps 0, 1, 2; the
    target's noise orders them 3, 1, 2, so it keeps 0, 3, 1. Box 2 lost its place to box 3 (kept by the target
    only), not to box 1, the last the target kept (kept on both sides)."""
    boxes = np.array([[0, 0, 10, 10], [20, 20, 30, 30], [40, 40, 50, 50], [60, 60, 70, 70]], float)
    ins_r = {0: boxes, 1: np.array([0.9, 0.4008, 0.4004, 0.3999], np.float16), 2: np.int32(3), 3: np.float32(0.5)}
    ins_t = {**ins_r, 1: np.array([0.9, 0.4001, 0.3999, 0.4004], np.float16)}
    ref = Side(ins_r, {0: np.array([0, 1, 2], np.int32)}, {1: "float16"})
    tgt = Side(ins_t, {0: np.array([0, 3, 1], np.int32)}, {1: "float16"})
    proof = judge("NonMaxSuppressionV3", {}, {}, ref, tgt)
    assert proof.code == SelectionCode.FLIP and proof.differing == 2
    f = next(f for f in proof.flips if f.index == 2)
    assert (f.kind, f.other, f.kept_by) == (FlipKind.LIMIT, 3, "ref")
    r = ins_r[1].astype(np.float64)
    assert f.margin == pytest.approx(r[2] - r[3], rel=1e-9) and f.margin < f.input_error


def test_cann_batch_nms_may_leave_out_boxes_beyond_its_candidates():
    """CANN's kernel selects among each class's top candidates only: with 1,100 boxes apart and every one
    allowed, a target that kept the top 1,024 is no broken kernel; one that left out a top box is."""
    from dumptui.core.search.selection import CANN_NMS_CANDIDATES

    n = CANN_NMS_CANDIDATES + 76
    grid = np.arange(n, dtype=np.float64) * 20.0
    boxes = np.stack([grid, np.zeros(n), grid + 10.0, np.full(n, 10.0)], axis=1)[None, :, None, :]
    scores = np.linspace(0.9, 0.2, n)[None, :, None]
    attrs = {**BATCH_ATTRS, "max_size_per_class": f"I64({n})", "max_total_size": f"I64({n})"}
    full = batch_side(boxes, scores, attrs)
    assert int(full.outputs[3][0]) == n
    capped = batch_side(boxes, scores, attrs)
    capped.outputs[3] = np.array([CANN_NMS_CANDIDATES], dtype=np.int32)  # the rows beyond: not counted
    assert judge("BatchMultiClassNonMaxSuppression", attrs, {}, full, full).code == SelectionCode.SAME
    assert judge("BatchMultiClassNonMaxSuppression", attrs, {}, capped, capped).code == SelectionCode.SAME
    early = batch_side(boxes, scores, attrs)
    early.outputs[3] = np.array([500], dtype=np.int32)
    assert judge("BatchMultiClassNonMaxSuppression", attrs, {}, full, early).code == SelectionCode.BROKEN


def test_cann_onnx_nms_v6_may_leave_out_boxes_beyond_its_candidates_onnx_may_not():
    from dumptui.core.search.selection import CANN_NMS_CANDIDATES

    n = CANN_NMS_CANDIDATES + 30
    grid = np.arange(n, dtype=np.float64) * 20.0
    boxes = np.stack([np.zeros(n), grid, np.full(n, 10.0), grid + 10.0], axis=1)[None]  # (y0, x0, y1, x1)
    scores = np.linspace(0.9, 0.2, n)[None, None]
    ins = {0: boxes, 1: scores, 2: np.int64(n), 3: np.float32(0.5), 4: np.float32(0.0)}
    top = np.array([[0, 0, i] for i in range(CANN_NMS_CANDIDATES)], dtype=np.int64)
    side = Side(ins, {0: top}, {0: "float32"})
    assert judge("NonMaxSuppressionV6", {}, {}, side, side).code == SelectionCode.SAME
    assert judge("NonMaxSuppression", {}, {}, side, side).code == SelectionCode.UNMODELLED  # ONNX's: every box
    short = Side(ins, {0: top[:300]}, {0: "float32"})
    assert judge("NonMaxSuppressionV6", {}, {}, side, short).code == SelectionCode.BROKEN
