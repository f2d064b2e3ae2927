"""msprobe's PyTorch layers replayed (core/search/replay/torchfunctional.py), each against a plain-loop or
math-module computation written here; autocast's rounding of a product's inputs; and the generated transformer
block (core/demo/msprobe_block.py): float16 autocast alone is benign, a wrong gelu and a layer_norm that
ignores its eps are roots proven by their replay."""

from __future__ import annotations

import itertools
import json
import math
import os
import struct

import numpy as np
import pytest

from dumptui import cli
from dumptui.core.demo.msprobe_block import VARIANTS, write_msprobe_block_demo
from dumptui.core.formats.torchpt import pt_layout
from dumptui.core.model.dump import TensorRef
from dumptui.core.search.replay import ReplayInputs, ReplayUnsupported, replay
from dumptui.core.search.replay.run import replay_at

RNG = np.random.default_rng(7)


def run_op(op_type, inputs, attrs=None, out_dtype=None, out_shape=None):
    spec = ReplayInputs(
        op_type,
        dict(enumerate(inputs)) if isinstance(inputs, list) else inputs,
        {k: str(v) for k, v in (attrs or {}).items()},
        out_shapes={} if out_shape is None else {0: out_shape},
        out_dtypes={} if out_dtype is None else {0: out_dtype},
    )
    return replay(spec)[0]


def rand(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


# --- products ---------------------------------------------------------------------------------------------


def loop_linear(x, w, b):
    out = np.zeros((*x.shape[:-1], w.shape[0]))
    for idx in itertools.product(*(range(n) for n in x.shape[:-1])):
        for o in range(w.shape[0]):
            out[idx + (o,)] = sum(float(x[idx + (k,)]) * float(w[o, k]) for k in range(x.shape[-1]))
            out[idx + (o,)] += 0.0 if b is None else float(b[o])
    return out


def test_linear_with_and_without_bias():
    x, w, b = rand(2, 3, 4), rand(5, 4), rand(5)
    np.testing.assert_allclose(run_op("linear", [x, w, b]), loop_linear(x, w, b), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(run_op("linear", [x, w]), loop_linear(x, w, None), rtol=1e-12, atol=1e-12)


def bf16(v: float) -> float:
    """One float32 value rounded to bfloat16, nearest with ties to even, through its bits."""
    (bits,) = struct.unpack("<I", struct.pack("<f", v))
    low, high = bits & 0xFFFF, bits >> 16
    if low > 0x8000 or (low == 0x8000 and high & 1):
        high += 1
    return struct.unpack("<f", struct.pack("<I", (high << 16) & 0xFFFFFFFF))[0]


@pytest.mark.parametrize("out_dtype", ["float16", "bfloat16"])
def test_an_autocast_product_rounds_its_float32_inputs_to_its_output_dtype(out_dtype):
    x, w, b = rand(3, 8), rand(4, 8), rand(4)
    low = np.vectorize(bf16) if out_dtype == "bfloat16" else (lambda a: a.astype(np.float16))
    want = loop_linear(low(x), low(w), low(b))
    np.testing.assert_allclose(run_op("linear", [x, w, b], out_dtype=out_dtype), want, rtol=1e-12, atol=1e-12)
    exact = loop_linear(x, w, b)
    assert np.abs(run_op("linear", [x, w, b], out_dtype="float32") - exact).max() < 1e-12  # no rounding
    assert np.abs(want - exact).max() > 1e-4  # the rounding matters at these sizes


def test_a_sampled_linear_is_the_whole_one_at_its_positions():
    x, w, b = rand(4, 6, 8), rand(5, 8), rand(5)
    spec = ReplayInputs("linear", {0: x, 1: w, 2: b}, out_dtypes={0: "float16"})
    whole = replay(spec)[0].reshape(-1)
    positions = np.array([0, 7, 33, 119])
    np.testing.assert_allclose(replay_at(spec, positions, whole.size), whole[positions], rtol=1e-12)


def test_matmul_follows_torch_rules_for_1d_and_batches():
    a, b = rand(2, 1, 3, 4), rand(5, 4, 2)
    got = run_op("matmul", [a, b])
    assert got.shape == (2, 5, 3, 2)
    for i, j, r, c in itertools.product(range(2), range(5), range(3), range(2)):
        want = sum(float(a[i, 0, r, k]) * float(b[j, k, c]) for k in range(4))
        assert math.isclose(got[i, j, r, c], want, rel_tol=1e-12, abs_tol=1e-12)
    v = rand(4)
    assert math.isclose(float(run_op("__matmul__", [v, v])), sum(float(t) ** 2 for t in v), rel_tol=1e-12)
    with pytest.raises(ReplayUnsupported):
        run_op("mm", [rand(2, 3), rand(4, 5)])


def loop_conv(x, w, b, stride, pad, dil, groups):
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad[0], pad[0]), (pad[1], pad[1])))
    ho = (h + 2 * pad[0] - dil[0] * (kh - 1) - 1) // stride[0] + 1
    wo = (wd + 2 * pad[1] - dil[1] * (kw - 1) - 1) // stride[1] + 1
    out = np.zeros((n, o, ho, wo))
    per = o // groups
    for i, oc, y, xx in itertools.product(range(n), range(o), range(ho), range(wo)):
        g = oc // per
        total = 0.0
        for ci, p, q in itertools.product(range(cg), range(kh), range(kw)):
            total += xp[i, g * cg + ci, y * stride[0] + p * dil[0], xx * stride[1] + q * dil[1]] * float(
                w[oc, ci, p, q]
            )
        out[i, oc, y, xx] = total + (0.0 if b is None else float(b[oc]))
    return out


