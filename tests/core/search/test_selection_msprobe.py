"""msprobe API-level dumps of a torch model ranking its scores with torch.topk and torch.sort (core/demo/
msprobe_selection.py; the target in float16): the same rules as on MindSpore dumps. Flips alone are benign and
named; a topk kernel that selects what its inputs do not give is the root; a gather after the flip that takes
the wrong indices is the root, not the flip."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dumptui import cli
from dumptui.core.demo.msprobe_selection import FLIP_OPS, VARIANTS, torch_save, write_msprobe_selection_demo
from dumptui.core.formats.torchpt import pt_layout
from dumptui.core.model.dump import TensorRef


@pytest.fixture(scope="module")
def dumps(tmp_path_factory):
    root = tmp_path_factory.mktemp("msprobe_selection")
    return {v: write_msprobe_selection_demo(str(root / v), v) for v in VARIANTS}


def run(capsys, *args: str) -> tuple[int, dict]:
    capsys.readouterr()
    code = cli.main([*args, "--json", "-"])
    return code, json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("dtype", ["float32", "float16", "int64"])
def test_tensors_are_written_as_torch_save_writes_them(tmp_path, dtype):
    a = (np.arange(12).reshape(3, 4) - 5).astype(dtype)
    torch_save(str(tmp_path / "t.pt"), a)
    lay, dt = pt_layout(str(tmp_path / "t.pt"))
    assert dt == dtype and lay.problem is None and lay.shape == (3, 4)
    t = TensorRef(str(tmp_path / "t.pt"), "output", 0, layout_fn=lambda: lay)
    np.testing.assert_array_equal(np.asarray(t.array()), a)


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_variant_is_judged_right(dumps, capsys, variant):
    d = dumps[variant]
    assert d.topk_flips >= 1 and d.sort_flips >= 1
    code, doc = run(capsys, "bisect", d.ref, d.target)
    got = None if doc["culprit"] is None else doc["culprit"]["ref"]
    assert got == d.culprit, doc["culprit"]
    assert code == (0 if d.culprit is None else 1)
    flipped = {f["op"] for f in doc["flips"]}
    assert flipped == set(FLIP_OPS) - ({d.culprit} if d.culprit else set())


def test_the_flips_are_named_with_their_ranks_and_margins(dumps, capsys):
    d = dumps["noisy"]
    _code, doc = run(capsys, "compare", d.ref, d.target)
    sites = {f["op"]: f for f in doc["flips"]}
    topk = sites["Torch.topk.0.forward"]["selection"]
    assert topk["differing"] == d.topk_flips and topk["common"] == topk["selected"] == 8
    assert all(f["margin"] <= f["input_error"] for f in topk["flips"])
    assert any("swapped" in line for line in doc["benign"])
    assert not [t for o in doc["ops"] for t in o["outputs"] if t["verdict"] == "diverged"]
