"""CANN raw dumps read without CANN: files written by tests/cann_encode.py in both layouts, with many dtypes
and device layouts, damaged variants, overflow records, mapping.csv names and the dump trees; every decoded
tensor is checked against the array it was encoded from."""

from __future__ import annotations

import json
import os
import stat

import numpy as np
import pytest
from helpers.cann_encode import (
    RawOp,
    Tensor,
    encode,
    file_name,
    ops_for_dtypes,
    ops_for_layouts,
    step_folder,
    values,
    write,
)

from dumptui.core.formats import detect, open_dump
from dumptui.core.formats.cann_file import RawLayout, RawNameStyle
from dumptui.core.io.errors import DumpError
from dumptui.core.io.fault import Fault, Flaw
from dumptui.core.model.dump import NameSource
from dumptui.core.model.reason import Why
from dumptui.report.reasons import say, say_all


def check_every_tensor(dump, ops: list[RawOp]) -> int:
    """Each op's tensors, read through the dump, equal the arrays they were encoded from."""
    by_name = {op.file_name: op for op in dump.ops}
    checked = 0
    for raw in ops:
        op = by_name[raw.op_name]
        for io, tensors in (("input", raw.inputs), ("output", raw.outputs)):
            for slot, t in enumerate(tensors):
                ref = (op.inputs if io == "input" else op.outputs)[slot]
                assert ref.problem is None, (raw.op_name, io, slot, say(ref.problem))
                got = np.asarray(ref.array())
                assert got.shape == t.value.shape
                want = t.value.astype(np.float32) if t.dtype == "bfloat16" else t.value
                assert got.dtype == want.dtype and np.array_equal(got, want), (raw.op_name, io, slot)
                assert np.array_equal(ref.read(), want.reshape(-1))
                assert np.array_equal(np.concatenate(list(ref.chunks(7))), want.reshape(-1))
                checked += 1
    return checked


@pytest.mark.parametrize("layout", ["current", "whole"])
def test_every_dtype_and_layout_decodes_to_the_original(tmp_path, layout):
    ops = ops_for_dtypes() + ops_for_layouts()
    folder = step_folder(tmp_path)
    for op in ops:
        write(folder, op, layout)
    assert detect(str(tmp_path)) == "cann-raw"
    dump = open_dump(str(tmp_path))
    assert not dump.problems
    assert check_every_tensor(dump, ops) == 2 * len(ops) + 1
    conv = next(op for op in dump.ops if op.file_name == "Default_conv1-Conv2d_Conv2D-op5")
    assert conv.inputs[0].fmt == "NC1HWC0" and conv.inputs[0].shape == (1, 20, 3, 5)
    assert conv.inputs[1].fmt == "FRACTAL_Z" and conv.inputs[1].dtype == "float16"
    bf16 = next(op for op in dump.ops if op.file_name == "Default_id2-Identity_Identity-op2")
    assert bf16.outputs[0].dtype == "bfloat16"  # shown as bf16, widened for comparison
    assert dump.variant is not None and dump.variant.code is Why.CANN_RAW_VARIANT
    tree, names, layouts, graph, _fused = dump.variant.args
    assert (tree, names, graph) == ("acl", (RawNameStyle.CURRENT,), None)
    assert layouts == ((RawLayout.WHOLE_FILE,) if layout == "whole" else (RawLayout.LENGTH_PREFIXED,))
    assert [op.timestamp for op in dump.ops] == sorted(op.timestamp for op in dump.ops)  # timestamps: the order


