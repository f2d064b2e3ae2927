"""`dumptui report`: the answer as one file to share, rendered from the same documents `compare --json` and the
preconditions give (one source for every number): a self-contained HTML page (the plot embedded with its
library, no network needed to open it) or Markdown for an issue tracker.

The plot is plotly's (an optional extra, `pip install 'dumptui[report]'`): a real, zoomable, log-scale chart
in one HTML file with its JavaScript inlined, which hand-drawn SVG would not give without a charting library
of our own to maintain.
"""

from __future__ import annotations

import html
from typing import Any

from dumptui.core.compare.noise import fmt_rel
from dumptui.report.cause import fmt_gain
from dumptui.report.fmt import clean

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
                    f"{_rel(le.get('input_error'))}: gain x{le.get('gain_words') or fmt_gain(le.get('gain'))}",
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
                le.get("gain_words") or fmt_gain(le.get("gain")),
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


def _figure(doc: dict) -> Any:
    """Output error and local gain of every judged op along the execution order, log scale, roots marked."""
    try:
        from plotly.subplots import make_subplots
    except ImportError:
        msg = "the HTML report draws its plot with plotly: pip install 'dumptui[report]' (or --format md)"
        raise ImportError(msg) from None
    ops = [op for op in doc["ops"] if (op.get("local_error") or {}).get("output_error") is not None]
    x = [op["position"] for op in ops]
    names = [clean(op["ref"] or op["target"] or "") for op in ops]
    err = [max(op["local_error"]["output_error"], 1e-12) for op in ops]
    gain = [op["local_error"]["gain"] for op in ops]
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.06, subplot_titles=("error", "gain"))
    fig.add_scatter(x=x, y=err, mode="lines+markers", name="output error (of its RMS)", text=names, row=1, col=1)
    fig.add_scatter(
        x=x, y=[g if g and g > 0 else None for g in gain], mode="markers", name="local gain", text=names, row=2, col=1
    )
    for i, r in enumerate(doc["roots"]):
        fig.add_vline(x=r["position"], line_dash="dash", line_color="red" if i == 0 else "orange")
        fig.add_annotation(x=r["position"], y=1.02, yref="paper", showarrow=False, text="culprit" if i == 0 else "root")
    fig.update_yaxes(type="log", row=1, col=1)
    fig.update_yaxes(type="log", row=2, col=1)
    fig.update_xaxes(title_text="position in execution order", row=2, col=1)
    fig.update_layout(height=560, margin={"l": 60, "r": 20, "t": 40, "b": 40}, hovermode="closest")
    return fig


def html_page(doc: dict, pre: dict, code: int) -> str:
    """One self-contained page: every string escaped, the plot's JavaScript inlined (opens offline)."""
    e = html.escape
    fig = _figure(doc)
    plot = fig.to_html(full_html=False, include_plotlyjs=True, config={"displaylogo": False})
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
