"""Bisection to the first operator whose inputs agree and whose outputs do not, in small pieces; see
`bisection.py` for the facade and how the pieces fit."""

from dumptui.core.search.bisect.bisection import Bisection
from dumptui.core.search.bisect.types import (
    CheckKind,
    CheckStatus,
    InputCheck,
    Mark,
    Root,
    RootKind,
    SearchMode,
    Source,
    Step,
    StrategyName,
)

GOOD_MARK, BAD_MARK = Mark.GOOD, Mark.BAD

__all__ = [
    "Bisection",
    "CheckKind",
    "SearchMode",
    "StrategyName",
    "CheckStatus",
    "InputCheck",
    "Mark",
    "Root",
    "RootKind",
    "Source",
    "Step",
    "GOOD_MARK",
    "BAD_MARK",
]