def test_damaged_files_are_named_and_the_rest_loads(tmp_path):
    folder = step_folder(tmp_path)
    good = ops_for_layouts()
    for op in good:
        write(folder, op)
    x = values((1, 4, 2, 2), "float32")
    truncated = RawOp("Add", "Default_Add-op0", [Tensor(x)], [Tensor(x)], timestamp=1700000000002000)
    with open(os.path.join(folder, file_name(truncated)), "wb") as fh:
        fh.write(encode(truncated)[:-5])
    longer = RawOp("Mul", "Default_Mul-op0", [Tensor(x)], [Tensor(x)], timestamp=1700000000002001)
    with open(os.path.join(folder, file_name(longer)), "wb") as fh:
        fh.write(encode(longer) + b"tail")
    with open(os.path.join(folder, "Sub.Default_Sub-op0.1.0.1700000000002002"), "wb") as fh:
        fh.write(b"\xff" * 64)
    strings = RawOp(
        "Pack",
        "Default_Pack-op0",
        [Tensor(x, data_type_code=13)],
        [Tensor(x, data_type_code=29)],
        timestamp=1700000000002003,
    )
    write(folder, strings)
    no_conversion = RawOp(
        "Conv2D",
        "Default_Conv2D-op9",
        [Tensor(values((16, 16, 1, 1), "float16"), "float16", "NCHW")],
        timestamp=1700000000002004,
    )
    write(folder, no_conversion)
    _patch_format(folder, no_conversion, 25)  # C1HWNCoC0: no conversion here
    bad_shape = RawOp(
        "Relu",
        "Default_Relu-op0",
        [Tensor(values((1, 20, 3, 5), "float16"), "float16", "NC1HWC0", original_shape=(1, 40, 3, 5))],
        timestamp=1700000000002005,
    )
    write(folder, bad_shape)
    dump = open_dump(str(tmp_path))
    errors = {os.path.basename(p.path): say(p.reason) for p in dump.problems if p.severity == "error"}
    assert "truncated" in errors["Add.Default_Add-op0.1.0.1700000000002000"]
    assert "8 + header" in errors["Mul.Default_Mul-op0.1.0.1700000000002001"]
    assert "not a raw dump file" in errors["Sub.Default_Sub-op0.1.0.1700000000002002"]
    by_name = {op.file_name: op for op in dump.ops}
    assert "Default_Sub-op0" not in by_name  # nothing to show of a file we cannot parse
    assert say(by_name["Default_Add-op0"].inputs[0].problem).startswith("damaged")
    assert "data type STRING is not decoded" in say(by_name["Default_Pack-op0"].inputs[0].problem)
    unsettled = by_name["Default_Pack-op0"].outputs[0]
    assert unsettled.dtype == "data type 29"  # a name; why it is not decoded is its problem's
    assert unsettled.problem == Fault(Flaw.DTYPE_NOT_DECODED, (Fault(Flaw.DTYPE_UNSETTLED, (29,)),))
    assert "data type 29 (CANN releases disagree" in say(unsettled.problem)
    assert "C1HWNCoC0 has no conversion" in say(by_name["Default_Conv2D-op9"].inputs[0].problem)
    assert "is not NC1HWC0 of the original shape [1, 40, 3, 5]" in say(by_name["Default_Relu-op0"].inputs[0].problem)
    assert check_every_tensor(dump, good) == 11


def _patch_format(folder: str, op: RawOp, fmt: int) -> None:
    """Rewrite a file with another format number for its first input (a layout we do not convert)."""
    from dumptui.core.formats.cann_proto import parse_dump_data

    path = os.path.join(folder, file_name(op))
    with open(path, "rb") as fh:
        data = fh.read()
    length = int.from_bytes(data[:8], "little")
    msg = parse_dump_data(data[8 : 8 + length])
    msg.input[0].format = fmt
    header = msg.SerializeToString()
    with open(path, "wb") as fh:
        fh.write(len(header).to_bytes(8, "little") + header + data[8 + length :])


def test_overflow_records_are_listed_not_compared(tmp_path):
    folder = step_folder(tmp_path)
    write(folder, ops_for_layouts()[0])
    write(folder, RawOp("Opdebug", "Node_OpDebug", [], [Tensor(np.zeros(8, np.float32))], timestamp=1700000000009999))
    dump = open_dump(str(tmp_path))
    assert [op.op_type for op in dump.ops] == ["Conv2D"]
    overflow = [p for p in dump.problems if "Opdebug" in p.path]
    assert len(overflow) == 1 and "overflow" in say(overflow[0].reason) and overflow[0].severity == "warning"
    assert any("overflow record" in n for n in say_all(dump.notes))


def test_name_variants_mapping_and_dumpdata_op_name(tmp_path):
    folder = step_folder(tmp_path)
    x = values((4,), "float32")
    old = RawOp("Relu", "Default_Relu-op1", [Tensor(x)], [Tensor(x)], timestamp=1700000000003000)
    with open(os.path.join(folder, "Relu.Default_Relu-op1.3.1700000000003000"), "wb") as fh:  # no stream id
        fh.write(encode(old))
    ffts = RawOp("Add", "Default_Add-op2", [Tensor(x)], [Tensor(x)], timestamp=1700000000003001)
    with open(os.path.join(folder, file_name(ffts) + ".AIC.0.1.0"), "wb") as fh:
        fh.write(encode(ffts))
    long_name = "Default_" + "very-Long_" * 30 + "Mul-op3"
    numbered = RawOp(
        "Mul",
        long_name,
        [Tensor(x)],
        [Tensor(x)],
        timestamp=1700000000003002,
        full_name="Default/" + "very-Long/" * 30 + "Mul-op3",
    )
    with open(os.path.join(folder, "123456"), "wb") as fh:
        fh.write(encode(numbered))
    with open(os.path.join(folder, "mapping.csv"), "w") as fh:
        fh.write(f"123456,{file_name(numbered)}\n")
    dump = open_dump(str(tmp_path))
    assert not dump.problems
    names = {op.name: op for op in dump.ops}
    assert set(names) == {"Default_Relu-op1", "Default_Add-op2", numbered.full_name}
    assert names[numbered.full_name].name_source is NameSource.DUMPDATA
    assert dump.variant is not None and set(dump.variant.args[1]) == set(RawNameStyle)  # every style of name


