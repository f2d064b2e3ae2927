"""Generated detectors whose head ends in a TopK and an NMS (core/demo/detector.py, MindSpore layout; fp16 +
folded BatchNorm + int8 at once): near-tie flips and no bug are benign, with the flips named; a bug before the
TopK, after it (a Concat's wiring, an off-by-one slice) or in the TopK kernel itself is named."""

from __future__ import annotations

import json

import pytest

from dumptui import cli
from dumptui.core.demo.detector import (
    BIN_GATHER_OP,
    CAST_OP,
    COMBINED_OP,
    FLIP_OPS,
    GREATER_OP,
    VARIANTS,
    write_detector_demo,
)

# many commands run in this process: one pool of worker processes for the module, not one per command
pytestmark = pytest.mark.usefixtures("commands_share_one_pool")


@pytest.fixture(scope="module")
def detectors(tmp_path_factory):
    root = tmp_path_factory.mktemp("detector")
    return {v: write_detector_demo(str(root / v), v) for v in VARIANTS}


def run(capsys, *args: str) -> tuple[int, dict]:
    capsys.readouterr()
    code = cli.main([*args, "--json", "-"])
    return code, json.loads(capsys.readouterr().out)


def test_the_benign_target_flips_both_selections(detectors):
    d = detectors["flips"]
    assert d.topk_flips >= 1 and d.nms_flips >= 1


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_variant_is_judged_right(detectors, capsys, variant):
    d = detectors[variant]
    code, doc = run(capsys, "bisect", d.ref, d.target)
    got = None if doc["culprit"] is None else (doc["culprit"]["ref"], doc["culprit"]["target"])
    assert got == d.culprit, doc["culprit"]
    assert code == (0 if d.culprit is None else 1)
    roots = {r["ref"] for r in doc.get("roots", [])}
    if variant != "topk-wrong":
        assert not roots & set(FLIP_OPS), "a selection that only flipped is never a root"


@pytest.mark.parametrize("variant", VARIANTS)
def test_compare_names_the_same_roots(detectors, capsys, variant):
    d = detectors[variant]
    code, doc = run(capsys, "compare", d.ref, d.target)
    assert code == (0 if d.culprit is None else 1)
    if d.culprit is not None:
        assert doc["roots"][0]["ref"] == d.culprit[0]


def test_benign_answer_names_the_flips_with_margins_and_what_feeds_them(detectors, capsys):
    d = detectors["flips"]
    code, doc = run(capsys, "bisect", d.ref, d.target)
    assert code == 0
    sites = {f["op"]: f for f in doc["flips"]}
    assert set(sites) == set(FLIP_OPS)
    topk = sites[FLIP_OPS[0]]["selection"]
    assert topk["code"] == "selection-flip" and topk["differing"] == d.topk_flips
    assert topk["equal"] == topk["selected"] - d.topk_flips and topk["common"] <= topk["selected"]
    for f in topk["flips"]:  # each flip: its two candidates were nearer than the error that moved them
        assert f["kind"] == "rank" and f["margin"] <= f["input_error"]
        assert f["margin"] == pytest.approx(abs(f["value"] - f["other_value"]), rel=1e-9)
    nms = sites[FLIP_OPS[1]]["selection"]
    assert nms["differing"] == d.nms_flips and {f["kind"] for f in nms["flips"]} <= {"score", "overlap", "cascade"}
    assert sites[FLIP_OPS[0]]["reached"] > 0 and sites[FLIP_OPS[0]]["feeding"][0].endswith("Sigmoid-op0")
    # the benign reasons say it in words, the flips first after why the pair is noisy
    assert any(line.startswith(FLIP_OPS[0]) and "margin" in line for line in doc["benign"][1:3])
    # the TopK's outputs and what its indices reach: the reason is a code, never "diverged"
    code, cmp = run(capsys, "compare", d.ref, d.target)
    topk_op = next(o for o in cmp["ops"] if o["ref"] == FLIP_OPS[0])
    assert topk_op["local_error"]["rule"] == "selection-flip"
    assert "selection-flip" in {o["reason"] for o in topk_op["outputs"]}
    assert topk_op["verdict"] == "flipped"  # its own word and mark, neither close nor diverged
    reasons = [t["reason"] for o in cmp["ops"] for t in o["outputs"]]
    assert "selection-flip" in reasons and "after-selection-flip" in reasons
    assert not [t for o in cmp["ops"] for t in o["outputs"] if t["verdict"] == "diverged"]


def test_the_text_answer_words_the_flip_and_the_broken_kernel(detectors, capsys):
    d = detectors["flips"]
    capsys.readouterr()
    assert cli.main(["bisect", d.ref, d.target]) == 0
    out = capsys.readouterr().out
    assert "flipped on near-ties" in out and "the error its inputs carry there" in out
    assert "Where error grows most" not in out or "TopK" not in out.split("Where error grows most")[1].split("\n")[0]
    w = detectors["topk-wrong"]
    assert cli.main(["bisect", w.ref, w.target]) == 1
    out = capsys.readouterr().out
    assert "its selection does not follow from its own inputs: rank 32 holds element" in out


