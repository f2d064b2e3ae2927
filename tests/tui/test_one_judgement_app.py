"""The app shows the run's one judgement: its tree marks, op pane rows, bisection pane (culprit and other
roots) and its `x` export say what `compare --json` says about the same pair, tensor by tensor and root by
root (noisy pairs, where verdicts are judged in context after the scan: the op pane said `input.0 diverged`
where the bisection pane said `close`)."""

from __future__ import annotations

import csv
import io
import json

import pytest
from helpers.app import opened, run, wait_until

from dumptui import cli
from dumptui.core.compare.verdict import ONLY_REF, ONLY_TARGET
from dumptui.core.demo.noisy import write_noisy_demo

# the apps of this module share one pool of worker processes (conftest.py), not one spawned per app
pytestmark = pytest.mark.usefixtures("apps_share_one_pool")


@pytest.fixture(scope="module")
def pairs(tmp_path_factory):
    root = tmp_path_factory.mktemp("one-judgement-app")
    return [write_noisy_demo(str(root / str(bug)), precision="fp16", bug=bug, blocks=6) for bug in ("weight", "main")]


def _compare(capsys, ref: str, target: str) -> dict:
    capsys.readouterr()
    cli.main(["compare", ref, target, "-q", "--json", "-"])
    return json.loads(capsys.readouterr().out)


def _tensors(op: dict) -> list[tuple[str, int, str]]:
    return [(t["io"], t["slot"], t["verdict"]) for t in op["inputs"] + op["outputs"]]


@pytest.mark.parametrize("which", [0, 1])
def test_every_pane_and_the_export_say_what_compare_says(pairs, capsys, which):
    demo = pairs[which]
    doc = _compare(capsys, demo.ref, demo.target)
    by_position = {op["position"]: op for op in doc["ops"]}
    roots = [r["position"] for r in doc["roots"]]
    assert roots, "each pair has a planted root"

    async def go():
        async with opened(demo.ref, demo.target, size=(120, 40), stats=True) as (app, pilot, scr):
            await pilot.press("a")
            await wait_until(lambda: scr.bstate.finished and not scr.bisect_task, what="the search's end")
            state = scr.bstate
            # the bisection pane: the culprit is the first root, the others the rest
            assert state.culprit is not None and state.culprit.index + 1 == roots[0]
            assert sorted([state.culprit.index + 1] + [o.index + 1 for o in state.others]) == sorted(roots)
            # the op pane, once it shows the culprit again as judged: its rows are compare's
            culprit = by_position[roots[0]]
            await wait_until(
                lambda: (
                    scr.detail.result is not None
                    and scr.detail.index == state.culprit.index
                    and [(r.io, r.slot, str(r.verdict)) for r in scr.detail.result.inputs + scr.detail.result.outputs]
                    == _tensors(culprit)
                ),
                what="the op pane's rows to be compare's",
            )
            # every op the app knows a verdict of: the tree's mark is compare's
            marks = scr.model.verdicts
            assert len(marks) >= len(by_position) // 2
            differ = {
                i: (str(v), by_position[i + 1]["verdict"])
                for i, v in marks.items()
                if v not in (ONLY_REF, ONLY_TARGET) and str(v) != by_position[i + 1]["verdict"]
            }
            assert not differ, differ
            # every op's rows through the controller (what the op pane shows for it)
            for position, op in by_position.items():
                res, _rel = scr.controller.op_detail(position - 1)
                got = [(r.io, r.slot, str(r.verdict)) for r in res.inputs + res.outputs]
                assert got == _tensors(op), op["ref"] or op["target"]
            # the `x` export: the same verdicts and the same roots as compare's CSV
            text, _rows = scr.controller.comparison_csv("full")
            rows = list(csv.DictReader(io.StringIO(text)))
            assert {int(r["Position"]) for r in rows if r["Root"] == "Yes"} == set(roots)
            for r in rows:
                op = by_position[int(r["Position"])]
                want = {(t["io"], t["slot"]): t["verdict"] for t in op["inputs"] + op["outputs"]}
                assert want[(r["IO"], int(r["Slot"]))] == r["Verdict"]
            filled = [r for r in rows if r["Local Error"]]
            assert filled and all(r["Local Gain"] != "" for r in filled)

    run(go())
