"""One judgement, shown the same everywhere: for every generated pair of the suite (the shared fixture pairs:
test_one_judgement_fixtures.py) the verdict of every tensor and the set of roots are the same in compare's JSON, both CSV
profiles, the xlsx, the Markdown report and bisect's JSON (whose culprit is the first root).

Each view is read back as a user's script would read it (json, csv, openpyxl), not through the engine
(helpers/judgement.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.judgement import contradictions, views

from dumptui.core.demo.compiled import VARIANTS as COMPILED
from dumptui.core.demo.compiled import write_compiled_demo
from dumptui.core.demo.noisy import write_noisy_demo
from dumptui.core.demo.quantised import VARIANTS as QUANTISED
from dumptui.core.demo.quantised import write_quantised_demo

# many commands run in this process: one pool of worker processes for the module, not one per command
pytestmark = pytest.mark.usefixtures("commands_share_one_pool")


def _generated(root: Path) -> list[tuple[str, str, str]]:
    out = []
    for bug in (None, "main", "weight", "discontinuous"):
        d = write_noisy_demo(str(root / f"noisy-{bug}"), precision="fp16", bug=bug, blocks=6)
        out.append((f"noisy fp16 {bug}", d.ref, d.target))
    for v in QUANTISED:
        q = write_quantised_demo(str(root / f"q-{v}"), v)
        out.append((f"quantised {v}", q.ref, q.target))
    for v in COMPILED:
        c = write_compiled_demo(str(root / f"c-{v}"), v)
        out.append((f"compiled {v}", c.ref, c.target))
    return out


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> list[tuple[str, str, str]]:
    return _generated(tmp_path_factory.mktemp("one-judgement"))


def test_the_checker_sees_a_contradiction():
    """The comparison above is not vacuous: a Root column that misses a root and a verdict that differs are
    both reported."""
    base = ({(3, "output", 0): "diverged", (2, "output", 0): "close"}, {3})
    seen = {
        "compare json": base,
        "full csv": ({(3, "output", 0): "diverged", (2, "output", 0): "diverged"}, {3}),
        "msprobe csv": (base[0], set()),
    }
    said = contradictions(seen)
    assert any("full csv: 1 verdicts differ" in s for s in said)
    assert any("msprobe csv: roots [] vs compare's [3]" in s for s in said)


@pytest.fixture(scope="module")
def every_view(generated, tmp_path_factory) -> dict[str, tuple[dict[str, object], Path]]:
    """Every view of every generated pair, written once for the module: label -> (views read back, folder)."""
    root = tmp_path_factory.mktemp("views")
    out = {}
    for label, ref, target in generated:
        folder = root / label.replace(" ", "_")
        out[label] = (views(ref, target, folder), folder)
    return out


def test_every_view_of_every_generated_pair_says_the_same(every_view):
    found = {}
    for label, (seen, _folder) in every_view.items():
        said = contradictions(seen)
        if said:
            found[label] = said
    assert not found, json.dumps(found, indent=1)


def test_a_root_born_of_a_weight_is_a_root_in_the_csv(every_view):
    """The case users met: a root whose weight differs (kind `parameter`) was missing from the Root column."""
    label = "noisy fp16 weight"
    seen, folder = every_view[label]
    doc = json.loads((folder / "c.json").read_text())
    kinds = {r["kind"] for r in doc["roots"]}
    assert "parameter" in kinds, f"{label}: the planted weight is named as a parameter root ({kinds})"
    assert seen["full csv"][1] == seen["compare json"][1] != set()  # type: ignore[index]
