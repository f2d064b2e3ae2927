"""The messages the main screen's thread workers post to it: small dataclasses, so tests can assert on them.
Payloads are presentation objects (OpTreeModel, OpResult, BisectState...) or plain data; the engine state stays in
the controller (present/controller.py).

They go to the screen only (no bubbling to the app). Progress messages coalesce (`can_replace`): a burst of
them waiting in the queue is handled, and repainted, once, with the latest numbers. Widgets own their
messages as nested classes (`OpTree.OpHighlighted`); their common base is here."""

from __future__ import annotations

from dataclasses import dataclass, field

from textual.message import Message

from dumptui.present.driver import BisectCommand, BisectDriver, BisectState, RunProgress
from dumptui.present.picker import AllUnits as AllUnitsResult
from dumptui.present.picker import Unit, UnitAnswer
from dumptui.present.progress import RUNNING, StatisticsState
from dumptui.present.relations import Relation
from dumptui.present.tree import OpTreeModel
from dumptui.present.types import OpResult, Verdict, WorstElement


class PairPosted(Message, bubble=False):
    """The base of what the pair's workers post about the dumps, the statistics and the bisection: the main
    screen hands each to its `WorkFeed` (tui/screens/feed.py), which has a method by the message's handler name."""


@dataclass
class OpenProgress(PairPosted, bubble=False):
    """Opening the dumps: which stage is running (indexing, aligning, graph, resuming)."""

    stage: str
    text: str

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, OpenProgress)


@dataclass
class SearchProgress(PairPosted, bubble=False):
    """The bisection's preparation: on a noisy pair, every op judged (compares, then replays)."""

    done: int
    total: int

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, SearchProgress)


@dataclass
class PreviewReady(PairPosted, bubble=False):
    """The reference's op names (from its execution-order csv), before the dumps are indexed."""

    model: OpTreeModel  # over PreviewPairs: names only


@dataclass
class SessionReady(PairPosted, bubble=False):
    """Both dumps indexed and aligned: the op tree can be shown (no statistic computed yet)."""

    model: OpTreeModel
    seconds: float


@dataclass
class BisectionReady(PairPosted, bubble=False):
    """The bisection order (and dataflow graph over the pairs) is built; `resume` holds a saved session."""

    driver: BisectDriver
    resume: dict[str, object] | None = None
    resume_note: str = ""
    offer: dict[str, object] | None = None  # the pair's autosaved bisection: ask whether to resume it


@dataclass
class StatisticsProgress(PairPosted, bubble=False):
    done: int  # tensor pairs compared
    total: int
    state: StatisticsState = RUNNING  # running | done | cancelled
    run: int = 0  # which run of the statistics (a cancelled run's late messages are not the current run's)

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, StatisticsProgress)


@dataclass
class VerdictsKnown(PairPosted, bubble=False):
    """Op verdicts that became known (pair index -> verdict), batched by the statistics worker."""

    verdicts: dict[int, Verdict | None] = field(default_factory=dict)


@dataclass
class BisectionChanged(PairPosted, bubble=False):
    """The bisection after `command`; for `a` (RUN), `run` says whether this is a step on the way or the end."""

    state: BisectState
    command: BisectCommand
    note: str = ""
    run: RunProgress | None = None

    @property
    def stepping(self) -> bool:
        """A snapshot on the way of `a`'s run: the cursor stays, the roots are not final."""
        return self.run is RunProgress.STEPPED

    def can_replace(self, message: Message) -> bool:
        # a step of `a` running to the end is superseded by any later snapshot (each holds the whole state);
        # the others select an op or carry a note, and are all handled
        return self.stepping and isinstance(message, BisectionChanged)


@dataclass
class FirstProbe(PairPosted, bubble=False):
    """Before a noisy pair's search has judged every op: the probe it offers first, with its own numbers and
    its mark pending (`BisectState.pending`); the search's BisectionChanged follows."""

    state: BisectState


@dataclass
class OpLoaded(Message, bubble=False):
    """An op's compared inputs and outputs (read in a worker) and its graph neighbours."""

    index: int
    result: OpResult
    relations: list[Relation] = field(default_factory=list)


@dataclass
class TensorLoaded(Message, bubble=False):
    """The detail of one tensor pair: worst elements and error histogram, or why there is none."""

    index: int
    label: str
    worst: list[WorstElement] | None = None
    histogram: tuple[list[int], int, int] | None = None  # counts per power of two, first exponent, zeros
    problem: str | None = None


@dataclass
class OpMessage(Message):
    """An op (by pair index) chosen in a widget: the base of the widgets' own messages (`OpTree.OpHighlighted`,
    `FlatOpList.OpActivated`, `RelationList.Chosen`...)."""

    index: int


@dataclass
class UnitStarted(Message, bubble=False):
    """The picker's search of every rank and step: one unit's search begins."""

    unit: Unit


@dataclass
class UnitAnswered(Message, bubble=False):
    """The picker's search: one unit's answer (its first root, or why it has none)."""

    answer: UnitAnswer


@dataclass
class UnitsSearched(Message, bubble=False):
    """The picker's search is over: the every-unit answer (where the divergence was born first)."""

    result: AllUnitsResult
