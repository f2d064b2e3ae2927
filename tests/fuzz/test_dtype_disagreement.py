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


def _pt_pair(tmp_path, storage: str, numel: int, payload: bytes):
    """A clean msprobe .pt pair (x -> relu -> mul, records saying torch.float32) but for the target's relu
    output, rewritten as a torch `storage` of `numel` elements holding `payload`."""
    from helpers.damage import msprobe_dump, pt_file_bytes, tensor_pickle

    ref, target = msprobe_dump(tmp_path / "ref", fmt="pt"), msprobe_dump(tmp_path / "target", fmt="pt")
    damaged = target / "step0" / "rank0" / "dump_tensor_data" / "relu.out0.pt"
    damaged.write_bytes(pt_file_bytes(tensor_pickle(storage=storage, numel=numel, size=(numel,)), payload))
    return ref, target, damaged


def _damage_not_root(ref, target, damaged, why: str) -> None:
    for command in ("compare", "bisect"):
        code, out, err = run_main(command, ref, target, "--json", "-")
        doc = json.loads(out)
        assert doc["roots"] == [] and doc["incomplete"], (command, doc["roots"])
        assert code == doc["exit"] == 2, (command, err)
        assert why in out, command
    code, out, err = run_main("compare", ref, target, "--json", "-")
    assert str(damaged) in out


def test_a_pt_half_storage_under_a_float32_record_is_damage_not_a_root(tmp_path):
    # the storage says float16, the record float32: which one is right cannot be told (issue 23.7)
    y = np.maximum(np.linspace(-1, 1, 8, dtype=np.float32), 0)
    ref, target, damaged = _pt_pair(tmp_path, "HalfStorage", 8, y.astype(np.float16).tobytes())
    _damage_not_root(ref, target, damaged, "holds float16 but its name or record says float32")


def test_a_pt_half_storage_holding_float32_bytes_is_damage_not_a_root(tmp_path):
    # float32 bytes declared as twice as many halves: the shape disagrees with the record's
    y = np.maximum(np.linspace(-1, 1, 8, dtype=np.float32), 0)
    ref, target, damaged = _pt_pair(tmp_path, "HalfStorage", 16, y.tobytes())
    _damage_not_root(ref, target, damaged, "says shape [8], the file holds [16]")
