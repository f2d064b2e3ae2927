"""The regression corpus of issue 8: every class of damage a fuzz run of the four headless commands found,
each one defect in an otherwise valid dump. Each test asserts the exit code (2 for unreadable input, never 1
and never a traceback; or 0 with the damage listed) and that the message names the path and the reason.

Runs `dumptui` in this process (run_main) where it cannot block; what could block or needs a strict stdout
runs in a subprocess with a timeout (test_damaged_io.py)."""

from __future__ import annotations

import json
import shutil
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from helpers.damage import (
    bin_dump,
    clean_pair,
    graph_output,
    marker_pickle,
    msprobe_dump,
    msprobe_tree,
    npy_bytes,
    pt_file_bytes,
    replace_payload_header,
    run_main,
    same_pair,
    snapshot,
    standard_header,
    tensor_file,
    tensor_pickle,
)

from dumptui.core.formats import open_dump
from dumptui.core.formats.torchpt import pt_layout
from dumptui.core.io.npy import npy_layout
from dumptui.report.fmt import clean
from dumptui.report.reasons import say

# many commands run in this process: one pool of worker processes for the module, not one per command
pytestmark = pytest.mark.usefixtures("commands_share_one_pool")

INNER = "block0-ResidualBlock_Add-op0"  # an op in the middle of the demo net


def assert_named(text: str, path: Path | str, *reason: str) -> None:
    """The output names the path (as a terminal shows it) and every part of the reason."""
    assert clean(str(path)) in text, f"{path} not named in:\n{text}"
    for part in reason:
        assert part in text, f"{part!r} not in:\n{text}"
    assert "Traceback" not in text


@pytest.fixture
def pair(tmp_path) -> tuple[str, str]:
    return same_pair(tmp_path)


# ------------------------------------------------------------------------------------------ npy headers

NPY_HEADERS = {
    "dimension beyond int64": (standard_header("<f4", False, f"({2**70},)"), "is beyond"),
    "negative dimension": (standard_header("<f4", False, "(-4, 16)"), "below 0"),
    "float dimension": (standard_header("<f4", False, "(2.5, 4)"), "not an integer"),
    "dict dimension": (standard_header("<f4", False, "({'a': 1}, 4)"), "not an integer"),
    "shape is a dict": (standard_header("<f4", False, "{'a': 1}"), "not a list of dimensions"),
    "33 dimensions": (standard_header("<f4", False, "(" + "1, " * 33 + ")"), "at most 32"),
    "deeply nested expression": ("{'descr': " + "(" * 5000 + ")" * 5000 + "}", "nested deeper"),
    "unicode dtype": (standard_header("<U", False, "(64,)"), "not a numeric tensor dtype"),
    "object dtype": (standard_header("|O", False, "(64,)"), "not a numeric tensor dtype"),
    "structured dtype": ("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (64,), }", "structured"),
    "fortran_order not a boolean": ("{'descr': '<f4', 'fortran_order': 'yes', 'shape': (64,), }", "fortran_order"),
    "not a dict": ("[1, 2, 3]", "unreadable npy header"),
}


@pytest.mark.parametrize("case", sorted(NPY_HEADERS))
def test_npy_header_damage_is_named_and_the_rest_compares(pair, case):
    ref, target = pair
    header, reason = NPY_HEADERS[case]
    f = tensor_file(target, INNER)
    replace_payload_header(f, header)
    code, out, err = run_main("info", target)
    assert code == 0
    assert_named(out, f, "unreadable", reason)
    code, out, err = run_main("compare", ref, target)
    assert code == 2, "nothing diverges where it could be read, but not everything could: undecided"
    assert_named(out, f, reason, "Undecided", "1 tensor pair not compared")
    assert "equal" in out  # the rest compared


