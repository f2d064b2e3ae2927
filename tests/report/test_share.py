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


def _points(page: str, panel: str) -> list[tuple[int, float]]:
    svg = re.search(rf'<svg class="plot" id="plot-{panel}".*?</svg>', page, re.S).group(0)
    return [(int(p), float(v)) for p, v in re.findall(r'<circle [^>]*data-position="(\d+)" data-value="([^"]+)"', svg)]


def test_the_html_report_is_self_contained_with_the_answer_and_the_plot(demo_pair, compared, tmp_path):
    out = tmp_path / "report.html"
    code, _out, err = run_cli("report", demo_pair.ref, demo_pair.target, "-o", out)
    assert code == 1, err  # compare's exit code
    page = out.read_text(encoding="utf-8")
    assert "<script" not in page and "http" not in page.split("<body>")[0]  # nothing to run, nothing to fetch
    assert out.stat().st_size < 1_000_000, out.stat().st_size  # small enough to attach to an issue
    culprit = compared["roots"][0]
    assert culprit["ref"] in page and f"#{culprit['position']}" in page
    assert html.escape(culprit["local_error"]["replay"]["sentence"]) in page
    diverged = [op for op in compared["ops"] if any(t["verdict"] == "diverged" for t in op["outputs"])]
    assert f"Diverged ops ({len(diverged)} of the {len(compared['ops'])} ops)" in page
    assert page.count("<tr><td>") == len(diverged)
    # the plot: one point per op with a local error (log scale: above 0), its value compare's
    judged = [op for op in compared["ops"] if ((op.get("local_error") or {}).get("output_error") or 0) > 0]
    points = _points(page, "error")
    assert [p for p, _v in points] == [op["position"] for op in judged]
    for (_p, v), op in zip(points, judged):
        assert v == pytest.approx(op["local_error"]["output_error"], rel=1e-5)
    gains = [op for op in judged if (op["local_error"].get("gain") or 0) > 0]
    assert [p for p, _v in _points(page, "gain")] == [
        op["position"] for op in gains if op["local_error"]["gain"] < 1e308
    ]
    # the culprit marked at its position, every point saying its op on hover
    assert f"<title>culprit: #{culprit['position']} {html.escape(culprit['ref'])}</title>" in page
    assert page.count("<circle ") == page.count("</title></circle>")


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
    """The page a colleague opens: in a real headless Chromium, offline, every section is there and the plot is
    drawn (its two SVG panels laid out, one marker per judged op, each with its hover title)."""
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
                    "expression": "[...document.querySelectorAll('svg.plot')].filter("
                    "s => s.getBoundingClientRect().width > 500).length",
                    "returnByValue": True,
                },
            )
            points = await b.call(
                "Runtime.evaluate",
                {
                    "expression": "[...document.querySelectorAll('#plot-error circle')].filter("
                    "c => c.getBoundingClientRect().width > 0 && c.querySelector('title').textContent.startsWith('#')"
                    ").length",
                    "returnByValue": True,
                },
            )
            return text, drawn["result"]["value"], points["result"]["value"]

    text, svgs, points = asyncio.run(go())
    for section in ("verdict", "culprit", "why", "proof (replay)", "Error along the execution order", "Preconditions"):
        assert section in text, section
    assert demo_pair.planted in text
    assert svgs == 2 and points > 10  # both panels laid out, the ops drawn with their hover titles
