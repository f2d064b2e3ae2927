"""msprobe dumps: the .pt reader (no torch, no pickled code run), dataflow inference, and the real fixtures."""

from __future__ import annotations

import collections
import io
import json
import pickle
import sys
import types
import zipfile

import numpy as np
import pytest
from helpers.common import SHARED

from dumptui.core.compare.session import Session
from dumptui.core.formats import detect, open_dump
from dumptui.core.formats.msprobe import module_path
from dumptui.core.formats.torchpt import pt_layout
from dumptui.core.model.dump import PARAMETER, TensorRef
from dumptui.core.search.bisect import Bisection
from dumptui.report.reasons import say

MP = SHARED / "msprobe-26.2-pytorch-cpu" / "dumps"


def fake_torch_save(path, arr: np.ndarray, storage_name="FloatStorage", stride=None, payload=None):
    """Write what torch.save writes for a tensor, with stand-in `torch` globals (torch is not installed)."""
    torch = types.ModuleType("torch")
    utils = types.ModuleType("torch._utils")

    def _rebuild_tensor_v2(*a):
        raise AssertionError("never called")

    _rebuild_tensor_v2.__module__, _rebuild_tensor_v2.__qualname__ = "torch._utils", "_rebuild_tensor_v2"
    utils._rebuild_tensor_v2 = _rebuild_tensor_v2
    storage_cls = type(storage_name, (), {"__module__": "torch"})
    setattr(torch, storage_name, storage_cls)
    sys.modules.update({"torch": torch, "torch._utils": utils})

    class Storage:
        pass

    class Tensor:
        def __reduce__(self):
            return (
                _rebuild_tensor_v2,
                (
                    Storage(),
                    0,
                    arr.shape,
                    stride or tuple(int(np.prod(arr.shape[i + 1 :])) for i in range(arr.ndim)),
                    False,
                    collections.OrderedDict(),
                ),
            )

    class P(pickle.Pickler):
        def persistent_id(self, obj):
            if isinstance(obj, Storage):
                return ("storage", storage_cls, "0", "cpu", arr.size)
            return None

    buf = io.BytesIO()
    try:
        P(buf, protocol=2).dump(Tensor())
    finally:
        del sys.modules["torch"], sys.modules["torch._utils"]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        z.writestr("t/data.pkl", buf.getvalue())
        z.writestr("t/byteorder", "little")
        z.writestr("t/data/0", payload if payload is not None else arr.tobytes())
        z.writestr("t/version", "3\n")


def test_pt_reader_values_and_bf16(tmp_path):
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 7
    fake_torch_save(tmp_path / "a.pt", a)
    lay, dt = pt_layout(str(tmp_path / "a.pt"))
    assert dt == "float32" and lay.shape == (2, 3, 4) and lay.problem is None
    t = TensorRef(str(tmp_path / "a.pt"), "output", 0, layout_fn=lambda: lay)
    np.testing.assert_array_equal(np.asarray(t.array()), a)
    bits = (a.view(np.uint32) >> 16).astype(np.uint16)
    fake_torch_save(tmp_path / "b.pt", bits, "BFloat16Storage")
    lay, dt = pt_layout(str(tmp_path / "b.pt"))
    assert dt == "bfloat16" and lay.widen_bf16
    t = TensorRef(str(tmp_path / "b.pt"), "output", 0, dtype="bfloat16", layout_fn=lambda: lay)
    np.testing.assert_array_equal(np.asarray(t.array()), (bits.astype(np.uint32) << 16).view(np.float32))


def test_pt_reader_refuses_code_and_strides(tmp_path):
    p = tmp_path / "evil.pt"
    with zipfile.ZipFile(p, "w") as z:
        z.writestr("t/data.pkl", pickle.dumps(print, protocol=2))
    lay, _ = pt_layout(str(p))
    assert say(lay.problem) and "refused global" in say(lay.problem) and "print" in say(lay.problem)
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    fake_torch_save(tmp_path / "s.pt", a, stride=(1, 2))
    lay, _ = pt_layout(str(tmp_path / "s.pt"))
    assert "non-contiguous" in say(lay.problem)


def msprobe_dump(root, w_scale=1.0):
    """x -> linear(W) -> relu, with a module record for W: a dump.json and .pt data written here."""
    d = root / "step0" / "rank0"
    (d / "dump_tensor_data").mkdir(parents=True)
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 4)).astype(np.float32)
    w = (
        (rng.standard_normal((3, 4)) * w_scale).astype(np.float32)
        if w_scale != 1.0
        else rng.standard_normal((3, 4)).astype(np.float32)
    )
    y = x @ w.T
    r = np.maximum(y, 0)

    def rec(name, a):
        fake_torch_save(d / "dump_tensor_data" / name, a)
        return {
            "type": "torch.Tensor",
            "dtype": "torch.float32",
            "shape": list(a.shape),
            "Max": float(a.max()),
            "Min": float(a.min()),
            "Mean": float(a.mean()),
            "Norm": float(np.linalg.norm(a)),
            "requires_grad": True,
            "data_name": name,
        }

    data = {
        "Functional.linear.0.forward": {
            "input_args": [rec("l.i0.pt", x), rec("l.i1.pt", w)],
            "input_kwargs": {},
            "output": [rec("l.o0.pt", y)],
        },
        "Module.fc.Linear.forward.0": {
            "input_args": [rec("m.i0.pt", x)],
            "input_kwargs": {},
            "output": [rec("m.o0.pt", y)],
            "parameters": {"weight": rec("m.w.pt", w)},
        },
        "Functional.relu.0.forward": {
            "input_args": [rec("r.i0.pt", y)],
            "input_kwargs": {},
            "output": [rec("r.o0.pt", r)],
        },
    }
    (d / "dump.json").write_text(json.dumps({"task": "tensor", "level": "mix", "framework": "pytorch", "data": data}))
    return root


