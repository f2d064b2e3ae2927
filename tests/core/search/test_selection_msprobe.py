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
    INPLACE_OPS,
    MASKED_OP,
    THRESHOLD_OP,
    UNREPLAYED_OP,
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
    assert "group" not in sel["sentence"]  # (an element, not an NMS group)
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


@pytest.mark.parametrize("variant", ["threshold", "mean-bug"])
def test_an_op_with_no_replay_after_a_resizing_flip_is_carried_following_it(dumps, capsys, variant):
    """Its input is of another size on each side (a flipped masked_select kept one more), so no element pairs
    with the reference's and no gain can be said; nothing replays cumsum. An experienced user reads it as the
    flip's consequence: carried, its reason saying it follows the flip's change of size and that no replay
    checks it; never undecided (which left the benign pair without an answer)."""
    d = dumps[variant]
    _code, doc = run(capsys, "compare", d.ref, d.target)
    op = {o["ref"]: o for o in doc["ops"]}[UNREPLAYED_OP]
    le = op["local_error"]
    assert (le["kind"], le["rule"]) == ("carries", "follows-resizing-flip")
    assert f"as the selection {MASKED_OP} upstream flipped" in le["why"] and "no replay for cumsum" in le["why"]
    assert [(t["verdict"], t["reason"]) for t in op["inputs"]] == [("flipped", "after-selection-flip")]
    assert UNREPLAYED_OP not in {r["ref"] for r in doc["roots"]}
    assert not doc["undecided"] and not doc["incomplete"]
    if variant == "threshold":
        assert _code == 0 and doc["roots"] == []


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


@pytest.mark.parametrize("variant", ["threshold", "mean-bug"])
def test_the_gain_of_an_op_a_flip_resized_is_the_flips_code_never_infinite(dumps, capsys, tmp_path, variant):
    """The mean of what a flipped masked_select kept: its input was never compared (another size on each
    side), so no gain exists; every view says the flip's code (after-selection-flip) or the resized input,
    never "gain xinf" (error out of inputs that agree)."""
    import csv

    d = dumps[variant]
    _code, doc = run(capsys, "compare", d.ref, d.target)
    mean = {o["ref"]: o for o in doc["ops"]}["Torch.mean.0.forward"]["local_error"]
    assert mean["gain_words"] == "after-selection-flip" and mean["gain"] is None
    capsys.readouterr()
    cli.main(["compare", d.ref, d.target, "--csv", str(tmp_path / "full.csv"), "--csv-profile", "full"])
    cli.main(["compare", d.ref, d.target, "--csv", str(tmp_path / "ms.csv")])
    text = capsys.readouterr().out
    line = next(x for x in text.splitlines() if "Torch.mean.0.forward (mean)" in x)
    assert "input.0 of another size on each side" in line and "gain x" not in line
    assert "xinf" not in text
    for name in ("full.csv", "ms.csv"):
        with open(tmp_path / name, newline="") as fh:
            rows = [r for r in csv.DictReader(fh) if r.get("Local Gain")]
        gains = {r.get("Op Name") or r.get("NPU Name") or "": r["Local Gain"] for r in rows}
        mine = [g for n, g in gains.items() if "Torch.mean.0.forward" in n]
        assert mine == ["after-selection-flip"], gains
        assert "inf" not in gains.values()
    for fmt in ("md", "html"):
        out = tmp_path / f"report.{fmt}"
        cli.main(["report", d.ref, d.target, "-o", str(out), "--format", fmt, "-q"])
        page = out.read_text()
        assert "xinf" not in page and ("after-selection-flip" in page or variant == "threshold")


def test_the_app_pane_says_the_flips_code_for_the_gain_of_a_resized_op(dumps):
    from dumptui.core.compare.noise import TensorError
    from dumptui.core.search.localerror import LocalError
    from dumptui.present.cause import local_numbers

    le = LocalError(None, TensorError(0.02, 0.02, 0.02, 0.02, 0, 1), 0, None, None, 1e-3, "float16")  # type: ignore[arg-type]
    assert "gain xinf" in local_numbers(le)  # (an error out of inputs that agree: the gain rule's infinity)
    le.resized = (0,)
    words = local_numbers(le)
    assert "input.0 of another size: gain after-selection-flip" in words and "inf" not in words


def test_in_place_calls_after_the_flips_carry_them_judged_by_their_replay(dumps, capsys):
    """`picked.mul_(2.0)` and `sorted_feats.clamp_(min=-1.0)` after the gathers by the flipped indices: msprobe
    records an in-place call's input before the call, so each replays on its own recorded input and matches on
    both sides: carried, their tensors flipped in context, the pair benign (exit 0) with both flips named."""
    d = dumps["inplace"]
    code, doc = run(capsys, "compare", d.ref, d.target)
    assert code == 0 and doc["roots"] == [] and not doc["undecided"]
    assert {f["op"] for f in doc["flips"]} == set(FLIP_OPS)
    ops = {o["ref"]: o for o in doc["ops"]}
    for name in INPLACE_OPS:
        le = ops[name]["local_error"]
        assert (le["kind"], le["rule"]) == ("carries", "replay-matches"), (name, le["why"])
        assert [(t["verdict"], t["reason"]) for t in ops[name]["outputs"]] == [("flipped", "after-selection-flip")]
        assert le["replay"]["target_deviation"] == pytest.approx(0.0, abs=1e-6)
    reached = {f["op"]: f["reached"] for f in doc["flips"]}
    assert reached["Torch.topk.0.forward"] >= 3  # the gather, the mul_ and the linear after it


def test_a_wrong_in_place_call_after_the_flip_is_the_root_named_by_its_replay(dumps, capsys):
    d = dumps["inplace-bug"]
    code, doc = run(capsys, "bisect", d.ref, d.target)
    assert code == 1 and doc["culprit"]["ref"] == "Tensor.mul_.0.forward"
    assert doc["culprit"]["local_error"]["rule"] == "replay-broken"
    assert {f["op"] for f in doc["flips"]} == set(FLIP_OPS)  # the flips are still said, and are no root
    assert not {r["ref"] for r in doc["roots"]} & set(FLIP_OPS)
