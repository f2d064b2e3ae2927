"""A file whose bytes are of another dtype than its name says (issue 23.7): an `<i4` header under a `Float32`
MindSpore name. Read as its header says, its values made a root of their own on a pair without a bug
(compare named it, bisect did not); it is damage: listed with the two dtypes, its op not judged, no root."""

from __future__ import annotations

import json
import shutil

import numpy as np
from helpers.damage import run_main

from dumptui.core.demo.residual import write_demo


def test_an_int32_payload_under_a_float32_name_is_damage_not_a_root(tmp_path):
    demo = write_demo(str(tmp_path / "demo"))
    target = tmp_path / "target"
    shutil.copytree(demo.ref, target)  # a clean pair: the same dump twice
    damaged = next(target.rglob("*Conv2D-op0*output.0*.Float32.npy"))
    np.save(damaged, np.load(damaged).view(np.int32))  # the same bytes, declared int32
    for command in ("compare", "bisect"):
        code, out, err = run_main(command, demo.ref, target, "--json", "-")
        doc = json.loads(out)
        assert doc["roots"] == [], (command, doc["roots"])
        assert code == doc["exit"] in (0, 2), (command, err)
        if code == 2:  # compare reads every file: the damaged one is listed with both dtypes
            assert str(damaged) in out and "holds int32 but its name or record says float32" in out
    code, out, err = run_main("compare", demo.ref, target, "--json", "-")
    assert code == 2 and json.loads(out)["incomplete"]