def test_conv2d_with_stride_padding_dilation_groups_and_bias():
    x, w, b = rand(2, 4, 7, 6), rand(6, 2, 3, 3), rand(6)
    attrs = {"scalar input 3": "(2, 1)", "scalar input 4": "(1, 2)", "scalar input 5": "(1, 2)", "scalar input 6": "2"}
    got = run_op("conv2d", [x, w, b], attrs)
    np.testing.assert_allclose(got, loop_conv(x, w, b, (2, 1), (1, 2), (1, 2), 2), rtol=1e-11, atol=1e-11)


def test_conv2d_same_and_unbatched():
    x, w = rand(3, 5, 5), rand(2, 3, 3, 3)
    got = run_op("conv2d", [x, w], {"padding": "'same'"})
    assert got.shape == (2, 5, 5)
    np.testing.assert_allclose(got, loop_conv(x[None], w, None, (1, 1), (1, 1), (1, 1), 1)[0], rtol=1e-11, atol=1e-11)
    assert run_op("conv2d", [x, w], {"padding": "valid"}).shape == (2, 3, 3)


def loop_pool(x, k, st, pad, how):
    n, c, h, w = x.shape
    ho, wo = (h + 2 * pad[0] - k[0]) // st[0] + 1, (w + 2 * pad[1] - k[1]) // st[1] + 1
    out = np.zeros((n, c, ho, wo))
    for i, ch, y, xx in itertools.product(range(n), range(c), range(ho), range(wo)):
        vals = [
            float(x[i, ch, r, q])
            for r in range(y * st[0] - pad[0], y * st[0] - pad[0] + k[0])
            for q in range(xx * st[1] - pad[1], xx * st[1] - pad[1] + k[1])
            if 0 <= r < h and 0 <= q < w
        ]
        if how == "max":
            out[i, ch, y, xx] = max(vals)
        elif how == "avg":
            out[i, ch, y, xx] = sum(vals) / (k[0] * k[1])
        else:
            out[i, ch, y, xx] = sum(vals) / len(vals)
    return out


def test_max_and_avg_pool2d_with_stride_and_padding():
    x = rand(2, 3, 7, 6)
    attrs = {"scalar input 1": "(3, 2)", "scalar input 2": "(2, 2)", "scalar input 3": "(1, 1)"}
    np.testing.assert_allclose(run_op("max_pool2d", [x], attrs), loop_pool(x, (3, 2), (2, 2), (1, 1), "max"))
    np.testing.assert_allclose(
        run_op("avg_pool2d", [x], attrs), loop_pool(x, (3, 2), (2, 2), (1, 1), "avg"), rtol=1e-12
    )
    real = run_op("avg_pool2d", [x], {**attrs, "count_include_pad": "False"})
    np.testing.assert_allclose(real, loop_pool(x, (3, 2), (2, 2), (1, 1), "real"), rtol=1e-12)
    # stride defaults to the kernel size; an unbatched (C, H, W) input
    np.testing.assert_allclose(
        run_op("max_pool2d", [x[0]], {"kernel_size": "2"}), loop_pool(x[:1], (2, 2), (2, 2), (0, 0), "max")[0]
    )
    with pytest.raises(ReplayUnsupported, match="ceil_mode"):
        run_op("max_pool2d", [x], {"kernel_size": "2", "ceil_mode": "True"})
    with pytest.raises(ReplayUnsupported, match="dilation"):
        run_op("max_pool2d", [x], {"kernel_size": "2", "dilation": "2"})