def test_tree_levels_and_selection(tmp_path):
    op = ops_for_layouts()[3]
    for device, step in (("0", "0"), ("0", "1"), ("1", "0")):
        write(step_folder(tmp_path, device=device, step=step), op)
    with pytest.raises(DumpError, match=r"3 dump folders .*choose with --rank"):
        open_dump(str(tmp_path))
    dump = open_dump(str(tmp_path), rank="0", iteration="1")
    assert (
        dump.rank == "0" and dump.iterations == {"1": "1"} and dump.root.endswith(os.path.join("0", "Net.0", "1", "1"))
    )
    assert open_dump(str(tmp_path / "20260101120000" / "1")).rank == "1"
    with pytest.raises(DumpError, match="none of the 3 dump folders"):
        open_dump(str(tmp_path), rank="7")


def test_read_only_dump_is_read_and_left_untouched(tmp_path):
    folder = step_folder(tmp_path)
    ops = ops_for_layouts()
    for op in ops:
        write(folder, op, "whole" if op.op_type == "Conv3D" else "current")
    before = sorted(os.listdir(folder))
    paths = [os.path.join(folder, n) for n in before]
    for p in paths:
        os.chmod(p, stat.S_IRUSR)
    os.chmod(folder, stat.S_IRUSR | stat.S_IXUSR)
    try:
        dump = open_dump(str(tmp_path))
        assert check_every_tensor(dump, ops) == 11
        assert sorted(os.listdir(folder)) == before
    finally:
        os.chmod(folder, stat.S_IRWXU)


def test_inspect_one_raw_file(tmp_path):
    from helpers.common import run_cli

    op = ops_for_layouts()[0]
    path = write(step_folder(tmp_path), op)
    code, out, err = run_cli("inspect", path, "--json", "-n", "3")
    info = json.loads(out)
    assert code == 0, err
    assert info["kind"] == "CANN raw dump file (length-prefixed header)"
    assert info["fields"]["input.1"] == "float16 [33, 20, 3, 3] from FRACTAL_Z [18, 3, 16, 16]"
    assert info["shape"] == [1, 33, 3, 5] and info["dtype"] == "float16"
    assert info["first_values"] == [float(v) for v in op.outputs[0].value.reshape(-1)[:3]]
    with open(path, "r+b") as fh:
        fh.truncate(os.path.getsize(path) - 2)
    code, out, _ = run_cli("inspect", path)
    assert code == 2 and "truncated" in out


def test_worker_processes_read_device_layouts_too(tmp_path):
    """Full compares of big dumps run in spawned processes that rebuild each tensor from its Layout: the
    device layout and the embedded payload must travel with it."""
    from dumptui.core.compare.metrics import ElementTolerance, compare_tensors
    from dumptui.core.compare.processes import computed_on
    from dumptui.core.io.executor import LocalProcesses

    ops = ops_for_layouts()
    write(step_folder(tmp_path / "a"), ops[0], "current")
    write(step_folder(tmp_path / "b"), ops[0], "whole")
    a, b = open_dump(str(tmp_path / "a")).ops[0], open_dump(str(tmp_path / "b")).ops[0]
    jobs = [(a.outputs[0], b.outputs[0], ElementTolerance()), (a.inputs[1], b.inputs[1], ElementTolerance())]
    with LocalProcesses(2) as ex:
        results = {idx: (st, err) for idx, st, err in computed_on(ex, jobs, kl=False)}
    for idx, (x, y, tol) in enumerate(jobs):
        st, err = results[idx]
        assert err is None and st.bitwise_equal and st.n == x.size
        assert st.n == compare_tensors(x, y, tol, kl=False).n


def test_mindspore_async_dump_of_raw_files(tmp_path):
    """MindSpore on Ascend writes raw files in its rank tree unless told to write .npy: names and dataflow
    come from its execution-order csv and graph file, as for its .npy dumps."""
    from dumptui.core.demo.dumpwriter import DumpWriter

    x = values((1, 20, 3, 5), "float16")
    writer = DumpWriter(str(tmp_path / "rank_0"), device="Ascend")
    conv, relu = "Default/conv1-Conv2d/Conv2D-op0", "Default/relu-ReLU/ReLU-op0"
    first = writer.node("Conv2D", conv, ["%para1_x"], [("Float16", x.shape)], [("Float16", x.shape)])
    writer.node("ReLU", relu, [first], [("Float16", x.shape)], [("Float16", x.shape)])
    writer.finish()
    for ts, name in ((1, conv), (2, relu)):
        write(
            writer.data_dir,
            RawOp(
                name.rsplit("/", 1)[1].split("-")[0],
                name.replace("/", "_"),
                [Tensor(x, "float16", "NC1HWC0")],
                [Tensor(x, "float16", "NC1HWC0")],
                timestamp=ts,
            ),
        )
    assert detect(str(tmp_path)) == "cann-raw"
    dump = open_dump(str(tmp_path))
    assert [op.name for op in dump.ops] == [conv, relu] and dump.rank == "0" and dump.iterations == {"0": "0"}
    assert dump.variant is not None and dump.variant.args[0] == "mindspore"  # the tree: a MindSpore async dump
    assert dump.graph_source.endswith(".ir")
    assert list(dump.graph.predecessors(relu)) == [conv]
    assert np.array_equal(dump.op(relu).inputs[0].array(), x)
