"""docs/keys.md's key tables, written from what `?` shows: the action table (dumptui/present/keys.py) and the
keys of the widgets and dialogs (their own BINDINGS). `python -m dumptui.tui.keydoc` (in `make docs`) rewrites
the generated part of docs/keys.md in place; tests/tui/test_keys_doc.py fails while the file and the table
disagree. The prose around that part (the marks, the autosave, the browser) stays written by hand."""

from __future__ import annotations

import os
import sys

from textual.app import App

from dumptui.tui import keymap
from dumptui.tui.app import KEYED_WIDGETS

DOC = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "keys.md")
BEGIN = "<!-- The key tables below are written by `make docs` from dumptui/present/keys.py and the widgets' BINDINGS: edit those, not this. -->"
END = "<!-- end of the generated key tables -->"


def _keys(shown: str) -> str:
    """`g / home` as the help shows it, in code spans: `g` / `home`."""
    return " / ".join(f"`{k}`" for k in shown.split(" / "))


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def render() -> str:
    """The generated part of docs/keys.md, markers included: one table per section of `?`, every key shown
    as the app displays it."""
    app: App[None] = App()  # only its key display (`^c`, `?`); never run
    sections = keymap.table_sections(app, None) + keymap.widget_sections(app, KEYED_WIDGETS)
    out = [BEGIN]
    for title, rows in sections:
        out += ["", f"### {title}", "", "| key | action |", "|---|---|"]
        out += [f"| {_keys(keys)} | {_cell(desc)} |" for keys, desc, _bid, _ok in rows]
    out += ["", END]
    return "\n".join(out)


def with_tables(doc: str) -> str:
    """`doc` (docs/keys.md) with its generated part written again."""
    start, end = doc.find(BEGIN), doc.find(END)
    if start < 0 or end < start:
        raise ValueError(f"docs/keys.md has no generated part (between {BEGIN!r} and {END!r})")
    return doc[:start] + render() + doc[end + len(END) :]


def main(argv: list[str]) -> int:
    path = argv[0] if argv else DOC
    with open(path, encoding="utf-8") as f:
        doc = f.read()
    new = with_tables(doc)
    if new != doc:
        with open(path, "w", encoding="utf-8") as f:
            f.write(new)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
