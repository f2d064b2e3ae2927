"""The oracle: what a probe says about an op (fx_minifier's `module_fails`, injected into the bisection).

`ComputedOracle` reads the op's outputs through the session and turns their verdict into a mark; tests and
other front ends may pass any object with the same methods. After a local-error scan the session's verdicts
are judged in context (a divergence only downstream of a root: the bisection's `judged_op`), and the same
oracle answers from them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from dumptui.core.compare.ledger import Purpose
from dumptui.core.compare.results import OpResult
from dumptui.core.compare.session import Session
from dumptui.core.compare.verdict import BAD, GOOD, IGNORED, Verdict
from dumptui.core.graph.align import OpPair
from dumptui.core.model.reason import Reason, Said, Why, because
from dumptui.core.search.bisect.types import Mark


class Oracle(Protocol):
    def verdict(self, pos: int, purpose: Purpose = Purpose.PROBE) -> tuple[Mark, Said]:
        """(mark, detail) for the op at `pos` of the bisection order."""
        ...

    def known(self, pos: int) -> Mark | None:
        """The mark already computed or set for `pos` (never reads)."""
        ...

    def set(self, pos: int, mark: Mark, detail: Said) -> None: ...

    def forget(self, pos: int) -> None: ...


class ComputedOracle:
    """Marks from the session's verdicts on the op's outputs; each op is read once."""

    def __init__(self, session: Session, order: list[OpPair], judged: Callable[[OpResult], OpResult] | None = None):
        self.session = session
        self.order = order
        self.judged = judged  # the search's verdicts in context (the bisection's), else each pair's own
        self._cache: dict[int, tuple[Mark, Said]] = {}

    def verdict(self, pos: int, purpose: Purpose = Purpose.PROBE) -> tuple[Mark, Said]:
        if pos not in self._cache:
            res = self.session.op_result(self.order[pos], inputs=False, purpose=purpose)
            if self.judged is not None:
                res = self.judged(res)
            self._cache[pos] = (mark_of(res.verdict), brief(res))
        return self._cache[pos]

    def known(self, pos: int) -> Mark | None:
        """The mark computed (or set) for `pos`, without reading."""
        hit = self._cache.get(pos)
        return hit[0] if hit else None

    def set(self, pos: int, mark: Mark, detail: Said) -> None:
        self._cache[pos] = (mark, detail)

    def forget(self, pos: int) -> None:
        self._cache.pop(pos, None)


def mark_of(verdict: Verdict) -> Mark:
    if verdict in BAD:
        return Mark.BAD
    if verdict in GOOD:
        return Mark.GOOD
    return Mark.SKIP


def brief(res: OpResult) -> Reason:
    """What a probe's outputs say, each with its numbers (`output.0 diverged (cos 0.548305, max abs 8.03)`
    in words): (label, verdict, cosine, max abs) where it has numbers, else (label, verdict, its reason or
    None when good)."""
    parts: list[tuple[object, ...]] = []
    for r in res.outputs:
        if r.verdict == IGNORED:
            continue
        st = r.stats
        if st is not None and st.cos is not None and r.verdict != Verdict.EQUAL:
            parts.append((r.label, str(r.verdict), st.cos, st.max_abs))
        else:
            parts.append((r.label, str(r.verdict), None if r.verdict in GOOD else r.reason))
    return because(Why.PROBE, parts, str(res.verdict))
