"""msprobe API-level dumps of a torch model ranking its scores with torch.topk and torch.sort (core/demo/
msprobe_selection.py; the target in float16): the same rules as on MindSpore dumps. Flips alone are benign and
named; a topk kernel that selects what its inputs do not give is the root; a gather after the flip that takes
the wrong indices is the root, not the flip."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dumptui import cli
from dumptui.core.demo.msprobe_selection import (
    FLIP_OPS,
    MASKED_OP,
    THRESHOLD_OP,
    VARIANTS,
    torch_save,
    write_msprobe_selection_demo,
)
from dumptui.core.formats.torchpt import pt_layout
from dumptui.core.model.dump import TensorRef

# many commands run in this process: one pool of worker processes for the module, not one per command
pytestmark = pytest.mark.usefixtures("commands_share_one_pool")


@pytest.fixture(scope="module")
def dumps(tmp_path_factory):
    root = tmp_path_factory.mktemp("msprobe_selection")
    return {v: write_msprobe_selection_demo(str(root / v), v) for v in VARIANTS}


def run(capsys, *args: str) -> tuple[int, dict]:
    capsys.readouterr()
    code = cli.main([*args, "--json", "-"])
    return code, json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("dtype", ["float32", "float16", "int64", "bool"])
def test_tensors_are_written_as_torch_save_writes_them(tmp_path, dtype):
    a = (np.arange(12).reshape(3, 4) - 5).astype(dtype) if dtype != "bool" else np.arange(12).reshape(3, 4) % 3 == 0
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
    also = {THRESHOLD_OP, MASKED_OP} if variant in ("threshold", "mean-bug") else set()
    assert flipped == (set(FLIP_OPS) | also) - ({d.culprit} if d.culprit else set())


def test_the_flips_are_named_with_their_ranks_and_margins(dumps, capsys):
    d = dumps["noisy"]
    _code, doc = run(capsys, "compare", d.ref, d.target)
    sites = {f["op"]: f for f in doc["flips"]}
    topk = sites["Torch.topk.0.forward"]["selection"]
    assert topk["differing"] == d.topk_flips and topk["common"] == topk["selected"] == 8
    assert all(f["margin"] <= f["input_error"] for f in topk["flips"])
    assert any("swapped" in line for line in doc["benign"])
    assert not [t for o in doc["ops"] for t in o["outputs"] if t["verdict"] == "diverged"]


def test_a_score_threshold_crossed_on_a_near_tie_is_named_and_the_where_carries_it(dumps, capsys):
    d = dumps["threshold"]
    code, doc = run(capsys, "compare", d.ref, d.target)
    assert code == 0
    site = {f["op"]: f for f in doc["flips"]}[THRESHOLD_OP]
    sel = site["selection"]
    assert (
        sel["code"] == "selection-flip" and sel["differing"] >= 1 and sel["equal"] == sel["selected"] - sel["differing"]
    )
    assert all(f["kind"] == "threshold" and 0 < f["margin"] < f["input_error"] for f in sel["flips"])
    assert site["reached"] == 1 and site["worst"] == "Torch.where.0.forward"
    assert site["feeding"][0] == "Torch.sigmoid.0.forward"
    ops = {o["ref"]: o for o in doc["ops"]}
    assert ops[THRESHOLD_OP]["verdict"] == "flipped"
    assert {t["reason"] for t in ops["Torch.where.0.forward"]["outputs"]} == {"after-selection-flip"}


def test_a_masked_select_of_a_flipped_mask_and_the_mean_of_what_it_kept(dumps, capsys):
    """The mask differs at one element: masked_select keeps one more on one side (shapes [33] vs [32]), each
    side from its own inputs: a flip naming the element; the mean of it differs in size, and its replay on
    each side's own input matches: carried, not born (was the culprit, "its inputs agree exactly")."""
    d = dumps["threshold"]
    code, doc = run(capsys, "compare", d.ref, d.target)
    assert code == 0 and doc["roots"] == []
    masked = {f["op"]: f for f in doc["flips"]}[MASKED_OP]["selection"]
    assert masked["differing"] == 1 and masked["equal"] == masked["selected"] - 1
    (flip,) = masked["flips"]
    feeding = {f["op"]: f for f in doc["flips"]}[MASKED_OP]["feeding"]
    assert feeding == ["Torch.sigmoid.0.forward", "Functional.linear.0.forward"]  # through the comparison
    assert flip["kind"] == "kept" and flip["kept_by"] in ("ref", "target")
    ops = {o["ref"]: o for o in doc["ops"]}
    mean = ops["Torch.mean.0.forward"]
    assert mean["local_error"]["rule"] == "resized-by-flip"
    assert "differs in size between the sides as the selection" in mean["local_error"]["why"]
    # the tensors of other sizes are flips in context (their own verdict), never a bare "shape mismatch"
    assert [(t["verdict"], t["reason"]) for t in ops[MASKED_OP]["outputs"]] == [("flipped", "selection-flip")]
    assert [(t["verdict"], t["reason"]) for t in mean["inputs"]] == [("flipped", "after-selection-flip")]
    assert not [t for o in doc["ops"] for t in (*o["inputs"], *o["outputs"]) if t["verdict"] == "shape mismatch"]


def test_a_bug_after_a_resizing_flip_is_still_the_root(dumps, capsys):
    d = dumps["mean-bug"]
    code, doc = run(capsys, "bisect", d.ref, d.target)
    assert code == 1 and doc["culprit"]["ref"] == "Torch.mean.0.forward"
    assert doc["culprit"]["local_error"]["rule"] == "replay-broken"


def test_the_text_says_the_resized_input_decides_by_replay_never_a_gain(dumps, capsys):
    d = dumps["mean-bug"]
    capsys.readouterr()
    assert cli.main(["bisect", d.ref, d.target]) == 1
    out = capsys.readouterr().out
    local = next(line for line in out.splitlines() if line.startswith("  local error:"))
    assert "input.0 of another size on each side" in local and "gain x" not in local
    why = next(line for line in out.splitlines() if line.startswith("  why:"))
    assert "input.0 of another size on each side" in why and "agree exactly" not in why
