"""Every `docs/<file>.md#anchor` the code, the tests and the docs point to is a heading of that file (as GitHub
makes its anchor): a comment that says where a format is described must lead somewhere."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LINK = re.compile(r"(?:docs/)?([a-z_]+\.md)#([a-z0-9-]+)")


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(doc: Path) -> set[str]:
    return {slug(line.lstrip("#")) for line in doc.read_text(encoding="utf-8").splitlines() if line.startswith("#")}


def references() -> list[tuple[Path, str, str]]:
    files = [*ROOT.glob("dumptui/**/*.py"), *ROOT.glob("tests/**/*.py"), *ROOT.glob("docs/*.md"), ROOT / "README.md"]
    out = []
    for f in files:
        for doc, anchor in LINK.findall(f.read_text(encoding="utf-8")):
            if (ROOT / "docs" / doc).is_file():
                out.append((f, doc, anchor))
    return out


def test_every_docs_anchor_resolves():
    refs = references()
    assert any(doc == "formats.md" for _f, doc, _a in refs)  # the format comments do point there
    missing = [(str(f.relative_to(ROOT)), f"{doc}#{a}") for f, doc, a in refs if a not in anchors(ROOT / "docs" / doc)]
    assert not missing, missing


def test_the_check_sees_a_dangling_anchor(tmp_path):
    doc = tmp_path / "x.md"
    doc.write_text("# Title\n\n## Known traps\n", encoding="utf-8")
    assert anchors(doc) == {"title", "known-traps"}
    assert "device-layouts" not in anchors(doc)
    assert slug("MindSpore 1.x bin dumps") == "mindspore-1x-bin-dumps"
