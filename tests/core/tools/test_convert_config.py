"""`dumptui convert` (raw dump -> .npy that plain np.load reads, equal to the original tensors) and
`dumptui config acl|mindspore` (acl.json with the MindIR graph name, data_dump.json)."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from helpers.cann_encode import RawOp, Tensor, encode, file_name, ops_for_dtypes, ops_for_layouts, step_folder, write
from helpers.common import SHARED, run_here

from dumptui.core.formats.mindir import ModelProto

# the commands run in this process (what they answer is the question here, not how a process starts),
# with one pool of worker processes for the module
pytestmark = pytest.mark.usefixtures("commands_share_one_pool")

MINDIR = SHARED / "mindir" / "tiny_mlp.mindir"


def expected_files(ops: list[RawOp]) -> dict[str, np.ndarray]:
    """{file name convert must write: the array np.load must give back}."""
    out = {}
    for op in ops:
        for io, tensors in (("input", op.inputs), ("output", op.outputs)):
            for slot, t in enumerate(tensors):
                shape = "x".join(map(str, t.value.shape)) or "scalar"
                value = t.value.astype(np.float32) if t.dtype == "bfloat16" else t.value
                out[f"{file_name(op)}.{io}.{slot}.{shape}.{t.dtype}.npy"] = value
    return out


def test_convert_writes_what_np_load_reads_back(tmp_path):
    ops = ops_for_dtypes() + ops_for_layouts()
    folder = step_folder(tmp_path / "raw")
    for i, op in enumerate(ops):
        write(folder, op, "whole" if i % 3 == 0 else "current")
    with open(os.path.join(folder, "Add.Default_Add-op0.1.0.1700000000009000"), "wb") as fh:
        fh.write(encode(RawOp("Add", "Default_Add-op0", [Tensor(np.ones(4, np.float32))]))[:-3])
    write(folder, RawOp("Opdebug", "Node_OpDebug", [], [Tensor(np.zeros(2, np.float32))], timestamp=1700000000009001))
    out = tmp_path / "npy"
    code, stdout, stderr = run_here("convert", tmp_path / "raw", "-o", out)
    assert code == 2, stderr  # one tensor could not be converted: said, and the exit says it
    want = expected_files(ops)
    assert sorted(os.listdir(out)) == sorted(want)
    for name, value in want.items():
        got = np.load(out / name)  # plain np.load: no pickle, no dumptui
        assert got.dtype == value.dtype and np.array_equal(got, value), name
    assert f"converted {len(want)} tensors" in stdout
    assert "FRACTAL_NZ 2, FRACTAL_Z 1, HWCN 1, NC1HWC0 2, NC1HWC0_C04 1, NDC1HWC0 1" in stdout
    assert "bfloat16 saved as float32" in stdout
    assert "Add.Default_Add-op0.1.0.1700000000009000" in stdout and "truncated" in stdout
    assert "overflow records" in stdout and "Opdebug.Node_OpDebug" in stdout


def test_convert_keeps_a_scalar_a_scalar(tmp_path):
    """A 0-d tensor (a Mul's scalar operand) is written 0-d, as np.save would write it: 41 of 151 files of a
    CANN raw dump came out as shape (1,)."""
    scalar = np.array(2.5, np.float32)
    op = RawOp(
        "Mul", "Default_Mul-op0", [Tensor(scalar), Tensor(np.ones(3, np.float32))], [Tensor(np.ones(3, np.float32))]
    )
    write(step_folder(tmp_path / "raw"), op)
    code, stdout, stderr = run_here("convert", tmp_path / "raw", "-o", tmp_path / "npy")
    assert code == 0, stderr
    (name,) = [f for f in os.listdir(tmp_path / "npy") if ".input.0." in f]
    got = np.load(tmp_path / "npy" / name)
    assert got.shape == () and got == scalar and ".input.0.scalar." in name


def test_convert_long_names_numbered_with_a_mapping(tmp_path):
    long_name = "Default_" + "block-Block_" * 25 + "ReLU-op0"
    op = RawOp("ReLU", long_name, [Tensor(np.arange(3, dtype=np.float32))], timestamp=1700000000000005)
    folder = step_folder(tmp_path / "raw")  # too long for the file system: CANN numbers it too
    (tmp_path / "raw" / folder / "424242").write_bytes(encode(op))
    (tmp_path / "raw" / folder / "mapping.csv").write_text(f"424242,{file_name(op)}\n")
    code, stdout, _ = run_here("convert", tmp_path / "raw", "-o", tmp_path / "npy")
    assert code == 0 and "numbered" in stdout
    rows = (tmp_path / "npy" / "mapping.csv").read_text().splitlines()
    assert rows == [f"1,{file_name(op)}.input.0.3.float32.npy"]
    assert np.array_equal(np.load(tmp_path / "npy" / "1.npy"), np.arange(3, dtype=np.float32))


def test_convert_never_writes_inside_the_dump(tmp_path):
    write(step_folder(tmp_path / "raw"), ops_for_layouts()[0])
    before = sorted(p for p, _d, _f in os.walk(tmp_path / "raw"))
    code, _, stderr = run_here("convert", tmp_path / "raw", "-o", tmp_path / "raw" / "converted")
    assert code == 2 and "refusing to write inside the dump folder" in stderr
    assert sorted(p for p, _d, _f in os.walk(tmp_path / "raw")) == before
    code, _, stderr = run_here("convert", tmp_path / "nothing-here", "-o", tmp_path / "npy")
    assert code == 2 and "nothing-here: no such file or folder" in stderr


def test_config_acl_from_the_real_mindir(tmp_path):
    if not MINDIR.exists():
        pytest.skip(f"shared fixtures absent ({MINDIR} not found): real MindIR test skipped")
    dump_path = tmp_path / "acl_dump"
    code, stdout, stderr = run_here(
        "config", "acl", "--mindir", MINDIR, "--dump-path", dump_path, "-o", tmp_path / "acl.json"
    )
    assert code == 0
    assert "graph name: 202_163___main___TinyMLP_construct_62" in stdout
    config = json.loads((tmp_path / "acl.json").read_text())
    assert config == {
        "dump": {
            "dump_list": [{"model_name": "202_163___main___TinyMLP_construct_62.0"}],
            "dump_path": str(dump_path),
            "dump_mode": "all",
        }
    }
    assert "create it before the run" in stderr and "does not exist yet: mkdir -p" in stderr


def test_config_acl_from_a_mindir_built_here(tmp_path):
    model = ModelProto(ir_version="0.1.1", producer_name="MindSpore", model_version="2.10.0")
    for k in range(3):
        model.graph.node.add(name=f"Default/fc{k}-Dense/MatMul-op{k}", op_type="MatMul", input=[f"x{k}"])
    model.graph.name = "4855_2425_1_construct_wrapper.101"  # written after the nodes, as MindSpore does
    path = tmp_path / "net.mindir"
    path.write_bytes(model.SerializeToString())
    (tmp_path / "dump").mkdir()
    code, stdout, stderr = run_here(
        "config",
        "acl",
        "--mindir",
        path,
        "--dump-path",
        tmp_path / "dump",
        "--ops",
        "Default/fc0-Dense/MatMul-op0",
        "--mode",
        "output",
        "-o",
        tmp_path / "a.json",
    )
    assert code == 0 and "graph name: 4855_2425_1_construct_wrapper.101" in stdout
    entry = json.loads((tmp_path / "a.json").read_text())["dump"]
    assert entry["dump_list"] == [
        {"model_name": "4855_2425_1_construct_wrapper.101.0", "layer": ["Default/fc0-Dense/MatMul-op0"]}
    ]
    assert entry["dump_mode"] == "output" and "exists" in stderr


def test_config_acl_bad_input(tmp_path):
    bad = tmp_path / "not.mindir"
    bad.write_bytes(b"\xff\xfe garbage")
    code, _, stderr = run_here("config", "acl", "--mindir", bad, "--dump-path", tmp_path, "-o", tmp_path / "a.json")
    assert code == 2 and str(bad) in stderr and "not a MindIR file" in stderr
    code, _, stderr = run_here("config", "acl", "--mindir", bad, "--dump-path", "relative/dir")
    assert code == 2 and "must be an absolute path" in stderr
    assert not (tmp_path / "a.json").exists()


def test_config_mindspore(tmp_path):
    code, stdout, _ = run_here(
        "config",
        "mindspore",
        "--kernels",
        "Default/conv1-Conv2d/Conv2D-op0",
        "--path",
        tmp_path / "ms",
        "--trans-flag",
        "false",
        "-o",
        tmp_path / "d.json",
    )
    assert code == 0 and "MINDSPORE_DUMP_CONFIG=" in stdout
    config = json.loads((tmp_path / "d.json").read_text())
    common = config["common_dump_settings"]
    assert common["dump_mode"] == 1 and common["kernels"] == ["Default/conv1-Conv2d/Conv2D-op0"]
    assert common["path"] == str(tmp_path / "ms") and config["e2e_dump_settings"]["trans_flag"] is False
    code, _, _ = run_here("config", "mindspore", "--path", tmp_path / "ms", "-o", tmp_path / "all.json")
    assert code == 0 and json.loads((tmp_path / "all.json").read_text())["common_dump_settings"]["dump_mode"] == 0
