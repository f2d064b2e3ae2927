"""The search state of a bisection: one immutable value, so undo is popping the previous one."""

from __future__ import annotations

from dataclasses import dataclass, replace

from dumptui.core.search.bisect.types import Root, Step


@dataclass(frozen=True)
class SearchState:
    candidates: frozenset[int]  # positions that may still hold the root
    lo: int = -1  # last known good position (the linear strategy's midpoint uses it)
    hi: int | None = None  # the first known bad position
    good: frozenset[int] = frozenset()
    bad: frozenset[int] = frozenset()
    started: bool = False
    finished: bool = False
    no_divergence: bool = False
    culprit: Root | None = None
    other_roots: tuple[Root, ...] = ()
    history: tuple[Step, ...] = ()

    @classmethod
    def initial(cls, n: int) -> SearchState:
        return cls(candidates=frozenset(range(n)))

    def with_step(self, step: Step) -> SearchState:
        return replace(self, history=self.history + (step,))

    def evolve(self, **changes: object) -> SearchState:
        return replace(self, **changes)  # type: ignore[arg-type]
