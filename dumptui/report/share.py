"""`dumptui report`: the answer as one file to share, rendered from the same documents `compare --json` and the
preconditions give (one source for every number): a self-contained HTML page (the plot drawn inline,
no network needed to open it) or Markdown for an issue tracker.

The plot is drawn here as inline SVG (two log-scale panels, a point per judged op whose hover title names it
and its value): no script, no library, so the page stays small enough to attach to an issue (plotly inlined
whole made a 30-op report 4.8 MB).
"""

from __future__ import annotations

import html
from typing import Any

from dumptui.core.compare.noise import fmt_rel
from dumptui.core.compare.session import Session
from dumptui.core.search.compare_all import Comparison
from dumptui.report import data
from dumptui.report.cause import fmt_gain
from dumptui.report.documents import compare_code, compare_document
from dumptui.report.fmt import clean
from dumptui.report.selection import GAIN_AFTER_FLIP

VERDICT_WORDS = {
    0: "No root of divergence: every op's error is what precision explains",
    1: "Root of divergence found",
    2: "Undecided: what could not be read or judged hides the answer",
}
MAX_TABLE_ROWS = 200  # the diverged ops listed; the rest are counted


def _rel(v: float | None) -> str:
    """An error as the text report writes it (fmt_rel): the same digits in every output."""
    return "-" if v is None else fmt_rel(v)


def _g(v: Any) -> str:
    return "-" if v is None else f"{v:.3g}" if isinstance(v, float) else str(v)


def _gain(le: dict) -> str:
    """`x2.15e+04`, or the code a flip gives an op whose inputs it resized (no gain exists there)."""
    words = le.get("gain_words") or fmt_gain(le.get("gain"))
    return words if words == GAIN_AFTER_FLIP else f"x{words}"


def _diverged(doc: dict) -> list[dict]:
    bad = ("diverged", "shape mismatch", "dtype mismatch")
    return [op for op in doc["ops"] if any(t["verdict"] in bad for t in op["outputs"])]


def _summary(doc: dict, code: int) -> list[tuple[str, str]]:
    """(label, text) lines of the answer, in the order a reader needs them."""
    out = [("verdict", VERDICT_WORDS.get(code, str(code)))]
    if doc["roots"]:
        r = doc["roots"][0]
        names = r["ref"] if r["ref"] == r["target"] else f"{r['ref']} (reference) / {r['target']} (target)"
        out.append(("culprit", f"#{r['position']} {names} ({r['op_type']})"))
        out.append(("why", r["why"]))
        le = r.get("local_error") or {}
        if le.get("output_error") is not None:
            out.append(
                (
                    "local error",
                    f"output {_rel(le['output_error'])} {'of its statistics' if le.get('statistics_only') else 'of its RMS'} (floor {_rel(le.get('floor'))}), inputs carry "
                    f"{_rel(le.get('input_error'))}: gain {_gain(le)}",
                )
            )
        if le.get("replay"):
            out.append(("proof (replay)", le["replay"]["sentence"]))
        for h in r.get("hints", []):
            out.append(("hint", h))
        for c in r.get("caveats", []):
            out.append(("caveat", c))
        for other in doc["roots"][1:]:
            out.append(("other root", f"#{other['position']} {other['ref']} ({other['op_type']}): {other['why']}"))
    for u in doc.get("undecided", []):
        out.append(("undecided", u))
    for b in doc.get("benign", []) if code == 0 else []:
        out.append(("benign", b))
    for rem in (doc.get("remedy") or {}).get("culprits", []):
        out.append((f"remedy ({rem['cause']})", rem["sentence"]))
    return out


def _preconditions(pre: dict) -> list[str]:
    counts = ", ".join(f"{n} {status}" for status, n in sorted(pre["by_status"].items()))
    lines = [f"{pre['checked']} inputs and weights checked: {counts}" if pre["checked"] else "nothing to check"]
    lines += [f"{c['name']}: {c['status']} — {c['detail']}" for c in pre["not_equal"]]
    return lines


def _rows(doc: dict) -> list[list[str]]:
    rows = []
    for op in _diverged(doc)[:MAX_TABLE_ROWS]:
        le = op.get("local_error") or {}
        name = op["ref"] if op["ref"] == op["target"] or op["target"] is None else f"{op['ref']} / {op['target']}"
        rows.append(
            [
                str(op["position"]),
                name or "",
                op["op_type"] or "",
                op["verdict"],
                _rel(le.get("output_error")),
                _gain(le).removeprefix("x"),
                str(le.get("kind") or ""),
            ]
        )
    return rows