def test_generated_msprobe_dump_dataflow_and_weights(tmp_path):
    ref = msprobe_dump(tmp_path / "ref")
    assert detect(str(ref)) == "msprobe"
    d = open_dump(str(ref))
    assert [op.name for op in d.kernels] == ["Functional.linear.0.forward", "Functional.relu.0.forward"]
    lin = d.op("Functional.linear.0.forward")
    assert lin.sources[1].kind == "parameter" and lin.sources[1].ref == "fc.weight"
    assert d.op("Functional.relu.0.forward").sources[0].ref == "Functional.linear.0.forward"
    assert d.parameters["Functional.linear.0.forward.input.0"] is False  # the network input
    tgt = msprobe_dump(tmp_path / "tgt", w_scale=1.01)
    bi = Bisection(Session(d, open_dump(str(tgt))))
    bi.check_inputs()
    bi.run()
    r = bi.first_root()
    assert r.pair.name == "Functional.linear.0.forward" and "fc.weight" in say(r.why)


def test_nested_modules_keep_their_parameters_apart(tmp_path):
    """Two layers' `attn.Linear` modules: each weight is named by its module's whole path, so the weight
    that differs is the one named, and each linear's weight source is its own layer's."""
    d = tmp_path / "step0" / "rank0"
    (d / "dump_tensor_data").mkdir(parents=True)
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 4)).astype(np.float32)
    w0, w1 = (rng.standard_normal((4, 4)).astype(np.float32) for _ in range(2))
    h = x @ w0.T
    y = h @ w1.T

    def rec(name, a):
        fake_torch_save(d / "dump_tensor_data" / name, a)
        stats = {
            "Max": float(a.max()),
            "Min": float(a.min()),
            "Mean": float(a.mean()),
            "Norm": float(np.linalg.norm(a)),
        }
        return {"type": "torch.Tensor", "dtype": "torch.float32", "shape": list(a.shape), "data_name": name, **stats}

    data = {
        "Functional.linear.0.forward": {"input_args": [rec("a0.pt", x), rec("a1.pt", w0)], "output": [rec("a.pt", h)]},
        "Module.layers.0.attn.Linear.forward.0": {
            "input_args": [rec("m0.pt", x)],
            "output": [rec("m0o.pt", h)],
            "parameters": {"weight": rec("w0.pt", w0)},
        },
        "Functional.linear.1.forward": {"input_args": [rec("b0.pt", h), rec("b1.pt", w1)], "output": [rec("b.pt", y)]},
        "Module.layers.1.attn.Linear.forward.0": {
            "input_args": [rec("m1.pt", h)],
            "output": [rec("m1o.pt", y)],
            "parameters": {"weight": rec("w1.pt", w1)},
        },
    }
    (d / "dump.json").write_text(json.dumps({"task": "tensor", "level": "mix", "framework": "pytorch", "data": data}))
    dump = open_dump(str(tmp_path))
    names = {op.name for op in dump.ops if op.kind == PARAMETER}
    assert names == {"layers.0.attn.weight", "layers.1.attn.weight"}
    assert dump.op("Functional.linear.0.forward").sources[1].ref == "layers.0.attn.weight"
    assert dump.op("Functional.linear.1.forward").sources[1].ref == "layers.1.attn.weight"
    assert module_path("Cell.net.blocks.3.fc.Dense.backward.2") == "net.blocks.3.fc"
    assert module_path("Module.fc") == "fc"  # not a call name: its second segment, as before


@pytest.mark.parametrize(
    "kind,variant,expected",
    [
        ("tensor_mix", "rerun", None),
        ("tensor_mix", "diverge", "Functional.linear.0.forward"),
        ("tensor_mix", "autocast_bf16", None),
        ("statistics_L1", "diverge", "Functional.linear.0.forward"),
        ("statistics_L1", "rerun", None),
    ],
)
def test_real_msprobe_fixtures(kind, variant, expected):
    if not MP.is_dir():
        pytest.skip(f"shared fixtures absent ({MP} not found)")
    s = Session(open_dump(str(MP / kind / "ref")), open_dump(str(MP / kind / variant)))
    bi = Bisection(s)
    bi.check_inputs()
    bi.run()
    r = bi.first_root()
    assert (None if r is None else r.pair.name) == expected
    if variant == "diverge" and kind == "tensor_mix":
        assert r.pair.ref.name == "Functional.linear.0.forward" and "fc1.weight" in say(r.why)
        out = r.result.outputs[0]
        assert out.stats.cos == pytest.approx(0.99997, abs=1e-5)
    if kind == "statistics_L1":
        assert s.ref.statistics_only
