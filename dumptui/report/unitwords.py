"""A (rank, step) unit's answer in words, for the every-unit table (report/ranks.py) and the app's picker
(present/picker.py): one wording of the same outcome. No rich here (the presenter uses it)."""

from __future__ import annotations

from collections.abc import Mapping

from dumptui.core.ranks.allunits import UnitOutcome
from dumptui.core.ranks.units import Unit
from dumptui.report.reasons import say

UNREADABLE, UNDECIDED, NO_DIVERGENCE = "unreadable", "undecided", "no divergence"


def outcome_words(o: UnitOutcome, undecided: Mapping[Unit, str]) -> tuple[str, str, str]:
    """(state, first root, why): state is UNREADABLE, UNDECIDED, NO_DIVERGENCE or "diverged"; the first root
    `#position name (type)` with how many more, or "-"; the why in words (the error, the undecided reason)."""
    if o.error is not None:
        return UNREADABLE, "-", o.error
    first = o.first
    if first is None and o.unit in undecided:
        return UNDECIDED, "-", undecided[o.unit]
    if first is None:
        return NO_DIVERGENCE, "-", NO_DIVERGENCE
    more = f" (+{len(o.roots) - 1} more)" if len(o.roots) > 1 else ""
    return "diverged", f"#{first.position + 1} {first.name} ({first.op_type}){more}", say(first.why)
