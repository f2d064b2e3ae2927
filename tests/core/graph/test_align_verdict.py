"""Alignment strategies on hand-made op lists, and the verdict rules on hand-made statistics."""

from __future__ import annotations

import numpy as np

from dumptui.core.compare.hints import attribute_diff, hints_for
from dumptui.core.compare.metrics import compare_arrays
from dumptui.core.compare.verdict import CLOSE, DIVERGED, EQUAL, Thresholds, judge, parse_user_ignore
from dumptui.core.graph.align import COUNTER, EXACT, NORMALISED, ONLY_REF, ONLY_TARGET, POSITION, RENAMED, align
from dumptui.core.graph.pairedby import PairedBy
from dumptui.core.model.dump import Dump, Op, TensorRef
from dumptui.report.reasons import say


class FakeRef(TensorRef):
    def __init__(self, shape):
        super().__init__("-", "output", 0, dtype="float32", shape=shape)


def dump(names, shapes=None):
    ops = []
    for i, n in enumerate(names):
        op_type = n.rsplit("/", 1)[-1].split("-op")[0]
        shp = (shapes or {}).get(n, (4,))
        ops.append(Op(name=n, op_type=op_type, order=i, inputs={0: FakeRef(shp)}, outputs={0: FakeRef(shp)}))
    return Dump(path="-", root="-", format="test", ops=ops)


def how(al):
    return [(p.ref.name if p.ref else None, p.target.name if p.target else None, p.how) for p in al.pairs]


def test_exact_then_inserted_ops_stay_unpaired():
    r = dump(["S/conv-op0", "S/relu-op0", "S/pool-op0"])
    t = dump(["S/Cast-op0", "S/conv-op0", "S/Cast-op1", "S/relu-op0", "S/pool-op0"])
    assert how(align(r, t)) == [
        (None, "S/Cast-op0", ONLY_TARGET),
        ("S/conv-op0", "S/conv-op0", EXACT),
        (None, "S/Cast-op1", ONLY_TARGET),
        ("S/relu-op0", "S/relu-op0", EXACT),
        ("S/pool-op0", "S/pool-op0", EXACT),
    ]


def test_normalised_and_counter_and_renamed(tmp_path):
    r = dump(["Default/a/Conv2D-op0", "Default/b/MatMul-op3", "Default/m/FloorMod-op0", "Default/x/Add-op0"])
    t = dump(["default_a_conv2d-op0", "Default/b/MatMul-op7", "Default/m/Mod-op0", "Default/x/Add-op0"])
    got = how(align(r, t))
    # no graph, and no values to read: two kinds of op are never paired on scope and shapes alone
    assert got[0][2] == NORMALISED and got[1][2] == COUNTER
    assert ("Default/x/Add-op0", "Default/x/Add-op0", EXACT) in got
    assert ("Default/m/FloorMod-op0", None, ONLY_REF) in got and (None, "Default/m/Mod-op0", ONLY_TARGET) in got
    # the same input values justify the rename
    value = np.arange(4, dtype=np.float32)
    for d, name in ((r, "Default/m/FloorMod-op0"), (t, "Default/m/Mod-op0")):
        path = str(tmp_path / f"{name.replace('/', '_')}.npy")
        np.save(path, value)
        d.op(name).inputs = {0: TensorRef(path, "input", 0, dtype="float32", shape=(4,))}
    got = how(align(r, t))
    assert ("Default/m/FloorMod-op0", "Default/m/Mod-op0", RENAMED) in got
    np.save(str(tmp_path / "Default_m_Mod-op0.npy"), value + 1.0)  # other values (by far more than noise): apart
    assert ("Default/m/FloorMod-op0", None, ONLY_REF) in how(align(r, t))


def test_position_type_and_shapes_inside_a_gap():
    r = dump(["A-op0", "p/Conv2D-op1", "p/ReLU-op2", "Z-op9"], {"p/Conv2D-op1": (8,), "p/ReLU-op2": (8,)})
    t = dump(["A-op0", "q/Conv2D-op5", "q/ReLU-op6", "Z-op9"], {"q/Conv2D-op5": (8,), "q/ReLU-op6": (8,)})
    got = how(align(r, t))
    assert got[1] == ("p/Conv2D-op1", "q/Conv2D-op5", POSITION) and got[2][2] == POSITION


def test_shapes_must_agree_for_a_rename():
    r = dump(["A-op0", "s/FloorMod-op0", "Z-op0"], {"s/FloorMod-op0": (4,)})
    t = dump(["A-op0", "s/Mod-op0", "Z-op0"], {"s/Mod-op0": (5,)})
    got = how(align(r, t))
    assert ("s/FloorMod-op0", None, ONLY_REF) in got and (None, "s/Mod-op0", ONLY_TARGET) in got


def test_forced_pairs_win():
    r = dump(["A-op0", "B-op0"])
    t = dump(["B-op0", "A-op0"])
    got = how(align(r, t, [("A-op0", "B-op0")]))
    assert ("A-op0", "B-op0", PairedBy.MAPPED) in got


TH = Thresholds()
TOL32 = TH.tolerance("float32", "float32")


