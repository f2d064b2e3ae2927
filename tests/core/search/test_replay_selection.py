"""Selection and index kernels (replay/selection.py) against independent references written as plain Python
loops: ties, NaN, -0.0, k = n, empty inputs, the layouts MindSpore, CANN and msprobe's PyTorch calls give."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dumptui.core.search.replay import ReplayInputs, ReplayUnsupported, replay
from dumptui.core.search.replay.selection import order

RNG = np.random.default_rng(20261133)


def run(op_type: str, *inputs: object, attrs: dict[str, str] | None = None) -> dict[int, np.ndarray]:
    given = {i: np.asarray(a) for i, a in enumerate(inputs) if a is not None}
    return replay(ReplayInputs(op_type, given, attrs or {}))


def naive_rank(values: list[float], descending: bool) -> list[int]:
    """Positions in order: NaN greatest, -0.0 == 0.0, ties by position (Python's sort is stable)."""

    def key(i: int) -> tuple[int, float]:
        v = values[i]
        if isinstance(v, float) and math.isnan(v):
            return (0, 0.0) if descending else (1, 0.0)
        return (1, -v) if descending else (0, v)

    return sorted(range(len(values)), key=key)


def rows(x: np.ndarray) -> list[list[float]]:
    return [list(map(float, r)) for r in x.reshape(-1, x.shape[-1])]


# ------------------------------------------------------------------------------------------------ order, TopK


@pytest.mark.parametrize("descending", [False, True])
def test_order_ties_nan_and_negative_zero(descending):
    x = np.array([0.5, np.nan, -0.0, 0.5, 0.0, -1.0, np.nan, 2.0], dtype=np.float32)
    got = order(x, 0, descending).tolist()
    assert got == naive_rank(list(map(float, x)), descending)
    # -0.0 (position 2) and 0.0 (position 4) are one value: index order between them either way
    assert got.index(2) < got.index(4)


def test_order_of_integers_descending_reaches_the_extremes():
    x = np.array([np.iinfo(np.int64).min, 3, np.iinfo(np.int64).max, 3], dtype=np.int64)
    assert order(x, 0, True).tolist() == [2, 1, 3, 0]


@pytest.mark.parametrize("k", [0, 1, 5, 16])
@pytest.mark.parametrize("largest", [True, False])
def test_topk_against_a_sorted_list(k, largest):
    x = RNG.integers(0, 6, (3, 16)).astype(np.float16)  # many exact ties
    x[1, 3] = np.nan
    x[2, 0], x[2, 1] = -0.0, 0.0
    out = run("TopkExt", x, np.int64(k), np.int64(-1), np.bool_(largest))
    for r, row in enumerate(rows(x)):
        want = naive_rank(row, largest)[:k]
        assert out[1][r].tolist() == want
        np.testing.assert_array_equal(out[0][r], np.array([row[i] for i in want]))
    assert out[0].dtype == np.float64 and out[1].dtype == np.int64


def test_mindspore_topk_is_the_last_axis_largest_first_with_k_an_input_or_attribute():
    x = RNG.standard_normal((2, 3, 7)).astype(np.float32)
    out = run("TopK", x, np.int32(3), attrs={"sorted": "Bool(1)"})
    want = np.argsort(-x.astype(np.float64), axis=-1, kind="stable")[..., :3]
    np.testing.assert_array_equal(out[1], want)
    np.testing.assert_array_equal(out[0], np.take_along_axis(x.astype(np.float64), want, -1))
    assert run("TopK", x, attrs={"k": "I64(3)"})[1].tolist() == out[1].tolist()


def test_topk_along_another_axis_and_k_out_of_range():
    x = RNG.standard_normal((5, 4))
    out = run("TopkExt", x, np.int64(2), np.int64(0), np.bool_(True))
    np.testing.assert_array_equal(out[1], np.argsort(-x, axis=0, kind="stable")[:2])
    with pytest.raises(ReplayUnsupported, match="outside"):
        run("TopK", x, np.int64(5))


def test_topk_of_an_empty_axis_with_k_0_and_of_integers():
    assert run("TopK", np.zeros((2, 0), np.float32), np.int64(0))[1].shape == (2, 0)
    x = np.array([[3, 1, 3, 2]], dtype=np.int32)
    out = run("TopK", x, np.int64(4))
    assert out[1].tolist() == [[0, 2, 3, 1]] and out[0].dtype == np.int64


def test_torch_topk_as_msprobe_records_it():
    x = RNG.standard_normal((4, 9)).astype(np.float32)
    out = run("topk", x, attrs={"scalar input 1": "3", "dim": "0", "largest": "False"})
    np.testing.assert_array_equal(out[1], np.argsort(x, axis=0, kind="stable")[:3])
    with pytest.raises(ReplayUnsupported, match="argument k"):
        run("topk", x)


# ------------------------------------------------------------------------------------------------ Sort, ArgSort


@pytest.mark.parametrize("descending", [False, True])
def test_sort_values_and_indices(descending):
    x = np.array([[1.0, np.nan, -0.0, 1.0, 0.0, -3.0]], dtype=np.float32)
    out = run("Sort", x, attrs={"axis": "I64(-1)", "descending": f"Bool({int(descending)})"})
    want = naive_rank(rows(x)[0], descending)
    assert out[1][0].tolist() == want
    np.testing.assert_array_equal(out[0][0], x[0, want].astype(np.float64))
    if not descending:  # numpy's own sort puts NaN last too
        np.testing.assert_array_equal(out[0][0], np.sort(x[0]).astype(np.float64))


def test_argsort_and_torch_sort_and_argsort():
    x = RNG.integers(0, 4, (3, 8)).astype(np.float32)
    idx = run("ArgSort", x, attrs={"axis": "I64(0)"})[0]
    np.testing.assert_array_equal(idx, np.argsort(x, axis=0, kind="stable"))
    out = run("sort", x, attrs={"scalar input 1": "1", "descending": "True"})
    for r, row in enumerate(rows(x)):
        assert out[1][r].tolist() == naive_rank(row, True)
    assert run("argsort", x, attrs={"descending": "True"})[0].tolist() == out[1].tolist()


def test_sort_of_a_0d_tensor_and_of_an_empty_one():
    assert run("Sort", np.float32(2.0))[1].shape == ()
    assert run("Sort", np.zeros((0,), np.float32))[0].shape == (0,)


# ------------------------------------------------------------------------------------------------ ArgMax


def test_mindspore_argmax_takes_the_first_of_tied_maxima_and_nan():
    x = np.array([[1.0, 3.0, 3.0, -0.0], [np.nan, 2.0, np.nan, 9.0]], dtype=np.float32)
    assert run("ArgMax", x)[0].tolist() == [1, 0]
    assert run("ArgMin", x)[0].tolist() == [3, 0]


@pytest.mark.parametrize("op,pick", [("argmax", max), ("argmin", min)])
def test_torch_argmax_argmin_first_extreme_nan_wins_and_flat_without_dim(op, pick):
    x = np.array([[2.0, 5.0, 5.0, -1.0], [0.0, -0.0, 4.0, 4.0], [1.0, np.nan, 1.0, np.nan]])
    got = run(op, x, attrs={"dim": "1"})[0].tolist()
    for r, row in enumerate(x.tolist()):
        if any(math.isnan(v) for v in row):
            assert got[r] == next(i for i, v in enumerate(row) if math.isnan(v))
        else:
            assert got[r] == row.index(pick(row))
    flat = run(op, x[:2])[0]
    assert flat.shape == () and int(flat) == (1 if op == "argmax" else 3)
    assert run(op, x, attrs={"dim": "1", "keepdim": "True"})[0].shape == (3, 1)


# ------------------------------------------------------------------------------------------------ NMS


def naive_iou(a: list[float], b: list[float]) -> float:
    ax0, ax1 = sorted((a[0], a[2]))
    ay0, ay1 = sorted((a[1], a[3]))
    bx0, bx1 = sorted((b[0], b[2]))
    by0, by1 = sorted((b[1], b[3]))
    w = max(0.0, min(ax1, bx1) - max(ax0, bx0))
    h = max(0.0, min(ay1, by1) - max(ay0, by0))
    union = (ax1 - ax0) * (ay1 - ay0) + (bx1 - bx0) * (by1 - by0) - w * h
    return w * h / union if union > 0 else 0.0


def naive_nms(boxes: list[list[float]], ranked: list[int], threshold: float, limit: int | None = None) -> list[int]:
    kept: list[int] = []
    for i in ranked:
        if limit is not None and len(kept) >= limit:
            break
        if all(naive_iou(boxes[i], boxes[j]) <= threshold for j in kept):
            kept.append(i)
    return kept


def random_boxes(n: int) -> np.ndarray:
    xy = RNG.uniform(0, 20, (n, 2))
    wh = RNG.uniform(2, 8, (n, 2))
    return np.concatenate([xy, xy + wh], axis=1)


def test_nms_with_mask_cpu_form_sorted_by_score_ties_in_index_order():
    boxes = random_boxes(24)
    scores = np.round(RNG.uniform(0, 1, 24), 1)  # ties
    b = np.concatenate([boxes, scores[:, None]], axis=1).astype(np.float32)
    out = run("NMSWithMask", b, attrs={"iou_threshold": "F32(0.3)"})
    ranked = naive_rank(list(map(float, b[:, 4])), True)
    assert out[1].tolist() == ranked
    np.testing.assert_array_equal(out[0], b[ranked].astype(np.float64))
    bl = b[:, :4].astype(np.float64).tolist()
    kept = naive_nms(bl, ranked, 0.3)
    assert out[1][out[2]].tolist() == kept


def test_nms_with_mask_ascend_form_keeps_the_input_order():
    from dumptui.core.search.replay.selection import nms_with_mask

    b = np.concatenate([random_boxes(12), RNG.uniform(0, 1, (12, 1))], axis=1)
    out = nms_with_mask(b, 0.2, by_score=False)
    assert out[1].tolist() == list(range(12))
    assert out[1][out[2]].tolist() == naive_nms(b[:, :4].tolist(), list(range(12)), 0.2)


@pytest.mark.parametrize("pad", [False, True])
def test_cann_non_max_suppression_v3_v4(pad):
    boxes = random_boxes(30)
    tf = boxes[:, [1, 0, 3, 2]].astype(np.float32)  # (y0, x0, y1, x1)
    scores = RNG.uniform(0, 1, 30).astype(np.float32)
    op = "NonMaxSuppressionV4" if pad else "NonMaxSuppressionV3"
    out = run(op, tf, scores, np.int32(6), np.float32(0.25), np.float32(0.2), attrs={"pad_to_max_output_size": "True"})
    ranked = [i for i in naive_rank(list(map(float, scores)), True) if scores[i] > np.float32(0.2)]
    want = naive_nms(boxes.astype(np.float32).astype(np.float64).tolist(), ranked, float(np.float32(0.25)), 6)
    if pad:
        assert int(out[1]) == len(want) and out[0].tolist() == want + [0] * (6 - len(want))
    else:
        assert out[0].tolist() == want


def test_onnx_non_max_suppression_rows_per_batch_and_class_and_centre_boxes():
    boxes = np.stack([random_boxes(10), random_boxes(10)])  # (2, 10, 4) corners (x0, y0, x1, y1)
    centre = np.concatenate([(boxes[..., :2] + boxes[..., 2:]) / 2, boxes[..., 2:] - boxes[..., :2]], axis=-1)
    scores = RNG.uniform(0, 1, (2, 3, 10))
    out = run(
        "NonMaxSuppression",
        centre,
        scores,
        np.int64(3),
        np.float32(0.3),
        np.float32(0.1),
        attrs={"center_point_box": "I64(1)"},
    )[0]
    want = []
    for b in range(2):
        for c in range(3):
            ranked = [i for i in naive_rank(scores[b, c].tolist(), True) if scores[b, c, i] > np.float32(0.1)]
            want += [[b, c, i] for i in naive_nms(boxes[b].tolist(), ranked, float(np.float32(0.3)), 3)]
    assert out.tolist() == want
    assert run("NonMaxSuppression", centre, scores, np.int64(0), np.float32(0.3))[0].shape == (0, 3)


def test_torchvision_nms_and_empty_boxes():
    boxes = random_boxes(15)
    scores = RNG.uniform(0, 1, 15)
    got = run("nms", boxes, scores, attrs={"scalar input 2": "0.4"})[0].tolist()
    assert got == naive_nms(boxes.tolist(), naive_rank(scores.tolist(), True), 0.4)
    assert run("nms", np.zeros((0, 4)), np.zeros(0), attrs={"iou_threshold": "0.5"})[0].shape == (0,)


# ------------------------------------------------------------------------------------------------ gathers


def test_gather_d_against_loops_with_negative_indices():
    x = RNG.standard_normal((3, 5)).astype(np.float16)
    idx = RNG.integers(-5, 5, (3, 4)).astype(np.int32)
    out = run("GatherD", x, np.int64(1), idx)[0]
    for i in range(3):
        for j in range(4):
            assert out[i, j] == float(x[i, idx[i, j] % 5])
    idx[0, 0] = 5
    with pytest.raises(ReplayUnsupported, match="out of range"):
        run("GatherD", x, np.int64(1), idx)


def test_torch_gather_and_index_select():
    x = RNG.standard_normal((4, 6))
    idx = RNG.integers(0, 4, (2, 6)).astype(np.int64)
    out = run("gather", x, idx, attrs={"scalar input 1": "0"})[0]
    for i in range(2):
        for j in range(6):
            assert out[i, j] == x[idx[i, j], j]
    sel = run("index_select", x, np.array([3, 0, 3]), attrs={"dim": "0"})[0]
    assert sel.tolist() == [x[3].tolist(), x[0].tolist(), x[3].tolist()]


def test_gather_nd_against_loops():
    x = RNG.standard_normal((3, 4, 2))
    idx = np.array([[[0, 1], [2, 3]], [[1, 0], [0, 0]]], dtype=np.int32)
    out = run("GatherNd", x, idx)[0]
    assert out.shape == (2, 2, 2)
    for a in range(2):
        for b in range(2):
            assert out[a, b].tolist() == x[idx[a, b, 0], idx[a, b, 1]].tolist()
    with pytest.raises(ReplayUnsupported, match="out of range"):
        run("GatherNd", x, np.array([[3, 0]]))


# ------------------------------------------------------------------------------------------------ sets, masks


def test_unique_values_inverse_counts_with_negative_zero_and_nan():
    x = np.array([2.0, -0.0, 0.0, 2.0, np.nan, -1.0, np.nan], dtype=np.float32)
    out = run("unique", x, attrs={"return_inverse": "True", "return_counts": "True"})
    finite = sorted({float(v) + 0.0 for v in x if not math.isnan(v)})
    assert out[0][:3].tolist() == finite and np.isnan(out[0][3:]).all() and out[0].size == 5
    np.testing.assert_array_equal(out[0][out[1]], x.astype(np.float64) + 0.0)  # x = y[idx] (NaN == NaN here)
    assert out[2][:3].tolist() == [1, 2, 2]
    ms = run("Unique", np.array([1, 2, 5, 2], dtype=np.int32))
    assert ms[0].tolist() == [1, 2, 5] and ms[1].tolist() == [0, 1, 2, 1]


def test_masked_select_broadcasts_and_where_and_one_hot():
    x = RNG.standard_normal((2, 3))
    mask = np.array([True, False, True])
    assert run("MaskedSelect", x, mask)[0].tolist() == [x[0, 0], x[0, 2], x[1, 0], x[1, 2]]
    with pytest.raises(ReplayUnsupported, match="not bool"):
        run("masked_select", x, mask.astype(np.int32))
    cond = x > 0
    assert run("where", cond, x, -x)[0].tolist() == np.abs(x).tolist()
    hot = run("OneHot", np.array([0, 2, 5, -1]), np.int64(3), np.float32(1.0), np.float32(0.0))[0]
    assert hot.tolist() == [[1, 0, 0], [0, 0, 1], [0, 0, 0], [0, 0, 0]]  # out of range: a row of off_value
    first = run("OneHot", np.array([1, 0]), np.int64(2), np.int32(7), np.int32(-1), attrs={"axis": "I64(0)"})[0]
    assert first.tolist() == [[-1, 7], [7, -1]]
    torch_hot = run("one_hot", np.array([2, 0]))[0]
    assert torch_hot.tolist() == [[0, 0, 1], [1, 0, 0]] and torch_hot.dtype == np.int64


def test_cast_of_nan_to_an_integer_is_refused():
    with pytest.raises(ReplayUnsupported, match="NaN"):
        run("Cast", np.array([np.nan, 1.0]), attrs={"dst_type": "I32"})


@pytest.mark.parametrize(
    "name,py",
    [
        ("gt", lambda a, b: a > b),
        ("__gt__", lambda a, b: a > b),
        ("greater", lambda a, b: a > b),
        ("ge", lambda a, b: a >= b),
        ("__lt__", lambda a, b: a < b),
        ("le", lambda a, b: a <= b),
        ("eq", lambda a, b: a == b),
        ("__ne__", lambda a, b: a != b),
    ],
)
def test_torch_comparisons_against_python_with_ties_nan_negative_zero_and_a_number(name, py):
    a = np.array([0.5, 0.49990, np.nan, -0.0, 0.0, 1.0, np.nan], dtype=np.float32)
    b = np.array([0.5, 0.5, 0.5, 0.0, -0.0, np.nan, np.nan], dtype=np.float32)
    got = run(name, a, b)[0]
    assert got.dtype == np.bool_ and got.tolist() == [py(float(x), float(y)) for x, y in zip(a, b)]
    as_number = run(name, a, None, attrs={"scalar input 1": "0.5"})[0]  # x > 0.5: msprobe records the number
    assert as_number.tolist() == [py(float(x), 0.5) for x in a]
    by_keyword = run(name, a, None, attrs={"other": "0"})[0]
    assert by_keyword.tolist() == [py(float(x), 0) for x in a]
    big = np.array([2**62, 2**62 + 1], dtype=np.int64)  # integers exactly, not through float64
    assert run(name, big, np.int64(2**62 + 1))[0].tolist() == [py(int(x), 2**62 + 1) for x in big]
    empty = run(name, np.zeros((0, 3), dtype=np.float16), np.float16(1))[0]
    assert empty.shape == (0, 3) and empty.dtype == np.bool_
    rows_ = run(name, np.arange(6.0).reshape(2, 3), np.array([[1.0], [4.0]]))[0]  # broadcast
    assert rows_.tolist() == [[py(float(x), float(t)) for x in r] for r, t in ((range(3), 1.0), (range(3, 6), 4.0))]
    with pytest.raises(ReplayUnsupported, match="not recorded"):
        run(name, a)
    with pytest.raises(ReplayUnsupported):
        run(name, np.ones(3), np.ones(2))


# ------------------------------------------------------------------------------------------------ V4/V5 layouts


def cann_nms_case(n: int, ties: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(corner boxes x0, y0, x1, y1 as float64, the same as CANN's (y0, x0, y1, x1) float32, scores float32)."""
    boxes = random_boxes(n).astype(np.float32)
    scores = (np.round(RNG.uniform(0, 1, n), 1) if ties else RNG.uniform(0, 1, n)).astype(np.float32)
    return boxes.astype(np.float64), boxes[:, [1, 0, 3, 2]], scores


def naive_kept(boxes: np.ndarray, scores: np.ndarray, limit: int, threshold: float, floor: float) -> list[int]:
    ranked = [i for i in naive_rank(list(map(float, scores)), True) if float(scores[i]) > floor]
    return naive_nms(boxes.tolist(), ranked, threshold, limit)


def test_cann_nms_v4_unpadded_by_default_and_v5_scores_and_valid_count():
    corners, tf, scores = cann_nms_case(25, ties=True)
    want = naive_kept(corners, scores, 7, float(np.float32(0.3)), float(np.float32(0.1)))
    v4 = run("NonMaxSuppressionV4", tf, scores, np.int32(7), np.float32(0.3), np.float32(0.1))
    assert v4[0].tolist() == want and int(v4[1]) == len(want)
    for pad in (False, True):
        v5 = run(
            "NonMaxSuppressionV5",
            tf,
            scores,
            np.int32(7),
            np.float32(0.3),
            np.float32(0.1),
            np.float32(0.0),
            attrs={"pad_to_max_output_size": str(pad)},
        )
        fill = 7 - len(want) if pad else 0
        assert v5[0].tolist() == want + [0] * fill and int(v5[2]) == len(want)
        assert v5[1].tolist() == [float(scores[i]) for i in want] + [0.0] * fill


def test_cann_nms_v5_soft_nms_is_refused_and_every_box_kept_when_max_output_is_n():
    corners, tf, scores = cann_nms_case(6)
    with pytest.raises(ReplayUnsupported, match="soft"):
        run("NonMaxSuppressionV5", tf, scores, np.int32(6), np.float32(0.5), np.float32(0.0), np.float32(0.5))
    apart = np.array([[20.0 * i, 0, 20.0 * i + 5, 5] for i in range(6)])  # (y0, x0, y1, x1), none overlap
    out = run("NonMaxSuppressionV5", apart, scores, np.int32(6), np.float32(0.5), np.float32(-1.0), np.float32(0))
    assert sorted(out[0].tolist()) == list(range(6)) and int(out[2]) == 6
    assert out[0].tolist() == naive_rank(list(map(float, scores)), True)


def test_cann_nms_v3_with_nan_negative_zero_and_empty():
    corners, tf, scores = cann_nms_case(8)
    scores[[1, 5]] = [np.nan, -0.0]
    scores[6] = 0.0
    got = run("NonMaxSuppressionV3", tf, scores, np.int32(8), np.float32(0.4), np.float32(-1.0))[0].tolist()
    assert got == naive_kept(corners, scores, 8, float(np.float32(0.4)), -1.0)  # NaN > -1 is false: left out
    assert 1 not in got
    if {5, 6} <= set(got):  # -0.0 and 0.0 tie: index order
        assert got.index(5) < got.index(6)
    empty = run("NonMaxSuppressionV5", np.zeros((0, 4)), np.zeros(0), np.int32(4), np.float32(0.5), np.float32(0))
    assert empty[0].shape == (0,) and int(empty[2]) == 0


# ------------------------------------------------------------------------------------------------ multi-class NMS


def naive_batch_nms(
    boxes: np.ndarray,
    scores: np.ndarray,
    score_threshold: float,
    iou_threshold: float,
    per_class: int,
    total: int,
    valid: list[int] | None = None,
) -> list[list[tuple[float, int, int]]]:
    """CANN's BatchMultiClassNMS (TensorFlow's combined NMS) as loops: per image and class the greedy NMS of the
    boxes scoring over the threshold, at most per_class; the image's picks by score, highest first (a stable
    sort of the class-by-class list), the first `total`."""
    out = []
    for b in range(boxes.shape[0]):
        n = boxes.shape[1] if valid is None else valid[b]
        picks: list[tuple[float, int, int]] = []
        for c in range(scores.shape[2]):
            s = [float(v) for v in scores[b, :n, c]]
            bx = boxes[b, :n, 0 if boxes.shape[2] == 1 else c].tolist()
            ranked = [i for i in naive_rank(s, True) if s[i] > score_threshold]
            picks += [(s[i], c, i) for i in naive_nms(bx, ranked, iou_threshold, per_class)]
        out.append([picks[k] for k in naive_rank([p[0] for p in picks], True)][:total])
    return out


def batch_case(batch: int, n: int, classes: int, q: int) -> tuple[np.ndarray, np.ndarray]:
    boxes = np.stack([np.stack([random_boxes(n) for _ in range(q)], axis=1) for _ in range(batch)])
    scores = np.round(RNG.uniform(0, 1, (batch, n, classes)), 1)  # many ties
    return boxes.astype(np.float32), scores.astype(np.float32)


def check_batch_output(out: dict[int, np.ndarray], boxes, want, total: int) -> None:
    q = boxes.shape[2]
    for b, rows in enumerate(want):
        assert int(out[3][b]) == len(rows)
        for r, (score, c, i) in enumerate(rows):
            assert out[1][b, r] == score and out[2][b, r] == c
            np.testing.assert_array_equal(out[0][b, r], boxes[b, i, 0 if q == 1 else c].astype(np.float64))
        assert not out[1][b, len(rows) :].any() and not out[0][b, len(rows) :].any()
        assert out[0].shape == (boxes.shape[0], total, 4)


@pytest.mark.parametrize("q", [1, 3])
def test_batch_multi_class_nms_against_loops_shared_and_per_class_boxes(q):
    boxes, scores = batch_case(2, 18, 3, q)
    attrs = {
        "score_threshold": "F32(0.15)",
        "iou_threshold": "F32(0.3)",
        "max_size_per_class": "I64(4)",
        "max_total_size": "I64(7)",
    }
    for op in ("BatchMultiClassNonMaxSuppression", "BatchMultiClassNMS"):
        out = run(op, boxes, scores, attrs=attrs)
        want = naive_batch_nms(boxes, scores, float(np.float32(0.15)), float(np.float32(0.3)), 4, 7)
        check_batch_output(out, boxes, want, 7)


def test_batch_multi_class_nms_valid_boxes_nan_negative_zero_and_totals_of_n():
    boxes, scores = batch_case(2, 10, 2, 1)
    scores[0, 2, 0], scores[0, 3, 0], scores[1, 4, 1] = np.nan, -0.0, 0.0
    attrs = {"score_threshold": "-1.0", "iou_threshold": "0.5", "max_size_per_class": "10", "max_total_size": "20"}
    out = run("BatchMultiClassNonMaxSuppression", boxes, scores, None, np.array([10, 6], np.int32), attrs=attrs)
    want = naive_batch_nms(boxes, scores, -1.0, 0.5, 10, 20, valid=[10, 6])
    check_batch_output(out, boxes, want, 20)
    assert all(i < 6 for _s, _c, i in want[1]) and (float("nan"), 0, 2) not in want[0]
    with pytest.raises(ReplayUnsupported, match="clip_window"):
        run("BatchMultiClassNMS", boxes, scores, np.ones((2, 4), np.float32), attrs=attrs)
    empty = run("BatchMultiClassNMS", np.zeros((1, 0, 1, 4)), np.zeros((1, 0, 2)), attrs=attrs)
    assert empty[3].tolist() == [0] and empty[0].shape == (1, 20, 4)


def test_torch_npu_batch_nms_as_msprobe_records_it():
    boxes, scores = batch_case(1, 12, 2, 2)
    attrs = {"scalar input 2": "0.2", "scalar input 3": "0.4", "scalar input 4": "3", "scalar input 5": "4"}
    out = run("npu_batch_nms", boxes, scores, attrs=attrs)
    check_batch_output(out, boxes, naive_batch_nms(boxes, scores, 0.2, 0.4, 3, 4), 4)


# ------------------------------------------------------------------------------------------------ torch calls


@pytest.mark.parametrize("name", ["add", "add_", "sub", "sub_", "__iadd__", "__isub__"])
def test_torch_add_sub_with_alpha_numbers_and_integers_against_python(name):
    sign = -1 if "sub" in name else 1
    x = RNG.standard_normal((3, 4)).astype(np.float16)
    y = RNG.standard_normal((1, 4)).astype(np.float16)
    got = run(name, x, y, attrs={"alpha": "0.5"})[0]
    want = [[float(a) + sign * 0.5 * float(b) for a, b in zip(row, y[0])] for row in x]
    np.testing.assert_allclose(got, np.array(want), rtol=1e-15)
    ints = np.array([[2**40, -3, 7]], dtype=np.int64)
    exact = run(name, ints, None, attrs={"scalar input 1": "3", "alpha": "2"})[0]
    assert exact.dtype == np.int64 and exact.tolist() == [[v + sign * 6 for v in ints[0].tolist()]]


@pytest.mark.parametrize("name", ["mul", "mul_", "multiply", "__imul__"])
def test_torch_mul_with_a_number_nan_and_negative_zero(name):
    x = np.array([1.5, -0.0, np.nan, 65504.0], dtype=np.float16)
    got = run(name, x, None, attrs={"scalar input 1": "2.0"})[0]
    assert got[0] == 3.0 and got[1] == 0.0 and np.signbit(got[1]) and np.isnan(got[2]) and got[3] == 131008.0


@pytest.mark.parametrize("mode", [None, "trunc", "floor"])
def test_torch_div_modes_against_python_and_integer_division_by_zero_refused(mode):
    x = np.array([7, -7, 5, 0], dtype=np.int32)
    y = np.array([2, 2, -3, 4], dtype=np.int32)
    attrs = {} if mode is None else {"rounding_mode": f'"{mode}"'}
    got = run("div_", x, y, attrs=attrs)[0].tolist()
    rounded = {None: lambda q: q, "trunc": math.trunc, "floor": math.floor}[mode]
    assert got == [rounded(a / b) for a, b in zip(x.tolist(), y.tolist())]
    if mode is not None:
        with pytest.raises(ReplayUnsupported, match="zero"):
            run("div", x, np.zeros(4, dtype=np.int32), attrs=attrs)
    f = run("true_divide", np.array([1.0, -1.0, 0.0], np.float32), np.zeros(3, np.float32))[0]
    assert f[0] == np.inf and f[1] == -np.inf and np.isnan(f[2])


def test_torch_clamp_one_bound_both_bounds_crossed_and_nan():
    x = np.array([-2.0, -0.5, 0.5, 2.0, np.nan], dtype=np.float32)
    low = run("clamp_", x, attrs={"min": "-1.0"})[0]
    assert low[:4].tolist() == [-1.0, -0.5, 0.5, 2.0] and np.isnan(low[4])
    both = run("clamp", x, attrs={"scalar input 1": "-1.0", "scalar input 2": "1.0"})[0]
    assert both[:4].tolist() == [-1.0, -0.5, 0.5, 1.0]
    crossed = run("clip", x, attrs={"min": "1.0", "max": "0.0"})[0]  # min > max: every element max (PyTorch's)
    assert crossed[:4].tolist() == [0.0] * 4
    ints = run("clamp", np.array([-5, 0, 5], np.int64), attrs={"max": "1"})[0]
    assert ints.dtype == np.int64 and ints.tolist() == [-5, 0, 1]
    with pytest.raises(ReplayUnsupported, match="min and max"):
        run("clamp", x)


@pytest.mark.parametrize("pad_per_class", [False, True])
def test_mindspore_combined_nms_settings_as_inputs_clipped_boxes_and_rows_per_class(pad_per_class):
    """MindSpore's CombinedNonMaxSuppression: the same selection as CANN's BatchMultiClassNMS, boxes (y0, x0,
    y1, x1) in [0, 1] mostly (the same overlaps as x0, y0, x1, y1), written clipped to [0, 1]."""
    boxes, scores = batch_case(2, 14, 3, 1)
    boxes = (boxes / 20.0 - 0.1).astype(np.float32)  # corners below 0 and above 1
    ins = (boxes, scores, np.int32(2), np.int32(9), np.float32(0.3), np.float32(0.15))
    attrs = {"pad_per_class": str(pad_per_class)}
    out = run("CombinedNonMaxSuppression", *ins, attrs=attrs)
    want = naive_batch_nms(boxes, scores, float(np.float32(0.15)), float(np.float32(0.3)), 2, 9)
    rows = 6 if pad_per_class else 9  # min(2 x 3 classes, 9)
    assert out[0].shape == (2, rows, 4) and out[1].shape == (2, rows)
    for b, picks in enumerate(want):
        assert int(out[3][b]) == len(picks)
        for r, (score, c, i) in enumerate(picks[:rows]):
            assert out[1][b, r] == score and out[2][b, r] == c
            np.testing.assert_array_equal(out[0][b, r], np.clip(boxes[b, i, 0].astype(np.float64), 0, 1))
    unclipped = run("CombinedNonMaxSuppression", *ins, attrs={**attrs, "clip_boxes": "False"})[0]
    raw = [boxes[b, i, 0].astype(np.float64) for b, picks in enumerate(want) for _s, _c, i in picks[:rows]]
    got = [unclipped[b, r] for b, picks in enumerate(want) for r in range(len(picks[:rows]))]
    np.testing.assert_array_equal(np.array(got), np.array(raw))
    assert any(((x < 0) | (x > 1)).any() for x in raw)  # (some kept box was written clipped above)


def test_torch_operators_as_msprobe_names_them_reflected_ones_reversed():
    x = np.array([1.0, -2.0, 4.0], dtype=np.float32)
    two = {"scalar input 1": "2.0"}
    assert run("__mul__", x, None, attrs=two)[0].tolist() == [2.0, -4.0, 8.0]
    assert run("__rmul__", x, None, attrs=two)[0].tolist() == [2.0, -4.0, 8.0]
    assert run("__radd__", x, None, attrs=two)[0].tolist() == [3.0, 0.0, 6.0]
    assert run("__sub__", x, None, attrs=two)[0].tolist() == [-1.0, -4.0, 2.0]
    assert run("__rsub__", x, None, attrs=two)[0].tolist() == [1.0, 4.0, -2.0]  # 2 - x
    assert run("__truediv__", x, None, attrs=two)[0].tolist() == [0.5, -1.0, 2.0]
    assert run("__rtruediv__", x, None, attrs=two)[0].tolist() == [2.0, -1.0, 0.5]  # 2 / x
    ints = np.array([3, -4], dtype=np.int64)
    assert run("__rsub__", ints, None, attrs={"scalar input 1": "1"})[0].tolist() == [-2, 5]
