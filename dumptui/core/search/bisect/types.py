"""The words of a bisection: marks, steps, roots of divergence and precondition checks."""

from __future__ import annotations

from dataclasses import dataclass, field

from dumptui.core.compare.results import OpResult, TensorResult
from dumptui.core.graph.align import OpPair
from dumptui.core.model.reason import Said
from dumptui.core.model.vocab import Word
from dumptui.core.search.localerror import LocalError


class Mark(Word):
    """What a probe says about the op: its outputs agree (good), diverge (bad), or cannot tell (skip)."""

    GOOD = "good"
    BAD = "bad"
    SKIP = "skip"


class Source(Word):
    """Who made a step: the start (graph outputs), the engine's verdict, the user, or the culprit check."""

    START = "start"
    COMPUTED = "computed"
    USER = "user"
    CHECK = "check"

    @property
    def is_mark(self) -> bool:
        """A mark the user (or `space`/`a`) made: what a session file saves and undo takes back."""
        return self in (Source.USER, Source.COMPUTED)


class RootKind(Word):
    """Why an op is a root: its outputs diverge from inputs that agree, a parameter it reads differs, or the
    network input (an input no dumped op produces) differs."""

    OUTPUTS = "outputs"
    PARAMETER = "parameter"
    INPUT = "input"


class StrategyName(Word):
    """The order a bisection probes in: the execution order, or the dataflow graph's."""

    LINEAR = "linear"
    GRAPH = "graph"


class SearchMode(Word):
    """How the bisection looks for roots."""

    BISECTION = "bisection"  # O(log n) reads: a clean pair
    SCAN = "scan"  # every op read and judged by its local error: a noisy pair


class CheckKind(Word):
    """What a precondition compares: the network input, a parameter, or an input no dumped op produces."""

    NETWORK_INPUT = "network input"
    PARAMETER = "parameter"
    UNPRODUCED = "unproduced input"


class CheckStatus(Word):
    """What a precondition found."""

    EQUAL = "equal"
    BENIGN = "benign"  # differs by rounding, or by a transformation verified (folded BatchNorm, int8)
    DIFFERS = "differs"
    UPDATED = "updated"  # a file written after the step's optimizer updated it: judged with that kernel's output
    UNPAIRED = "unpaired"
    UNREADABLE = "unreadable"
    IGNORED = "ignored"


@dataclass(frozen=True)
class Step:
    key: str  # pair key of the probed op (stable across runs: used by save/load)
    position: int  # position in the candidate order
    mark: Mark
    source: Source
    detail: Said = ""  # a probe's verdict, or why the check continued (report/reasons.py words it)
    candidates_before: int = 0


@dataclass
class Root:
    """An op where divergence is born, and why we say so."""

    pair: OpPair
    kind: RootKind
    why: Said  # report/reasons.py words it
    result: OpResult | None = None
    caveats: list[Said] = field(default_factory=list)
    local: LocalError | None = None  # gains, replay proof (localerror.py)


@dataclass
class InputCheck:
    """A precondition: an input no op produces (network input, weight) compared across the dumps."""

    name: str  # parameter / input name
    kind: CheckKind
    result: TensorResult
    status: CheckStatus
    detail: Said = ""  # why it has its status (report/reasons.py words it)
    consumers: list[OpPair] = field(default_factory=list)
    transform: str = ""  # a transformation the target applied on purpose, verified (transformed.py): its name
    channels: list[int] = field(default_factory=list)  # output channels the transformation does not explain
    explains: dict[str, Said] = field(default_factory=dict)  # other parameters the transformation accounts for
