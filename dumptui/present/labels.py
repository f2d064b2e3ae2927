"""Labels of the op lists that fit their width, and the legend of the marks.

A label keeps, in this order, the verdict mark, the tag (the probe, the culprit, another root: the characters
of the bisection bar), the op's number and the count of diverged ops inside a folder; the name gives way,
cut in the middle by the one rule of names (report/names.py: `block12-…alBlock`; in the flat list the op's own
name and as many of its nearest scopes as fit, `Defa…/block5-Block/conv-Conv/Conv2D-op0`). Nothing is cut at
the right edge.
"""

from __future__ import annotations

from dataclasses import dataclass

from dumptui.core.compare.verdict import Verdict
from dumptui.present.bars import BAR_CHAR
from dumptui.present.columns import fit_name
from dumptui.report.looks import MARKS

TAG_WORDS = {"probe": "probe", "culprit": "culprit", "root": "other root"}
TAG_CHAR = {"probe": BAR_CHAR["probe"], "culprit": BAR_CHAR["culprit"], "root": BAR_CHAR["root"]}


@dataclass(frozen=True)
class LabelParts:
    name: str
    number: str  # " #37" for an op; " 21✗" for a folder ("" when nothing diverged inside)
    tag: str  # " ◀ culprit", or " ◀!" when there is no room for the word; "" without a tag


def fit_label(name: str, number: str, tag: str | None, room: int) -> LabelParts:
    """The parts of a label after the mark and its space (`room` characters for them). The name (a whole scope
    path in the flat list, one name in the tree) cut by the one rule of names (report/names.py)."""
    tag_text = f" ◀ {TAG_WORDS[tag]}" if tag else ""
    if tag and len(name) + len(number) + len(tag_text) > room:
        tag_text = f" ◀{TAG_CHAR[tag]}"
    left = room - len(number) - len(tag_text)
    if left < min(len(name), 6):  # too narrow for the number as well: the name keeps a few characters
        number = ""
        left = room - len(tag_text)
    return LabelParts(fit_name(name, max(1, left)), number, tag_text)


LEGEND_ORDER = (  # what a user looks for first: a divergence, then agreement, then the rarer states
    Verdict.DIVERGED,
    Verdict.CLOSE,
    Verdict.EQUAL,
    Verdict.PENDING,
    Verdict.ONLY_REF,
    Verdict.ONLY_TARGET,
    Verdict.SHAPE_MISMATCH,
    Verdict.DTYPE_MISMATCH,
    Verdict.NOT_COMPARABLE,
    Verdict.UNREADABLE,
    Verdict.IGNORED,
    Verdict.FLIPPED,
)


def marks_legend() -> list[tuple[str, str]]:
    """(mark, meaning) for every mark an op or folder can show (report/looks.py); every verdict is listed (a test
    holds the order to the enum)."""
    return [(MARKS[v], "not computed yet" if v is Verdict.PENDING else str(v)) for v in LEGEND_ORDER]


SHORT = {
    "equal": "equal",
    "close": "close",
    "ignored": "ignored",
    "not computed yet": "pending",
    "only in target": "target only",
    "only in ref": "ref only",
    "not comparable": "n/c",
    "unreadable": "unreadable",
    "dtype mismatch": "dtype",
    "shape mismatch": "shape",
    "diverged": "diverged",
    "flipped": "flipped",
}


def legend_lines(width: int, max_lines: int = 2) -> list[str]:
    """The marks legend for the tree's header: whole items only, as many as fit `max_lines` lines of `width`
    (the help screen has all of them with their full words)."""
    items = [f"{m} {SHORT.get(w, w)}" for m, w in marks_legend()]
    lines: list[str] = [""]
    for item in items:
        sep = "  " if lines[-1] else ""
        if len(lines[-1]) + len(sep) + len(item) <= width:
            lines[-1] += sep + item
        elif len(lines) < max_lines and len(item) <= width:
            lines.append(item)
        else:
            break
    return [line for line in lines if line]
