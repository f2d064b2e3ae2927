"""Text laid out without a table renderer: aligned columns, names cut in the middle (the rule of
report/names.py), messages and paths of files elided on the left. Cheap enough to redraw on every cursor move."""

from __future__ import annotations

from collections.abc import Sequence

from dumptui.report.names import cut_name, cut_pair


def elide_left(text: str, width: int) -> str:
    """Keep the end of a message or a file's path, marking the cut with `…` (op names: `fit_name`)."""
    if width <= 0:
        return ""
    if len(text) <= width:
        return text
    return "…" + text[len(text) - width + 1 :] if width > 1 else "…"


RENAME = " ↔ "  # a leaf label whose two sides' names differ (present/tree.py leaf_name)


def fit_name(name: str, width: int) -> str:
    """A name (a scope path, an op, a folder, `a ↔ b`) in `width` characters by the one rule of
    report/names.py: cut in the middle with `…`, the op's own name kept; each side of a rename cut alone."""
    if RENAME in name:
        a, b = name.split(RENAME, 1)
        return cut_pair(a, b, width, RENAME)
    return cut_name(name, width)


def format_columns(rows: Sequence[Sequence[str]], right: Sequence[bool], gap: int = 2) -> list[str]:
    """Rows of cells as aligned lines (a table without a table renderer: cheap enough to redraw on every
    cursor move). `right[i]`: right-align column i."""
    if not rows:
        return []
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    out = []
    for r in rows:
        cells = [c.rjust(w) if right[i] else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))]
        out.append((" " * gap).join(cells).rstrip())
    return out
