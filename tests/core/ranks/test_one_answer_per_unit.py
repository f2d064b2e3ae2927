"""One answer per unit whatever the entry point: `--rank all --step all` names, for each (rank, step), exactly
the roots `--rank R --step S` names on its own (a single step is told what its rank's step before carried: a
weight the optimizer updated with that step's error is "carried from step S-1", not "check the checkpoint").
On generated training runs (msprobe layout: a change at step 2 only, a change from step 1 on, a benign bf16
run) and on the shared multi-rank fixtures when present."""

from __future__ import annotations

import json

import pytest
from helpers.common import SHARED, json_answer
from helpers.msprobe_training import Change, write_training

# many commands run in this process: one pool of worker processes for the module, not one per command
pytestmark = pytest.mark.usefixtures("commands_share_one_pool")


def _bisect(capsys, *argv: str) -> dict:
    return json_answer(capsys, "bisect", *argv)


def _names(report: dict) -> list[tuple[str, str]]:
    return [(r["ref"] or r["target"], r["kind"]) for r in report["roots"]]


def _contradictions(capsys, ref: str, target: str) -> list[str]:
    every = _bisect(capsys, ref, target, "--rank", "all", "--step", "all")
    out = []
    for unit in every["units"]:
        flags = [f for k in ("rank", "step") if unit[k] is not None for f in (f"--{k}", unit[k])]
        alone = _bisect(capsys, ref, target, *flags)
        if _names(alone) != _names(unit["report"]):
            out.append(f"{flags}: alone {_names(alone)} vs in the table {_names(unit['report'])}")
        words_alone = [r["why"] for r in alone["roots"]]
        if words_alone != [r["why"] for r in unit["report"]["roots"]]:
            out.append(f"{flags}: the roots' sentences differ")
    first = every["first_divergence"]
    for head in (first or {}).get("first", []):  # the table's first divergence says what that unit's report says
        unit = next(u for u in every["units"] if u["rank"] == head["rank"] and u["step"] == first["step"])
        said = {r["ref"]: r["why"] for r in unit["report"]["roots"]}
        if said.get(head["op"]) != head["why"]:
            out.append(
                f"first divergence at rank {head['rank']}: {head['why']!r} vs its report's {said.get(head['op'])!r}"
            )
    return out


@pytest.fixture(scope="module")
def training(tmp_path_factory) -> dict[str, tuple[str, str]]:
    root = tmp_path_factory.mktemp("training")
    ref = write_training(root / "ref")
    runs = {
        "scale at step 2 only": Change("mul_scale", rank=1, step=2),
        "seed from step 1": Change("grad_seed", rank=0, step=1),
        "bf16 everywhere": Change("bf16"),
    }
    return {name: (ref, write_training(root / name.replace(" ", "_"), change)) for name, change in runs.items()}


def test_the_table_and_each_unit_alone_agree_on_generated_training_runs(training, capsys):
    found = {name: said for name, (ref, target) in training.items() if (said := _contradictions(capsys, ref, target))}
    assert not found, json.dumps(found, indent=1)


def test_a_change_at_step_2_only_is_found_at_step_2_from_every_entry(training, capsys):
    ref, target = training["scale at step 2 only"]
    every = _bisect(capsys, ref, target, "--rank", "all", "--step", "all")
    assert every["first_divergence"]["step"] == "2"
    for step in ("0", "1"):
        assert _bisect(capsys, ref, target, "--rank", "1", "--step", step)["exit"] == 0
    at_two = _bisect(capsys, ref, target, "--rank", "1", "--step", "2")
    assert at_two["exit"] == 1 and at_two["culprit"] is not None


def test_the_multi_rank_fixtures_agree_unit_by_unit(capsys):
    tp2 = SHARED / "msprobe-26.2-ranks-tp2" / "dumps"
    if not tp2.is_dir():
        pytest.skip(f"shared fixtures absent ({tp2} not found): the multi-rank fixtures are not checked")
    found = {}
    for kind in sorted(p.name for p in tp2.iterdir() if p.is_dir()):
        ref = tp2 / kind / "ref"
        for target in sorted(p for p in (tp2 / kind).iterdir() if p.is_dir() and p.name != "ref"):
            said = _contradictions(capsys, str(ref), str(target))
            if said:
                found[f"{kind} {target.name}"] = said
    assert not found, json.dumps(found, indent=1)


def test_a_weight_updated_with_the_step_befores_error_is_carried_alone_too(capsys):
    pair = SHARED / "msprobe-26.2-ranks-tp2" / "dumps" / "tp2_tensor_mix"
    if not pair.is_dir():
        pytest.skip(f"shared fixtures absent ({pair} not found)")
    alone = _bisect(capsys, str(pair / "ref"), str(pair / "shard_r1"), "--rank", "1", "--step", "1")
    assert not [r for r in alone["roots"] if "check the checkpoint" in r["why"]]
    carried = [c for c in alone["preconditions"]["not_equal"] if "carried from step 0" in c["detail"]]
    assert carried, "the weights updated at step 0 are said carried from it"
    # benign in context as everywhere: the weight's tensor is close, not diverged beside "benign"
    assert all(c["status"] == "benign" and c["result"]["verdict"] == "close" for c in carried)
