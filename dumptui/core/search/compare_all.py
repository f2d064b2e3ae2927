"""`compare`: every tensor pair of the two dumps, judged in context, with the same roots as `bisect`.

Every op is read and judged by its local error (scan.py), so a tensor that differs only by the precision
noise carried to it is `close` and says so, and the roots are exactly those a bisection reports (it uses the
same preconditions and the same scan). Parameters, constants and one-sided ops are compared too.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from dumptui.core.compare.batch import evaluate_all
from dumptui.core.compare.results import OpResult
from dumptui.core.compare.session import Session
from dumptui.core.io.executor import Cancel
from dumptui.core.model.reason import Why, because
from dumptui.core.search.bisect import Bisection, Root
from dumptui.core.search.judgement import RunJudgement, judge
from dumptui.core.search.localerror import LocalError


@dataclass
class Comparison:
    results: list[OpResult]  # every op pair, in alignment order
    bisection: Bisection  # preconditions, the scan, the roots
    locals: dict[int, LocalError]  # pair index -> local error (kernels paired on both sides)
    judgement: RunJudgement  # what the search decided: every view renders this

    @property
    def roots(self) -> list[Root]:
        return self.bisection.roots()


def every_op_judged(
    session: Session,
    use_graph: bool = True,
    progress: Callable[[int, int], None] | None = None,
    cancel: Cancel | None = None,
) -> Bisection:
    """The preconditions and a scan of every op (a clean pair's too): compare's roots, which a finished
    bisection of the same pair names as well."""
    bi = Bisection(session, use_graph=use_graph)
    bi.prepare(progress, cancel)
    if bi.scan_result is None:
        bi.use_scan(because(Why.COMPARE_READS_ALL), progress, cancel)
    return bi


def compare_pair(
    session: Session,
    use_graph: bool = True,
    progress: Callable[[int, int], None] | None = None,
    cancel: Cancel | None = None,
) -> Comparison:
    """Every op judged, then every tensor pair (the tensor pairs, the replays, what is left: all on the
    session's executor)."""
    bi = every_op_judged(session, use_graph, progress, cancel)
    # every tensor as the search judged it in context (the same verdicts bisect, the CSV and the app show)
    results = [bi.judged_op(res) for res in evaluate_all(session, cancel=cancel)]
    assert bi.scan_result is not None
    return Comparison(results, bi, {le.pair.index: le for le in bi.scan_result.locals}, judge(bi))
