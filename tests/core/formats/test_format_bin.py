"""MindSpore 1.x synchronous dumps (.bin): a dump written here with numpy, read back through open_dump."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from helpers.common import SHARED
from helpers.msdumps import CAST, CONV, CSV_ORDER, MOD, RELU, TRANS, make_dump

from dumptui.core.formats import detect, open_dump
from dumptui.core.formats.mindspore_bin import looks_like, parse_bin_name
from dumptui.core.io.errors import DumpError
from dumptui.core.model.dump import CONSTANT, KERNEL, PARAMETER, InputSource, NameSource, OrderSource
from dumptui.core.model.reason import Why, because
from dumptui.report.reasons import say

FIXTURES = SHARED

# execution order as the csv gives it; the .ir lists the same kernels in another order, file names in a third
IR_ORDER = [CONV, CAST, MOD, TRANS, RELU]


@pytest.fixture
def dump_root(tmp_path: Path) -> tuple[Path, dict]:
    root = tmp_path / "dump"
    written = make_dump(root / "Net" / "device_0")
    return root, written


def test_file_name_parsing():
    rec = parse_bin_name(
        "Default--decode-DetectionDecode--gather_topk-GatherTopK--Mod-op1608"
        "_input_0_shape_1_80_100_Int32_DefaultFormat.bin"
    )
    assert rec == dict(
        op="Default--decode-DetectionDecode--gather_topk-GatherTopK--Mod-op1608",
        io="input",
        slot=0,
        shape=(1, 80, 100),
        dtype="int32",
        fmt="DefaultFormat",
    )
    rec = parse_bin_name(
        "Default--network-TrainOneStep--conv1-Conv2d--TransData-op77_output_0_shape_36_2_16_16_Float16_FRACTAL_Z.bin"
    )
    assert (rec["shape"], rec["dtype"], rec["fmt"]) == ((36, 2, 16, 16), "float16", "FRACTAL_Z")
    assert parse_bin_name("cst12_output_0_shape_0_Float32_DefaultFormat.bin")["shape"] == ()
    assert parse_bin_name("bn.moving_mean_output_0_shape_8_UInt16_NC1HWC0.bin")["op"] == "bn.moving_mean"
    assert parse_bin_name("x_output_0_shape_8_Float8_DefaultFormat.bin") is None  # no such label
    assert parse_bin_name("x_output_0_8_Float32_DefaultFormat.bin") is None


def test_opens_and_indexes(dump_root):
    root, written = dump_root
    assert looks_like(str(root)) and detect(str(root)) == "mindspore-bin"
    dump = open_dump(str(root))
    assert dump.format == "mindspore-bin"
    assert dump.rank == "0" and dump.iterations == {"0": "0"} and dump.graphs == ["0"]
    assert dump.order_source is OrderSource.EXECUTION_CSV
    assert [op.name for op in dump.kernels] == CSV_ORDER
    assert [op.order for op in dump.kernels] == list(range(5))
    assert [op.op_type for op in dump.kernels] == ["Conv2D", "Mod", "Cast", "TransData", "ReLU"]
    assert all(op.name_source is NameSource.FILE_NAME for op in dump.ops)
    # kernels first, then parameters and constants
    rest = [(op.name, op.kind, op.op_type, op.order) for op in dump.ops[5:]]
    assert rest == [
        ("cst3", CONSTANT, "Constant", -1),
        ("conv1.weight", PARAMETER, "Parameter", -1),
        ("x", PARAMETER, "Parameter", -1),
    ]
    assert dump.op(MOD).file_name == "Default--decode-DetectionDecode--gather_topk-GatherTopK--Mod-op1608"


def test_shapes_dtypes_and_values(dump_root):
    root, written = dump_root
    dump = open_dump(str(root))
    for (name, io, slot), (arr, label) in written.items():
        tref = (dump.op(name).inputs if io == "input" else dump.op(name).outputs)[slot]
        assert tref.shape == arr.shape, (name, io, slot)
        assert tref.problem is None
        if label == "BFloat16":
            assert tref.dtype == "bfloat16"
            continue
        assert tref.dtype == {"Float32": "float32", "Float16": "float16", "Int32": "int32"}[label]
        np.testing.assert_array_equal(tref.array(), arr)
    assert dump.op(MOD).inputs[1].shape == () and dump.op(MOD).inputs[1].array() == 3
    assert dump.op("cst3").outputs[0].array() == np.float32(0.75)
    assert dump.op(TRANS).outputs[0].fmt == "FRACTAL_Z"


def test_bfloat16_widened_exactly(dump_root):
    root, written = dump_root
    bits = written[(CAST, "output", 0)][0]
    got = open_dump(str(root)).op(CAST).outputs[0].array()
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got.view(np.uint32), bits.astype(np.uint32) << 16)
    np.testing.assert_allclose(got.reshape(-1)[:4], [0.1, -2.5, 3.3, 1e-3], rtol=2**-7)


def test_truncated_file_is_a_problem_and_the_rest_loads(dump_root):
    root, _ = dump_root
    dump = open_dump(str(root))
    relu = dump.op(RELU).outputs[0]
    assert relu.path.endswith("Default--ReLU-op11_output_0_shape_2_8_Float32_DefaultFormat.bin")
    assert say(relu.problem) == "truncated: payload 10 B, name says float32[2, 8] = 64 B"
    with pytest.raises(ValueError):
        relu.array()
    assert dump.op(CONV).outputs[0].array().shape == (1, 2, 4, 4)


def test_graph_from_ir(dump_root):
    root, _ = dump_root
    dump = open_dump(str(root))
    assert dump.graph_source == os.path.join("graphs", "ms_output_trace_code_graph_0.ir")
    assert dump.op(CONV).sources == {0: InputSource("parameter", "x"), 1: InputSource("parameter", "conv1.weight")}
    assert dump.op(CONV).attrs == {"pad_mode": '"valid"'}
    assert dump.op(CAST).sources == {0: InputSource("op", CONV, 0)}
    assert dump.op(TRANS).sources == {0: InputSource("op", CAST, 0)}  # through the Depend
    g = dump.graph
    assert g.has_edge("x", CONV) and g.has_edge("conv1.weight", CONV) and g.has_edge(CONV, CAST)
    assert g.has_edge(CAST, TRANS) and g.has_edge(TRANS, RELU) and g.has_edge("x", MOD)


def test_order_without_csv_follows_the_graph_then_file_names(tmp_path):
    make_dump(tmp_path / "a" / "Net" / "device_0", with_csv=False)
    dump = open_dump(str(tmp_path / "a"))
    assert dump.order_source is OrderSource.GRAPH_NODES
    assert [op.name for op in dump.kernels] == IR_ORDER
    make_dump(tmp_path / "b" / "Net" / "device_0", with_csv=False, with_ir=False)
    dump = open_dump(str(tmp_path / "b"))
    assert dump.order_source is OrderSource.FILE_NAMES and dump.graph is None
    assert [op.file_name for op in dump.kernels] == sorted(op.file_name for op in dump.kernels)


def test_every_level_of_the_tree_opens_the_same_dump(dump_root):
    root, _ = dump_root
    names = [op.name for op in open_dump(str(root)).ops]
    for sub in ("Net", "Net/device_0", "Net/device_0/iteration_0"):
        dump = open_dump(str(root / sub))
        assert dump.format == "mindspore-bin" and [op.name for op in dump.ops] == names, sub
        assert dump.graph is not None


def test_cpu_dump_without_device_level(tmp_path):
    make_dump(tmp_path / "Net")
    dump = open_dump(str(tmp_path))
    assert dump.rank is None and dump.variant == because(Why.MINDSPORE_BIN_VARIANT, True)  # no device level: CPU
    assert [op.name for op in dump.kernels] == CSV_ORDER


def test_several_devices_need_rank(tmp_path):
    make_dump(tmp_path / "Net" / "device_0")
    make_dump(tmp_path / "Net" / "device_1")
    with pytest.raises(DumpError) as err:
        open_dump(str(tmp_path))
    assert "0, 1" in err.value.reason and "choose one with --rank N" in err.value.reason
    with pytest.raises(DumpError, match="devices here: 0, 1"):
        open_dump(str(tmp_path), rank="3")
    dump = open_dump(str(tmp_path), rank="1")
    assert dump.rank == "1" and dump.root.endswith("device_1")


def test_several_iterations_need_iteration(tmp_path):
    make_dump(tmp_path / "Net" / "device_0", iterations=("0", "5"))
    with pytest.raises(DumpError) as err:
        open_dump(str(tmp_path))
    assert "0, 5" in err.value.reason and "choose one with --step N" in err.value.reason
    dump = open_dump(str(tmp_path), iteration="5")
    assert dump.iterations == {"0": "5"}
    assert all(t.path.split(os.sep)[-2] == "iteration_5" for op in dump.ops for t in op.tensors())


def test_bad_names_are_problems_and_nothing_is_written(dump_root):
    root, _ = dump_root
    bad = root / "Net" / "device_0" / "iteration_0" / "Default--Add-op3_output_0_shape_2_Float99_DefaultFormat.bin"
    bad.write_bytes(b"\0" * 8)
    before = sorted((str(p), p.stat().st_mtime_ns) for p in root.rglob("*"))
    dump = open_dump(str(root))
    for op in dump.ops:
        for t in op.tensors():
            if t.problem is None:
                np.asarray(t.array()).sum()
    assert [p.path for p in dump.problems] == [str(bad)]
    assert "does not follow" in say(dump.problems[0].reason)
    assert sorted((str(p), p.stat().st_mtime_ns) for p in root.rglob("*")) == before


def test_npy_dumps_are_not_taken_for_bin_dumps():
    dump_a = FIXTURES / "mindspore-2.10-cpu" / "dumps" / "A"
    if not dump_a.is_dir():
        pytest.skip(f"shared fixtures absent: {dump_a}")
    assert not looks_like(str(dump_a))
    assert detect(str(dump_a)) == "mindspore-npy"


def test_kind_of_names(dump_root):
    root, _ = dump_root
    kinds = {op.name: op.kind for op in open_dump(str(root)).ops}
    assert kinds[CONV] == KERNEL and kinds["conv1.weight"] == PARAMETER and kinds["cst3"] == CONSTANT


def test_several_graphs_share_one_iteration_folder(tmp_path):
    device = tmp_path / "Net" / "device_0"
    make_dump(device, with_ir=False)
    orders = device / "execution_order"
    (orders / "ms_execution_order_graph_0.csv").write_text("\n".join([TRANS, RELU]) + "\n")
    (orders / "ms_execution_order_graph_1.csv").write_text("\n".join([CONV, MOD, CAST]) + "\n")
    dump = open_dump(str(tmp_path))
    assert dump.graphs == ["0", "1"]
    assert [(op.graph, op.name) for op in dump.kernels] == [
        ("0", TRANS),
        ("0", RELU),
        ("1", CONV),
        ("1", MOD),
        ("1", CAST),
    ]
    only = open_dump(str(tmp_path), graph="1")
    assert [op.name for op in only.kernels] == [CONV, MOD, CAST] and only.iterations == {"1": "0"}
    with pytest.raises(DumpError, match="graphs here: 0, 1"):
        open_dump(str(tmp_path), graph="4")
