"""The answer contract at the culprit itself (issue 22.1): damage the planted op's output on the target (bad
magic, cut short, emptied, a FIFO) and neither command may name a culprit the numbers cannot back, nor say
"no divergence": both answer Undecided (exit 2), name the op that could not be judged, and list the file.
Damage upstream of a real divergence leaves it found (exit 1). Independent of the fixtures: a generated pair."""

from __future__ import annotations

import json
import os
import shutil

import pytest
from helpers.common import run_cli
from helpers.damage import clean_pair, tensor_file

from dumptui.core.demo.residual import write_demo

DAMAGE = {
    "bad magic": lambda p: p.write_bytes(b"XXXXXX" + p.read_bytes()[6:]),
    "cut short": lambda p: os.truncate(p, p.stat().st_size // 2),
    "empty": lambda p: os.truncate(p, 0),
    "fifo": lambda p: (p.unlink(), os.mkfifo(p)),
}


@pytest.fixture(scope="module", params=["clean", "noisy"])
def pair(request, tmp_path_factory):
    """A clean pair (the graph-aware bisection) and one with an fp16 region (the scan: every op judged)."""
    if request.param == "clean":
        return clean_pair(tmp_path_factory.mktemp("clean"))
    return write_demo(str(tmp_path_factory.mktemp("noisy")), n_ops=16, size=64)


def _leaf(name: str) -> str:
    """The op's part of its file names past the first scope (tensor_file matches it after a `_`)."""
    return name.split("/", 1)[1].replace("/", "_")


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_damage_at_the_culprit_output_is_undecided_in_both_commands(pair, tmp_path, damage):
    target = tmp_path / "target"
    shutil.copytree(pair.target, target)
    damaged = tensor_file(target, _leaf(pair.planted))
    DAMAGE[damage](damaged)
    code, out, err = run_cli("bisect", pair.ref, pair.target, "-q")
    assert code == 1 and _leaf(pair.planted).split("_")[-1] in out  # undamaged, the planted op is the culprit
    for command in ("bisect", "compare"):
        code, out, err = run_cli(command, pair.ref, target, "--json")
        doc = json.loads(out)
        assert code == 2, (command, code, err)
        assert doc["exit"] == 2 and not (doc.get("roots") or [])
        if command == "bisect":
            assert doc["culprit"] is None
            assert any(pair.planted in u and "could not be" in u for u in doc["undecided"]), doc["undecided"]
        assert damaged.name in out