@pytest.mark.parametrize("command", ["bisect", "compare"])
def test_documents_with_flips_validate_against_the_schemas(detectors, capsys, command):
    from helpers.schemas import validator

    d = detectors["flips"]
    _code, doc = run(capsys, command, d.ref, d.target)
    validator(command).validate(doc)


def test_remedy_of_a_benign_flip_names_the_ops_feeding_the_near_ties(detectors, capsys, tmp_path):
    from helpers.schemas import validator

    d = detectors["flips"]
    code, doc = run(capsys, "remedy", d.ref, d.target, "-o", str(tmp_path / "out"))
    assert code == 0 and doc["remedy"]["culprits"] == []
    validator("remedy").validate(doc)
    feeding = [n for s in doc["near_ties"] for n in s["feeding"]]
    assert "Default/head-Head/Sigmoid-op0" in feeding and "Default/head-Head/cls-Conv2d/Conv2D-op0" in feeding
    kept = (tmp_path / "out" / "keep_dtype.cfg").read_text().split()
    assert kept[:2] == ["Default/head-Head/Sigmoid-op0", "Default/head-Head/cls-Conv2d/Conv2D-op0"]
    assert "no op computes anything wrong" in (tmp_path / "out" / "NEAR_TIES.txt").read_text()
    broken = detectors["topk-wrong"]
    code, doc = run(capsys, "remedy", broken.ref, broken.target)
    assert code == 1 and doc["near_ties"] == [] and doc["remedy"]["culprits"][0]["ref"] == FLIP_OPS[0]


def test_the_noise_line_leaves_out_what_a_flip_changed(detectors, capsys):
    """ "largest output error ... carried from precision noise" is said of noise only: the ops a flipped selection
    reaches differ by the flip (20 % of their RMS here), which the flip's own line says."""
    d = detectors["flips"]
    _code, doc = run(capsys, "bisect", d.ref, d.target)
    (noise,) = [line for line in doc["benign"] if line.startswith("largest output error")]
    assert "decode-BoxDecode" not in noise and "nms-NMS" not in noise and "topk-TopK" not in noise
    assert max(f["worst_error"] for f in doc["flips"] if f["worst_error"] is not None) > 0.05


def test_a_score_threshold_crossed_on_a_near_tie_is_a_flip_and_the_select_carries_it(detectors, capsys):
    """A comparison is a selection too: Greater(scores, t) with one score on either side of t (by less than the
    error its inputs carry) is a flip named with its margin, and the Select it feeds carries it (exit 0)."""
    d = detectors["threshold"]
    assert d.threshold is not None and d.threshold_flips >= 1
    code, doc = run(capsys, "bisect", d.ref, d.target)
    assert code == 0 and doc["culprit"] is None
    sites = {f["op"]: f for f in doc["flips"]}
    assert set(sites) == {*FLIP_OPS, GREATER_OP}
    greater = sites[GREATER_OP]["selection"]
    assert greater["code"] == "selection-flip" and greater["differing"] == d.threshold_flips
    assert greater["equal"] == greater["selected"] - d.threshold_flips
    for f in greater["flips"]:
        assert f["kind"] == "threshold" and f["other_value"] == pytest.approx(d.threshold, abs=0)
        assert f["margin"] == pytest.approx(abs(f["value"] - d.threshold), rel=1e-9)
        assert 0 < f["margin"] < f["input_error"]
    assert sites[GREATER_OP]["reached"] == 1 and sites[GREATER_OP]["worst"].endswith("Select-op0")
    assert any(line.startswith(GREATER_OP) and "crossed its threshold" in line for line in doc["benign"])
    code, cmp = run(capsys, "compare", d.ref, d.target)
    assert code == 0
    ops = {o["ref"]: o for o in cmp["ops"]}
    assert ops[GREATER_OP]["verdict"] == "flipped" and ops[GREATER_OP]["local_error"]["rule"] == "selection-flip"
    select = ops[GREATER_OP.replace("Greater-op0", "Select-op0")]
    assert {t["reason"] for t in select["outputs"]} == {"after-selection-flip"}


def test_a_wiring_bug_fed_by_a_flipped_comparison_is_still_the_root(detectors, capsys):
    d = detectors["select-swap"]
    code, doc = run(capsys, "bisect", d.ref, d.target)
    assert code == 1 and (doc["culprit"]["ref"], doc["culprit"]["target"]) == d.culprit
    assert GREATER_OP in {f["op"] for f in doc["flips"]}  # the comparison still flipped, and is said so
    assert GREATER_OP not in {r["ref"] for r in doc.get("roots", [])}


