"""What comparing produces: one `TensorResult` per tensor pair, one `OpResult` per op pair."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from dumptui.core.compare.hints import Hint
from dumptui.core.compare.metrics import ElementTolerance, PairStats
from dumptui.core.compare.verdict import BAD, GOOD, IGNORED, worst
from dumptui.core.graph.align import OpPair
from dumptui.core.model.dump import TensorRef
from dumptui.core.model.reason import Said


@dataclass(slots=True)  # one per tensor pair compared, kept for the session: no __dict__ each
class TensorResult:
    io: str
    slot: int
    ref: TensorRef | None
    target: TensorRef | None
    verdict: str
    reason: Said = ""  # a Reason (report/reasons.py words it), or a reader's words about an unreadable file
    stats: PairStats | None = None
    tolerance: ElementTolerance | None = None
    notes: Sequence[Said] = ()  # kept as a tuple: no empty list per result (report/reasons.py words them)
    statistics_only: bool = False
    # statistic-only comparisons: relative differences of max, min, mean, L2 (packed when all four are there)
    stat_rel: Mapping[str, float | None] | None = None

    def __post_init__(self) -> None:
        if type(self.notes) is not tuple:
            self.notes = tuple(self.notes)

    @property
    def label(self) -> str:
        return f"{self.io}.{self.slot}"

    @property
    def bad(self) -> bool:
        return self.verdict in BAD

    @property
    def good(self) -> bool:
        return self.verdict in GOOD


@dataclass
class OpResult:
    pair: OpPair
    inputs: list[TensorResult]
    outputs: list[TensorResult]
    verdict: str  # from the outputs
    input_verdict: str | None
    # the op's hints, made when first asked for (they look at its graph neighbours: a scan made every op's
    # hints for every op result it asked for, and read none of them)
    hints_of: Callable[[], list[Hint]] = list

    @property
    def hints(self) -> list[Hint]:
        return self.hints_of()


def op_verdict(results: list[TensorResult]) -> str | None:
    """An op's verdict from its outputs: the worst that counts (ignored outputs do not)."""
    counted = [r.verdict for r in results if r.verdict != IGNORED]
    if not counted:
        return IGNORED if results else None
    return worst(counted)