HEADER = ["#", "op", "type", "verdict", "output error", "gain", "local error"]


def markdown(doc: dict, pre: dict, code: int) -> str:
    """The report as Markdown (names cleaned of control characters, table cells of their pipes)."""

    def cell(text: str) -> str:
        return clean(text).replace("|", "\\|")

    out = [f"# dumptui report: {cell(doc['ref']['path'])} vs {cell(doc['target']['path'])}", ""]
    out += [f"- **{cell(label)}**: {cell(text)}" for label, text in _summary(doc, code)]
    out += ["", "## Preconditions", ""] + [f"- {cell(line)}" for line in _preconditions(pre)]
    diverged = _diverged(doc)
    out += ["", f"## Diverged ops ({len(diverged)} of the {len(doc['ops'])} ops)", ""]
    out += ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    out += ["| " + " | ".join(cell(c) for c in row) + " |" for row in _rows(doc)]
    if len(diverged) > MAX_TABLE_ROWS:
        out.append(f"\n{len(diverged) - MAX_TABLE_ROWS} more diverged ops: `dumptui compare --only-diverged`")
    return "\n".join(out) + "\n"


MAX_POINTS = 4000  # points drawn per trace; beyond, each of MAX_POINTS slices of the order keeps its largest
PLOT_W, PLOT_LEFT, PLOT_RIGHT = 1100, 70, 20  # the SVG's width and its margins (px)
PANELS = (("error", "output error (of its RMS)", 260), ("gain", "local gain", 170))  # key, axis title, height


def _points(doc: dict, key: str) -> list[tuple[int, float, str]]:
    """(position, value, name) of every op with a positive local `key` ("error": its output error, "gain"),
    thinned to MAX_POINTS by keeping the largest of each slice of the order (a peak is never dropped)."""
    out = []
    for op in doc["ops"]:
        le = op.get("local_error") or {}
        v = le.get("output_error") if key == "error" else le.get("gain")
        if le.get("output_error") is None or v is None or not v > 0 or v == float("inf"):
            continue
        out.append((op["position"], float(v), clean(op["ref"] or op["target"] or "")))
    if len(out) <= MAX_POINTS:
        return out
    lo, hi = out[0][0], out[-1][0]
    best: dict[int, tuple[int, float, str]] = {}
    for p in out:
        b = (p[0] - lo) * MAX_POINTS // (hi - lo + 1)
        if b not in best or p[1] > best[b][1]:
            best[b] = p
    return sorted(best.values())


def _decades(values: list[float]) -> tuple[int, int]:
    """The log10 range the axis spans: whole decades around the values."""
    import math

    lo = math.floor(math.log10(min(values))) if values else -6
    hi = math.ceil(math.log10(max(values))) if values else 0
    return lo, max(hi, lo + 1)


def _panel(doc: dict, key: str, title: str, height: int, xs: tuple[int, int]) -> str:
    """One log-scale panel as SVG: decade gridlines, a point per op with its hover title, the roots marked."""
    import math

    e = html.escape
    pts = _points(doc, key)
    lo, hi = _decades([v for _x, v, _n in pts])
    top, bottom = 24, height - 34
    x0, x1 = xs
    span = max(x1 - x0, 1)

    def X(pos: float) -> float:
        return PLOT_LEFT + (pos - x0) * (PLOT_W - PLOT_LEFT - PLOT_RIGHT) / span

    def Y(v: float) -> float:
        return bottom - (math.log10(v) - lo) * (bottom - top) / (hi - lo)

    out = [f'<svg class="plot" id="plot-{key}" width="{PLOT_W}" height="{height}" role="img"><title>{e(title)}</title>']
    out.append(f'<text x="4" y="14" class="axis">{e(title)}, log scale</text>')
    for d in range(lo, hi + 1):
        y = Y(10.0**d)
        out.append(f'<line x1="{PLOT_LEFT}" x2="{PLOT_W - PLOT_RIGHT}" y1="{y:.1f}" y2="{y:.1f}" class="grid"/>')
        out.append(f'<text x="{PLOT_LEFT - 6}" y="{y + 4:.1f}" class="tick" text-anchor="end">1e{d}</text>')
    for i in range(11):
        pos = x0 + round(i * span / 10)
        out.append(f'<text x="{X(pos):.1f}" y="{height - 18}" class="tick" text-anchor="middle">#{pos}</text>')
    for i, r in enumerate(doc["roots"]):
        x = X(r["position"])
        what = "culprit" if i == 0 else "root"
        out.append(
            f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{top}" y2="{bottom}" class="{what}"><title>{what}: '
            f"#{r['position']} {e(clean(r['ref'] or r['target'] or ''))}</title></line>"
        )
        out.append(f'<text x="{x + 3:.1f}" y="{top + 10}" class="{what}-label">{what}</text>')
    word = "error" if key == "error" else "gain x"
    for pos, v, name in pts:
        out.append(
            f'<circle cx="{X(pos):.1f}" cy="{Y(v):.1f}" r="3" data-position="{pos}" data-value="{v:.6g}">'
            f"<title>#{pos} {e(name)}: {word}{_rel(v) if key == 'error' else f'{v:.3g}'}</title></circle>"
        )
    out.append(f'<text x="{PLOT_W // 2}" y="{height - 2}" class="axis" text-anchor="middle">')
    out.append("position in execution order</text></svg>")
    return "".join(out)


