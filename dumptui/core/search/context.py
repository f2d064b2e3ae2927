"""Verdicts judged in context, kept beside the session's cache and never written into it.

A tensor pair's verdict from its own numbers is the session's (cached, one per pair). After the preconditions
and the scan some are judged again in context: a weight that differs only by a deliberate rounding is close,
a tensor beyond its floor with no root upstream is carried precision noise (close), a swapped input is
diverged with its wiring named. Those in-context results live here, in a mapping made once per search: every
view asks `tensor` / `op` and sees the same verdict, and the cache keeps what the numbers alone said (a new
search, with other thresholds or marks, builds a new context; nothing already handed out changes).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType

from dumptui.core.compare.results import OpResult, TensorResult, op_verdict
from dumptui.core.compare.session import pair_key
from dumptui.core.compare.verdict import Verdict
from dumptui.core.model.reason import Said


def restated(r: TensorResult, verdict: Verdict, reason: Said) -> TensorResult:
    """A new result for the same pair and numbers, with a verdict and reason judged in context."""
    return TensorResult(
        r.io,
        r.slot,
        r.ref,
        r.target,
        verdict,
        reason,
        r.stats,
        r.tolerance,
        r.notes,
        r.statistics_only,
        r.stat_rel,
    )


class InContext:
    """An immutable mapping of tensor pairs (by the session's pair key) to their in-context results."""

    __slots__ = ("_by_key",)

    def __init__(self, results: Mapping[int, TensorResult] | None = None):
        self._by_key: Mapping[int, TensorResult] = MappingProxyType(dict(results or {}))

    def __len__(self) -> int:
        return len(self._by_key)

    def __contains__(self, r: object) -> bool:
        return isinstance(r, TensorResult) and pair_key(r.ref, r.target) in self._by_key

    def tensor(self, r: TensorResult) -> TensorResult:
        """`r` as judged in context (itself when its own numbers decide)."""
        return self._by_key.get(pair_key(r.ref, r.target), r)

    def op(self, res: OpResult) -> OpResult:
        """The op's result with every tensor judged in context (the same object when none is)."""
        if not self._by_key:
            return res
        inputs = [self.tensor(r) for r in res.inputs]
        outputs = [self.tensor(r) for r in res.outputs]
        if all(a is b for a, b in zip(inputs + outputs, res.inputs + res.outputs, strict=True)):
            return res
        verdict = res.verdict if not res.pair.paired else op_verdict(outputs) or res.verdict
        return OpResult(res.pair, inputs, outputs, verdict, op_verdict(inputs) if inputs else None, res.hints_of)

    def merged(self, more: Iterable[TensorResult]) -> InContext:
        """A new context: this one with `more` (later ones win for the same pair)."""
        by_key = dict(self._by_key)
        by_key.update((pair_key(r.ref, r.target), r) for r in more)
        return InContext(by_key)

    def results(self) -> Iterable[TensorResult]:
        return self._by_key.values()


NO_CONTEXT = InContext()


class Judging:
    """A search's current context, shared by its parts (its oracle, its culprit check): a holder with no
    reference back to the search, so no garbage cycle is made (commands run with the cyclic GC off)."""

    __slots__ = ("context",)

    def __init__(self) -> None:
        self.context: InContext = NO_CONTEXT

    def tensor(self, r: TensorResult) -> TensorResult:
        return self.context.tensor(r)

    def op(self, res: OpResult) -> OpResult:
        return self.context.op(res)
