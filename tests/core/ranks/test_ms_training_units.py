"""Issue 32, item 5, on a MindSpore training run (tests/helpers/ms_training.py: two Dense layers, SGD with
momentum, three iterations, Parameter files written after the update).

(a) The target's learning-rate list differs only in its entry 2: iterations 0 and 1 compute the same numbers,
iteration 2's Gather of the learning rate is where the runs part. `--iteration all` must name it at step 2, as
`--iteration 2` alone does, and the every-unit table must show for each unit what the single-unit run names.
(b) One iteration whose learning rate differs: the Parameter files hold the parameters after their update, so
they are judged as updated (never "check the checkpoint") and are never roots because they were updated."""

from __future__ import annotations

import json

import pytest
from helpers.common import json_answer
from helpers.ms_training import APPLY, lr_changed_at_step_2, one_step

# many commands run in this process: one pool of worker processes for the module, not one per command
pytestmark = pytest.mark.usefixtures("commands_share_one_pool")

GATHER = "Default/optimizer-Momentum/Gather-op0"


def _bisect(capsys, *argv: str) -> dict:
    return json_answer(capsys, "bisect", *argv)


def _names(report: dict) -> list[str]:
    return [r["ref"] or r["target"] for r in report["roots"]]


@pytest.fixture(scope="module")
def lr_run(tmp_path_factory):
    return tuple(str(p) for p in lr_changed_at_step_2(tmp_path_factory.mktemp("lr2")))


@pytest.fixture(scope="module")
def one_step_run(tmp_path_factory):
    return tuple(str(p) for p in one_step(tmp_path_factory.mktemp("one")))


def test_the_corpus_agrees_until_step_2(capsys, lr_run):
    """The generator itself: iterations 0 and 1 compute equal numbers; step 2's Gather output differs."""
    for step in ("0", "1"):
        assert _names(_bisect(capsys, *lr_run, "--iteration", step)) == []


def test_iteration_2_alone_names_the_lr_gather(capsys, lr_run):
    assert _names(_bisect(capsys, *lr_run, "--iteration", "2"))[:1] == [GATHER]


def test_every_iteration_names_the_lr_gather_at_step_2(capsys, lr_run):
    every = _bisect(capsys, *lr_run, "--iteration", "all")
    by_step = {u["step"]: _names(u["report"]) for u in every["units"]}
    assert by_step["0"] == [] and by_step["1"] == []
    assert by_step["2"][:1] == [GATHER]


def test_the_table_shows_what_each_unit_alone_names(capsys, lr_run):
    every = _bisect(capsys, *lr_run, "--iteration", "all")
    for unit in every["units"]:
        alone = _bisect(capsys, *lr_run, "--iteration", unit["step"])
        assert _names(alone) == _names(unit["report"]), unit["step"]


def test_one_step_names_the_lr_gather(capsys, one_step_run):
    doc = _bisect(capsys, *one_step_run)
    assert doc["culprit"]["ref"] == GATHER


def test_post_update_parameters_are_judged_as_updated(capsys, one_step_run):
    doc = _bisect(capsys, *one_step_run)
    updated = {"fc1_weight", "fc1_bias", "fc2_weight", "fc2_bias"}
    for entry in doc["preconditions"]["not_equal"]:
        if entry["name"] in updated:
            assert entry["status"] == "updated", entry["name"]
            assert "checkpoint" not in json.dumps(entry), entry["name"]
    roots = " ".join(_names(doc))
    assert not any(name in roots for name in updated)


def test_each_apply_momentum_reads_its_own_parameter(capsys, one_step_run):
    """Each updated parameter is told with its own ApplyMomentum (the one whose output its file holds), never
    one name for four."""
    doc = _bisect(capsys, *one_step_run)
    details = {e["name"]: e["detail"] for e in doc["preconditions"]["not_equal"]}
    for name, op in APPLY.items():
        detail = details[name.replace(".", "_")]
        assert op.replace("_", "/") in detail, (name, detail)
        assert [other for other in APPLY.values() if other.replace("_", "/") in detail] == [op]
    text = json.dumps(doc)
    assert "fc2.bias differs" not in text and "fc2_bias differs" not in text


def _compare(capsys, *argv: str) -> dict:
    return json_answer(capsys, "compare", *argv)


@pytest.mark.parametrize("which", ["one step", "iteration 2"])
def test_compare_names_the_roots_bisect_names(capsys, which, one_step_run, lr_run):
    """No graph file says who reads the learning-rate list: the Gather's input is found as the parameter by its
    value (and ApplyMomentum's learning rate as the Gather's output, not the parameter's). compare said "no
    root" (the Gather carried noise) where bisect named the Gather: one answer now, the parameter's."""
    args = one_step_run if which == "one step" else (*lr_run, "--iteration", "2")
    b, c = _bisect(capsys, *args), _compare(capsys, *args)
    assert _names(c) == _names(b) == [GATHER]
    assert c["exit"] == b["exit"] == 1
    assert "parameter learning_rate differs" in b["culprit"]["why"]