def test_npy_header_length_and_truncation(tmp_path):
    huge = tmp_path / "huge.npy"
    huge.write_bytes(b"\x93NUMPY\x02\x00" + (1 << 31).to_bytes(4, "little") + b"{")
    assert "npy header of 2147483648 B" in say(npy_layout(str(huge)).problem)
    cut = tmp_path / "cut.npy"
    cut.write_bytes(npy_bytes(standard_header("<f4", False, "(8,)"))[:20])
    assert say(npy_layout(str(cut)).problem) == "truncated npy header"
    magic = tmp_path / "magic.npy"
    magic.write_bytes(b"PK\x03\x04" + bytes(60))
    assert "bad magic" in say(npy_layout(str(magic)).problem)


def test_fortran_order_payload_is_compared_in_index_order(pair):
    """The same values stored in Fortran order compare equal element for element (the issue saw cos 0.150)."""
    ref, target = pair
    f = tensor_file(target, INNER)
    values = np.load(f)
    assert values.ndim > 1
    np.save(f, np.asfortranarray(values))
    assert npy_layout(str(f)).fortran
    code, out, err = run_main("compare", ref, target, "--json")
    assert code == 0, err
    doc = json.loads(out)
    verdicts = {
        t["verdict"]
        for o in doc["ops"]
        for t in o["inputs"] + o["outputs"]
        if t["target"] and t["target"]["path"] == str(f)
    }
    assert verdicts == {"equal"}


