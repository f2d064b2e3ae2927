"""CANN raw dump files damaged (issue 22.1): the 310 side of a generated pair written as an ACL tree of raw
files (fp16 cube ops in device layouts, a planted bug), the culprit's file, its producer's file or the network
output's file damaged in its header (length huge, zero or off, the protobuf garbled, cut inside the header or
the payload, emptied). The answer contract: never exit 0; the file listed with its reason; the planted
culprit first, or the answer said incomplete (exit 2 when the culprit's own file is the damaged one)."""

from __future__ import annotations

import json
import os
import shutil
import struct

import pytest
from helpers.cann_encode import reencode
from helpers.damage import run_main

from dumptui.core.demo.noisy import write_noisy_demo
from dumptui.core.formats import open_dump
from dumptui.core.formats.names import file_form


def _length(p) -> int:
    return struct.unpack("<Q", p.read_bytes()[:8])[0]


def _set_length(p, n: int) -> None:
    p.write_bytes(struct.pack("<Q", n) + p.read_bytes()[8:])


DAMAGE = {
    "header length huge": lambda p: _set_length(p, 1 << 40),
    "header length zero": lambda p: _set_length(p, 0),
    "header length off by 7": lambda p: _set_length(p, _length(p) + 7),
    "protobuf garbled": lambda p: p.write_bytes(p.read_bytes()[:8] + b"\xff" * 32 + p.read_bytes()[40:]),
    "cut inside the header": lambda p: os.truncate(p, 8 + _length(p) // 2),
    "cut inside the payload": lambda p: os.truncate(p, (8 + _length(p) + p.stat().st_size) // 2),
    "empty": lambda p: os.truncate(p, 0),
}


@pytest.fixture(scope="module")
def raw_pair(tmp_path_factory):
    root = tmp_path_factory.mktemp("raw")
    demo = write_noisy_demo(str(root), precision="fp16", bug="main", blocks=12)
    target = open_dump(demo.target)
    acl = root / "acl"
    reencode(target, str(acl))
    producer = target.op(demo.planted).sources[1].ref  # the Add's update: its block's Mul
    return demo, acl, {"culprit": demo.planted, "its producer": producer, "network output": target.kernels[-1].name}


@pytest.mark.parametrize("where", ["culprit", "its producer", "network output"])
@pytest.mark.parametrize("damage", list(DAMAGE))
def test_raw_header_damage_never_hides_or_moves_the_culprit(raw_pair, tmp_path, where, damage):
    demo, acl, ops = raw_pair
    target = tmp_path / "acl"
    shutil.copytree(acl, target)
    damaged = next(p for p in target.rglob("*") if f".{file_form(ops[where])}." in p.name)
    DAMAGE[damage](damaged)
    for command in ("bisect", "compare"):
        code, out, err = run_main(command, demo.ref, target, "--json", "-")
        doc = json.loads(out)
        assert code == doc["exit"] != 0, (command, err)
        assert str(damaged) in out, (command, "the damaged file is not listed")
        roots = [r["ref"] for r in doc["roots"]]
        assert roots[:1] == [demo.planted] or doc["incomplete"], (command, roots)
        assert code == 1 or doc["incomplete"]
        if where == "culprit":
            assert code == 2 and not roots, (command, roots)


@pytest.mark.parametrize("stray", ["raw file in the npy dump", "npy file in the raw dump"])
def test_one_file_of_another_format_never_decides_how_the_dump_is_read(raw_pair, tmp_path, stray):
    """Issue 23.7: one CANN raw file copied into a MindSpore npy dump (or one .npy file into a raw dump) is
    listed or left aside; the dump is read in the format of its other files, and the planted culprit is found
    (before: the one raw file switched the whole npy dump to the raw reader, which found one op)."""
    demo, acl, ops = raw_pair
    if stray == "raw file in the npy dump":
        target = tmp_path / "target"
        shutil.copytree(demo.target, target)
        folder = next(p.parent for p in target.rglob("*.npy"))
        source = next(p for p in acl.rglob("*") if p.is_file() and f".{file_form(ops['network output'])}." in p.name)
        shutil.copy(source, folder)
        stray_file = folder / source.name
    else:
        target = tmp_path / "acl"
        shutil.copytree(acl, target)
        folder = next(p.parent for p in target.rglob("*") if p.is_file() and "." in p.name)
        npy = next(
            p
            for p in os.scandir(next(d for d, _, fs in os.walk(demo.target) if any(f.endswith(".npy") for f in fs)))
            if p.name.endswith(".npy")
        )
        shutil.copy(npy.path, folder)
        stray_file = folder / npy.name
    for command in ("bisect", "compare"):
        code, out, err = run_main(command, demo.ref, target, "--json", "-")
        doc = json.loads(out)
        assert code == doc["exit"] == 1, (command, err)
        assert [r["ref"] for r in doc["roots"]][:1] == [demo.planted], command
        if stray == "raw file in the npy dump":
            assert str(stray_file) in out and "two formats in one dump" in out, command


def test_detection_goes_by_most_files_when_both_formats_are_there(tmp_path):
    """The detection order alone (raw before npy) let one raw file make a MindSpore dump a raw one."""
    from dumptui.core.formats import detect

    npy_dump = tmp_path / "npy" / "rank_0" / "Net" / "0" / "0"
    npy_dump.mkdir(parents=True)
    for i in range(10):
        (npy_dump / f"Add.Default_Add-op{i}.1.1.{1000 + i}.output.0.DefaultFormat.Float32.npy").write_bytes(b"")
    (npy_dump / "Add.Default_Add-op0.1.0.1796214300001792").write_bytes(b"")
    assert detect(str(tmp_path / "npy")) == "mindspore-npy"
    raw_dump = tmp_path / "raw" / "20260101000000" / "0" / "Net" / "1" / "0"
    raw_dump.mkdir(parents=True)
    for i in range(10):
        (raw_dump / f"Add.Default_Add-op{i}.1.0.{1796214300001792 + i}").write_bytes(b"")
    (raw_dump / "Add.Default_Add-op0.1.1.1000.output.0.DefaultFormat.Float32.npy").write_bytes(b"")
    assert detect(str(tmp_path / "raw")) == "cann-raw"


def test_a_second_op_name_in_a_raw_header_never_renames_the_op(tmp_path):
    """Issue 23.7: a header holding a second DumpData.op_name (the last one wins the parse) named the file's op
    after another op of the dump, and that op then diverged on a pair without a bug. The file name decides;
    the file is listed with both names. Headers whose op_name is the file name's (the writer set it) are
    trusted as before, without a word."""
    demo = write_noisy_demo(str(tmp_path), precision="fp16", bug=None, blocks=6)
    target = open_dump(demo.target)
    acl = tmp_path / "acl"
    reencode(target, str(acl), op_name_field=True)
    code, out, _err = run_main("bisect", demo.ref, acl, "--json", "-")
    assert code == 0 and json.loads(out)["roots"] == [] and "its header names the op" not in out
    renamed, other = target.kernels[10], target.kernels[20]
    damaged = next(p for p in acl.rglob("*") if f".{file_form(renamed.name)}." in p.name)
    data = damaged.read_bytes()
    n = _length(damaged)
    name = other.name.encode()
    assert len(name) < 128  # one length byte
    header = data[8 : 8 + n] + bytes([6 << 3 | 2, len(name)]) + name  # field 6 (op_name) once more
    damaged.write_bytes(struct.pack("<Q", len(header)) + header + data[8 + n :])
    for command in ("bisect", "compare"):
        code, out, err = run_main(command, demo.ref, acl, "--json", "-")
        doc = json.loads(out)
        assert code == doc["exit"] == 0 and doc["roots"] == [], (command, doc["roots"], err)
        assert str(damaged) in out and f"its header names the op '{other.name}'" in out, command
