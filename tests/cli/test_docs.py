"""The user's documents: a short README that links to docs/, every local link resolving, and a man page that
is what the parsers say."""

from __future__ import annotations

import re
from pathlib import Path

from dumptui.cli.manpage import page
from dumptui.cli.parser import SUBCOMMANDS

REPO = Path(__file__).resolve().parents[2]
LINK = re.compile(r"\]\(([^)#\s]+)(#[^)\s]*)?\)")


def test_the_man_page_is_the_parsers_own():
    text = (REPO / "docs" / "dumptui.1").read_text(encoding="utf-8")
    assert text == page(), "docs/dumptui.1 is out of date: python -m dumptui.cli.manpage > docs/dumptui.1"
    for sub in SUBCOMMANDS:
        assert ".SS dumptui " + sub.replace("-", "\\-") in text
    assert "\\fB\\-\\-gain G\\fR" in text and ".SH EXIT STATUS" in text


def test_the_readme_is_short_and_every_local_link_resolves():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) < 150
    assert "make test" in readme and "make run" in readme  # the two commands (.ci/run runs the first)
    for doc in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")), REPO / "ARCHITECTURE.md"]:
        for target, _anchor in LINK.findall(doc.read_text(encoding="utf-8")):
            if target.startswith(("http://", "https://", "mailto:")):
                continue
            assert (doc.parent / target).exists(), f"{doc.relative_to(REPO)} links to {target}, which is missing"


def test_every_document_the_readme_names_exists():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    named = set(re.findall(r"docs/[a-z]+\.(?:md|1)", readme))
    assert {"docs/workflow.md", "docs/commands.md", "docs/dumptui.1"} <= named
    assert all((REPO / n).exists() for n in named)
