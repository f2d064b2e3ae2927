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