def test_adaptive_avg_pool2d_uneven_windows():
    x = rand(1, 2, 5, 7)
    got = run_op("adaptive_avg_pool2d", [x], {"scalar input 1": "(2, 3)"})
    for c, i, j in itertools.product(range(2), range(2), range(3)):
        rows = range(math.floor(i * 5 / 2), math.ceil((i + 1) * 5 / 2))
        cols = range(math.floor(j * 7 / 3), math.ceil((j + 1) * 7 / 3))
        vals = [float(x[0, c, r, q]) for r in rows for q in cols]
        assert math.isclose(got[0, c, i, j], sum(vals) / len(vals), rel_tol=1e-12)
    assert run_op("adaptive_avg_pool2d", [x], {"output_size": "1"}).shape == (1, 2, 1, 1)


# --- normalisations -------------------------------------------------------------------------------------


def test_layer_norm_over_its_normalized_shape_with_eps():
    x, w, b = rand(2, 3, 4), rand(3, 4), rand(3, 4)
    got = run_op("layer_norm", [x, w, b], {"scalar input 1": "(3, 4)", "scalar input 4": "0.5"})
    for i in range(2):
        vals = [float(v) for v in x[i].reshape(-1)]
        mean = sum(vals) / len(vals)
        var = sum((v - mean) ** 2 for v in vals) / len(vals)
        want = [(v - mean) / math.sqrt(var + 0.5) for v in vals]
        want = np.array(want).reshape(3, 4) * w + b
        np.testing.assert_allclose(got[i], want, rtol=1e-12, atol=1e-12)
    weight_only = run_op("layer_norm", [x, w[0]], {"scalar input 1": "(4)"})
    row = [float(v) for v in x[0, 0]]
    m = sum(row) / 4
    sd = math.sqrt(sum((v - m) ** 2 for v in row) / 4 + 1e-5)  # PyTorch's default eps
    np.testing.assert_allclose(weight_only[0, 0], [(v - m) / sd * float(g) for v, g in zip(row, w[0])], rtol=1e-12)
    with pytest.raises(ReplayUnsupported):
        run_op("layer_norm", [x], {"scalar input 1": "(5)"})


def test_batch_norm_in_evaluation_and_training_refused():
    x, mean, var, w, b = rand(2, 3, 4), rand(3), np.abs(rand(3)) + 0.5, rand(3), rand(3)
    got = run_op("batch_norm", [x, mean, var, w, b], {"scalar input 5": "False", "scalar input 7": "0.001"})
    for n, c, k in itertools.product(range(2), range(3), range(4)):
        want = (float(x[n, c, k]) - float(mean[c])) / math.sqrt(float(var[c]) + 0.001) * float(w[c]) + float(b[c])
        assert math.isclose(got[n, c, k], want, rel_tol=1e-12, abs_tol=1e-12)
    with pytest.raises(ReplayUnsupported, match="training"):
        run_op("batch_norm", [x, mean, var], {"training": "True"})


@pytest.mark.parametrize("how", ["positional", "keyword"])
def test_softmax_and_log_softmax_along_dim(how):
    x = rand(3, 5)
    attrs = {"scalar input 1": "0"} if how == "positional" else {"dim": "0"}
    got, logs = run_op("softmax", [x], attrs), run_op("log_softmax", [x], attrs)
    for j in range(5):
        col = [float(x[i, j]) for i in range(3)]
        total = sum(math.exp(v) for v in col)
        for i in range(3):
            assert math.isclose(got[i, j], math.exp(col[i]) / total, rel_tol=1e-12)
            assert math.isclose(logs[i, j], col[i] - math.log(total), rel_tol=1e-12, abs_tol=1e-12)
    with pytest.raises(ReplayUnsupported, match="without dim"):
        run_op("softmax", [x])


# --- the others -------------------------------------------------------------------------------------------


