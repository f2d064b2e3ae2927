"""MindSpore dumps with trans_flag false: tensors whose file name says a device layout are read back in the
graph's shape (.npy and 1.x .bin), and are unreadable, with the reason, when no graph gives that shape."""

from __future__ import annotations

import os
import shutil

import numpy as np
from helpers.cann_encode import to_device
from helpers.msdumps import CONV, make_dump, ms_file, write_tensor

from dumptui.core.demo.dumpwriter import DumpWriter
from dumptui.core.formats import open_dump
from dumptui.core.formats.names import file_form
from dumptui.report.reasons import say, say_all

RNG = np.random.default_rng(11)
CONV2 = "Default/conv1-Conv2d/Conv2D-op0"


def device_layout_dump(root: str, with_graph: bool = True) -> dict[str, np.ndarray]:
    """conv(x, w) with x and the output in NC1HWC0 (5 channels of 16) and the weight in FRACTAL_Z."""
    x = RNG.standard_normal((1, 3, 4, 4)).astype(np.float32)
    w = RNG.standard_normal((5, 3, 1, 1)).astype(np.float32)
    y = np.einsum("oc,bchw->bohw", w[:, :, 0, 0], x).astype(np.float32)
    writer = DumpWriter(os.path.join(root, "rank_0"))
    ref_x = writer.parameter("x", x, "Float32", is_weight=False)
    ref_w = writer.parameter("conv1.weight", w, "Float32")
    writer.node("Conv2D", CONV2, [ref_x, ref_w], [("Float32", x.shape), ("Float32", w.shape)], [("Float32", y.shape)])
    name = file_form(CONV2)
    ms_file(writer.data_dir, "Conv2D", name, 101, "input", 0, to_device(x, "NC1HWC0"), fmt="NC1HWC0")
    ms_file(writer.data_dir, "Conv2D", name, 102, "input", 1, to_device(w, "FRACTAL_Z"), fmt="FRACTAL_Z")
    ms_file(writer.data_dir, "Conv2D", name, 103, "output", 0, to_device(y, "NC1HWC0"), fmt="NC1HWC0")
    writer.finish()
    if not with_graph:
        shutil.rmtree(os.path.join(root, "rank_0", "graphs"))
    return {"x": x, "w": w, "y": y}


def test_npy_device_layouts_read_in_the_graph_shape(tmp_path):
    values = device_layout_dump(str(tmp_path))
    dump = open_dump(str(tmp_path))
    conv = dump.op(CONV2)
    for t, want in ((conv.inputs[0], values["x"]), (conv.inputs[1], values["w"]), (conv.outputs[0], values["y"])):
        assert t.problem is None and t.shape == want.shape
        assert np.array_equal(t.array(), want) and np.array_equal(t.read(), want.reshape(-1))
    assert conv.outputs[0].fmt == "NC1HWC0"
    assert any("device layout" in n for n in say_all(dump.notes))


def test_without_a_graph_the_shape_is_not_guessed(tmp_path):
    device_layout_dump(str(tmp_path), with_graph=False)
    conv = open_dump(str(tmp_path)).op(CONV2)  # named through the execution-order csv
    assert "no original shape known" in say(conv.outputs[0].problem)
    assert conv.outputs[0].shape == (1, 1, 4, 4, 16)  # what the file holds, shown as such


def test_bin_device_layout_read_in_the_graph_shape(tmp_path):
    root = tmp_path / "dump"
    written = make_dump(root / "Net" / "device_0")
    data = root / "Net" / "device_0" / "iteration_0"
    conv_out = written[(CONV, "output", 0)][0]  # (1, 2, 4, 4) float16 per the IR
    (data / f"{CONV.replace('/', '--')}_output_0_shape_1_2_4_4_Float16_DefaultFormat.bin").unlink()
    write_tensor(data, CONV, "output", 0, to_device(conv_out, "NC1HWC0"), "Float16", fmt="NC1HWC0")
    out = open_dump(str(root)).op(CONV).outputs[0]
    assert out.fmt == "NC1HWC0" and out.problem is None and out.shape == (1, 2, 4, 4)
    assert np.array_equal(out.array(), conv_out)
