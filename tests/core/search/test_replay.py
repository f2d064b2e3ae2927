"""Replay engine: every kernel against an independent computation, and against real MindSpore dumps.

The real-dump tests use ../shared/fixtures and skip, saying so, when it is absent.
"""

from __future__ import annotations

import ast
import math
import pathlib
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from helpers import replay_naive as naive
from helpers.common import SHARED

import dumptui.core.search.replay as replay_pkg
from dumptui.core.model.dump import Op
from dumptui.core.search.replay import SUPPORTED, ReplayInputs, ReplayUnsupported, parse_value, replay, supported
from dumptui.core.search.replay.activations import erf
from dumptui.core.search.replay.irvalues import constant_array

RNG = np.random.default_rng(20260101)


def run(
    op_type: str,
    inputs: list[object] | None = None,
    attrs: dict[str, str] | None = None,
    constants: dict[int, str] | None = None,
    out_shapes: dict[int, tuple[int, ...]] | None = None,
) -> dict[int, np.ndarray]:
    """Replay with inputs given by position; a None entry leaves that slot out."""
    given = {i: np.asarray(a) for i, a in enumerate(inputs or []) if a is not None}
    return replay(ReplayInputs(op_type, given, attrs or {}, constants or {}, out_shapes or {}))


def one(op_type: str, *inputs: object, **kw: Any) -> np.ndarray:
    return run(op_type, list(inputs), **kw)[0]


# --- the API and IR values ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text,value",
    [
        ("I64(3)", 3),
        ("F32(1e-05)", 1e-05),
        ("Bool(1)", True),
        ("Bool(0)", False),
        ("I64(-1)", -1),
        ("(1, 1, 2, 2)", (1, 1, 2, 2)),
        ("(I64(16), I64(16))", (16, 16)),
        ("(I64(0))", (0,)),
        ("(0)", (0,)),
        ("()", ()),
        ('"NCHW"', "NCHW"),
        ('"pad"', "pad"),
        ("F16", "F16"),
        ("F32", "F32"),
        ("None", None),
        ("Tensor(shape=[], dtype=Float32, value=0.75)", 0.75),
        ("Tensor(shape=[], dtype=Float32, value=0.01)", 0.01),
        ("Tensor(shape=[], dtype=Int64, value=2)", 2),
        ("((1, 2), (3, 4))", ((1, 2), (3, 4))),
        ("[1, 2]", (1, 2)),
        ("F32(inf)", math.inf),
    ],
)
def test_parse_value(text: str, value: object) -> None:
    got = parse_value(text)
    assert got == value and type(got) is type(value)


def test_parse_value_tensor_arrays() -> None:
    a = parse_value("Tensor(shape=[2, 2], dtype=Int64, value=[[1 2] [3 4]])")
    assert isinstance(a, np.ndarray) and a.dtype == np.int64 and a.tolist() == [[1, 2], [3, 4]]
    b = parse_value("Tensor(shape=[3], dtype=Float32, value=[1.5, -2, 3e-3])")
    assert isinstance(b, np.ndarray) and b.dtype == np.float32 and b.tolist() == [1.5, -2.0, np.float32(3e-3)]


@pytest.mark.parametrize(
    "text",
    [
        "[x, w]",
        "foo(3)",
        "(1, 2",
        "Tensor(shape=[4], dtype=Float32, value=[1 2 ...])",
        "I64(abc)",
        "Tensor(shape=[2], dtype=Quux, value=[1 2])",
        "@",
    ],
)
def test_parse_value_refuses_unknown_text_and_names_it(text: str) -> None:
    with pytest.raises(ReplayUnsupported, match="cannot read|not a known"):
        parse_value(text)


def test_constants_keep_the_type_their_text_names() -> None:
    assert constant_array("F32(0.1)").dtype == np.float32 and constant_array("F32(0.1)") == np.float32(0.1)
    assert constant_array("(I64(16), I64(16))").tolist() == [16, 16]
    assert constant_array("Tensor(shape=[], dtype=Float16, value=0.1)") == np.float16(0.1)
    # 0.01 as the float32 the device multiplied by, not the float64 0.01
    assert one(
        "Mul", np.float32(3.0), None, constants={1: "Tensor(shape=[], dtype=Float32, value=0.01)"}
    ) == 3.0 * float(np.float32(0.01))


def test_supported_set_matches_the_documented_list() -> None:
    doc = replay_pkg.__doc__ or ""
    listed = set(doc.split("Supported op types")[1].split("Deliberately")[0].split())
    assert listed >= SUPPORTED, f"undocumented: {sorted(SUPPORTED - listed)}"
    assert all(supported(t) for t in SUPPORTED) and not supported("Conv3D")
    with pytest.raises(ReplayUnsupported, match="no replay for op type 'Conv3D'"):
        run("Conv3D", [np.zeros(1)])


def test_replay_package_imports_only_numpy_and_the_stdlib() -> None:
    allowed = {"numpy", "math", "re", "warnings", "dataclasses", "typing", "collections", "__future__"}
    # the engine's reason codes and the base of its codes (an Enum and a frozen dataclass, stdlib only): a
    # finding says why by a code
    codes = {"dumptui.core.model.reason", "dumptui.core.model.vocab"}
    for path in pathlib.Path(replay_pkg.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            else:
                continue
            names = [n for n in names if n != replay_pkg.__name__ and not n.startswith(replay_pkg.__name__ + ".")]
            names = [n for n in names if n not in codes]
            assert {n.split(".")[0] for n in names} <= allowed, f"{path.name} imports {names}"


def test_outputs_take_the_dumped_shape_when_sizes_agree() -> None:
    x = RNG.standard_normal((2, 3))
    assert run("Neg", [x], out_shapes={0: (3, 2)})[0].shape == (3, 2)
    assert run("Neg", [x], out_shapes={0: (5,)})[0].shape == (2, 3)  # sizes disagree: left as computed


def test_missing_input_is_refused_in_words() -> None:
    with pytest.raises(ReplayUnsupported, match="Add input.1 is neither dumped nor a known constant"):
        run("Add", [np.ones(2)])


# --- element-wise ------------------------------------------------------------------------------------

BINARY_REFERENCE: dict[str, Callable[[float, float], float]] = {
    "Add": lambda a, b: a + b,
    "AddV2": lambda a, b: a + b,
    "Sub": lambda a, b: a - b,
    "Mul": lambda a, b: a * b,
    "RealDiv": lambda a, b: a / b,
    "Div": lambda a, b: a / b,
    "Maximum": max,
    "Minimum": min,
    "Pow": lambda a, b: abs(a) ** b,
    "FloorMod": lambda a, b: a % b,
    "Mod": math.fmod,
    "FloorDiv": lambda a, b: float(math.floor(a / b)),
}


@pytest.mark.parametrize("op_type", sorted(BINARY_REFERENCE))
def test_binary_ops_broadcast_like_numpy_and_match_python_arithmetic(op_type: str) -> None:
    a = RNG.uniform(-3, 3, (2, 1, 3)).astype(np.float32)
    b = RNG.uniform(0.5, 2, (4, 1)).astype(np.float32) * np.where(RNG.random((4, 1)) < 0.5, -1, 1).astype(np.float32)
    if op_type == "Pow":
        a = np.abs(a)
    got = one(op_type, a, b)
    assert got.shape == (2, 4, 3) and got.dtype == np.float64
    ref = BINARY_REFERENCE[op_type]
    for i, j, k in np.ndindex(got.shape):
        assert got[i, j, k] == pytest.approx(ref(float(a[i, 0, k]), float(b[j, 0])), rel=1e-15, abs=1e-15)


def test_floor_mod_and_mod_differ_on_negative_inputs() -> None:
    x = np.array([-7.5, -0.5, 0.5, 7.5, -3.0], dtype=np.float32)
    assert one("FloorMod", x, np.float32(2.0)).tolist() == [0.5, 1.5, 0.5, 1.5, 1.0]  # divisor's sign
    assert one("Mod", x, np.float32(2.0)).tolist() == [-1.5, -0.5, 0.5, 1.5, -1.0]  # dividend's sign
    assert one("FloorMod", x, np.float32(-2.0)).tolist() == [-1.5, -0.5, -1.5, -0.5, -1.0]
    assert one("FloorDiv", x, np.float32(2.0)).tolist() == [-4.0, -1.0, 0.0, 3.0, -2.0]


def test_integer_arithmetic_stays_exact_beyond_float64() -> None:
    big = np.array([2**62 + 1, -(2**53) - 1], dtype=np.int64)
    assert one("Add", big, np.int64(2)).tolist() == [2**62 + 3, -(2**53) + 1]
    assert one("FloorMod", np.array([-7, 7]), np.array([2, -2])).tolist() == [1, -1]
    assert one("Mod", np.array([-7, 7]), np.array([2, -2])).tolist() == [-1, 1]
    assert one("FloorDiv", np.array([-7, 7], dtype=np.int32), np.int32(2)).tolist() == [-4, 3]
    assert one("Neg", np.array([2**62 + 1])).tolist() == [-(2**62) - 1]
    assert one("Pow", np.array([3]), np.array([39])).tolist() == [3**39]
    for op_type in ("Div", "RealDiv"):
        with pytest.raises(ReplayUnsupported, match="integer"):
            run(op_type, [np.array([7]), np.array([2])])
    with pytest.raises(ReplayUnsupported, match="by zero"):
        run("FloorMod", [np.array([7]), np.array([0])])


def test_float16_inputs_are_widened_exactly() -> None:
    a = np.array([1.0, 2049.0, 1e-4], dtype=np.float16)
    b = np.array([2.0**-11, 1.0, 1e-4], dtype=np.float16)
    got = one("Add", a, b)
    assert got.tolist() == [float(a[i]) + float(b[i]) for i in range(3)]  # no float16 rounding of the sum
    assert got[0] != float(np.float16(1.0) + np.float16(2.0**-11))


def test_nan_and_inf_propagate() -> None:
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -1.0], dtype=np.float32)
    assert np.array_equal(one("Add", x, np.float32(1)), [np.nan, np.inf, -np.inf, 1.0, 0.0], equal_nan=True)
    assert np.array_equal(one("Exp", x), [np.nan, np.inf, 0.0, 1.0, math.exp(-1)], equal_nan=True)
    assert np.array_equal(one("Log", x), [np.nan, np.inf, np.nan, -np.inf, np.nan], equal_nan=True)
    assert np.array_equal(one("Sqrt", x), [np.nan, np.inf, np.nan, 0.0, np.nan], equal_nan=True)
    assert np.array_equal(one("ReLU", x), [np.nan, np.inf, 0.0, 0.0, 0.0], equal_nan=True)
    assert np.array_equal(one("Sigmoid", x), [np.nan, 1.0, 0.0, 0.5, 1 / (1 + math.e)], equal_nan=True)
    assert np.array_equal(one("RealDiv", np.float32(1), x), [np.nan, 0.0, -0.0, np.inf, -1.0], equal_nan=True)
    assert np.isnan(one("MatMul", np.array([[np.nan, 1.0]]), np.ones((2, 2)), False, False)).all()


