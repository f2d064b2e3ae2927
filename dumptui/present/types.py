"""The engine's types and names the app renders, in one place: the app (tui/) imports the engine only through
present/ (an import contract in pyproject.toml), and what of the engine a widget may touch is listed here."""

from dumptui.core.compare.elements import WorstElement
from dumptui.core.compare.hints import for_root
from dumptui.core.compare.results import OpResult, TensorResult
from dumptui.core.compare.verdict import Verdict
from dumptui.core.graph.align import EXACT, OpPair
from dumptui.core.io.errors import UsageError
from dumptui.core.model.dump import KERNEL
from dumptui.core.ranks.units import Unit

__all__ = [
    "EXACT",
    "KERNEL",
    "OpPair",
    "OpResult",
    "TensorResult",
    "Unit",
    "UsageError",
    "Verdict",
    "WorstElement",
    "for_root",
]