def test_embedding_takes_rows_and_refuses_max_norm_and_bad_indices():
    ids, w = np.array([[0, 3], [3, 1]], dtype=np.int64), rand(4, 2)
    got = run_op("embedding", [ids, w])
    assert got.shape == (2, 2, 2) and got[1, 0].tolist() == [float(w[3, 0]), float(w[3, 1])]
    with pytest.raises(ReplayUnsupported, match="max_norm"):
        run_op("embedding", [ids, w], {"scalar input 3": "1.0"})
    with pytest.raises(ReplayUnsupported, match="out of range"):
        run_op("embedding", [np.array([4]), w])


def test_dropout_in_evaluation_is_the_identity():
    x = rand(3, 4)
    np.testing.assert_array_equal(run_op("dropout", [x], {"scalar input 1": "0.1", "scalar input 2": "False"}), x)
    np.testing.assert_array_equal(run_op("dropout", [x], {"p": "0.0"}), x)
    with pytest.raises(ReplayUnsupported, match="training"):
        run_op("dropout", [x], {"p": "0.1"})  # F.dropout trains unless told otherwise


def test_gelu_erf_and_tanh_forms():
    x = np.array([-3.0, -0.5, 0.0, 0.7, 2.5], dtype=np.float32)
    exact = [0.5 * float(v) * (1 + math.erf(float(v) / math.sqrt(2))) for v in x]
    np.testing.assert_allclose(run_op("gelu", [x]), exact, rtol=1e-12, atol=1e-15)
    tanh = [0.5 * float(v) * (1 + math.tanh(math.sqrt(2 / math.pi) * (float(v) + 0.044715 * float(v) ** 3))) for v in x]
    np.testing.assert_allclose(run_op("gelu", [x], {"approximate": "'tanh'"}), tanh, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(run_op("gelu_", [x]), exact, rtol=1e-12, atol=1e-15)  # in place
    with pytest.raises(ReplayUnsupported):
        run_op("gelu", [x], {"approximate": "sigmoid"})


@pytest.mark.parametrize(
    ("name", "fn"),
    [
        ("relu", lambda v: max(v, 0.0)),
        ("silu", lambda v: v / (1 + math.exp(-v))),
        ("sigmoid", lambda v: 1 / (1 + math.exp(-v))),
        ("tanh", math.tanh),
        ("exp", math.exp),
        ("erf", math.erf),
        ("neg", lambda v: -v),
        ("abs", abs),
    ],
)
def test_unary_functions(name, fn):
    x = np.array([-2.0, -0.25, 0.0, 0.5, 3.0], dtype=np.float32)
    np.testing.assert_allclose(run_op(name, [x]), [fn(float(v)) for v in x], rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(run_op(name + "_", [x]), [fn(float(v)) for v in x], rtol=1e-12, atol=1e-15)


def test_positive_only_functions_and_nan():
    x = np.array([0.25, 4.0, np.nan], dtype=np.float32)
    assert run_op("sqrt", [x])[:2].tolist() == [0.5, 2.0] and run_op("rsqrt", [x])[:2].tolist() == [2.0, 0.5]
    assert math.isclose(run_op("log", [x])[1], math.log(4.0)) and np.isnan(run_op("relu", [x])[2])


# --- the generated transformer block, end to end ------------------------------------------------------------

pytestmark_block = pytest.mark.usefixtures("commands_share_one_pool")


@pytest.fixture(scope="module")
def blocks(tmp_path_factory):
    root = tmp_path_factory.mktemp("msprobe_block")
    return {v: write_msprobe_block_demo(str(root / v), v) for v in VARIANTS}


@pytestmark_block
@pytest.mark.parametrize("variant", VARIANTS)
def test_the_block_under_autocast_is_judged_right(blocks, capsys, variant):
    d = blocks[variant]
    capsys.readouterr()
    code = cli.main(["bisect", d.ref, d.target, "--json", "-"])
    doc = json.loads(capsys.readouterr().out)
    got = None if doc["culprit"] is None else doc["culprit"]["ref"]
    assert got == d.culprit and code == (0 if d.culprit is None else 1)
    if d.culprit is not None:
        local = doc["culprit"]["local_error"]
        assert local["rule"] == "replay-broken"
        replayed = local["replay"]
        assert replayed["reference_deviation"] < 1e-6 < local["floor"] < replayed["target_deviation"]


def test_autocast_products_replay_to_the_targets_own_bits(blocks):
    """Each linear of the benign target, replayed from the float32 inputs msprobe recorded and rounded as autocast
    rounds them, gives its float16 output to within one float16 step; without the rounding it is further off."""
    d = blocks["autocast"]
    folder = os.path.join(d.target, "step0", "rank0", "dump_tensor_data")

    def load(name):
        path = os.path.join(folder, name + ".pt")
        lay, _dtype = pt_layout(path)
        return np.asarray(TensorRef(path, "output", 0, layout_fn=lambda: lay).array())

    for i in range(3):
        call = f"Functional.linear.{i}.forward"
        inputs = [load(f"{call}.input.{k}") for k in range(3)]
        dumped = load(f"{call}.output.0").astype(np.float64)
        assert inputs[1].dtype == np.float32 and load(f"{call}.output.0").dtype == np.float16
        step = np.spacing(np.abs(dumped).astype(np.float16)).astype(np.float64)
        autocast = run_op("linear", inputs, out_dtype="float16").astype(np.float16).astype(np.float64)
        plain = run_op("linear", inputs).astype(np.float16).astype(np.float64)
        assert (np.abs(autocast - dumped) <= step).all(), call
        assert np.abs(plain - dumped).max() > np.abs(autocast - dumped).max(), call


# --- a backward call has its forward's op type, and no replay -------------------------------------------------


def _gelu_with_backward(root, wrong_gradient: bool):
    from dumptui.core.demo.msprobe_selection import ApiDump

    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 64)).astype(np.float32)
    y = (0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))).astype(np.float32)
    grad_out = rng.standard_normal((4, 64)).astype(np.float32)
    pdf = np.exp(-(x.astype(np.float64) ** 2) / 2) / math.sqrt(2 * math.pi)
    cdf = 0.5 * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))
    grad_in = grad_out * (cdf + x * pdf) * (1.5 if wrong_gradient else 1.0)
    d = ApiDump(str(root))
    d.call("Functional.gelu.0", [x], {}, [y])
    name = "Functional.gelu.0.backward"
    d.data[name] = {
        "input": [d.record(f"{name}.input.0", grad_out)],
        "output": [d.record(f"{name}.output.0", grad_in.astype(np.float32))],
    }
    d.construct[name] = None
    d.finish()
    return str(root)