def test_zero_d_and_empty_inputs() -> None:
    assert one("Mul", np.float32(3), np.float32(0.5)).shape == ()
    assert one("Mul", np.float32(3), np.float32(0.5)) == 1.5
    assert one("Add", np.zeros((0, 3)), np.ones(3)).shape == (0, 3)
    assert one("Exp", np.zeros(0)).shape == (0,)
    assert one("Softmax", np.zeros((0, 3)), np.array([-1])).shape == (0, 3)
    assert one("ReduceSum", np.zeros((0, 3)), np.array([0]), False, False).tolist() == [0, 0, 0]
    with pytest.raises(ReplayUnsupported, match="empty"):
        run("ReduceMax", [np.zeros((0, 3)), np.array([0]), False])


@pytest.mark.parametrize(
    "op_type,reference",
    [
        ("Neg", lambda v: -v),
        ("Abs", abs),
        ("Square", lambda v: v * v),
        ("Sqrt", math.sqrt),
        ("Rsqrt", lambda v: 1 / math.sqrt(v)),
        ("Reciprocal", lambda v: 1 / v),
        ("Exp", math.exp),
        ("Log", math.log),
        ("ReLU", lambda v: max(v, 0.0)),
        ("ReLU6", lambda v: min(max(v, 0.0), 6.0)),
        ("Sigmoid", lambda v: 1 / (1 + math.exp(-v))),
        ("Tanh", math.tanh),
        ("Erf", math.erf),
        ("GeLU", lambda v: 0.5 * v * (1 + math.tanh(math.sqrt(2 / math.pi) * (v + 0.044715 * v**3)))),
        ("FastGeLU", lambda v: v / (1 + math.exp(-1.702 * v))),
        ("SiLU", lambda v: v / (1 + math.exp(-v))),
        ("Softplus", lambda v: math.log1p(math.exp(v))),
        ("Sign", lambda v: float((v > 0) - (v < 0))),
        ("Floor", math.floor),
        ("Ceil", math.ceil),
        ("Trunc", math.trunc),
    ],
)
def test_unary_ops_match_the_math_module(op_type: str, reference: Callable[[float], float]) -> None:
    # its own generator: the values do not depend on which tests ran before (-k, xdist)
    x = np.concatenate([np.random.default_rng(11).uniform(-8, 8, 40), [0.0, -0.0, 7.5, -7.5]]).astype(np.float32)
    if op_type in ("Sqrt", "Rsqrt", "Log", "Reciprocal"):
        x = np.abs(x) + np.float32(0.01)
    got = one(op_type, x)
    for g, v in zip(got, x):
        # relative to the value, and to |v| where the formula cancels (1 + tanh(..) of a large negative v: GeLU
        # of -4.5 is -0.0017 from terms of size 4.5; numpy's and libm's tanh differ in the last bit there)
        assert g == pytest.approx(reference(float(v)), rel=1e-14, abs=1e-15 * abs(float(v)) + 1e-300)


def test_round_is_half_to_even_as_mindspore_documents() -> None:
    assert one("Round", np.array([0.8, 1.5, 2.3, 2.5, -4.5], dtype=np.float32)).tolist() == [1, 2, 2, 2, -4]


def test_fast_gelu_agrees_with_mindspores_documented_example() -> None:
    # The docs' example output was printed from a reduced-precision run, hence the loose tolerance.
    got = one("FastGeLU", np.array([[-1.0, 4.0, -8.0], [2.0, -5.0, 9.0]], dtype=np.float32))
    documented = [[-1.5418735e-01, 3.9921875e00, -9.7473649e-06], [1.9375000e00, -1.0052517e-03, 8.9824219e00]]
    assert np.allclose(got, documented, rtol=3e-3)


def test_erf_is_accurate_far_out_and_vectorised() -> None:
    x = np.linspace(-7, 7, 1001)
    assert np.array_equal(erf(x), [math.erf(v) for v in x])
    assert erf(np.array([[np.inf, -np.inf]])).tolist() == [[1.0, -1.0]]
    assert np.isnan(erf(np.array([np.nan]))).all()


def test_softplus_and_sigmoid_do_not_overflow() -> None:
    assert one("Softplus", np.array([800.0])).tolist() == [800.0]
    assert one("Sigmoid", np.array([-800.0, 800.0])).tolist() == [0.0, 1.0]
    assert one("FastGeLU", np.array([-800.0])).tolist() == [-0.0]


def test_leaky_relu_alpha_from_attribute_or_input() -> None:
    x = np.array([-2.0, 3.0])
    assert run("LeakyReLU", [x], attrs={"alpha": "F32(0.25)"})[0].tolist() == [-0.5, 3.0]
    assert run("LeakyReLU", [x, np.float32(0.5)])[0].tolist() == [-1.0, 3.0]
    with pytest.raises(ReplayUnsupported, match="alpha"):
        run("LeakyReLU", [x])


def test_comparisons_give_booleans() -> None:
    a, b = np.array([1.0, 2.0, np.nan]), np.array([2.0, 2.0, np.nan])
    expected = {
        "Equal": [False, True, False],
        "NotEqual": [True, False, True],
        "Greater": [False, False, False],
        "GreaterEqual": [False, True, False],
        "Less": [True, False, False],
        "LessEqual": [True, True, False],
    }
    for op_type, want in expected.items():
        got = one(op_type, a, b)
        assert got.dtype == np.bool_ and got.tolist() == want, op_type
    assert one("Less", np.array([2**62]), np.array([2**62 + 1])).tolist() == [True]  # exact on int64


def test_select() -> None:
    cond = np.array([[True, False], [False, True]])
    assert one("Select", cond, np.ones((2, 2)), np.float32(-1)).tolist() == [[1, -1], [-1, 1]]
    assert one("Select", cond, np.array([1, 2]), np.array([3, 4])).dtype == np.int64
    with pytest.raises(ReplayUnsupported, match="not bool"):
        run("Select", [np.ones(2), np.ones(2), np.ones(2)])


def test_bias_add_on_the_channel_axis() -> None:
    x, b = RNG.standard_normal((2, 3, 4, 5)), np.array([1.0, 2.0, 3.0])
    nchw = one("BiasAdd", x, b, np.int64(0))
    for n, c, h, w in np.ndindex(x.shape):
        assert nchw[n, c, h, w] == x[n, c, h, w] + b[c]
    assert np.array_equal(run("BiasAdd", [x, b], attrs={"data_format": '"NCHW"'})[0], nchw)
    y = RNG.standard_normal((2, 4, 3))
    assert np.array_equal(one("BiasAdd", y, b, np.int64(1)), y + b)  # NHWC: the last axis
    assert np.array_equal(one("BiasAdd", x[:, :, 0, 0], b), x[:, :, 0, 0] + b)  # (N, C) as after a MatMul