def test_half_payload_is_damage_never_repaired(pair):
    """A float32 payload cut to exactly half is truncated, not "float16": only the known bug is repaired."""
    ref, target = pair
    f = tensor_file(target, INNER)
    data = f.read_bytes()
    _dt, _shape, _fortran, offset = __import__("dumptui.core.io.npy", fromlist=["read_header"]).read_header(str(f))
    f.write_bytes(data[: offset + (len(data) - offset) // 2])
    lay = npy_layout(str(f))
    assert lay.repaired is None and say(lay.problem).startswith("truncated")
    code, out, err = run_main("compare", ref, target)
    assert code == 2
    assert_named(out, f, "truncated: header declares float32")
    assert "repaired" not in out


def test_float16_header_over_float32_payload_is_the_one_repair(tmp_path):
    values = np.linspace(-2, 2, 24, dtype=np.float32).reshape(2, 3, 4)
    f = tmp_path / "bug.npy"
    f.write_bytes(npy_bytes(standard_header("<f2", False, "(2, 3, 4)"), values.tobytes()))
    lay = npy_layout(str(f))
    assert lay.problem is None and "float16-header-over-float32-payload" in say(lay.repaired)
    from dumptui.core.model.dump import TensorRef

    np.testing.assert_array_equal(TensorRef(str(f), "output", 0).read(), values.reshape(-1))
    # three times the declared size is no known bug: damage
    f.write_bytes(npy_bytes(standard_header("<f2", False, "(2, 3, 4)"), values.tobytes() + bytes(48)))
    assert npy_layout(str(f)).repaired is None and say(npy_layout(str(f)).problem)


# ------------------------------------------------------------------------------------------ wrong answers


def test_unreadable_graph_output_on_a_diverging_pair_still_finds_the_culprit(tmp_path):
    info = clean_pair(tmp_path)
    out_file = graph_output(info.target)
    out_file.write_bytes(out_file.read_bytes()[:100])
    code, out, err = run_main("bisect", info.ref, info.target, "--json")
    assert code == 1, err
    doc = json.loads(out)
    assert doc["culprit"]["ref"] == info.planted
    assert any("unreadable" in n and "Sigmoid" in n for n in doc["notes"])
    assert doc["damaged_tensors"][0]["path"] == str(out_file)
    code, out, err = run_main("compare", info.ref, info.target)
    assert code == 1 and clean(info.planted) in out


def test_unreadable_graph_output_without_divergence_is_undecided_not_no_divergence(pair):
    ref, target = pair
    out_file = graph_output(target)
    out_file.write_bytes(out_file.read_bytes()[:100])
    code, out, err = run_main("bisect", ref, target)
    assert code == 2, out
    assert "No divergence" not in out
    assert_named(out, out_file, "Undecided", "cannot be read", "truncated npy header")
    code, out, err = run_main("bisect", ref, target, "--json")
    doc = json.loads(out)
    assert code == doc["exit"] == 2 and doc["culprit"] is None and doc["undecided"]


def test_no_pairs_at_all_is_nothing_to_compare(tmp_path, pair):
    ref, _target = pair
    probe = msprobe_dump(tmp_path / "probe")
    for cmd in ("bisect", "compare"):
        code, out, err = run_main(cmd, ref, probe)
        assert code == 2 and "nothing to compare" in err and "No divergence" not in out
        assert clean(ref) in err and str(probe) in err
    empty = msprobe_tree(tmp_path / "empty", {"task": "tensor", "data": {}})
    code, out, err = run_main("bisect", probe, empty)
    assert code == 2 and "nothing to compare" in err and "holds 0 ops" in err


def test_pt_payload_failures_are_in_the_damaged_list_and_info(tmp_path):
    """A .pt whose storage member is shorter than the tensor it declares: unreadable, listed by path."""
    ref = msprobe_dump(tmp_path / "ref", fmt="pt")
    target = msprobe_dump(tmp_path / "target", fmt="pt")
    f = target / "step0" / "rank0" / "dump_tensor_data" / "mul.out0.pt"
    f.write_bytes(pt_file_bytes(tensor_pickle(numel=8, size=(8,)), bytes(8)))
    code, out, err = run_main("info", target)
    assert code == 0 and "every tensor file is readable" not in out
    assert_named(out, f, "storage declares 32 B, its zip member holds 8 B")
    code, out, err = run_main("compare", ref, target, "--json")
    doc = json.loads(out)
    assert code == 2 and [d["path"] for d in doc["damaged_tensors"]] == [str(f)]


# ------------------------------------------------------------------------------------------ msprobe


def _shape_of_relu_output(value):
    def mutate(doc):
        doc["data"]["Functional.relu.0.forward"]["output"][0]["shape"] = value
        return doc

    return mutate


MSPROBE_SHAPES = {
    "huge int": (10**30, "not a list of dimensions"),
    "Infinity": (float("inf"), "not a list of dimensions"),
    "a number": (8, "not a list of dimensions"),
    "a list of lists": ([[8]], "not an integer"),
    "negative": ([-8], "below 0"),
    "float": ([8.0], "not an integer"),
    "dict": ({"n": 8}, "not a list of dimensions"),
    "int64 overflow": ([2**63, 2], "is beyond"),
    "a string": ("8", "not a list of dimensions"),
}


@pytest.mark.parametrize("case", sorted(MSPROBE_SHAPES))
def test_msprobe_bad_shapes_are_unreadable_never_equal(tmp_path, case):
    value, reason = MSPROBE_SHAPES[case]
    ref = msprobe_dump(tmp_path / "ref", mutate=_shape_of_relu_output(value))
    target = msprobe_dump(tmp_path / "target", mutate=_shape_of_relu_output(value))
    dump_json = ref / "step0" / "rank0" / "dump.json"
    code, out, err = run_main("info", ref)
    assert code == 0
    assert_named(out, dump_json, "Functional.relu.0.forward output.0: shape", reason)
    code, out, err = run_main("compare", ref, target, "--json")
    assert code == 2, err
    doc = json.loads(out)
    relu = next(o for o in doc["ops"] if o["ref"] == "Functional.relu.0.forward")
    assert relu["outputs"][0]["verdict"] == "unreadable"
    assert reason in relu["outputs"][0]["reason"]


@pytest.mark.parametrize(
    "doc, reason",
    [
        ([1, 2, 3], "the document is a list, not an object"),
        ({"task": "tensor", "data": [1, 2]}, "its data is a list, not an object of calls"),
        ({"task": "tensor", "data": "x"}, "its data is a string"),
        (b"[" * 100_000 + b"]" * 100_000, "nested deeper than 64 levels"),
        (b'{"data": {' + b'"a": {' * 80 + b"}" * 80 + b"}}", "nested deeper than 64 levels"),
        (b"\xff\xfe not json", "not valid JSON"),
    ],
    ids=["top level list", "data list", "data string", "100k-deep", "too deep", "not json"],
)
def test_msprobe_unreadable_documents(tmp_path, doc, reason):
    root = msprobe_tree(tmp_path / "d", doc)
    dump_json = root / "step0" / "rank0" / "dump.json"
    code, out, err = run_main("info", root)
    assert code == 2 and out == ""
    assert_named(err, dump_json, reason)


def test_msprobe_bad_fields_make_one_tensor_unreadable(tmp_path):
    def mutate(doc):
        calls = doc["data"]
        calls["Functional.relu.0.forward"]["output"][0]["data_name"] = 12
        calls["Tensor.mul.1.forward"]["output"][0]["data_name"] = "../../../etc/passwd"
        calls["Tensor.mul.1.forward"]["input_args"][0]["Max"] = 10**400
        calls["Module.fc.Linear.forward.0"] = {"parameters": [1, 2]}
        return doc

    root = msprobe_dump(tmp_path / "d", mutate=mutate)
    dump_json = root / "step0" / "rank0" / "dump.json"
    code, out, err = run_main("info", root)
    assert code == 0
    assert_named(out, dump_json, "data_name is a number", "is not a file name in dump_tensor_data")
    assert "parameters of Module.fc.Linear.forward.0 are a list, not an object" in out


def test_msprobe_tensor_list_replaced_by_a_value_is_named(tmp_path):
    """`output: 5` holds no record: the call's output is listed as a damaged field, not dropped unnamed."""

    def mutate(doc):
        doc["data"]["Functional.relu.0.forward"]["output"] = 5
        doc["data"]["Tensor.mul.1.forward"]["input_args"] = "x\x1b[2J"
        return doc

    root = msprobe_dump(tmp_path / "d", mutate=mutate)
    dump_json = root / "step0" / "rank0" / "dump.json"
    code, out, err = run_main("info", root)
    assert code == 0
    assert_named(out, dump_json, "output of Functional.relu.0.forward is a number (5), not a list of records")
    assert "input_args of Tensor.mul.1.forward is a string ('x\\x1b[2J'), not a list of records" in out


def test_a_stray_dump_json_deep_in_a_mindspore_dump_does_not_hide_it(pair, tmp_path):
    """Only a dump.json where an msprobe dump keeps one (the folder, rank*/, step*/rank*/) makes it msprobe: a
    stray one in a MindSpore rank tree made the whole dump "no msprobe dump.json found" (a fuzz find)."""
    from dumptui.core.formats import detect

    ref, target = pair
    (Path(target) / "rank_0" / "Net" / "dump.json").write_text("{}")
    assert detect(target) == "mindspore-npy"
    code, out, err = run_main("compare", ref, target)
    assert code == 0, err
    for i, where in enumerate(("", "rank1", "proc7", "step0/rank0", "step3/rank")):
        folder = tmp_path / f"m{i}" / where
        folder.mkdir(parents=True)
        (folder / "dump.json").write_text("{}")
        assert detect(str(tmp_path / f"m{i}")) == "msprobe", where


# ------------------------------------------------------------------------------------------ .pt


PT_CASES = {
    "numel is a string": (tensor_pickle(numel="4"), "storage size is a string"),
    "storage type is a dict": (
        tensor_pickle(pid=b"(" + b"X\x07\x00\x00\x00storage" + b"}" + b"X\x01\x00\x00\x000X\x03\x00\x00\x00cpuK\x04t"),
        "storage type is",
    ),
    "persistent id not a tuple": (tensor_pickle(pid=b"K\x07"), "unknown persistent id 7"),
    "key is an int": (tensor_pickle(key=0), "storage key is a number"),
    "key leaves the zip folder": (tensor_pickle(key="../0"), "is not a member name"),
    "size is a string": (tensor_pickle(size="abc", stride=(1,)), "tensor size is a string"),
    "size has a float": (tensor_pickle(size=(2.5,), stride=(1,)), "not an integer"),
    "size is a dict": (tensor_pickle(size={"a": 4}, stride=(1,)), "not a list of dimensions"),
    "negative size": (tensor_pickle(size=(-4,), stride=(1,)), "below 0"),
    "stride does not match": (tensor_pickle(size=(2, 2), stride=(1,)), "does not match its 2 dimensions"),
    "offset is negative": (tensor_pickle(offset=-1), "storage offset -1 is below 0"),
    "a global that runs code": (b"\x80\x02cos\nsystem\nX\x04\x00\x00\x00trueR.", "refused global os.system"),
    "object building": (b"\x80\x02}b.", "refused pickle opcode BUILD"),
    "memo index beyond the pickle": (b"\x80\x02K\x01r\xff\xff\xff\xff.", "memo index 4294967295 out of range"),
    "memo read never stored": (b"\x80\x02h\x05.", "never stored"),
    "not a pickle": (b"garbage", "unreadable .pt file"),
}


@pytest.mark.parametrize("case", sorted(PT_CASES))
def test_pt_pickle_damage_is_named(tmp_path, case):
    """Each damaged pickle in an msprobe dump of .pt files: `info` names the file and the reason."""
    data, reason = PT_CASES[case]
    root = msprobe_dump(tmp_path / "d", fmt="pt")
    f = root / "step0" / "rank0" / "dump_tensor_data" / "relu.out0.pt"
    f.write_bytes(pt_file_bytes(data, np.arange(8, dtype=np.float32).tobytes()))
    lay, _dtype = pt_layout(str(f))
    assert lay.problem is not None and reason in say(lay.problem), say(lay.problem)
    code, out, err = run_main("info", root)
    assert code == 0
    assert_named(out, f, "unreadable", reason)


def test_pt_in_a_dump_names_path_and_reason(tmp_path):
    root = msprobe_dump(tmp_path / "d", fmt="pt")
    f = root / "step0" / "rank0" / "dump_tensor_data" / "relu.out0.pt"
    f.write_bytes(pt_file_bytes(tensor_pickle(numel="4"), bytes(16)))
    code, out, err = run_main("info", root)
    assert_named(out, f, "unreadable .pt file: storage size is a string")


def test_pt_pickle_never_runs_code(tmp_path):
    marker = tmp_path / "marker"
    f = tmp_path / "evil.pt"
    f.write_bytes(pt_file_bytes(marker_pickle(marker), b""))
    lay, _ = pt_layout(str(f))
    assert "refused global builtins.open" in say(lay.problem)
    assert not marker.exists()


def test_pt_zip_bomb_is_refused_from_its_declared_size(tmp_path):
    """A data.pkl that inflates to 64 MiB (the issue's took 4.2 GB): refused before anything is inflated."""
    f = tmp_path / "bomb.pt"
    f.write_bytes(pt_file_bytes(bytes(64 << 20), b"", compress_pickle=True))
    assert f.stat().st_size < 1 << 20
    tracemalloc.start()
    try:
        lay, _ = pt_layout(str(f))
        _size, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert "declares 67108864 B (at most 1048576 B are read)" in say(lay.problem)
    assert peak < 4 << 20


def test_pt_storage_declared_beyond_the_file(tmp_path):
    """A 6 GB storage declared by a 300-byte file (the issue's took 8.3 GB RSS): refused from the sizes."""
    f = tmp_path / "big.pt"
    numel = 1_500_000_000
    f.write_bytes(pt_file_bytes(tensor_pickle(numel=numel, size=(numel,)), bytes(16)))
    tracemalloc.start()
    try:
        lay, _ = pt_layout(str(f))
        _size, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert say(lay.problem) == "storage declares 6000000000 B, its zip member holds 16 B"
    assert peak < 1 << 20


# ------------------------------------------------------------------------------------------ .bin, CANN


def test_bin_name_with_a_20_digit_dimension(tmp_path):
    root = bin_dump(tmp_path / "d")
    it = root / "Net" / "device_0" / "iteration_0"
    bad = it / "Default--Mul-op3_output_0_shape_99999999999999999999_Float32_DefaultFormat.bin"
    bad.write_bytes(bytes(16))
    code, out, err = run_main("info", root)
    assert code == 0
    assert_named(out, bad, "file name not read", "is beyond")
    code, out, err = run_main("inspect", bad)
    assert code == 2 and "file name not read" in out


def test_cann_raw_dims_beyond_int64(tmp_path):
    from helpers.cann_encode import RawOp, Tensor, encode, file_name

    from dumptui.core.formats.cann_proto import DumpData

    folder = tmp_path / "raw"
    folder.mkdir()
    good = RawOp(
        "Add", "Default_Add-op1", inputs=[Tensor(np.ones(4, np.float32))], outputs=[Tensor(np.ones(4, np.float32))]
    )
    (folder / file_name(good)).write_bytes(encode(good))
    msg = DumpData(op_name="Default/Mul-op2")
    out = msg.output.add(data_type=1, format=2, size=16)
    out.shape.dim.extend([2**64 - 1, 2])
    header = msg.SerializeToString()
    bad = folder / "Mul.Default_Mul-op2.2.0.1700000000000001"
    bad.write_bytes(len(header).to_bytes(8, "little") + header + bytes(16))
    code, out_text, err = run_main("info", folder)
    assert code == 0
    assert_named(out_text, bad, "device shape dimension 18446744073709551615 is beyond")


def test_cann_raw_file_of_zeros_is_named_not_an_op_without_tensors(tmp_path):
    """Eight zero bytes and nothing else parse as an empty DumpData: a warning naming the file, not an op that
    vanishes from the comparison unnamed."""
    from helpers.cann_encode import RawOp, Tensor, encode, file_name

    folder = tmp_path / "raw"
    folder.mkdir()
    good = RawOp(
        "Add", "Default_Add-op1", inputs=[Tensor(np.ones(4, np.float32))], outputs=[Tensor(np.ones(4, np.float32))]
    )
    (folder / file_name(good)).write_bytes(encode(good))
    empty = folder / "Mul.Default_Mul-op2.2.0.1700000000000001"
    empty.write_bytes(bytes(8))
    dump = open_dump(str(folder))
    assert [op.file_name for op in dump.ops] == ["Default_Add-op1"]
    code, out, err = run_main("info", folder)
    assert code == 0
    assert_named(out, empty, "warning", "holds no input and no output: nothing to compare")


def test_side_files_are_read_with_what_they_hold_not_the_limit(tmp_path):
    """A side file is read with read(its size): read(limit + 1) allocated the 1 GiB limit for an 867-byte
    dump.json before reading a byte (found by the fuzz suite)."""
    from dumptui.core.io.safeio import read_bytes

    doc = tmp_path / "dump.json"
    doc.write_bytes(b'{"task": "tensor", "data": {}}')
    tracemalloc.start()
    try:
        assert read_bytes(str(doc)) == doc.read_bytes()
        _size, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20, f"{peak} B allocated to read {doc.stat().st_size} B"


# ------------------------------------------------------------------------------------------ strings from files


def test_markup_and_escapes_in_metadata_and_folder_names_are_shown_as_written(tmp_path):
    info = clean_pair(tmp_path / "x")
    evil = tmp_path / "dump\x1b[2J[blink]x[/blink]"
    shutil.copytree(info.ref, evil)
    meta = evil / "rank_0" / ".dump_metadata" / "config.json"
    version = "[conceal]2.10[/conceal] [link=http://evil.example]x[/link] \x1b]8;;http://e\x1b\\y\x1b]8;;\x1b\\"
    meta.write_text(json.dumps({"device_target": "CPU\u202e", "ms_version": version}))
    code, out, err = run_main("info", evil)
    assert code == 0, err
    assert "\x1b" not in out and "\u202e" not in out
    assert "[conceal]2.10[/conceal] [link=http://evil.example]x[/link]" in out
    assert "dump\\x1b[2J[blink]x[/blink]" in out and "CPU\\u202e" in out
    meta.write_text(json.dumps({"ms_version": [2, 10]}))
    code, out, err = run_main("info", evil)
    assert code == 0 and "version:     unknown" in out
    assert_named(out, meta, "ms_version is a list, not a string (ignored)")


def test_a_newline_in_an_op_name_forges_no_line(tmp_path):
    """npy-folder dumps take op names from file names: one holding a newline cannot add a line of its own."""
    forged = "evil\nNo divergence: all good"
    for side, scale in (("ref", 1.0), ("target", 3.0)):
        folder = tmp_path / side
        folder.mkdir()
        np.save(folder / "a.input.0.npy", np.ones(8, np.float32))
        np.save(folder / "a.output.0.npy", np.ones(8, np.float32))
        np.save(folder / f"{forged}.input.0.npy", np.ones(8, np.float32))
        np.save(folder / f"{forged}.output.0.npy", np.arange(8, dtype=np.float32) * scale)
    code, out, err = run_main("bisect", tmp_path / "ref", tmp_path / "target")
    assert code == 1, err
    assert not any(line.startswith("No divergence") for line in out.splitlines())
    assert "evil\\x0aNo divergence: all good" in out


def test_csv_refused_in_the_dump_root_when_a_rank_folder_is_given(pair):
    ref, target = pair
    before = snapshot(ref)
    code, out, err = run_main("compare", Path(ref) / "rank_0", Path(target) / "rank_0", "--csv", Path(ref) / "out.csv")
    assert code == 2 and "refusing to write inside the dump folder" in err and clean(ref) in err
    assert snapshot(ref) == before


def test_nothing_is_written_under_a_damaged_dump(pair):
    ref, target = pair
    graph_output(target).write_bytes(b"\x93NUMPY")
    before = snapshot(target), snapshot(ref)
    for cmd in (
        ("info", target),
        ("compare", ref, target),
        ("bisect", ref, target),
        ("compare", ref, target, "--json"),
    ):
        run_main(*cmd)
    assert (snapshot(target), snapshot(ref)) == before


def test_open_dump_of_every_damaged_npy_loads_the_rest(pair):
    ref, target = pair
    for f in sorted(Path(target).rglob("*.npy"))[::3]:
        f.write_bytes(f.read_bytes()[:64])
    d = open_dump(target)
    readable = [t for op in d.ops for t in op.tensors() if t.problem is None]
    damaged = [t for op in d.ops for t in op.tensors() if say(t.problem)]
    assert readable and damaged and all("truncated" in say(t.problem) for t in damaged)


def test_a_float16_payload_written_twice_is_damage_not_the_repair(tmp_path):
    """Issue 23.7: a genuine float16 file whose payload was written twice has the size of MindSpore's
    float16-header-over-float32-payload bug; read as float32 it made values of its own (a divergence on a pair
    without one). The bug's two halves (a float32 buffer's) always differ; the same half twice is damage."""
    values = np.linspace(-2, 2, 24, dtype=np.float16).reshape(2, 3, 4)
    f = tmp_path / "twice.npy"
    f.write_bytes(npy_bytes(standard_header("<f2", False, "(2, 3, 4)"), values.tobytes() * 2))
    lay = npy_layout(str(f))
    assert lay.repaired is None and lay.storage is None
    assert say(lay.problem).startswith("the payload is the declared float16[2, 3, 4] (48 B) written twice")
    zeros = tmp_path / "zeros.npy"  # all zeros: either reading gives the same values, the repair is harmless
    zeros.write_bytes(npy_bytes(standard_header("<f2", False, "(2, 3, 4)"), bytes(96)))
    assert npy_layout(str(zeros)).repaired is not None
