"""Generated detectors whose head ends in a TopK and an NMS (core/demo/detector.py, MindSpore layout; fp16 +
folded BatchNorm + int8 at once): near-tie flips and no bug are benign, with the flips named; a bug before the
TopK, after it (a Concat's wiring, an off-by-one slice) or in the TopK kernel itself is named."""

from __future__ import annotations

import json

import pytest

from dumptui import cli
from dumptui.core.demo.detector import FLIP_OPS, VARIANTS, write_detector_demo


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