def test_cast_to_float16_is_its_rounding() -> None:
    x = RNG.standard_normal(1000).astype(np.float32) * 100
    for attrs, constants in (({"dst_type": "F16"}, {}), ({"dst_type": "I64(42)"}, {}), ({}, {1: "F16"})):
        got = run("Cast", [x], attrs=attrs, constants=constants)[0]
        assert got.dtype == np.float64 and np.array_equal(got, x.astype(np.float16).astype(np.float64))
    back = run("Cast", [x.astype(np.float16)], attrs={"dst_type": "I64(43)"})[0]
    assert np.array_equal(back, x.astype(np.float16).astype(np.float64))


def test_cast_to_bfloat16_rounds_to_nearest_even() -> None:
    step = 2.0**-7  # bfloat16 spacing just above 1
    x = np.array(
        [1.0, 1 + step / 2, 1 + 3 * step / 2, 1 + step / 2 + 2**-20, -(1 + 3 * step / 2), 3.4028235e38, np.inf, np.nan],
        dtype=np.float32,
    )
    got = run("Cast", [x], attrs={"dst_type": "BF16"})[0]
    want = [1.0, 1.0, 1 + 2 * step, 1 + step, -(1 + 2 * step), np.inf, np.inf, np.nan]
    assert np.array_equal(got, want, equal_nan=True)


def test_cast_to_integers_and_bool() -> None:
    x = np.array([-2.7, -0.5, 0.0, 0.5, 2.7])
    assert run("Cast", [x], attrs={"dst_type": "I32"})[0].tolist() == [-2, 0, 0, 0, 2]  # toward zero
    assert run("Cast", [np.array([0.0, np.nan, -1.0])], attrs={"dst_type": "Bool"})[0].tolist() == [False, True, True]
    for bad in (np.array([np.nan]), np.array([3e9])):
        with pytest.raises(ReplayUnsupported, match="int32"):
            run("Cast", [bad], attrs={"dst_type": "I32"})
    with pytest.raises(ReplayUnsupported, match="type id 99"):
        run("Cast", [x], attrs={"dst_type": "I64(99)"})


# --- matrix ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("ta,tb", [(False, False), (False, True), (True, False), (True, True)])
def test_matmul_transpose_flags_from_inputs_attributes_or_constants(ta: bool, tb: bool) -> None:
    a, b = RNG.standard_normal((3, 4)), RNG.standard_normal((4, 5))
    a_in, b_in = (a.T.copy() if ta else a), (b.T.copy() if tb else b)
    want = naive.matmul(a, b)
    as_inputs = one("MatMul", a_in, b_in, np.bool_(ta), np.bool_(tb))
    as_attrs = run(
        "MatMul", [a_in, b_in], attrs={"transpose_a": f"Bool({int(ta)})", "transpose_b": f"Bool({int(tb)})"}
    )[0]
    as_old_attrs = run("MatMul", [a_in, b_in], attrs={"transpose_x1": str(ta), "transpose_x2": str(tb)})[0]
    as_constants = run("MatMul", [a_in, b_in], constants={2: f"Bool({int(ta)})", 3: f"Bool({int(tb)})"})[0]
    for got in (as_inputs, as_attrs, as_old_attrs, as_constants):
        assert np.allclose(got, want, rtol=1e-14, atol=1e-14)


def test_matmul_folds_a_flattened_4d_input_with_the_weights_k() -> None:
    x, w = RNG.standard_normal((2, 4, 2, 2)), RNG.standard_normal((10, 16))  # w is (out, K), transpose_b
    got = one("MatMul", x, w, False, True)
    assert np.allclose(got, naive.matmul(x.reshape(2, 16), w.T), rtol=1e-14)
    act = x.reshape(2, 16).T.copy()  # (K, N) at input.1
    w_first = one("MatMul", w, act.reshape(4, 2, 2, 2), False, False)  # weight (M, K) at input.0
    assert np.allclose(w_first, naive.matmul(w, act), rtol=1e-14)
    with pytest.raises(ReplayUnsupported, match="do not agree|cannot be folded"):
        run("MatMul", [np.ones((2, 3)), np.ones((4, 5)), False, False])


def test_batch_matmul_broadcasts_batches_and_transposes() -> None:
    a, b = RNG.standard_normal((2, 1, 3, 4)), RNG.standard_normal((3, 5, 4))
    got = run("BatchMatMul", [a, b], attrs={"transpose_b": "Bool(1)"})[0]
    assert got.shape == (2, 3, 3, 5)
    for i, j in np.ndindex(2, 3):
        assert np.allclose(got[i, j], naive.matmul(a[i, 0], b[j].T), rtol=1e-14)
    adj = run("BatchMatMul", [np.swapaxes(a, -1, -2), b], attrs={"adj_x": "Bool(1)", "adj_y": "Bool(1)"})[0]
    assert np.allclose(adj, got, rtol=1e-14)


def test_dense_with_and_without_bias() -> None:
    x, w, b = RNG.standard_normal((3, 4)), RNG.standard_normal((5, 4)), RNG.standard_normal(5)
    assert np.allclose(one("Dense", x, w, b), naive.matmul(x, w.T) + b, rtol=1e-14)
    assert np.allclose(run("Dense", [x, w], constants={2: "None"})[0], naive.matmul(x, w.T), rtol=1e-14)


# --- convolution and pooling -------------------------------------------------------------------------

CONV_CASES = [  # stride, dilation, pad_list, groups, kernel (kh, kw)
    ((1, 1), (1, 1), (1, 1, 1, 1), 1, (3, 3)),
    ((2, 2), (1, 1), (0, 1, 0, 1), 1, (3, 3)),  # asymmetric, as in the real B_pad fixture
    ((1, 2), (1, 2), (0, 0, 2, 2), 1, (1, 3)),  # the noisy fixture's temporal conv
    ((2, 1), (2, 1), (2, 0, 1, 3), 2, (2, 3)),  # everything at once, with groups
    ((1, 1), (1, 1), (0, 0, 0, 0), 4, (3, 1)),  # depthwise-like: group = channels
]


