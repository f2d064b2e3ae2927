"""Deep nesting in a graph file (issue 22.3): a MindSpore .ir whose attribute and input list are nested
100,000 deep. The graph is read without exhausting the stack or the memory, the answer is unchanged (the
planted culprit, exit 1) and no traceback or internal error reaches the user. (npy headers, dump.json, YAML
and construct.json nested that deep: tests/core/formats/test_damaged_dumps.py, tests/options/.)"""

from __future__ import annotations

import json

import pytest
from helpers.damage import clean_pair, run_main

DEPTH = 100_000


@pytest.mark.parametrize("opener,closer", [("(", ")"), ("[", "]"), ("{", "}")])
def test_a_graph_nested_100k_deep_changes_nothing(tmp_path, opener, closer):
    pair = clean_pair(tmp_path / "pair")
    ir = next((tmp_path / "pair" / "target" / "rank_0" / "graphs").glob("*.ir"))
    text = ir.read_text()
    nested = opener * DEPTH + "0" + closer * DEPTH
    assert "pad_list: (0, 0, 0, 0)" in text and "= Conv2D(%6, %7)" in text
    text = text.replace("pad_list: (0, 0, 0, 0)", f"pad_list: {nested}", 1)
    ir.write_text(text.replace("= Conv2D(%6, %7)", f"= Conv2D(%6, %7, {nested})", 1))
    for command in ("bisect", "compare"):
        code, out, err = run_main(command, pair.ref, pair.target, "--json", "-")
        assert "Traceback" not in err and "internal error" not in err, err
        doc = json.loads(out)
        assert code == doc["exit"] == 1 and [r["target"] for r in doc["roots"]] == [pair.planted], (command, err)
