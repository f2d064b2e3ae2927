"""Sentences agree with the numbers beside them and say their denominators: an infinite gain is `inf` in the
text, the JSON (`gain_words`, its number null) and the report alike; the report's count of diverged ops says of
how many; the roots' heading says their order; a vendor kernel's hashed type is whole in the JSON."""

from __future__ import annotations

import json

import pytest

from dumptui import cli

# many commands run in this process: one pool of worker processes for the module, not one per command
pytestmark = pytest.mark.usefixtures("commands_share_one_pool")


def _run(capsys, *argv: str) -> tuple[int, str]:
    capsys.readouterr()
    code = cli.main(list(argv))
    return code, capsys.readouterr().out


def test_an_infinite_gain_is_inf_everywhere(inf_demo_pair, capsys, tmp_path):
    root, _planted = inf_demo_pair
    ref, target = str(root / "demo" / "ref"), str(root / "demo" / "target")
    code, out = _run(capsys, "bisect", ref, target, "-q", "--json", "-")
    le = json.loads(out)["culprit"]["local_error"]
    assert code == 1 and le["gain"] is None and le["gain_words"] == "inf"  # NaN/Inf born here: no finite gain
    report = tmp_path / "r.md"
    assert _run(capsys, "report", ref, target, "-q", "-o", str(report))[0] == 1
    text = report.read_text()
    culprit = json.loads(out)["culprit"]["position"]
    row = next(line for line in text.splitlines() if line.startswith(f"| {culprit} |"))
    assert "| inf |" in row and "x-" not in text


def test_counts_say_their_denominator_and_the_roots_their_order(demo_pair, capsys, tmp_path):
    code, out = _run(capsys, "compare", demo_pair.ref, demo_pair.target)
    assert code == 1 and "(where error is born, in execution order)" in out and "first first" not in out
    report = tmp_path / "r.md"
    _run(capsys, "report", demo_pair.ref, demo_pair.target, "-q", "-o", str(report))
    doc = json.loads(_run(capsys, "compare", demo_pair.ref, demo_pair.target, "-q", "--json", "-")[1])
    diverged = [op for op in doc["ops"] if op["verdict"] in ("diverged", "shape mismatch", "dtype mismatch")]
    assert f"## Diverged ops ({len(diverged)} of the {len(doc['ops'])} ops)" in report.read_text()


def test_a_statistics_dump_speaks_of_statistics_and_the_gain_rule_only_where_it_decided(tmp_path, capsys):
    from helpers.msdumps import write_statistics_dump

    ref = write_statistics_dump(tmp_path / "ref", 1.0, False)
    target = write_statistics_dump(tmp_path / "target", 1.5, False)  # linear.1's output statistics x1.5
    code, out = _run(capsys, "bisect", ref, target, "-q", "--json", "-")
    le = json.loads(out)["culprit"]["local_error"]
    assert code == 1 and le["statistics_only"] is True
    code, text = _run(capsys, "bisect", ref, target)
    assert "of its statistics (max/min/mean/L2, relative)" in text and "of its RMS" not in text
    assert le["replay"] is None and le["replay_note"]  # (linear has no replay here: a note says so)
    assert ("the gain rule decides" in text) == (le["rule"] == "gain"), le["rule"]
