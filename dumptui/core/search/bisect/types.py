"""The words of a bisection: marks, steps, roots of divergence and precondition checks."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from dumptui.core.compare.results import OpResult, TensorResult
from dumptui.core.graph.align import OpPair
from dumptui.core.search.localerror import LocalError


class Mark(str, Enum):
    """What a probe says about the op: its outputs agree (good), diverge (bad), or cannot tell (skip)."""

    GOOD = "good"
    BAD = "bad"
    SKIP = "skip"

    __str__ = str.__str__

    def __format__(self, format_spec: str) -> str:
        return str.__format__(self, format_spec)


class Source(str, Enum):
    """Who made a step: the start (graph outputs), the engine's verdict, the user, or the culprit check."""

    START = "start"
    COMPUTED = "computed"
    USER = "user"
    CHECK = "check"

    __str__ = str.__str__

    def __format__(self, format_spec: str) -> str:
        return str.__format__(self, format_spec)

    @property
    def is_mark(self) -> bool:
        """A mark the user (or `space`/`a`) made: what a session file saves and undo takes back."""
        return self in (Source.USER, Source.COMPUTED)


@dataclass(frozen=True)
class Step:
    key: str  # pair key of the probed op (stable across runs: used by save/load)
    position: int  # position in the candidate order
    mark: str  # a Mark
    source: str  # a Source
    detail: str = ""
    candidates_before: int = 0


@dataclass
class Root:
    """An op where divergence is born, and why we say so."""

    pair: OpPair
    kind: str  # "outputs" (inputs agree, outputs diverge) | "parameter" | "input"
    why: str
    result: OpResult | None = None
    caveats: list[str] = field(default_factory=list)
    local: LocalError | None = None  # gains, replay proof (localerror.py)


@dataclass
class InputCheck:
    """A precondition: an input no op produces (network input, weight) compared across the dumps."""

    name: str  # parameter / input name
    kind: str  # "network input" | "parameter" | "unproduced input"
    result: TensorResult
    status: str  # "equal" | "benign" | "differs" | "unpaired" | "unreadable" | "ignored"
    detail: str = ""
    consumers: list[OpPair] = field(default_factory=list)
    transform: str = ""  # a transformation the target applied on purpose, verified (transformed.py): its name
    channels: list[int] = field(default_factory=list)  # output channels the transformation does not explain
    explains: dict[str, str] = field(default_factory=dict)  # other parameters the transformation accounts for
