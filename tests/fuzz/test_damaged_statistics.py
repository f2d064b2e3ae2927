"""statistic.csv damaged (issue 22.1): the rows of the culprit's output, of its input, of the network output
cut short (after the shape, inside the quoted shape, among the statistics, the file ending inside the row),
or run together with the next one. Statistics dumps of a generated pair with a planted divergence. The
answer contract: never exit 0 (no divergence, benign); the file listed with the line and the reason; the
planted culprit first, or the answer said incomplete."""

from __future__ import annotations

import json
import shutil

import pytest
from helpers.damage import clean_pair, run_main
from helpers.msdumps import statistic_copy


def _row(lines: list[str], op: str, io: str) -> int:
    cut = op.replace("/", "_")
    return next(i for i, line in enumerate(lines) if f",{cut}," in line and f",{io},0," in line)


def _damage(path, op: str, io: str, how: str) -> None:
    lines = path.read_text().split("\n")
    i = _row(lines, op, io)
    row = lines[i]
    shape_at = row.index('"(')
    if how == "cut after the shape":
        lines[i] = row[: row.index(')"') + 2]
    elif how == "cut inside the shape":
        lines[i] = row[: shape_at + 4]  # an open quote: the csv reader runs it into the next row
    elif how == "cut among the statistics":
        lines[i] = ",".join(row.split(",")[:-5])
    elif how == "file ends inside the row":
        lines = lines[:i] + [row[: len(row) // 2]]
        path.write_text("\n".join(lines))  # no newline at the end: the write stopped there
        return
    elif how == "run into the next row":
        lines[i : i + 2] = [row + "," + lines[i + 1]]
    path.write_text("\n".join(lines))


HOW = [
    "cut after the shape",
    "cut inside the shape",
    "cut among the statistics",
    "file ends inside the row",
    "run into the next row",
]


@pytest.fixture(scope="module")
def stat_pair(tmp_path_factory):
    root = tmp_path_factory.mktemp("stat")
    demo = clean_pair(root / "npy", n_ops=20)
    ref = statistic_copy(demo.ref, str(root / "ref"))
    target = statistic_copy(demo.target, str(root / "target"))
    return demo, ref, target


@pytest.mark.parametrize("where", ["culprit output", "culprit input", "network output"])
@pytest.mark.parametrize("how", HOW)
def test_statistic_rows_cut_short_never_hide_or_move_the_culprit(stat_pair, tmp_path, where, how):
    demo, ref, target = stat_pair
    code, out, _err = run_main("bisect", ref, target, "--json", "-")
    assert code == 1 and json.loads(out)["culprit"]["ref"] == demo.planted  # undamaged: found on statistics
    damaged = tmp_path / "target"
    shutil.copytree(target, damaged)
    csv_path = next(damaged.rglob("statistic.csv"))
    op = "Default/head-Sigmoid/Sigmoid-op0" if where == "network output" else demo.planted
    _damage(csv_path, op, "input" if where == "culprit input" else "output", how)
    for command in ("bisect", "compare"):
        code, out, err = run_main(command, ref, damaged, "--json", "-")
        doc = json.loads(out)
        assert code == doc["exit"] != 0, (command, err)
        problems = {p["path"]: p["reason"] for p in doc["target"]["problems"]}
        assert "line " in problems.get(str(csv_path), ""), (command, problems)  # the file, the line, the reason
        roots = [r["ref"] for r in doc["roots"]]
        assert roots[:1] == [demo.planted] or doc["incomplete"], (command, roots)
        assert code == 1 or doc["incomplete"]
