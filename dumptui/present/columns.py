"""Text laid out without a table renderer: aligned columns and names elided on the left. Cheap enough to
redraw on every cursor move."""

from __future__ import annotations

import re
from typing import Sequence


def elide_left(text: str, width: int) -> str:
    """Keep the end of a long name (the op itself), marking the cut with `…`."""
    if width <= 0:
        return ""
    if len(text) <= width:
        return text
    return "…" + text[len(text) - width + 1 :] if width > 1 else "…"


RENAME = " ↔ "  # a leaf label whose two sides' names differ (present/tree.py leaf_name)
_OP_SUFFIX = re.compile(r"-op\d+$")


def elide_name(name: str, width: int) -> str:
    """One name (a scope, an op, `a ↔ b`) cut in the middle: its head, which tells siblings apart (`block12`
    of `block12-ResidualBlock`, the `FloorMod` of `FloorMod-op0`), `…`, and its end; each side of a rename
    keeps its own share (`FloorM…op0 ↔ Mod-op0`)."""
    if width <= 0:
        return ""
    if len(name) <= width:
        return name
    if RENAME in name and width >= 5:
        a, b = name.split(RENAME, 1)
        if _OP_SUFFIX.search(a) and _OP_SUFFIX.search(b):  # the op types tell the two apart, not `-op0`
            a, b = _OP_SUFFIX.sub("", a), _OP_SUFFIX.sub("", b)
            if len(a) + len(RENAME) + len(b) <= width:
                return a + RENAME + b
        room = width - len(RENAME)
        if room < 7:  # no room for both: the reference's name (the op pane shows both)
            return elide_name(a, width)
        wa = min(len(a), max(room // 2, room - len(b)))
        return elide_name(a, wa) + RENAME + elide_name(b, room - wa)
    if width < 4:
        return name[: width - 1] + "…"
    dash = name.find("-")
    if dash <= 0:
        head = name[: (width - 1) // 2]
    elif dash + 2 > width:  # not even the head fits: as much of it as does
        return name[: width - 1] + "…"
    else:  # the head whole (`block12`, `FloorMod`), with its dash when there is room to spare
        head = name[: dash + 1] if dash + 1 <= (width - 1) * 3 // 5 else name[:dash]
    return head + "…" + name[len(name) - (width - 1 - len(head)) :]


def short_scope(scope: str) -> str:
    """A scope's own name without its class: `block12` of `block12-ResidualBlock` (what tells siblings apart)."""
    dash = scope.find("-")
    return scope[:dash] if dash > 0 else scope


def elide_path(path: str, width: int) -> str:
    """A scope path that fits `width`, keeping what tells rows apart: the op's name whole, then the nearest
    scopes as their own names only (`…/block5/conv/Conv2D-op0`), full where there is room; cut on the left
    when even that is too long (`…5/conv/Conv2D-op0` still says which block)."""
    if len(path) <= width:
        return path
    parts = path.split("/")
    leaf = parts[-1]
    if len(parts) == 1 or len(leaf) + 2 > width:
        return elide_name(path if len(parts) == 1 else leaf, width)
    scopes = parts[:-1]
    forms = [short_scope(p) for p in scopes]
    for i in range(len(scopes) - 1, -1, -1):  # the nearest scopes get their full names back, while they fit
        full = forms[:i] + [scopes[i]] + forms[i + 1 :]
        if len("/".join([*full, leaf])) > width:
            break
        forms = full
    text = "/".join([*forms, leaf])
    return text if len(text) <= width else elide_left(text, width)


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
