"""docs/keys.md's key tables are what `?` lists, written from the one key table (dumptui/present/keys.py) and
the widgets' own bindings by `make docs` (dumptui/tui/keydoc.py): this fails while the file and the table
disagree (issue 35, item 1)."""

from __future__ import annotations

import os

import pytest

from dumptui.present.keys import ACTIONS
from dumptui.tui import keydoc
from dumptui.tui.widgets.searchbar import SearchBar

DOC = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "keys.md")


def test_docs_keys_md_is_the_key_table():
    with open(DOC, encoding="utf-8") as f:
        doc = f.read()
    assert keydoc.with_tables(doc) == doc, "docs/keys.md differs from the key table: run `make docs`"


def test_every_key_of_the_table_and_the_widgets_is_in_the_tables():
    tables = keydoc.render()
    rows = {line for line in tables.splitlines() if line.startswith("| `")}
    for a in ACTIONS:
        if a.keys:
            assert any(line.endswith(f"| {a.help} |") for line in rows), a.id
    for b in SearchBar.BINDINGS:
        assert any(line.endswith(f"| {b.tooltip or b.description} |") for line in rows), b.id
    assert "| `+` | Mark the probe good (overrule) |" in rows and "| `g` / `home` |" in "\n".join(rows)
    # the search's n / N come before the diverged ops' (the first available binding of a key answers it)
    n_rows = [line for line in tables.splitlines() if line.startswith("| `n` |")]
    assert [r.split("|")[2].strip() for r in n_rows] == [
        "Next match of the search (while a search is active; escape ends it, n is the next diverged op again)",
        "Next diverged op",
    ]


def test_a_doc_without_the_markers_is_refused():
    with pytest.raises(ValueError, match="generated part"):
        keydoc.with_tables("# Keys\n\nwritten by hand\n")
    edited = keydoc.with_tables(f"intro\n{keydoc.BEGIN}\n| `g` | Good |\n{keydoc.END}\nafter\n")
    assert edited.startswith("intro\n") and edited.endswith("\nafter\n") and "| `g` | Good |" not in edited
