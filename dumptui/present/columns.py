"""Text laid out without a table renderer: aligned columns and names elided on the left. Cheap enough to
redraw on every cursor move."""

from __future__ import annotations

from typing import Sequence


def elide_left(text: str, width: int) -> str:
    """Keep the end of a long name (the op itself), marking the cut with `…`."""
    if width <= 0:
        return ""
    if len(text) <= width:
        return text
    return "…" + text[len(text) - width + 1 :] if width > 1 else "…"


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