def verdict(y, x, th=TH, dtype="float32"):
    floor, dt = th.floor(dtype)
    return judge(compare_arrays(np.asarray(y), np.asarray(x), th.tolerance(dtype, dtype)), th, floor, dt)


def robust_rel(y, x, trim=0.01):
    """The trimmed-mean error over the reference's RMS, computed independently."""
    e = np.sort(np.abs(np.asarray(x, np.float64) - np.asarray(y, np.float64)).ravel())
    k = int(e.size * trim)
    kept = e[: e.size - k] if k else e
    return kept.mean() / np.sqrt(np.mean(np.asarray(y, np.float64) ** 2))


def test_rules_equal_close_diverged():
    rng = np.random.default_rng(0)
    y = rng.standard_normal(1000).astype(np.float32)
    assert verdict(y, y.copy()).verdict == EQUAL
    assert verdict(y, y * np.float32(1 + 1e-6)).verdict == CLOSE  # a few ulps: far below the fp32 floor
    assert verdict(y, -y).verdict == DIVERGED  # cosine -1
    drift = (y + 0.01 * np.abs(y).mean()).astype(np.float32)  # a 1 % drift, cosine 0.99995
    v = verdict(y, drift)
    assert compare_arrays(y, drift, TOL32).cos > 0.9999 and v.verdict == DIVERGED
    said = say(v.reason).split()  # "error 7.9e-03 of its RMS > float32 floor 1.22e-04"
    assert said[0] == "error" and say(v.reason).endswith("of its RMS > float32 floor 1.22e-04")
    assert abs(float(said[1]) - robust_rel(y, drift)) <= 0.006 * robust_rel(y, drift)  # 3 digits, within rounding
    spikes = y.copy()
    spikes[:3] += 0.75  # a discontinuity moves 3 elements
    v = verdict(y, spikes)
    assert v.verdict == CLOSE and robust_rel(y, spikes) == 0 and "error 0 of its RMS" in say(v.reason)
    many = y.copy()
    many[:150] += 0.75  # 15 %: not a few outliers
    assert verdict(y, many).verdict == DIVERGED


def test_scalars_by_value_and_dtype_aware_floor():
    assert verdict(np.float32(0.75), np.float32(0.75 + 1e-6)).verdict == CLOSE
    assert verdict(np.float32(0.75), np.float32(0.5)).verdict == DIVERGED
    f32, f16, bf16 = TH.floor("float32")[0], TH.floor("float32", "float16")[0], TH.floor("bfloat16", "float32")[0]
    assert (f32, f16, bf16) == (2.0**-13, 2.0**-10, 2.0**-7)
    assert TH.floor("int32", "int32")[0] == 0 and TH.tolerance("int32", "int32").rtol == 0
    assert TH.tolerance("float16", "float32").rtol == 10 * f16
    over = Thresholds(floors=(("float16", 0.5),), floor_scale=2.0)
    assert over.floor("float16")[0] == 1.0 and over.floor("float32")[0] == 2 * f32
    y = np.random.default_rng(1).standard_normal(1000).astype(np.float32)
    fp16_noise = y.astype(np.float16).astype(np.float32)
    assert verdict(y, fp16_noise).verdict == DIVERGED  # fp16 rounding is beyond fp32's floor
    assert verdict(y, fp16_noise, dtype="float16").verdict == CLOSE  # and within fp16's


def test_nan_at_different_positions_diverges():
    y = np.array([1.0, 2.0, np.nan, 4.0], np.float32)
    x = np.array([1.0, np.nan, 3.0, 4.0], np.float32)
    v = verdict(y, x)
    assert v.verdict == DIVERGED and "NaN/Inf" in say(v.reason)


def test_one_side_zero_diverges_with_reason():
    v = verdict(np.ones(8, np.float32), np.zeros(8, np.float32))
    assert (
        v.verdict == DIVERGED
        and "target is all zeros" in say(v.reason)
        and "error 1.00e+00 of its RMS" in say(v.reason)
    )


def test_hints_and_attribute_diff():
    hs = hints_for("FloorMod", "Mod", ["float32"], ["float32"])
    assert any("ops.FloorMod is the suggested replacement" in say(h.reason) for h in hs)
    hs = hints_for("Conv2D", "Conv2D", ["float32"], ["float16"])
    assert any("fp16" in say(h.reason) for h in hs)
    assert any("Sigmoid" in say(h.reason) for h in hints_for("Sigmoid", "Sigmoid", ["float32"], ["float16"]))
    assert not any("Sigmoid" in say(h.reason) for h in hints_for("Sigmoid", "Sigmoid", [], []))  # not computed in fp16
    d = attribute_diff({"pad": "(0, 1)", "instance name": "a"}, {"pad": "(1, 0)", "instance name": "b"})
    assert d == {"pad": ("(0, 1)", "(1, 0)")}


def test_user_ignore_patterns():
    r = parse_user_ignore("*Dropout*:output.1")
    assert r.matches("Default/Dropout-op0", "Dropout", "output", 1)
    assert not r.matches("Default/Dropout-op0", "Dropout", "output", 0)
    assert parse_user_ignore("Default/x*").matches("Default/xy", "Add", "input", 3)