def plot_svg(doc: dict) -> str:
    """Output error and local gain of every judged op along the execution order, log scale, roots marked: two
    inline SVG panels whose points say their op and value on hover (their <title>), no script and no library."""
    positions = [op["position"] for op in doc["ops"] if op.get("position") is not None]
    xs = (min(positions), max(positions)) if positions else (0, 1)
    return "\n".join(_panel(doc, key, title, height, xs) for key, title, height in PANELS)


def html_page(doc: dict, pre: dict, code: int) -> str:
    """One self-contained page: every string escaped, the plot's JavaScript inlined (opens offline)."""
    e = html.escape
    plot = plot_svg(doc)
    summary = "".join(f"<tr><th>{e(label)}</th><td>{e(clean(text))}</td></tr>" for label, text in _summary(doc, code))
    pre_items = "".join(f"<li>{e(clean(line))}</li>" for line in _preconditions(pre))
    diverged = _diverged(doc)
    head = "".join(f"<th>{e(h)}</th>" for h in HEADER)
    body = "".join("<tr>" + "".join(f"<td>{e(clean(c))}</td>" for c in row) + "</tr>" for row in _rows(doc))
    more = (
        f"<p>{len(diverged) - MAX_TABLE_ROWS} more diverged ops: <code>dumptui compare --only-diverged</code></p>"
        if len(diverged) > MAX_TABLE_ROWS
        else ""
    )
    title = f"dumptui report: {clean(doc['ref']['path'])} vs {clean(doc['target']['path'])}"
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{e(title)}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2em; max-width: 1200px; }}
table {{ border-collapse: collapse; }} th, td {{ text-align: left; padding: 2px 8px; vertical-align: top; }}
#summary th {{ white-space: nowrap; }} #ops td, #ops th {{ border-bottom: 1px solid #ddd; font-size: 90%; }}
code {{ background: #f4f4f4; }}
svg.plot {{ display: block; margin: 0.5em 0; }} svg .grid {{ stroke: #e4e4e4; }}
svg .tick, svg .axis {{ font-size: 11px; fill: #555; }} svg circle {{ fill: #1f77b4; fill-opacity: 0.75; }}
svg circle:hover {{ fill: #d62728; r: 6; }} svg .culprit {{ stroke: #d62728; stroke-dasharray: 5 3; }}
svg .root {{ stroke: #ff7f0e; stroke-dasharray: 5 3; }} svg .culprit-label {{ fill: #d62728; font-size: 11px; }}
svg .root-label {{ fill: #ff7f0e; font-size: 11px; }}
</style></head><body>
<h1>{e(title)}</h1>
<table id="summary">{summary}</table>
<h2>Error along the execution order</h2>
{plot}
<h2>Preconditions</h2><ul>{pre_items}</ul>
<h2>Diverged ops ({len(diverged)} of the {len(doc["ops"])} ops)</h2>
<table id="ops"><tr>{head}</tr>{body}</table>{more}
<p><small>made by dumptui; every number is the one <code>dumptui compare --json</code> gives</small></p>
</body></html>
"""


def report_text(session: Session, comparison: Comparison, fmt: str = "html") -> tuple[str, int]:
    """The report of a comparison (`dumptui report`, the app's `W`, `serve`'s download) and compare's exit
    code: "html" (one self-contained page) or "md"."""
    code = compare_code(session, comparison)
    doc = compare_document(session, comparison)
    pre = data.preconditions(comparison.bisection.check_inputs(), comparison.bisection.judged)
    return (markdown(doc, pre, code) if fmt == "md" else html_page(doc, pre, code)), code
