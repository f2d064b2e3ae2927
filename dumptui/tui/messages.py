"""Messages between the workers, the widgets and the main screen: small dataclasses, so tests can assert on
them. Payloads are core objects (Session, OpResult, BisectState...) or plain data."""
from __future__ import annotations

from dataclasses import dataclass, field

from textual.message import Message

from ..present.bisection import BisectState


@dataclass
class OpenProgress(Message):
    """Opening the dumps: which stage is running (indexing, aligning, graph, resuming)."""

    stage: str
    text: str


@dataclass
class OpenFailed(Message):
    """A dump (or a file given with it) cannot be opened: the path and why."""

    path: str
    reason: str


@dataclass
class PreviewReady(Message):
    """The reference's op names (from its execution-order csv), before the dumps are indexed."""

    model: object            # present.tree.OpTreeModel over present.tree.PreviewPair


@dataclass
class SessionReady(Message):
    """Both dumps indexed and aligned: the op tree can be shown (no statistic computed yet)."""

    session: object          # core.compare.Session
    model: object            # present.tree.OpTreeModel
    seconds: float


@dataclass
class BisectionReady(Message):
    """The bisection order (and dataflow graph over the pairs) is built; `resume` holds a saved session."""

    driver: object           # present.bisection.BisectDriver
    resume: dict | None = None
    resume_note: str = ""


@dataclass
class StatisticsProgress(Message):
    done: int                # tensor pairs compared
    total: int
    state: str = "running"   # running | done | cancelled


@dataclass
class VerdictsKnown(Message):
    """Op verdicts that became known (pair index -> verdict), batched by the statistics worker."""

    verdicts: dict[int, str | None] = field(default_factory=dict)


@dataclass
class BisectionChanged(Message):
    state: BisectState
    event: str               # start | accept | overrule | undo | reset | replay | running | converged | stopped
    note: str = ""


@dataclass
class OpLoaded(Message):
    """An op's compared inputs and outputs (read in a worker) and its graph neighbours."""

    index: int
    result: object           # core.compare.OpResult
    relations: list = field(default_factory=list)


@dataclass
class TensorLoaded(Message):
    """The detail of one tensor pair: worst elements and error histogram, or why there is none."""

    index: int
    label: str
    worst: list | None = None
    histogram: tuple | None = None
    problem: str | None = None


@dataclass
class OpHighlighted(Message):
    """The cursor of the op tree or the flat list moved onto an op."""

    index: int


@dataclass
class OpActivated(Message):
    """`enter` on an op (tree, flat list, or a producer/consumer): show it and move into its tables."""

    index: int
    source: str = ""


@dataclass
class SearchStep(Message):
    """Next (or previous) match of the search query."""

    forward: bool = True


@dataclass
class SearchClosed(Message):
    pass
