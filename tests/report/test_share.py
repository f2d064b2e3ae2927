"""`dumptui report`: one file to share, its numbers the ones compare --json gives, nothing a page could run."""

from __future__ import annotations

import html
import json
import re

import pytest
from helpers.common import run_cli


@pytest.fixture(scope="module")
def compared(demo_pair):
    code, out, err = run_cli("compare", demo_pair.ref, demo_pair.target, "--json", "-")
    assert code == 1, err
    return json.loads(out)


def test_the_html_report_is_self_contained_with_the_answer_and_the_plot(demo_pair, compared, tmp_path):
    pytest.importorskip("plotly")
    out = tmp_path / "report.html"
    code, _out, err = run_cli("report", demo_pair.ref, demo_pair.target, "-o", out)
    assert code == 1, err  # compare's exit code
    page = out.read_text(encoding="utf-8")
    assert not re.search(r"<script[^>]+src=", page)  # the plot's JavaScript inlined: opens offline
    culprit = compared["roots"][0]
    assert culprit["ref"] in page and f"#{culprit['position']}" in page
    assert html.escape(culprit["local_error"]["replay"]["sentence"]) in page
    diverged = [op for op in compared["ops"] if any(t["verdict"] == "diverged" for t in op["outputs"])]
    assert f"Diverged ops ({len(diverged)} of the {len(compared['ops'])} ops)" in page
    assert page.count("<tr><td>") == len(diverged)
    # the plot: one point per op with a local error, the culprit's error among them
    judged = [op for op in compared["ops"] if (op.get("local_error") or {}).get("output_error") is not None]
    xs = json.loads(re.search(r'"x":(\[[^\]]*\])', page).group(1))
    assert xs == [op["position"] for op in judged]


def test_the_markdown_report_says_what_compare_says(demo_pair, compared, tmp_path):
    out = tmp_path / "report.md"
    code, _out, err = run_cli("report", demo_pair.ref, demo_pair.target, "-o", out)
    assert code == 1, err
    text = out.read_text(encoding="utf-8")
    culprit = compared["roots"][0]
    assert f"- **culprit**: #{culprit['position']} {culprit['ref']} ({culprit['op_type']})" in text
    assert f"- **why**: {culprit['why']}" in text
    rows = [line for line in text.splitlines() if line.startswith("| ") and not line.startswith("| #")]
    diverged = [op for op in compared["ops"] if any(t["verdict"] == "diverged" for t in op["outputs"])]
    assert len(rows) == len(diverged)
    assert rows[0].startswith(f"| {diverged[0]['position']} | {diverged[0]['ref']} |")


def test_names_are_escaped_in_html_and_markdown():
    pytest.importorskip("plotly")
    from dumptui.report.share import html_page, markdown

    evil = "Default/<img src=x onerror=alert(1)>|x"
    out = {"verdict": "diverged", "reason": "", "notes": [], "io": "output", "slot": 0}
    doc = {
        "ref": {"path": "/a"},
        "target": {"path": "/b"},
        "ops": [
            {
                "ref": evil,
                "target": evil,
                "op_type": "Add",
                "position": 1,
                "verdict": "diverged",
                "outputs": [out],
                "local_error": {"output_error": 0.5, "gain": 100.0, "kind": "root"},
            }
        ],
        "roots": [
            {"ref": evil, "target": evil, "op_type": "Add", "position": 1, "why": "x", "hints": [], "caveats": []}
        ],
        "undecided": [],
        "benign": [],
        "remedy": {"culprits": []},
    }
    pre = {"checked": 0, "by_status": {}, "not_equal": []}
    page = html_page(doc, pre, 1)
    assert "<img src=x" not in page and "&lt;img src=x onerror=alert(1)&gt;" in page
    md = markdown(doc, pre, 1)
    assert "onerror=alert(1)>\\|x" in md  # a pipe in a name never splits a table cell


def test_the_html_report_opens_in_chromium_with_its_plot_and_every_section(demo_pair, tmp_path):
    """The page a colleague opens: in a real headless Chromium, offline, every section is there and plotly has
    drawn the plot (its SVG, one marker per judged op in the error trace)."""
    pytest.importorskip("plotly")
    from helpers.browser import Browser, chromium_path

    if chromium_path() is None:
        pytest.skip("no Chromium on this machine (apt-get install chromium): the browser test is skipped")
    import asyncio

    out = tmp_path / "report.html"
    code, _out, err = run_cli("report", demo_pair.ref, demo_pair.target, "-o", out)
    assert code == 1, err

    async def go():
        async with Browser(1280, 900) as b:
            await b.goto(out.as_uri())
            text = await b.wait_for_text("Diverged ops", timeout=60)
            drawn = await b.call(
                "Runtime.evaluate",
                {
                    "expression": "document.querySelectorAll('.js-plotly-plot .main-svg').length",
                    "returnByValue": True,
                },
            )
            points = await b.call(
                "Runtime.evaluate",
                {
                    "expression": "document.querySelectorAll('.js-plotly-plot .scatterlayer .point').length",
                    "returnByValue": True,
                },
            )
            return text, drawn["result"]["value"], points["result"]["value"]

    text, svgs, points = asyncio.run(go())
    for section in ("verdict", "culprit", "why", "proof (replay)", "Error along the execution order", "Preconditions"):
        assert section in text, section
    assert demo_pair.planted in text
    assert svgs >= 1 and points > 10  # plotly ran (offline) and drew the ops
