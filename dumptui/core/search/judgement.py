"""One run's judgement, decided once: what every view renders and none decides again.

A `Bisection` (or `compare`'s scan) decides; `judge` takes what it decided into one immutable value: the roots
(first in execution order first; the culprit is the first), each tensor's verdict in context, each op's local
error and whether it is a root. The CSV's Root column, the app's export, the tables' ROOT marks and the JSON
all ask this value, so a root born of a weight is a root in every one of them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING

from dumptui.core.compare.results import OpResult, TensorResult
from dumptui.core.search.context import NO_CONTEXT, InContext
from dumptui.core.search.localerror import LocalError
from dumptui.core.search.selection import FlipSite

if TYPE_CHECKING:  # (the bisection imports this module's users; the value itself needs only what it holds)
    from dumptui.core.search.bisect import Bisection, Root


def _empty() -> Mapping[int, LocalError]:
    return MappingProxyType({})


@dataclass(frozen=True)
class RunJudgement:
    roots: tuple[Root, ...] = ()  # every root, first in execution order first
    in_context: InContext = NO_CONTEXT
    locals: Mapping[int, LocalError] = field(default_factory=_empty)  # pair index -> local error (scanned ops)
    root_indices: frozenset[int] = frozenset()  # pair index of every root
    flips: tuple[FlipSite, ...] = ()  # selections that flipped on near-ties (a benign reason; selection.py)

    @property
    def culprit(self) -> Root | None:
        return self.roots[0] if self.roots else None

    def is_root(self, index: int) -> bool:
        """Whether the op pair `index` is a root of divergence (of any kind: outputs, a weight, an input)."""
        return index in self.root_indices

    def local_of(self, index: int) -> LocalError | None:
        return self.locals.get(index)

    def tensor(self, r: TensorResult) -> TensorResult:
        return self.in_context.tensor(r)

    def op(self, res: OpResult) -> OpResult:
        return self.in_context.op(res)


NO_JUDGEMENT = RunJudgement()


def judge(bi: Bisection) -> RunJudgement:
    """What `bi` decided, as one value (call it once the search has finished: its roots are then known)."""
    roots = tuple(bi.roots())
    scanned = bi.scan_result.locals if bi.scan_result is not None else ()
    locals_ = {le.pair.index: le for le in scanned}
    for r in roots:  # a root's local error, computed by its check where no scan ran
        if r.local is not None:
            locals_.setdefault(r.pair.index, r.local)
    return RunJudgement(
        roots=roots,
        in_context=bi.in_context,
        locals=MappingProxyType(locals_),
        root_indices=frozenset(r.pair.index for r in roots),
        flips=bi.scan_result.flips if bi.scan_result is not None else (),
    )