def test_a_cast_to_int32_that_flips_a_bin_on_a_near_tie_is_benign_and_named(detectors, capsys):
    """A cast to an integer type is a threshold at every integer: a score x c of 5.98 on the reference and 6.0
    on the float16 target truncates to bins 5 and 6. Each side's bins follow from its own input: a flip named
    with its margin (the distance to the integer crossed), the Gather of the bins carries it: exit 0."""
    d = detectors["cast-bins"]
    assert d.cast_scale is not None and d.cast_flips >= 1
    code, doc = run(capsys, "bisect", d.ref, d.target)
    assert code == 0 and doc["culprit"] is None and not doc["undecided"]
    sites = {f["op"]: f for f in doc["flips"]}
    assert set(sites) == {*FLIP_OPS, CAST_OP}
    cast = sites[CAST_OP]["selection"]
    assert cast["code"] == "selection-flip" and cast["differing"] == d.cast_flips
    assert cast["equal"] == cast["selected"] - d.cast_flips
    for f in cast["flips"]:
        assert f["kind"] == "threshold" and float(f["other_value"]).is_integer()
        assert f["margin"] == pytest.approx(abs(f["value"] - f["other_value"]), rel=1e-9)
        assert 0 < f["margin"] <= f["input_error"]
    assert sites[CAST_OP]["feeding"][0].endswith("bins-ScoreBins/Mul-op0")
    assert BIN_GATHER_OP in {sites[CAST_OP]["worst"]} | {None} and sites[CAST_OP]["reached"] >= 1
    assert any(line.startswith(CAST_OP) and "crossed its threshold" in line for line in doc["benign"])
    code, cmp = run(capsys, "compare", d.ref, d.target)
    assert code == 0 and cmp["roots"] == []
    ops = {o["ref"]: o for o in cmp["ops"]}
    assert ops[CAST_OP]["verdict"] == "flipped" and ops[CAST_OP]["local_error"]["rule"] == "selection-flip"
    gather = ops[BIN_GATHER_OP]  # one weight of 256 another bin's: within the float16 floor, or the flip's
    assert {t["verdict"] for t in gather["outputs"]} <= {"close", "flipped"}
    assert gather["local_error"] is None or gather["local_error"]["kind"] in ("carries", "clean")


def test_an_off_by_one_gather_after_the_flipped_cast_is_still_the_root(detectors, capsys):
    d = detectors["cast-gather-bug"]
    code, doc = run(capsys, "bisect", d.ref, d.target)
    assert code == 1 and (doc["culprit"]["ref"], doc["culprit"]["target"]) == d.culprit
    assert doc["culprit"]["local_error"]["rule"] == "replay-broken"
    assert CAST_OP in {f["op"] for f in doc["flips"]}  # the cast still flipped, and is said so
    assert CAST_OP not in {r["ref"] for r in doc.get("roots", [])}


def test_mindspores_combined_nms_flips_where_nms_with_mask_does_benign_with_margins(detectors, capsys):
    """A second NMS, MindSpore's CombinedNonMaxSuppression (its dumped layout: boxes, scores, classes and the
    count, the settings as inputs 2-5), keeps what NMSWithMask keeps: the same near-ties flip it, each kept
    box matched to its input box; benign (exit 0), the flips named with their margins."""
    d = detectors["combined-nms"]
    code, doc = run(capsys, "bisect", d.ref, d.target)
    assert code == 0 and doc["culprit"] is None and not doc["undecided"]
    sites = {f["op"]: f for f in doc["flips"]}
    assert set(sites) == {*FLIP_OPS, COMBINED_OP}
    combined, nms = sites[COMBINED_OP]["selection"], sites[FLIP_OPS[1]]["selection"]
    assert combined["differing"] == nms["differing"] == d.nms_flips
    assert {f["index"] for f in combined["flips"]} == {f["index"] for f in nms["flips"]}
    assert {f["kind"] for f in combined["flips"]} <= {"score", "overlap", "cascade", "limit"}
    decided = [f for f in combined["flips"] if f["kind"] in ("score", "overlap")]
    assert decided and all(f["margin"] < f["input_error"] for f in decided)


def test_a_combined_nms_kernel_that_keeps_a_suppressed_box_is_the_root(detectors, capsys):
    d = detectors["combined-nms-wrong"]
    code, doc = run(capsys, "bisect", d.ref, d.target)
    assert code == 1 and (doc["culprit"]["ref"], doc["culprit"]["target"]) == d.culprit
    assert doc["culprit"]["local_error"]["rule"] == "selection-broken"
    assert "its selection does not follow from its own inputs: box" in doc["culprit"]["why"]
    assert "on both sides on both sides" not in doc["culprit"]["why"]
    assert set(FLIP_OPS) <= {f["op"] for f in doc["flips"]}  # the other selections still flipped, no roots