@pytest.mark.parametrize("stride,dilation,pads,groups,kernel", CONV_CASES)
def test_conv2d_against_naive_loops(
    stride: tuple[int, int],
    dilation: tuple[int, int],
    pads: tuple[int, int, int, int],
    groups: int,
    kernel: tuple[int, int],
) -> None:
    x = RNG.standard_normal((2, 4, 7, 8)).astype(np.float32)
    w = RNG.standard_normal((6 if groups != 4 else 4, 4 // groups) + kernel).astype(np.float32)
    attrs = {
        "stride": f"(1, 1, {stride[0]}, {stride[1]})",
        "dilation": f"(1, 1, {dilation[0]}, {dilation[1]})",
        "pad_list": str(pads),
        "group": f"I64({groups})",
        "pad_mode": '"pad"',
        "format": '"NCHW"',
        "mode": "I64(1)",
    }
    got = run("Conv2D", [x, w], attrs=attrs)[0]
    assert np.allclose(got, naive.conv2d(x, w, stride, dilation, pads, groups), rtol=1e-12, atol=1e-12)
    short = {
        "stride": str(stride),
        "dilation": str(dilation),
        "pad": str(pads),
        "groups": f"I64({groups})",
        "pad_mode": '"PAD"',
    }  # pairs, `pad` instead of pad_list, upper-case mode
    assert np.array_equal(run("Conv2D", [x, w], attrs=short)[0], got)


@pytest.mark.parametrize("groups", [1, 2, 4])
def test_conv2d_by_matrix_products_with_groups_against_naive_loops(groups: int) -> None:
    """Four or more input channels per group: each tap is one BLAS product (conv.MATMUL_FROM_CHANNELS)."""
    x = RNG.standard_normal((2, 16, 9, 10))
    w = RNG.standard_normal((8, 16 // groups, 3, 2))
    attrs = {
        "stride": "(1, 1, 2, 1)",
        "dilation": "(1, 1, 1, 2)",
        "pad_list": "(1, 0, 2, 1)",
        "group": f"I64({groups})",
        "pad_mode": '"pad"',
        "format": '"NCHW"',
        "mode": "I64(1)",
    }
    got = run("Conv2D", [x, w], attrs=attrs)[0]
    assert np.allclose(got, naive.conv2d(x, w, (2, 1), (1, 2), (1, 0, 2, 1), groups), rtol=1e-12, atol=1e-12)


def test_conv2d_same_and_valid_padding_without_pad_list() -> None:
    x, w = RNG.standard_normal((1, 2, 7, 6)), RNG.standard_normal((3, 2, 3, 2))
    same = run("Conv2D", [x, w], attrs={"stride": "(2, 2)", "pad_mode": '"same"', "kernel_size": "(3, 2)"})[0]
    assert same.shape == (1, 3, 4, 3)  # ceil(7/2), ceil(6/2); total pads 2 and 0 -> (1, 1, 0, 0)
    assert np.allclose(same, naive.conv2d(x, w, (2, 2), (1, 1), (1, 1, 0, 0), 1), rtol=1e-12)
    valid = run("Conv2D", [x, w], attrs={"pad_mode": '"VALID"', "kernel_size": "I64(3)"})[0]
    assert np.allclose(valid, naive.conv2d(x, w, (1, 1), (1, 1), (0, 0, 0, 0), 1), rtol=1e-12)
    with pytest.raises(ReplayUnsupported, match="NHWC"):
        run("Conv2D", [x, w], attrs={"format": '"NHWC"'})


@pytest.mark.parametrize("mode,pads", [('"VALID"', (0, 0, 0, 0)), ('"SAME"', (0, 1, 0, 1)), ("I64(1)", (0, 1, 0, 1))])
def test_pooling_against_naive_loops(mode: str, pads: tuple[int, int, int, int]) -> None:
    x = RNG.standard_normal((2, 3, 5, 6))
    attrs = {"kernel_size": "(1, 1, 2, 3)", "strides": "(1, 1, 2, 2)", "pad_mode": mode, "format": '"NCHW"'}
    assert np.array_equal(run("MaxPool", [x], attrs=attrs)[0], naive.pool2d(x, (2, 3), (2, 2), pads, "max"))
    avg = run("AvgPool", [x], attrs=attrs)[0]  # SAME: padding is not counted
    assert np.allclose(avg, naive.pool2d(x, (2, 3), (2, 2), pads, "avg"), rtol=1e-14)


# --- normalisation -----------------------------------------------------------------------------------


def test_batch_norm_inference_element_by_element() -> None:
    x = RNG.standard_normal((2, 3, 4, 2)).astype(np.float32)
    gamma, beta, mean = RNG.uniform(0.5, 1.5, 3), RNG.standard_normal(3), RNG.standard_normal(3)
    var = RNG.uniform(0.1, 2, 3)
    got = run(
        "BatchNorm",
        [x, gamma, beta, mean, var, False, np.float32(5e-3), np.float32(0.1), np.int64(0)],
        out_shapes={i: (3,) for i in range(1, 5)},
    )
    assert list(got) == [0]  # outputs 1-4 are not results in inference
    assert np.allclose(got[0], naive.batch_norm_nchw(x, gamma, beta, mean, var, float(np.float32(5e-3))), rtol=1e-13)
    old = run(
        "BatchNorm",
        [x, gamma, beta, mean, var],
        attrs={"epsilon": "F32(0.005)", "is_training": "Bool(0)", "format": '"NCHW"'},
    )[0]
    assert np.allclose(old, got[0], rtol=1e-15)
    nhwc = run("BatchNorm", [np.moveaxis(x, 1, -1), gamma, beta, mean, var, False, np.float32(5e-3), 0.1, np.int64(1)])
    assert np.allclose(np.moveaxis(nhwc[0], -1, 1), got[0], rtol=1e-15)
    with pytest.raises(ReplayUnsupported, match="training"):
        run("BatchNorm", [x, gamma, beta, mean, var, True, np.float32(1e-5)])


@pytest.mark.parametrize("begin_norm,begin_params", [(-1, -1), (1, 1), (1, -1), (2, 2)])
def test_layer_norm_element_by_element(begin_norm: int, begin_params: int) -> None:
    x = RNG.standard_normal((2, 3, 4)) * 3 + 1
    params_from = begin_params % 3
    gamma, beta = RNG.standard_normal(x.shape[params_from:]), RNG.standard_normal(x.shape[params_from:])
    out, mean, var = naive.layer_norm(x, gamma, beta, begin_norm % 3, params_from, 1e-5)
    got = run("LayerNorm", [x, gamma, beta, np.int64(begin_norm), np.int64(begin_params), np.float32(1e-5)])
    eps32 = float(np.float32(1e-5))
    out32, _, _ = naive.layer_norm(x, gamma, beta, begin_norm % 3, params_from, eps32)
    assert np.allclose(got[0], out32, rtol=1e-12) and np.allclose(got[1], mean) and np.allclose(got[2], var)
    attrs = {"begin_norm_axis": f"I64({begin_norm})", "begin_params_axis": f"I64({begin_params})", "epsilon": "1e-05"}
    assert np.allclose(run("LayerNorm", [x, gamma, beta], attrs=attrs)[0], out, rtol=1e-12)


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_softmax_and_log_softmax_along_an_axis(axis: int) -> None:
    x = RNG.standard_normal((3, 4, 2)) * 5
    assert np.allclose(one("Softmax", x, np.array([axis])), naive.softmax(x, axis), rtol=1e-13)
    assert np.allclose(run("Softmax", [x], attrs={"axis": f"(I64({axis}))"})[0], naive.softmax(x, axis), rtol=1e-13)
    assert np.allclose(
        run("LogSoftmax", [x], attrs={"axis": f"I64({axis})"})[0], naive.softmax(x, axis, log=True), rtol=1e-13
    )
    big = np.array([1000.0, 999.0])  # no overflow: the maximum is subtracted first
    assert np.allclose(one("Softmax", big), [1 / (1 + math.exp(-1)), 1 / (1 + math.e)])


def test_l2_normalize() -> None:
    x = np.array([[3.0, 0.0], [4.0, 1e-3]])
    got = run("L2Normalize", [x], attrs={"axis": "(I64(0))", "epsilon": "F32(1e-4)"})[0]
    assert np.allclose(got, [[0.6, 0.0], [0.8, 1e-3 / math.sqrt(float(np.float32(1e-4)))]], rtol=1e-12)


# --- reductions --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "op_type,how",
    [("ReduceSum", "sum"), ("ReduceMean", "mean"), ("ReduceMax", "max"), ("ReduceMin", "min"), ("ReduceProd", "prod")],
)
@pytest.mark.parametrize("axes,keep", [((1,), True), ((0, 2), False), ((-1,), False), ((), True)])
def test_reductions_against_loops(op_type: str, how: str, axes: tuple[int, ...], keep: bool) -> None:
    x = RNG.uniform(0.5, 1.5, (2, 3, 4))
    want = naive.reduce(x, axes or (0, 1, 2), keep, how)
    inputs: list[object] = [x, np.array(axes, dtype=np.int64), np.bool_(keep)] + (
        [False] if op_type == "ReduceSum" else []
    )
    assert np.allclose(run(op_type, inputs)[0], want, rtol=1e-13)
    attrs = {"keep_dims": f"Bool({int(keep)})", "axis": str(tuple(axes)) if len(axes) != 1 else f"({axes[0]})"}
    assert np.allclose(run(op_type, [x], attrs=attrs)[0], want, rtol=1e-13)
    consts = run(op_type, [x], constants={1: f"({', '.join(f'I64({a})' for a in axes)})", 2: f"Bool({int(keep)})"})
    assert np.allclose(consts[0], want, rtol=1e-13)


def test_reduce_sum_skip_mode_and_integers() -> None:
    x = np.array([[1, 2], [3, 2**60]], dtype=np.int64)
    assert one("ReduceSum", x, np.zeros(0, dtype=np.int64), False, True).tolist() == x.tolist()  # skip_mode
    assert one("ReduceSum", x, np.zeros(0, dtype=np.int64), False, False).tolist() == 6 + 2**60
    assert one("ReduceMax", x, np.array([0]), True).tolist() == [[3, 2**60]]
    with pytest.raises(ReplayUnsupported, match="ReduceMean of integers"):
        run("ReduceMean", [x, np.array([0]), False])


def test_arg_reductions() -> None:
    x = np.array([[1.0, 5.0, 5.0], [7.0, -1.0, 0.0]])
    assert run("ArgMax", [x], attrs={"axis": "I64(1)"})[0].tolist() == [1, 0]  # first of a tie
    assert run("ArgMin", [x], attrs={"axis": "I64(0)"})[0].tolist() == [0, 1, 1]
    assert run("ArgMax", [x])[0].tolist() == [1, 0]  # default: last axis
    index, value = run("ArgMaxWithValue", [x, np.int64(0), np.bool_(True)]).values()
    assert index.tolist() == [[1, 0, 0]] and value.tolist() == [[7.0, 5.0, 5.0]]
    got = run("ArgMinWithValue", [x], attrs={"axis": "I64(1)", "keep_dims": "Bool(0)"})
    assert got[0].tolist() == [0, 1] and got[1].tolist() == [1.0, -1.0]


# --- shape ops ---------------------------------------------------------------------------------------


def test_reshape_flatten_transpose() -> None:
    x = np.arange(24, dtype=np.float32).reshape(1, 4, 1, 6)
    assert run("Reshape", [x], constants={1: "(I64(4), I64(-1))"})[0].shape == (4, 6)
    assert run("Reshape", [x], out_shapes={0: (2, 12)})[0].shape == (2, 12)  # shape from the dump
    assert one("Flatten", x).shape == (1, 24)
    t = run("Transpose", [x.reshape(4, 6)], constants={1: "(I64(1), I64(0))"})[0]
    assert np.array_equal(t, x.reshape(4, 6).T)
    # the dump kept the pre-Reshape shape (1, 4, 1, 6) for a (4, 6) tensor: recovered from the output shape
    t2 = run("Transpose", [x], constants={1: "(I64(1), I64(0))"}, out_shapes={0: (6, 4)})[0]
    assert np.array_equal(t2, t)
    perm = run("Transpose", [RNG.standard_normal((2, 3, 4)), np.array([2, 0, 1])])[0]
    assert perm.shape == (4, 2, 3)
    ints = run("Transpose", [np.array([[1, 2]], dtype=np.int32)], attrs={"perm": "(1, 0)"})[0]
    assert ints.dtype == np.int32 and ints.tolist() == [[1], [2]]


def test_expand_dims_squeeze_tile_broadcast_like() -> None:
    x = np.arange(6.0).reshape(2, 1, 3)
    assert one("ExpandDims", x, np.int64(-1)).shape == (2, 1, 3, 1)
    assert run("Squeeze", [x], attrs={"axis": "(1)"})[0].shape == (2, 3)
    assert run("Squeeze", [x.reshape(1, 2, 1, 3)], attrs={"axis": "()"})[0].shape == (2, 3)
    with pytest.raises(ReplayUnsupported, match="size 1"):
        run("Squeeze", [x], attrs={"axis": "(0)"})
    tiled = run("Tile", [x], constants={1: "(I64(1), I64(2), I64(1), I64(2))"})[0]
    assert tiled.shape == (1, 4, 1, 6) and tiled[0, 3, 0, 5] == x[1, 0, 2]
    assert run("BroadcastTo", [x], attrs={"shape": "(4, -1, 5, -1)"})[0].shape == (4, 2, 5, 3)
    assert one("OnesLike", x).tolist() == np.ones((2, 1, 3)).tolist() and one("ZerosLike", np.array([3])).tolist() == [
        0
    ]
    assert np.array_equal(one("Identity", x), x) and np.array_equal(one("Depend", x, np.ones(1)), x)
    assert np.array_equal(one("TensorMove", x.astype(np.float16)), x)
    assert not np.shares_memory(one("Reshape", x, np.array([6])), x)  # results never alias the inputs


def test_concat_and_split() -> None:
    a, b = np.arange(6.0).reshape(2, 3), -np.arange(4.0).reshape(2, 2)
    want = [[0, 1, 2, 0, -1], [3, 4, 5, -2, -3]]
    assert run("Concat", [a, b], attrs={"axis": "I64(1)"})[0].tolist() == want
    assert run("Concat", [a, b, np.int64(-1)])[0].tolist() == want  # 2.x: the axis as last input
    assert run("Concat", [np.array([1], dtype=np.int32), np.array([2], dtype=np.int64)])[0].tolist() == [1, 2]
    pieces = run("Split", [np.arange(12.0).reshape(2, 6)], attrs={"axis": "I64(1)", "output_num": "I64(3)"})
    assert sorted(pieces) == [0, 1, 2] and pieces[2].tolist() == [[4, 5], [10, 11]]
    with pytest.raises(ReplayUnsupported, match="equal pieces"):
        run("Split", [np.arange(5.0)], attrs={"axis": "I64(0)", "output_num": "I64(2)"})


def test_strided_slice_with_masks() -> None:
    x = np.arange(60.0).reshape(3, 4, 5)
    plain = run("StridedSlice", [x, np.array([1, 0, 4]), np.array([3, 4, 0]), np.array([1, 2, -2])])[0]
    assert np.array_equal(plain, x[1:3, 0:4:2, 4:0:-2])
    masks = {"begin_mask": "I64(1)", "end_mask": "I64(3)", "shrink_axis_mask": "I64(4)"}
    got = run("StridedSlice", [x], attrs=masks, constants={1: "(2, 1, 3)", 2: "(0, 0, 4)", 3: "(1, 1, 1)"})[0]
    assert np.array_equal(got, x[:, 1:, 3])
    ellipsis = run(
        "StridedSlice",
        [x],
        attrs={"ellipsis_mask": "I64(1)", "new_axis_mask": "I64(2)"},
        constants={1: "(0, 0, 1)", 2: "(0, 0, 3)", 3: "(1, 1, 1)"},
    )[0]
    assert np.array_equal(ellipsis, x[..., None, 1:3])


def test_gather() -> None:
    params = np.arange(12.0).reshape(3, 4)
    assert one("Gather", params, np.array([[2, 0]]), np.int64(0)).tolist() == [[params[2].tolist(), params[0].tolist()]]
    assert run("GatherV2", [params, np.array([3, 1])], attrs={"axis": "I64(1)"})[0].tolist() == [
        [3, 1],
        [7, 5],
        [11, 9],
    ]
    for bad in (np.array([3]), np.array([-1])):
        with pytest.raises(ReplayUnsupported, match="out of range"):
            run("Gather", [params, bad, np.int64(0)])


# --- real MindSpore 2.10 dumps -----------------------------------------------------------------------

FIXTURES = SHARED
REAL_DUMPS = [("mindspore-2.10-cpu", v) for v in ("A", "B_mod", "B_pad", "C_fp16", "C_wround")] + [
    ("mindspore-2.10-noisy", v) for v in ("REF", "P0", "P1", "P2", "P3", "P4", "P5")
]

# Ops made of one correctly rounded step (or none): the float64 replay rounded to the dumped dtype must be
# bit-equal (double rounding is harmless for + - * / when float64 has more than 2x24+2 bits).
BIT_EXACT = frozenset(
    {
        "Add",
        "BiasAdd",
        "Mul",
        "RealDiv",
        "Cast",
        "Floor",
        "Trunc",
        "Mod",
        "FloorMod",
        "ReLU",
        "MaxPool",
        "Reshape",
        "Flatten",
        "Transpose",
    }
)
REL_TOL = {"float32": 1e-6, "float16": 1e-3}  # ||replay - dumped|| / ||dumped||: float32 / one float16 rounding
# MindSpore's own CPU kernels are less accurate than float32 rounding here (measured on these dumps):
KERNEL_ERROR = {
    "Softmax": 2e-6,  # P2: 1.15e-6, elements up to 26 ulps off (its vectorised exp)
    "Exp": 2e-5,
}  # P5: 7.8e-6 at x = 32.3, 2e-5 at x = -77.7: error grows with |x|


def replay_inputs_of(op: Op) -> ReplayInputs:
    """What an integration builds from a dump's Op: dumped inputs, undumped constants' IR text, attributes."""
    inputs = {s: np.asarray(t.array()) for s, t in op.inputs.items()}
    constants = {s: src.ref for s, src in op.sources.items() if src.kind == "constant" and s not in inputs}
    out_shapes = {s: tuple(t.shape) for s, t in op.outputs.items() if t.shape is not None}
    return ReplayInputs(op.op_type, inputs, dict(op.attrs.items()), constants, out_shapes)


def replay_problems(op: Op) -> list[str]:
    """Every way the replay of `op` disagrees with its dumped outputs, in words (empty when it agrees)."""
    got = replay(replay_inputs_of(op))
    problems = []
    for slot, tensor in sorted(op.outputs.items()):
        if op.op_type == "BatchNorm" and slot > 0:
            assert slot not in got  # uninitialised memory in inference: not replayed
            continue
        where = f"{op.name} output.{slot}"
        dumped = np.asarray(tensor.array())
        if slot not in got or got[slot].shape != dumped.shape:
            problems.append(f"{where}: replayed {got[slot].shape if slot in got else 'nothing'}, dumped {dumped.shape}")
            continue
        with np.errstate(over="ignore"):  # float32 overflow to inf is what the device did too
            rounded = got[slot].astype(dumped.dtype)
        finite = np.isfinite(dumped)
        if (
            not np.array_equal(rounded[~finite], dumped[~finite], equal_nan=True)
            or not np.isfinite(rounded[finite]).all()
        ):
            problems.append(f"{where}: NaN/inf positions differ")
        elif op.op_type in BIT_EXACT:
            if not np.array_equal(rounded, dumped, equal_nan=True):
                problems.append(f"{where}: not bit-exact ({int(np.sum(rounded != dumped))} elements differ)")
        else:
            ref = dumped[finite].astype(np.float64)
            rel = float(np.linalg.norm(got[slot][finite] - ref)) / (float(np.linalg.norm(ref)) or 1e-300)
            tol = max(REL_TOL[str(dumped.dtype)], KERNEL_ERROR.get(op.op_type, 0.0))
            if not rel <= tol:
                problems.append(f"{where}: relative error {rel:.3g} > {tol:g}")
    return problems


@pytest.mark.parametrize("family,variant", REAL_DUMPS, ids=[f"{f[15:]}-{v}" for f, v in REAL_DUMPS])
def test_replay_reproduces_every_kernel_of_a_real_dump(family: str, variant: str) -> None:
    root = FIXTURES / family / "dumps" / variant
    if not root.is_dir():
        pytest.skip(f"shared fixtures absent ({root} not found): real-dump replay test skipped")
    from dumptui.core.formats import open_dump

    kernels = open_dump(str(root)).kernels
    # C_fp16's Conv2D outputs carry MindSpore's fp16-header-over-fp32-payload bug (the reader repairs them)
    usable = [op for op in kernels if not any(t.repaired or t.problem for t in op.tensors())]
    assert len(usable) >= len(kernels) - 6 and len(usable) >= 19
    unsupported = sorted({op.op_type for op in usable if not supported(op.op_type)})
    assert not unsupported, f"op types in the dump without a replay: {unsupported}"
    problems = [p for op in usable for p in replay_problems(op)]
    assert not problems, "\n".join(problems)


def _real_op(family: str, variant: str, name_end: str) -> Op:
    root = FIXTURES / family / "dumps" / variant
    if not root.is_dir():
        pytest.skip(f"shared fixtures absent ({root} not found): real-dump semantics test skipped")
    from dumptui.core.formats import open_dump

    return next(op for op in open_dump(str(root)).kernels if op.name.endswith(name_end))


def test_real_gelu_is_the_tanh_form_and_layer_norm_output_2_is_the_variance() -> None:
    gelu = _real_op("mindspore-2.10-noisy", "REF", "GeLU-op0")
    x = gelu.inputs[0].array().astype(np.float64)
    dumped = gelu.outputs[0].array().astype(np.float64)
    erf_form = 0.5 * x * (1 + erf(x / math.sqrt(2)))
    assert np.linalg.norm(erf_form - dumped) / np.linalg.norm(dumped) > 1e-4  # 2.0e-4
    assert np.linalg.norm(replay(replay_inputs_of(gelu))[0] - dumped) / np.linalg.norm(dumped) < 1e-7  # 4.2e-8
    ln = _real_op("mindspore-2.10-noisy", "REF", "ln1-LayerNorm/LayerNorm-op0")
    out2 = ln.outputs[2].array().astype(np.float64)
    var = replay(replay_inputs_of(ln))[2]
    assert np.allclose(var, out2, rtol=1e-6) and not np.allclose(1 / np.sqrt(var + 1e-5), out2, rtol=0.1)


def test_real_float16_sigmoid_underflows_where_the_replay_does_not() -> None:
    """What a replay is for: P4's fp16 Sigmoid returns exactly 0 for every x < -ln(65504) = -11.09 (its
    exp(-x) overflows float16), while for 19 of those 27 elements the true value, up to 1.26e-5, has a
    nonzero float16 rounding."""
    op = _real_op("mindspore-2.10-noisy", "P4", "front-GatedFront/Sigmoid-op0")
    x = op.inputs[0].array().astype(np.float64)
    dumped = op.outputs[0].array().astype(np.float64)
    exact = replay(replay_inputs_of(op))[0]
    assert np.array_equal(dumped == 0, x < -math.log(65504))
    underflowed = x < -11.09
    assert int(np.sum(exact.astype(np.float16)[underflowed] > 0)) == 19 == int(np.sum(underflowed)) - 8
    assert exact[underflowed].max() == pytest.approx(1.26e-5, rel=0.01)


def test_replays_in_worker_processes_give_the_proofs_made_here(demo_pair) -> None:
    """The scan's replays run on the worker processes (both cores); each proof is the one made in this
    process, number for number, and a plan a worker cannot be told about runs here."""
    from dumptui.core.compare.batch import evaluate_all
    from dumptui.core.compare.session import Session
    from dumptui.core.formats import open_dump
    from dumptui.core.io.executor import InProcess, LocalProcesses
    from dumptui.core.search.scan import input_roles, kernel_order, measured, needs_replay, replay_plan, run_replays

    session = Session(open_dump(demo_pair.ref), open_dump(demo_pair.target))
    results = evaluate_all(session, kernel_order(session))
    plans = []
    for res in results:
        le = measured(session, res)
        if needs_replay(session, le):
            plan, _why = replay_plan(session, le.pair, input_roles(le.pair), le.out_slot or 0)
            if plan is not None:
                plans.append(plan)
    assert len(plans) >= 3, "the demo's fp16 region and planted bug give ops to replay"
    here = dict(run_replays(plans, InProcess()))
    with LocalProcesses(2, offload=True) as pool:
        there = dict(run_replays(plans, pool))
    assert set(here) == set(there) == set(range(len(plans)))
    for i, (a, why_a) in here.items():
        b, why_b = there[i]
        assert why_a == why_b
        assert (a is None) == (b is None)
        if a is not None and b is not None:
            assert (a.dev_ref, a.dev_target, a.tail_ref, a.tail_target) == (
                b.dev_ref,
                b.dev_target,
                b.tail_ref,
                b.tail_target,
            )
    assert any(p is not None for p, _w in here.values())


def test_an_absurd_padding_is_refused_over_budget_not_allocated() -> None:
    """A pad_list of 10^6 (a damaged graph) would ask for terabytes: refused with the reason, at once."""
    x = RNG.standard_normal((1, 4, 8, 8))
    w = RNG.standard_normal((4, 4, 3, 3))
    attrs = {"pad_list": "(1000000, 1000000, 1000000, 1000000)", "pad_mode": '"pad"', "mode": "I64(1)"}
    with pytest.raises(ReplayUnsupported, match="over the replay budget: Conv2D needs .* padded input elements"):
        run("Conv2D", [x, w], attrs=attrs)
    big_kernel = RNG.standard_normal((4096, 4, 3, 3))
    with pytest.raises(ReplayUnsupported, match="over the replay budget"):
        run(
            "Conv2D",
            [RNG.standard_normal((8, 4, 2000, 100)), big_kernel],
            attrs={"pad_list": "(1, 1, 1, 1)", "mode": "I64(1)"},
        )


@pytest.mark.parametrize(
    ("op_type", "shapes", "needs"),
    [
        # 2000 x 2000 x 2000: 8e9 multiply-adds, ~1 s of float64 BLAS here
        ("MatMul", [(2000, 2000), (2000, 2000)], "8,000,000,000 multiply-adds"),
        ("BatchMatMul", [(3, 1000, 1500), (1, 1500, 1000)], "4,500,000,000 multiply-adds"),
        ("Dense", [(3000, 1500), (1000, 1500)], "4,500,000,000 multiply-adds"),
        # a batch broadcast to 2^26 + outputs: refused before numpy allocates it
        ("BatchMatMul", [(1 << 14, 1, 1, 2), (1, 1 << 13, 2, 1)], "134,217,728 output elements"),
    ],
)
def test_a_product_over_the_replay_budget_is_refused_before_it_is_computed(op_type, shapes, needs) -> None:
    """A replay is a proof that should cost well under a second: a MatMul, BatchMatMul or Dense over the budget
    is refused with what it needs and the limit (the op is judged without its proof, and its note says why),
    before its product is computed; just within it, replayed."""
    from dumptui.core.search.replay import spec

    a, b = (np.ones(s, dtype=np.float32) for s in shapes)
    with pytest.raises(ReplayUnsupported, match=f"over the replay budget: {op_type} needs {needs} \\(limit "):
        run(op_type, [a, b])
    assert run(op_type, [np.ones((2, 2), dtype=np.float32)] * 2)[0].shape == (2, 2)  # within it: replayed
    assert spec.MAX_MULTIPLY_ADDS == 4_000_000_000 and spec.MAX_OUTPUT_ELEMENTS == 1 << 26


def test_the_scan_says_a_replay_over_its_budget(monkeypatch, demo_pair) -> None:
    """Over the budget, the op's note says so, and the op is judged without a proof (no replay)."""
    from dumptui.core.search.replay import spec

    monkeypatch.setattr(spec, "MAX_MULTIPLY_ADDS", 0)  # every product over it
    monkeypatch.setattr(spec, "MAX_OUTPUT_ELEMENTS", 0)
    from dumptui.core.search.bisect.bisection import Bisection
    from dumptui.options import pair as pairing
    from dumptui.options.pair import PairOptions

    opts = PairOptions(demo_pair.ref, demo_pair.target)
    ref, target = pairing.open_pair(opts)
    session = pairing.make_session(opts, ref, target, kl=False)
    bi = Bisection(session)
    bi.prepare()
    assert bi.scan_result is not None
    refused = [le for le in bi.scan_result.locals if "over the replay budget" in (le.replay_note or "")]
    assert refused and all(le.replay is None for le in refused)
    assert all(le.replay_note.startswith("no replay: over the replay budget: ") for le in refused)


def test_the_scans_count_runs_on_through_its_replays(demo_pair) -> None:
    """One progress count for the whole scan: the compares, then the replays, never backwards, ending full."""
    from dumptui.core.compare.session import Session
    from dumptui.core.formats import open_dump
    from dumptui.core.search.bisect import Bisection

    seen: list[tuple[int, int]] = []
    bi = Bisection(Session(open_dump(demo_pair.ref), open_dump(demo_pair.target)))
    bi.prepare(lambda done, total: seen.append((done, total)))
    assert bi.search == "scan" and bi.scan_result is not None
    replayed = sum(1 for le in bi.scan_result.locals if le.replay is not None)
    assert replayed >= 1
    assert all(b[0] >= a[0] and b[1] >= a[1] for a, b in zip(seen, seen[1:]))
    assert seen[-1][0] == seen[-1][1] and all(done <= total for done, total in seen)
    assert seen[-1][1] - max(total for _d, total in seen if total < seen[-1][1]) >= replayed


def test_a_scans_last_replays_are_split_among_the_workers(monkeypatch):
    """The replays left when the scan ends go to every worker (the scan waits for them), in tasks of at most
    the batch policy's items before that; every plan's answer comes back under its own key, in the order
    added."""
    from dumptui.core.io.executor import BatchPolicy, InProcess
    from dumptui.core.search import replays as scan

    sent: list[list[str]] = []

    class Inline(InProcess):
        workers = 2

        def submit(self, fn, plans):
            sent.append(list(plans))
            return super().submit(fn, plans)

    monkeypatch.setattr(scan, "_shipped", lambda plan, where=None: plan)
    monkeypatch.setattr(scan, "_shipped_bytes", lambda plan: 0)
    monkeypatch.setattr(scan, "_run_shipped_many", lambda plans: [(None, f"answer {p}") for p in plans])
    streamed = scan.ReplayStream(Inline(), BatchPolicy(items=4))  # type: ignore[arg-type]
    for key in range(11):
        streamed.add(key, f"plan {key}")  # type: ignore[arg-type]
    answers = list(streamed.results())
    assert [len(task) for task in sent] == [4, 4, 2, 1]  # two full tasks as found, then the last 3 in two
    assert answers == [(k, (None, f"answer plan {k}")) for k in range(11)]
    assert streamed.count == 11


def test_a_mindspore_command_never_builds_the_protobuf_schemas():
    """The CANN and GE readers build their protobuf classes on first use: reading a MindSpore dump (every
    command's start imports the readers) never pays for it."""
    import subprocess
    import sys

    code = (
        "import sys, dumptui.core.formats, dumptui.cli.main; print(sorted(m for m in sys.modules if 'protobuf' in m))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize(
    ("op_type", "inputs", "attrs"),
    [
        ("MatMul", [(300, 200), (200, 400)], {}),
        ("MatMul", [(200, 300), (400, 200), np.bool_(True), np.bool_(True)], {}),  # both transposed
        ("MatMul", [(6, 50, 200), (200, 400)], {}),  # a rank-3 operand folded to a matrix
        ("BatchMatMul", [(3, 1, 40, 30), (1, 5, 30, 50)], {}),  # batch axes broadcast both ways
        ("BatchMatMul", [(4, 30, 40), (4, 50, 30)], {"transpose_a": "Bool(1)", "transpose_b": "Bool(1)"}),
        ("Dense", [(7, 30, 200), (400, 200), (400,)], {}),
        ("Dense", [(300, 200), (400, 200)], {}),
    ],
)
def test_a_product_at_sampled_positions_is_the_whole_product_there(op_type, inputs, attrs) -> None:
    """replay_at: the products computed at the compared positions only give what the whole product gives
    there (a dot product each, in float64: within a few ulps of BLAS's order of summation)."""
    from dumptui.core.compare.sampling import REPLAY_SAMPLE
    from dumptui.core.search.replay import ReplayInputs, replay_at

    arrays = [RNG.standard_normal(x).astype(np.float32) if isinstance(x, tuple) else x for x in inputs]
    whole = run(op_type, arrays, attrs=attrs)[0].reshape(-1)
    positions = np.random.default_rng(3).integers(0, whole.size, REPLAY_SAMPLE)
    spec = ReplayInputs(op_type, dict(enumerate(arrays)), attrs)
    at = replay_at(spec, positions, whole.size)
    assert at is not None and at.shape == (REPLAY_SAMPLE,)
    np.testing.assert_allclose(at, whole[positions], rtol=1e-12, atol=1e-12 * np.abs(whole).max())
    with pytest.raises(ValueError, match="the dump holds"):
        replay_at(spec, positions, whole.size + 1)
    assert replay_at(ReplayInputs("Exp", {}), positions, whole.size) is None  # computed whole instead


def _conv_attrs(stride: str, dilation: str, pads: str, groups: int) -> dict[str, str]:
    return {
        "stride": stride,
        "dilation": dilation,
        "pad_list": pads,
        "group": f"I64({groups})",
        "pad_mode": '"pad"',
        "format": '"NCHW"',
        "mode": "I64(1)",
    }


@pytest.mark.parametrize(
    ("x_shape", "w_shape", "attrs"),
    [
        ((1, 32, 40, 40), (32, 32, 3, 3), _conv_attrs("(1, 1, 1, 1)", "(1, 1, 1, 1)", "(1, 1, 1, 1)", 1)),
        ((2, 16, 23, 19), (8, 4, 3, 2), _conv_attrs("(1, 1, 2, 1)", "(1, 1, 1, 2)", "(1, 0, 2, 1)", 4)),
        ((1, 8, 30, 31), (8, 1, 5, 5), _conv_attrs("(1, 1, 2, 2)", "(1, 1, 2, 1)", "(2, 2, 0, 3)", 8)),  # depthwise
        ((3, 3, 17, 17), (6, 3, 1, 1), _conv_attrs("(1, 1, 1, 1)", "(1, 1, 1, 1)", "(0, 0, 0, 0)", 1)),  # 1x1
    ],
)
def test_a_convolution_at_sampled_positions_is_the_whole_one_there(x_shape, w_shape, attrs, monkeypatch) -> None:
    """replay_at on Conv2D: each sampled value is its window's dot product with its channel's weights, what
    the whole convolution gives there within float64's order of summation; slices of positions give the same."""
    from dumptui.core.compare.sampling import REPLAY_SAMPLE
    from dumptui.core.search.replay import ReplayInputs, conv, replay_at

    x, w = RNG.standard_normal(x_shape).astype(np.float32), RNG.standard_normal(w_shape).astype(np.float32)
    whole = run("Conv2D", [x, w], attrs=attrs)[0].reshape(-1)
    positions = np.random.default_rng(3).integers(0, whole.size, REPLAY_SAMPLE)
    spec = ReplayInputs("Conv2D", {0: x, 1: w}, attrs)
    at = replay_at(spec, positions, whole.size)
    assert at is not None and at.shape == (REPLAY_SAMPLE,)
    np.testing.assert_allclose(at, whole[positions], rtol=1e-12, atol=1e-12 * np.abs(whole).max())
    for at_once in (1000, 1 << 22):  # many slices of positions; every position in one slice
        monkeypatch.setattr(conv, "AT_ONCE", at_once)
        np.testing.assert_array_equal(replay_at(spec, positions, whole.size), at)
    with pytest.raises(ValueError, match="the dump holds"):
        replay_at(spec, positions, whole.size + 1)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32])
@pytest.mark.parametrize("stride,dilation,pads,groups,kernel", CONV_CASES)
def test_a_convolution_at_sampled_positions_against_naive_loops(
    stride: tuple[int, int],
    dilation: tuple[int, int],
    pads: tuple[int, int, int, int],
    groups: int,
    kernel: tuple[int, int],
    dtype: type,
) -> None:
    """conv2d_at's flat gather of each window (from the input in its own dtype, widened once gathered) against
    the naive loops, at every position of the output and at repeated, unordered ones (stride, dilation,
    asymmetric padding, groups, a batch of two; a float32, float16 and int32 input)."""
    from dumptui.core.search.replay import ReplayInputs, replay_at

    x = (RNG.standard_normal((2, 4, 7, 8)) * (50 if dtype == np.int32 else 1)).astype(dtype)
    w = RNG.standard_normal((6 if groups != 4 else 4, 4 // groups) + kernel).astype(np.float32)
    want = naive.conv2d(x, w, stride, dilation, pads, groups).reshape(-1)
    attrs = _conv_attrs(f"(1, 1, {stride[0]}, {stride[1]})", f"(1, 1, {dilation[0]}, {dilation[1]})", str(pads), groups)
    spec = ReplayInputs("Conv2D", {0: x, 1: w}, attrs)
    every = np.arange(want.size)
    at = replay_at(spec, every, want.size)
    assert at is not None
    np.testing.assert_allclose(at, want, rtol=1e-12, atol=1e-12)
    shuffled = np.random.default_rng(5).integers(0, want.size, 3 * want.size)
    np.testing.assert_array_equal(replay_at(spec, shuffled, want.size), at[shuffled])


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32])
def test_relu_and_bias_add_at_sampled_positions_are_numpys_values_there(dtype: type) -> None:
    """ReLU, ReLU6 and BiasAdd at sampled positions: numpy's maximum/minimum and sum of the float64 values at
    those positions, bit for bit what the whole replay gives there (NaN and Inf included); BiasAdd's channel
    axis from the format as attribute, as the data_format input (0 NCHW, 1 NHWC) and for NCHW and NHWC."""
    from dumptui.core.search.replay import ReplayInputs, replay_at

    x = (RNG.standard_normal((2, 5, 6, 7)) * (50 if dtype == np.int32 else 4)).astype(dtype)
    if dtype != np.int32:
        x.reshape(-1)[[3, 40, 77]] = [np.nan, np.inf, -np.inf]
    x64 = x.astype(np.float64)
    positions = np.random.default_rng(9).integers(0, x.size, 3 * x.size)
    for op_type, want in (("ReLU", np.maximum(x64, 0.0)), ("ReLU6", np.minimum(np.maximum(x64, 0.0), 6.0))):
        at = replay_at(ReplayInputs(op_type, {0: x}, {}), positions, x.size)
        assert at is not None
        np.testing.assert_array_equal(at, want.reshape(-1)[positions])
        np.testing.assert_array_equal(at, run(op_type, [x])[0].reshape(-1)[positions])
    for axis, spec_of in (
        (1, lambda b: ReplayInputs("BiasAdd", {0: x, 1: b}, {"format": '"NCHW"'})),
        (1, lambda b: ReplayInputs("BiasAdd", {0: x, 1: b, 2: np.array(0, np.int64)}, {})),
        (3, lambda b: ReplayInputs("BiasAdd", {0: x, 1: b}, {"data_format": '"NHWC"'})),
        (3, lambda b: ReplayInputs("BiasAdd", {0: x, 1: b, 2: np.array(1, np.int64)}, {})),
    ):
        b = RNG.standard_normal(x.shape[axis]).astype(np.float32)
        shape = [1, 1, 1, 1]
        shape[axis] = b.size
        want = (x64 + b.astype(np.float64).reshape(shape)).reshape(-1)[positions]
        at = replay_at(spec_of(b), positions, x.size)
        assert at is not None
        np.testing.assert_array_equal(at, want)
        np.testing.assert_array_equal(at, replay(spec_of(b))[0].reshape(-1)[positions])
    with pytest.raises(ValueError, match="the dump holds"):
        replay_at(ReplayInputs("ReLU", {0: x}, {}), positions, x.size + 1)
    wrong = ReplayInputs("BiasAdd", {0: x, 1: np.ones(4, np.float32)}, {})
    with pytest.raises(ReplayUnsupported) as whole:
        replay(wrong)
    with pytest.raises(ReplayUnsupported) as sampled:
        replay_at(wrong, positions, x.size)
    assert str(sampled.value) == str(whole.value)


@pytest.mark.parametrize("op_type", ["Add", "AddV2", "Sub", "Mul", "RealDiv", "Div"])
@pytest.mark.parametrize(
    ("a_shape", "b_shape"),
    [((2, 5, 6, 7), (2, 5, 6, 7)), ((2, 5, 6, 7), (5, 1, 1)), ((1, 5, 1, 7), (2, 1, 6, 1)), ((2, 5, 6, 7), ())],
)
def test_a_binary_op_at_sampled_positions_is_numpys_value_there(op_type, a_shape, b_shape) -> None:
    """Add, Sub, Mul and Div at sampled positions of the broadcast output: numpy's float64 operation on the
    operands' elements there, bit for bit what the whole replay gives (broadcast both ways, a scalar, NaN, Inf
    and zeros among the operands); integer operands and shapes that do not broadcast are computed whole."""
    from dumptui.core.search.replay import ReplayInputs, replay_at

    a = (RNG.standard_normal(a_shape) * 3).astype(np.float32)
    b = (RNG.standard_normal(b_shape) * 3).astype(np.float16)
    if a.size > 10:
        a.reshape(-1)[[1, 4, 9]] = [np.nan, np.inf, 0.0]
    if b.size > 3:
        b.reshape(-1)[[0, 2]] = [0.0, -np.inf]
    fn = {"Add": np.add, "AddV2": np.add, "Sub": np.subtract, "Mul": np.multiply}.get(op_type, np.divide)
    with np.errstate(all="ignore"):
        want = fn(a.astype(np.float64), b.astype(np.float64)).reshape(-1)
    positions = np.random.default_rng(11).integers(0, want.size, 2 * want.size)
    spec = ReplayInputs(op_type, {0: a, 1: b}, {})
    at = replay_at(spec, positions, want.size)
    assert at is not None
    np.testing.assert_array_equal(at.view(np.uint64), want[positions].view(np.uint64))
    np.testing.assert_array_equal(at.view(np.uint64), run(op_type, [a, b])[0].reshape(-1)[positions].view(np.uint64))
    with pytest.raises(ValueError, match="the dump holds"):
        replay_at(spec, positions, want.size + 1)
    ints = ReplayInputs(op_type, {0: np.arange(6).reshape(2, 3), 1: np.arange(3)}, {})
    assert replay_at(ints, np.arange(6), 6) is None
    assert replay_at(ReplayInputs(op_type, {0: a, 1: np.ones(4, np.float32)}, {}), positions, want.size) is None


def test_a_product_over_the_budget_is_still_proven_at_its_sampled_positions() -> None:
    """A MatMul whose whole product is over the replay budget (4.5e9 multiply-adds) and whose output is big
    enough to be sampled costs 4,096 x K multiply-adds for its proof, checked against dot products one by one."""
    from dumptui.core.compare.sampling import sample_positions
    from dumptui.core.search.replay import ReplayInputs, replay_at

    a = RNG.standard_normal((3000, 1500)).astype(np.float32)
    b = RNG.standard_normal((1500, 1000)).astype(np.float32)
    with pytest.raises(ReplayUnsupported, match="over the replay budget"):
        run("MatMul", [a, b])
    positions = sample_positions(3000 * 1000)
    assert positions is not None
    at = replay_at(ReplayInputs("MatMul", {0: a, 1: b}), positions, 3000 * 1000)
    rows, cols = np.divmod(positions, 1000)
    one_by_one = [float(np.dot(a[r].astype(np.float64), b[:, c].astype(np.float64))) for r, c in zip(rows, cols)]
    np.testing.assert_allclose(at, one_by_one, rtol=1e-12, atol=1e-9)


@pytest.mark.parametrize("name,fn", [("sum", np.sum), ("mean", np.mean)])
def test_torch_sum_and_mean_as_msprobe_records_them(name: str, fn) -> None:
    x = np.array([[1.5, -0.0, np.nan], [2.0, 0.25, -3.0]], dtype=np.float32)
    assert np.array_equal(run(name, [x])[0], fn(x.astype(np.float64)), equal_nan=True)  # every axis: NaN
    y = x[:, :2]
    by_dim = run(name, [y], attrs={"scalar input 1": "1"})[0]
    assert np.array_equal(by_dim, fn(y.astype(np.float64), axis=1)) and by_dim.shape == (2,)
    kept = run(name, [y], attrs={"dim": "(0, 1)", "keepdim": "True"})[0]
    assert kept.shape == (1, 1) and kept[0, 0] == fn(y.astype(np.float64))
    assert run(name, [y], attrs={"dim": "-1"})[0].tolist() == fn(y.astype(np.float64), axis=-1).tolist()
    empty = run(name, [np.zeros((0,), dtype=np.float16)])[0]
    assert (empty == 0) if name == "sum" else np.isnan(empty)  # torch: sum of nothing 0, mean NaN
    with pytest.raises(ReplayUnsupported, match="dtype"):
        run(name, [y], attrs={"dtype": "torch.float64"})
    with pytest.raises(ReplayUnsupported, match="integer promotion"):
        run(name, [np.arange(3)])
