"""How a verdict looks, for every renderer (the headless report, the presenter, the app): one character per
verdict, distinct without colour (an SSH session through a jump host may have none), and the role a renderer
colours by (the app maps roles to theme variables, the headless report to rich styles). The engine only
decides the verdict (core/compare/verdict.py).
"""

from __future__ import annotations

from dumptui.core.compare.verdict import Verdict

MARKS: dict[Verdict, str] = {
    Verdict.DIVERGED: "✗",
    Verdict.SHAPE_MISMATCH: "#",
    Verdict.DTYPE_MISMATCH: "%",
    Verdict.UNREADABLE: "!",
    Verdict.NOT_COMPARABLE: "?",
    Verdict.ONLY_REF: "<",
    Verdict.ONLY_TARGET: ">",
    Verdict.PENDING: "·",
    Verdict.FLIPPED: "⇄",
    Verdict.CLOSE: "≈",
    Verdict.IGNORED: "-",
    Verdict.EQUAL: "=",
}
ROLES: dict[Verdict, str] = {
    Verdict.DIVERGED: "bad",
    Verdict.SHAPE_MISMATCH: "bad",
    Verdict.DTYPE_MISMATCH: "bad",
    Verdict.UNREADABLE: "unreadable",
    Verdict.NOT_COMPARABLE: "incomparable",
    Verdict.ONLY_REF: "one-sided",
    Verdict.ONLY_TARGET: "one-sided",
    Verdict.PENDING: "muted",
    Verdict.FLIPPED: "close",  # no divergence: a near-tie that flipped (its mark and word tell it from close)
    Verdict.CLOSE: "close",
    Verdict.IGNORED: "muted",
    Verdict.EQUAL: "ok",
}
assert set(MARKS) == set(ROLES) == set(Verdict), "every verdict has a mark and a role"
assert len(set(MARKS.values())) == len(MARKS), "marks tell verdicts apart without colour"


def mark(verdict: str | None) -> str:
    """One character per verdict; not computed yet (None) is the neutral `·`, an unknown text `?`."""
    if verdict is None:
        return MARKS[Verdict.PENDING]
    v = Verdict.of(verdict)
    return MARKS[v] if v is not None else "?"


def role(verdict: str | None) -> str:
    v = Verdict.of(verdict)
    return ROLES[v] if v is not None else "muted"
