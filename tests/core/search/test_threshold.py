"""Comparisons and casts to integers judged as selections (core/search/threshold.py): an element whose input
nearly ties its threshold and crosses it on the target, each side following its own inputs, is a flip with its
margin and the error that moved it; anything else is left to the rules every op has."""

from __future__ import annotations

import numpy as np
import pytest

from dumptui.core.search.replay import ReplayUnsupported
from dumptui.core.search.selection import FlipKind, SelectionCode, Side
from dumptui.core.search.threshold import judge
from dumptui.report.selection import proof_sentence


def side(inputs: list, out: np.ndarray, dtype: str = "float32") -> Side:
    return Side({i: np.asarray(v) for i, v in enumerate(inputs)}, {0: np.asarray(out)}, dict.fromkeys(range(2), dtype))


def test_a_score_crossing_its_threshold_is_a_flip_with_margin_and_moving_error():
    x_r = np.array([0.1, 0.49990, 0.7, -0.0], dtype=np.float32)
    x_t = np.array([0.1, 0.5004, 0.7, 0.0], dtype=np.float16).astype(np.float32)
    t = np.float32(0.5)
    p = judge("Greater", {}, {}, side([x_r, t], x_r > t), side([x_t, t], x_t > t, "float16"))
    assert p is not None and p.code == SelectionCode.FLIP and p.op_type == "Greater"
    assert (p.selected, p.equal, p.common, p.differing) == (4, 3, 3, 1)
    (f,) = p.flips
    assert f.kind == FlipKind.THRESHOLD and (f.index, f.rank) == (1, -1)
    assert f.value == pytest.approx(0.4999, abs=1e-6) and f.other_value == 0.5
    assert f.margin == pytest.approx(0.5 - float(x_r[1]), rel=1e-9)
    assert f.input_error == pytest.approx(float(x_t[1]) - float(x_r[1]), rel=1e-9) and f.margin <= f.input_error
    assert p.input_slot == 0 and p.input_error == pytest.approx(abs(float(x_t[1] - x_r[1])), rel=1e-9)
    words = proof_sentence(p)
    assert "3 of 4 elements equal" in words and "element 1 crossed its threshold" in words and "margin" in words


@pytest.mark.parametrize("op,fn", [("Less", np.less), ("GreaterEqual", np.greater_equal), ("Equal", np.equal)])
def test_two_scores_against_each_other_on_either_slot(op, fn):
    a_r, b_r = np.array([1.0, 2.0, 3.0]), np.array([0.5, 2.0001, 3.5])
    a_t, b_t = a_r + 2e-4, b_r.copy()  # every element moved by the target's noise; one crosses
    p = judge(op, {}, {}, side([a_r, b_r], fn(a_r, b_r)), side([a_t, b_t], fn(a_t, b_t)))
    if np.array_equal(fn(a_r, b_r), fn(a_t, b_t)):
        assert p is None  # Equal: 2.0 vs 2.0001 is unequal on both sides
        return
    assert p is not None and p.differing == 1 and p.flips[0].index == 1
    f = p.flips[0]
    assert f.margin == pytest.approx(1e-4, rel=1e-6) and f.input_error == pytest.approx(2e-4, rel=1e-6)


def test_equal_outputs_a_wrong_side_a_float_cast_nan_and_empty_are_left_to_the_other_rules():
    x, t = np.array([0.2, 0.8]), np.float32(0.5)
    same = judge("Greater", {}, {}, side([x, t], x > t), side([x + 1e-3, t], x > t))
    assert same is None  # nothing differs: compared as always
    wrong = judge("Greater", {}, {}, side([x, t], x > t), side([x, t], np.array([True, True])))
    assert wrong is None  # the target does not follow its inputs: the replay rule names it
    empty = np.zeros(0)
    assert judge("Less", {}, {}, side([empty, t], empty < t), side([empty, t], empty < t)) is None
    as_float = judge("Cast", {"dst_type": "F16"}, {}, side([x], x), side([x + 1e-3], x + 1e-3))
    assert as_float is None  # a rounding, not a threshold
    n_r, n_t = np.array([np.nan, 0.4]), np.array([np.nan, 0.6])
    p = judge("Greater", {}, {}, side([n_r, t], n_r > t), side([n_t, t], n_t > t))
    assert p is not None and [f.index for f in p.flips] == [1]  # NaN compares false on both sides


def test_negative_zero_is_zero_for_comparisons_and_casts():
    z_r, z_t = np.array([-0.0, 1e-3]), np.array([0.0, -1e-3])
    p = judge("GreaterEqual", {}, {}, side([z_r, 0.0], z_r >= 0), side([z_t, 0.0], z_t >= 0))
    assert p is not None and [f.index for f in p.flips] == [1]  # -0.0 >= 0 on both sides
    to_bool = {"dst_type": "Bool"}
    c = judge("Cast", to_bool, {}, side([z_r], z_r != 0), side([np.array([0.0, 0.0])], np.array([False, False])))
    assert c is not None and c.flips[0].index == 1 and c.flips[0].other_value == 0.0
    assert c.flips[0].margin == pytest.approx(1e-3) and c.flips[0].input_error == pytest.approx(1e-3)