def test_a_backward_call_is_never_replayed_as_its_forward(tmp_path, capsys):
    """`Functional.gelu.0.backward` has op type gelu: replayed as gelu it would compare gradients with the
    activation and call a right gradient broken. Its wrong gradient is found by the other rules, and its proof
    says why there is no replay."""
    ref = _gelu_with_backward(tmp_path / "ref", wrong_gradient=False)
    target = _gelu_with_backward(tmp_path / "target", wrong_gradient=True)
    capsys.readouterr()
    code = cli.main(["bisect", ref, target, "--json", "-"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 1 and doc["culprit"]["ref"] == "Functional.gelu.0.backward"
    local = doc["culprit"]["local_error"]
    assert local["replay"] is None and local["rule"] != "replay-broken"
    assert local["replay_note"] == "no replay of a backward call (the gradients of gelu)"


def test_a_backward_calls_inputs_each_have_their_own_slot(tmp_path, capsys):
    """The backward call reads its gradient (input.0) and what its forward saved (the forward's input.0): they
    are its inputs 0 and 1 in every view, and the forward keeps its own input.0."""
    ref = _gelu_with_backward(tmp_path / "ref", wrong_gradient=False)
    target = _gelu_with_backward(tmp_path / "target", wrong_gradient=True)
    capsys.readouterr()
    cli.main(["compare", ref, target, "--json", "-"])
    ops = {op["ref"]: op for op in json.loads(capsys.readouterr().out)["ops"]}
    backward = [(t["slot"], os.path.basename(t["ref"]["path"])) for t in ops["Functional.gelu.0.backward"]["inputs"]]
    assert backward == [(0, "Functional.gelu.0.backward.input.0.pt"), (1, "Functional.gelu.0.forward.input.0.pt")]
    forward = [(t["slot"], os.path.basename(t["ref"]["path"])) for t in ops["Functional.gelu.0.forward"]["inputs"]]
    assert forward == [(0, "Functional.gelu.0.forward.input.0.pt")]