@pytest.mark.parametrize(
    "x_r,x_t,boundary",
    [
        (2.9996, 3.0, 3.0),  # up, away from zero: at the next integer
        (3.0, 2.9996, 3.0),  # down to below an integer
        (-2.9996, -3.0, -3.0),  # down, away from zero
        (-3.0, -2.9996, -3.0),  # up, toward zero: just past the integer
        (0.0004, -1.0, -1.0),  # down across zero: truncation keeps 0 until -1
        (-0.0004, 1.0, 1.0),
    ],
)
def test_a_cast_to_integers_truncates_and_names_the_integer_crossed(x_r, x_t, boundary):
    r, t = np.array([x_r, 7.5]), np.array([x_t, 7.5])
    i32 = {"dst_type": "I32"}
    p = judge("Cast", i32, {}, side([r], np.trunc(r).astype(np.int32)), side([t], np.trunc(t).astype(np.int32)))
    assert p is not None and p.code == SelectionCode.FLIP and p.differing == 1
    (f,) = p.flips
    assert f.index == 0 and f.other_value == boundary
    assert f.margin == pytest.approx(abs(x_r - boundary), abs=1e-12) and f.margin <= f.input_error


def test_many_flips_are_counted_and_the_first_kept():
    x_r = np.full(100, 0.4999)
    x_t = np.full(100, 0.5001)
    x_r[::2] = 0.9
    x_t[::2] = 0.9
    t = np.float64(0.5)
    p = judge("Greater", {}, {}, side([x_r, t], x_r > t), side([x_t, t], x_t > t))
    assert p is not None and p.differing == 50 and len(p.flips) == 50 and p.equal == 50
    assert [f.index for f in p.flips[:3]] == [1, 3, 5]


def test_a_torch_comparison_with_a_number_as_msprobe_records_it():
    x_r = np.array([[0.2, 0.4999, 0.9]], dtype=np.float32)
    x_t = np.array([[0.2, 0.5005, 0.9]], dtype=np.float16)
    attrs = {"scalar input 1": "0.5"}
    p = judge("__gt__", attrs, {}, Side({0: x_r}, {0: x_r > 0.5}), Side({0: x_t}, {0: x_t > 0.5}, {0: "float16"}))
    assert p is not None and p.differing == 1 and p.flips[0].index == 1 and p.flips[0].other_value == 0.5
    assert p.flips[0].margin == pytest.approx(0.5 - float(x_r[0, 1]), rel=1e-6)
    assert p.tolerance > 0  # the target's input is float16: its rounding is a tie
    with pytest.raises(ReplayUnsupported, match="not recorded"):  # no number: the scan's hook leaves it
        judge("gt", {}, {}, Side({0: x_r}, {0: x_r > 0.5}), Side({0: x_t}, {0: x_t > 0.5}))


def test_integers_and_booleans_have_no_near_tie_what_differs_came_in():
    """A cast of a flipped mask to int32, or two index tensors compared: the difference is an upstream flip's,
    carried, not a threshold crossed here (left to the replay rule)."""
    m_r, m_t = np.array([True, False, True]), np.array([True, True, True])
    i32 = {"dst_type": "I32"}
    assert judge("Cast", i32, {}, side([m_r], m_r.astype(np.int32)), side([m_t], m_t.astype(np.int32))) is None
    i_r, i_t = np.array([3, 7, 1]), np.array([3, 6, 1])
    j = np.array([3, 7, 2])
    assert judge("Equal", {}, {}, side([i_r, j], i_r == j), side([i_t, j], i_t == j)) is None
    x_r, x_t = np.array([0.4999, 0.9]), np.array([0.5001, 0.9])  # a float against an integer tensor: judged
    half = np.array([0, 0])
    p = judge("Greater", {}, {}, side([x_r - 0.5, half], x_r - 0.5 > half), side([x_t - 0.5, half], x_t - 0.5 > half))
    assert p is not None and p.differing == 1


def test_an_element_moved_far_beyond_the_noise_came_in_it_is_no_near_tie():
    """Scores gathered by an upstream flip differ wholesale at one position: that element crossing the
    threshold is carried from there, not a near-tie crossed by noise (left to the replay rule)."""
    x_r = np.linspace(0.1, 0.9, 64)
    i = int(np.argmin(np.abs(x_r - 0.5)))
    x_r[i] = 0.4999
    x_t = x_r + np.where(np.arange(64) % 2, 1e-4, -1e-4)  # the noise
    t = np.float64(0.5)
    far = x_t.copy()
    far[i] = 0.8  # another element's score there
    assert judge("Greater", {}, {}, side([x_r, t], x_r > t), side([far, t], far > t)) is None
    near = x_t.copy()
    near[i] = 0.5002
    p = judge("Greater", {}, {}, side([x_r, t], x_r > t), side([near, t], near > t))
    assert p is not None and [f.index for f in p.flips] == [i]


class _Tensor:
    def __init__(self, a: np.ndarray, reads: list):
        self.a, self.reads = a, reads
        self.dtype, self.shape, self.size = str(a.dtype), a.shape, a.size

    def read(self) -> np.ndarray:
        self.reads.append(self)
        return self.a


class _Op:
    def __init__(self, x: np.ndarray, out: np.ndarray, reads: list, dst: str):
        self.op_type, self.attrs, self.sources = "Cast", {"dst_type": dst}, {}
        self.backward_call = False
        self.inputs, self.outputs = {0: _Tensor(x, reads)}, {0: _Tensor(out, reads)}


class _Pair:
    def __init__(self, ref: _Op, target: _Op):
        self.ref, self.target = ref, target


def test_a_cast_to_a_float_type_is_passed_over_without_reading_a_tensor():
    """Every float16 target casts thousands of tensors to float16 and back: the scan asks about each one whose
    output differs, and only casts to integers or bool are read (their dtype is in the index)."""
    from dumptui.core.search.threshold import threshold_proof

    reads: list = []
    x_r, x_t = np.array([2.9996, 1.2]), np.array([3.0004, 1.2])
    to_f16 = _Pair(_Op(x_r, x_r.astype(np.float16), reads, "F16"), _Op(x_t, x_t.astype(np.float16), reads, "F16"))
    assert threshold_proof(None, to_f16, {0: "data"}) is None and reads == []  # type: ignore[arg-type]
    r_i, t_i = np.trunc(x_r).astype(np.int32), np.trunc(x_t).astype(np.int32)
    to_int = _Pair(_Op(x_r, r_i, reads, "I32"), _Op(x_t, t_i, reads, "I32"))
    p = threshold_proof(None, to_int, {0: "data"})  # type: ignore[arg-type]
    assert p is not None and p.flips[0].other_value == 3.0 and len(reads) == 4


# ------------------------------------------------------------------------------------------------ after a resize


def _resized_run(replay_proof, out_resized: bool = True):
    """A flipped MaskedSelect (position 0) feeding an op (position 1) whose input and output differ in size on
    the two sides: never measured (no output error), judged by resized_by_flips."""
    from types import SimpleNamespace

    from dumptui.core.search.localerror import LocalError, LocalKind, LocalRule
    from dumptui.core.search.selection import SelectionProof
    from dumptui.core.search.threshold import resized_by_flips

    flip = LocalError(SimpleNamespace(name="masked"), None, None, None, None, 1e-3, "float16")  # type: ignore[arg-type]
    flip.selection = SelectionProof(SelectionCode.FLIP, "MaskedSelect", selected=9, equal=8, differing=1)
    flip.kind, flip.rule = LocalKind.CARRIES, LocalRule.SELECTION_FLIP
    after = LocalError(SimpleNamespace(name="after"), None, None, None, None, 1e-3, "float16")  # type: ignore[arg-type]
    asked = []

    def replay_for(le):
        asked.append(le.pair.name)
        return replay_proof, "" if replay_proof is not None else "no replay for Foo"

    resized_by_flips(
        [flip, after],
        lambda p: {p - 1} if p else set(),
        [(), ((0, "shape mismatch", ""),)],
        10.0,
        0.05,
        [False, out_resized],
        replay_for,
    )
    return after, asked


def test_an_op_resized_after_a_flip_is_replayed_there_carried_broken_or_following_the_flip():
    from dumptui.core.search.localerror import LocalKind, LocalRule, ReplayProof

    matches = ReplayProof(dev_ref=1e-4, dev_target=2e-4, floor_ref=1e-3, floor_target=1e-3)
    le, asked = _resized_run(matches)
    assert asked == ["after"] and (le.kind, le.rule) == (LocalKind.CARRIES, LocalRule.RESIZED_BY_FLIP)
    assert le.resized == (0,)
    broken = ReplayProof(dev_ref=1e-4, dev_target=0.2, floor_ref=1e-3, floor_target=1e-3)
    le, _ = _resized_run(broken)
    assert (le.kind, le.rule) == (LocalKind.ROOT, LocalRule.REPLAY_BROKEN)  # a bug after a flip: a root
    le, _ = _resized_run(None)  # no replay: it follows the flip's change of size
    assert (le.kind, le.rule) == (LocalKind.CARRIES, LocalRule.FOLLOWS_RESIZING_FLIP)
    assert le.why.code == "follows-resizing-flip" and le.why.args[1] == "masked"
    le, asked = _resized_run(matches, out_resized=False)  # an output unreadable: not the flip's to explain
    assert asked == [] and le.kind == LocalKind.UNKNOWN
