"""`Bisection`: the facade over the pieces of a search to the first op whose inputs agree and whose outputs
do not. It owns one immutable `SearchState` (undo pops the previous one) and delegates:

- `strategy.py`: how probes narrow the candidates (linear interval, or the dataflow graph's ancestors);
- `oracle.py`: what a probe says (by default the session's verdict on the op's outputs);
- `culprit.py`: the culprit check at convergence, and other roots on parallel branches;
- `preconditions.py`: network input and weights compared first;
- `sessionfile.py`: marks saved and replayed by op key.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from dumptui.core.compare.ledger import Purpose
from dumptui.core.compare.results import OpResult, TensorResult
from dumptui.core.compare.session import Session
from dumptui.core.compare.verdict import CLOSE, IGNORED, UNREADABLE
from dumptui.core.graph.align import OpPair
from dumptui.core.graph.dataflow import unjudged_sinks
from dumptui.core.io.executor import Cancel
from dumptui.core.model.dump import OUTPUT, Severity
from dumptui.core.model.numbers import counting
from dumptui.core.model.reason import Reason, Said, Why, because
from dumptui.core.search.bisect.culprit import CulpritCheck, unjudged_output
from dumptui.core.search.bisect.oracle import ComputedOracle, Oracle
from dumptui.core.search.bisect.preconditions import check_inputs, is_inferred, parameter_roots
from dumptui.core.search.bisect.sessionfile import SessionJson, steps_json
from dumptui.core.search.bisect.state import SearchState
from dumptui.core.search.bisect.strategy import GraphStrategy, PairDag, choose_strategy
from dumptui.core.search.bisect.types import (
    CheckStatus,
    InputCheck,
    Mark,
    Root,
    RootKind,
    SearchMode,
    Source,
    Step,
    StrategyName,
)
from dumptui.core.search.context import InContext, Judging, restated
from dumptui.core.search.localerror import LocalError, LocalKind, unjudged_reason
from dumptui.core.search.scan import ScanResult, describe_noise, kernel_order, scan

MAX_SINKS = 4  # graph outputs checked for divergence before giving up


MAX_WALK_BACK = 32  # outputs read back from an unreadable graph output, looking for readable ones
MAX_UNJUDGED_SAID = 8  # ops with an unreadable output named one by one in the answer (then a count)


class Bisection:
    def __init__(
        self,
        session: Session,
        use_graph: bool = True,
        oracle: Oracle | None = None,
    ):
        self.session = session
        self.order: list[OpPair] = kernel_order(session)
        self.position = {p.index: i for i, p in zip(counting(len(self.order)), self.order)}
        self.key_position = {p.key: i for i, p in zip(counting(len(self.order)), self.order)}
        self.strategy, notes = choose_strategy(session, self.order, use_graph)
        self.notes: list[Said] = list(notes)
        # tensor verdicts judged in context (benign weights, then the scan's carried noise): a new mapping each
        # time it grows, never written into the session's cache; every reader asks `judged` / `judged_op`
        self._judging = Judging()
        self.oracle = oracle or ComputedOracle(session, self.order, self._judging.op)
        self.culprit_check = CulpritCheck(session, self.order, self.strategy, self.oracle, self._judging.op)
        self.checks: list[InputCheck] | None = None
        self.parameter_roots: list[Root] = []
        self.search: SearchMode = SearchMode.BISECTION
        self.search_reason: Said = ""
        self.scan_result: ScanResult | None = None
        # why the search could not decide, when damage hides the answer (an unreadable graph output whose
        # readable inputs agree, nothing paired): then there is no "no divergence", and the CLI exits 2
        self.undecided: list[Said] = []  # words: report/reasons.py says them
        self._prepared = False
        self._scan_reason: Reason | None = None  # scan_reason's answer, once the preconditions are known
        self._scan_reason_known = False
        # what the search itself said (notes, undecided) is said again by the next start: a reset goes back
        # to what the preparations said, so nothing grows with each reset and start
        self._prepared_notes: list[Said] = list(self.notes)
        self._prepared_undecided: list[Said] = []
        self.reset()

    # ---------------------------------------------------------------------------- state, read-only views
    def reset(self) -> None:
        """Back to before the start: no marks, no probe, no culprit; the preparations (the preconditions, the
        scan) are facts about the dumps and are kept. Undoable: `undo` brings back the search as it was."""
        before: SearchState | None = getattr(self, "state", None)
        self.state = SearchState.initial(len(self.order))
        self._undo: list[SearchState] = [*getattr(self, "_undo", []), before] if before and before.history else []
        self.notes[:] = self._prepared_notes
        self.undecided[:] = self._prepared_undecided

    @property
    def mode(self) -> StrategyName:
        return self.strategy.name

    @property
    def dag(self) -> PairDag | None:
        return self.strategy.dag if isinstance(self.strategy, GraphStrategy) else None

    # the state's fields, read through the bisection
    @property
    def candidates(self) -> frozenset[int]:
        return self.state.candidates

    @property
    def lo(self) -> int:
        return self.state.lo

    @property
    def hi(self) -> int | None:
        return self.state.hi

    @property
    def good(self) -> frozenset[int]:
        return self.state.good

    @property
    def bad(self) -> frozenset[int]:
        return self.state.bad

    @property
    def started(self) -> bool:
        return self.state.started

    @property
    def finished(self) -> bool:
        return self.state.finished

    @property
    def no_divergence(self) -> bool:
        return self.state.no_divergence

    @property
    def culprit(self) -> Root | None:
        return self.state.culprit

    @property
    def history(self) -> list[Step]:
        return list(self.state.history)

    @property
    def other_roots(self) -> list[Root]:
        return list(self.state.other_roots)

    @property
    def steps_left(self) -> int:
        if self.finished:
            return 0
        n = len(self.candidates) if self.started else len(self.order)
        return max(0, math.ceil(math.log2(n))) if n > 1 else 0

    @property
    def interval(self) -> tuple[int, int] | None:
        """(first, last) candidate position, for drawing."""
        if not self.candidates:
            return None
        return min(self.candidates), max(self.candidates)

    @property
    def in_context(self) -> InContext:
        """Every tensor verdict this search judged in context so far (an immutable mapping)."""
        return self._judging.context

    @in_context.setter
    def in_context(self, context: InContext) -> None:
        self._judging.context = context

    def judged(self, r: TensorResult) -> TensorResult:
        """A tensor pair's verdict as this search judges it (in context where the scan or the preconditions
        judged it again, else its own numbers'): what every view shows."""
        return self.in_context.tensor(r)

    def judged_op(self, res: OpResult) -> OpResult:
        """An op's result with each tensor as this search judges it."""
        return self.in_context.op(res)

    def computed_verdict(self, pos: int, purpose: Purpose = Purpose.PROBE) -> tuple[Mark, Said]:
        """(good | bad | skip, detail) for the op at `pos`, from its outputs (reads them unless cached)."""
        return self.oracle.verdict(pos, purpose)

    # ---------------------------------------------------------------------------- the search
    def prepare(self, progress: Callable[[int, int], None] | None = None, cancel: Cancel | None = None) -> None:
        """Preconditions, then the kind of search: bisection (O(log n) reads) where the pair is clean, a
        local-error scan of every op where it is noisy (there a threshold crossed says nothing about where
        error is born)."""
        if self._prepared:
            return
        self._prepared = True
        everything = self._everything_ignored()
        if everything and everything not in self.undecided:
            self.undecided.append(everything)
        reason = self.scan_reason()
        if reason:
            self.use_scan(reason, progress, cancel)
        else:
            self.search_reason = because(Why.CLEAN_PAIR)
            # files that could not be placed or opened are said as a scan says them: "no root" would be a
            # claim about ops never read (a stale run's files left beside the new ones said exit 0)
            for why in self._unread_files():
                if why not in self.undecided:
                    self.undecided.append(why)
        self._prepared_notes, self._prepared_undecided = list(self.notes), list(self.undecided)

    def _everything_ignored(self) -> Reason | None:
        """Why nothing can be judged when the ignore rules cover every output of every op ("" otherwise): that
        is no answer, never "no divergence" (a config that ignored every op said exit 0)."""
        reasons: dict[Reason, None] = {}  # the ignore rules' own reasons (the user's pattern, or the built-in)
        for pair in self.order:
            for _io, slot, _r, _t in self.session.tensor_pairs(pair, OUTPUT):
                why = self.session.ignore_reason(pair, OUTPUT, slot)
                if why is None:
                    return None
                reasons[why] = None
        if not reasons:
            return None
        return because(Why.EVERYTHING_IGNORED, list(reasons))

    def scan_reason(self) -> Reason | None:
        """Why every op must be judged (a scan); None for a clean pair (bisection). Runs the preconditions
        (reads the weights and inputs); known before the scan reads anything else."""
        if self._scan_reason_known:
            return self._scan_reason
        self.check_inputs()
        self.in_context = self.in_context.merged(
            restated(c.result, CLOSE, c.detail)  # rounding explains it: it agrees as far as precision allows
            for c in self.checks or []
            if c.status == CheckStatus.BENIGN and not self.session.is_final(c.result)
        )
        noise = describe_noise(self.session)
        benign = [c for c in self.checks or [] if c.status == CheckStatus.BENIGN]
        rounded = [c.name for c in benign if not c.transform]
        transformed = [c.name for c in benign if c.transform]
        inferred = [d.path for d in (self.session.ref, self.session.target) if is_inferred(d)]
        self._scan_reason_known = True
        if noise is not None or rounded or transformed:
            self._scan_reason = because(Why.NOISY_PAIR, noise, rounded, transformed)
        elif inferred:
            # a chain rebuilt from matching values can break (a view nobody recorded, a value seen twice): the
            # search does not trust it to skip ops, and judges every op as compare does (the same roots)
            self._scan_reason = because(Why.DATAFLOW_INFERRED)
        else:
            self._scan_reason = None
        return self._scan_reason

    def first_probe_if_output_diverges(self) -> int | None:
        """The position `start` then `next_probe` give when the first graph output (the network output) is
        bad: known from the order and the graph alone, before any op is read. A scan's search waits for every
        op to be judged before that output's mark is known; the app shows this op (and its numbers) meanwhile."""
        sinks = self.strategy.sinks()
        if not sinks:
            return None
        st = self._narrow(SearchState.initial(len(self.order)).evolve(started=True), sinks[0], Mark.BAD)
        return self.culprit_check.choose(st.candidates, sinks[0], st.lo)

    def use_scan(
        self,
        reason: Reason,
        progress: Callable[[int, int], None] | None = None,
        cancel: Cancel | None = None,
    ) -> None:
        """Read and judge every op now (on the session's executor); the bisection then answers from the judged verdicts."""
        position = self.position
        fed = {position[r.pair.index] for r in self.parameter_roots if r.pair.index in position}
        differing = {c.name for c in self.checks or [] if c.status == CheckStatus.DIFFERS}
        self.scan_result = scan(
            self.session,
            self.order,
            self.strategy.predecessors,
            fed,
            progress,
            cancel,
            differing,
            self.in_context,
        )
        self.in_context = self.scan_result.in_context
        self.search, self.search_reason = SearchMode.SCAN, reason
        self.culprit_check.locals = dict(zip(counting(len(self.scan_result.locals)), self.scan_result.locals))
        self.culprit_check.scanned = True
        if not self.scan_result.roots:  # error through an op on one side only, and no root: no "noise" either
            for le in self.scan_result.locals:
                if le.unjudged_flow and (why := unjudged_reason(le)) not in self.undecided:
                    self.undecided.append(why)
        # what could not be read or judged is said whether or not a root was found: the answer is then incomplete
        judged = {p.index for p in self.order}
        sinks = unjudged_sinks(self.session.ref, self.session.alignment, judged)
        for said in [*self._unread_after_scan(), *sinks[:MAX_UNJUDGED_SAID]]:
            if said not in self.undecided:
                self.undecided.append(said)
        self._prepared_notes, self._prepared_undecided = list(self.notes), list(self.undecided)

    def _unread_after_scan(self) -> list[Said]:
        """What the scan could not read, in words: each op whose output is damaged could not be judged (it may
        be the root), and files that could not be placed (the same rule as compare's, documents.incomplete)."""
        ops = self.scan_result.unread if self.scan_result is not None else []
        out: list[Said] = [unjudged_output(name, r) for name, r in ops[:MAX_UNJUDGED_SAID]]
        if len(ops) > MAX_UNJUDGED_SAID:
            out.append(because(Why.MORE_OUTPUTS_UNREAD, len(ops) - MAX_UNJUDGED_SAID))
        return out + self._unread_files()

    def _unread_files(self) -> list[Said]:
        """The files of either dump that could not be placed or opened, in words (documents.incomplete's rule)."""
        files = [
            pr for d in (self.session.ref, self.session.target) for pr in d.problems if pr.severity == Severity.ERROR
        ]
        out: list[Said] = [because(Why.FILE_UNREAD, pr.path, pr.reason) for pr in files[:MAX_UNJUDGED_SAID]]
        if len(files) > MAX_UNJUDGED_SAID:
            out.append(because(Why.MORE_FILES_UNREAD, len(files) - MAX_UNJUDGED_SAID))
        return out

    def start(self) -> None:
        """Find the first known bad op (a graph output) and set the candidates. Not undoable."""
        if self.started:
            return
        self.prepare()
        st = self.state.evolve(started=True)
        if not self.order:
            self.notes.append(because(Why.NOTHING_PAIRED))
            self.undecided.append(because(Why.NOTHING_TO_BISECT))
            self.state = st.evolve(finished=True, no_divergence=False)
            return
        sinks = self.strategy.sinks()
        for s in sinks[:MAX_SINKS]:
            mark, detail = self.oracle.verdict(s, Purpose.GRAPH_OUTPUT)
            st = st.with_step(
                Step(self.order[s].key, s, mark, Source.START, because(Why.GRAPH_OUTPUT, detail), len(st.candidates))
            )
            bad: int | None = s if mark == Mark.BAD else None
            if mark == Mark.SKIP and self.session.cached_verdict(self.order[s]) == UNREADABLE:
                # damage is never taken for agreement: search from the outputs that can be read
                st, bad = self._last_readable(st, s, detail)
            if bad is not None:
                st = self._narrow(st, bad, Mark.BAD)
                break
            if mark == Mark.GOOD:
                st = st.evolve(good=st.good | {s})
        else:
            st = st.evolve(finished=True, no_divergence=not self.undecided, candidates=frozenset())
            if len(sinks) > MAX_SINKS:
                self.notes.append(because(Why.MORE_SINKS_UNCHECKED, len(sinks) - MAX_SINKS))
        self.state = self._maybe_converged(st)

    def _last_readable(self, st: SearchState, sink: int, why: Said) -> tuple[SearchState, int | None]:
        """A graph output that cannot be read: read the last readable outputs that feed it instead (walking
        back through unreadable ones). Returns the state and the first bad one found; when all agree, whether
        the unreadable output diverges is unknown, and `undecided` says so."""
        queue, seen, read = [sink], {sink}, 0
        agree: list[int] = []
        while queue and read < MAX_WALK_BACK:
            for p in sorted(self.strategy.predecessors(queue.pop(0)), reverse=True):
                if p in seen:
                    continue
                seen.add(p)
                read += 1
                mark, detail = self.oracle.verdict(p, Purpose.GRAPH_OUTPUT)
                where = because(Why.LAST_READABLE, self.order[sink].name, detail)
                st = st.with_step(Step(self.order[p].key, p, mark, Source.START, where, len(st.candidates)))
                if mark == Mark.BAD:
                    self.notes.append(because(Why.SEARCHED_FROM, self.order[sink].name, why, self.order[p].name))
                    return st, p
                if mark == Mark.GOOD:
                    agree.append(p)
                    st = st.evolve(good=st.good | {p})
                else:
                    queue.append(p)
        self.undecided.append(because(Why.OUTPUT_UNREAD_UNKNOWN, self.order[sink].name, why, len(agree)))
        return st, None

    def next_probe(self) -> int | None:
        """The position to probe next, or None when converged/finished."""
        st = self.state
        if not st.started or st.finished or st.hi is None:
            return None
        return self.culprit_check.choose(st.candidates, st.hi, st.lo)

    def mark(self, pos: int, mark: Mark, source: Source = Source.USER, detail: Said = "") -> None:
        """Record a verdict for the op at `pos` (good/bad/skip) and narrow the candidates."""
        if not self.started:
            self.start()
        if self.finished:
            return
        self._undo.append(self.state)
        st = self.state
        before = len(st.candidates)
        if mark == Mark.SKIP:
            self.oracle.set(pos, Mark.SKIP, detail or "not comparable")
            st = st.evolve(candidates=st.candidates - {pos})
        else:
            st = self._narrow(st, pos, mark)
            if source == Source.USER:
                self.oracle.forget(pos)  # the user overrules: the computed verdict is not reused
        st = st.with_step(Step(self.order[pos].key, pos, mark, source, detail, before))
        self.state = self._maybe_converged(st)

    def step(self) -> Step | None:
        """Probe once with the computed verdict. Returns the step made, or None when finished."""
        if not self.started:
            self.start()
            return self.state.history[-1] if self.state.history else None
        pos = self.next_probe()
        if pos is None:
            self.state = self._maybe_converged(self.state)
            return None
        mark, detail = self.oracle.verdict(pos)
        self.mark(pos, mark, Source.COMPUTED, detail)
        return self.state.history[-1]

    def run(self, max_steps: int = 100000) -> Root | None:
        self.start()
        for _ in range(max_steps):
            if self.finished:
                break
            if self.step() is None and not self.finished:
                self.state = self._maybe_converged(self.state, force=True)
                break
        return self.culprit

    @property
    def can_undo(self) -> bool:
        """Whether `undo` has something to take back (a mark, or a reset of a search with marks)."""
        return bool(self._undo)

    def undo(self) -> bool:
        """Take back the last mark (computed or the user's), with the steps it triggered."""
        if not self._undo:
            return False
        self.state = self._undo.pop()
        return True

    # ---------------------------------------------------------------------------- narrowing, convergence
    def _narrow(self, st: SearchState, pos: int, mark: Mark) -> SearchState:
        ancestors = self.strategy.ancestors(pos, st.candidates)
        if mark == Mark.BAD:
            return st.evolve(bad=st.bad | {pos}, hi=pos, candidates=frozenset((ancestors | {pos}) - st.good))
        return st.evolve(good=st.good | {pos}, lo=max(st.lo, pos), candidates=st.candidates - ancestors - {pos})

    @staticmethod
    def _marked_bad_by_user(st: SearchState, pos: int) -> bool:
        return any(s.position == pos and s.source == Source.USER and s.mark == Mark.BAD for s in st.history)

    def _maybe_converged(self, st: SearchState, force: bool = False) -> SearchState:
        """Run the culprit check once nothing but the known bad op is left to probe."""
        for _ in range(len(self.order) + 1):  # each continuation moves to a new producer
            if st.finished or st.hi is None:
                return st
            if not force and self.culprit_check.choose(st.candidates, st.hi, st.lo) is not None:
                return st
            out = self.culprit_check.check(st.hi, st.good)
            if out.undecided:  # the error came through an op on one side only: no root can be named
                why = out.undecided
                if (
                    self._marked_bad_by_user(st, st.hi)
                    and out.result.outputs
                    and all(r.good or r.verdict == IGNORED for r in out.result.outputs)
                ):
                    # the user's own mark contradicts the numbers: say so (it is theirs to undo), never blame
                    # the dumps for it
                    verdicts = tuple(sorted({str(r.verdict) for r in out.result.outputs}))
                    why = because(Why.USER_MARK_CONFLICT, self.order[st.hi].label, verdicts)
                if why not in self.undecided:
                    self.undecided.append(why)
                return st.evolve(finished=True, no_divergence=False, candidates=frozenset())
            if out.carried_only:
                # no root where the walk ended: the answer is the scan's and the preconditions' roots (compare's);
                # with none, where the error carried here is born could not be told
                self.notes.append(because(Why.SEARCH_ENDED, self.order[st.hi].name, out.why))
                known = bool(self.parameter_roots) or bool(self.scan_result is not None and self.scan_result.roots)
                if not known and out.why not in self.undecided:
                    self.undecided.append(because(Why.BIRTH_UNTOLD, out.why))
                return st.evolve(finished=True, no_divergence=False, candidates=frozenset())
            if out.unjudged and out.unjudged not in self.undecided:
                self.undecided.append(out.unjudged)
            if out.continue_from is None:
                root = Root(self.order[st.hi], RootKind.OUTPUTS, out.why, out.result, out.caveats, out.local)
                others = self.culprit_check.other_roots(st.hi, st.good, self.notes)
                return st.evolve(culprit=root, finished=True, candidates=frozenset({st.hi}), other_roots=tuple(others))
            # A bad input: the source is upstream (a good output can hide a bad input). Continue there.
            p = out.continue_from
            st = st.with_step(
                Step(
                    self.order[p].key,
                    p,
                    Mark.BAD,
                    Source.CHECK,
                    because(Why.CONTINUING, out.why),
                    len(st.candidates),
                )
            )
            candidates, lo = self.strategy.restart(p, st.good)
            st = st.evolve(bad=st.bad | {p}, hi=p, candidates=candidates, lo=lo)
            force = False
        return st

    # ---------------------------------------------------------------------------- preconditions, result
    def check_inputs(self) -> list[InputCheck]:
        """The field guide's preconditions: same network input, same weights (where both dumps hold them)."""
        if self.checks is None:
            self.checks = check_inputs(self.session)
            self.parameter_roots = parameter_roots(self.checks, self.session)
        return self.checks

    def roots(self) -> list[Root]:
        """Every root found, first in execution order first."""
        found: dict[str, Root] = {}
        for r in (
            ([self.culprit] if self.culprit else []) + self.other_roots + self._scan_roots() + self.parameter_roots
        ):
            if r.pair.key not in found:
                found[r.pair.key] = r
            elif r.kind != RootKind.OUTPUTS:
                first = found[r.pair.key]
                if first.kind == RootKind.OUTPUTS and (first.local is None or not first.local.is_root):
                    # its outputs only carry what its inputs bring: the input or weight that differs is the cause
                    first.kind, first.why = r.kind, r.why
                elif r.why not in first.caveats and r.why != first.why:
                    first.caveats.append(r.why)
        for r in found.values():  # a parameter's root was read before the scan judged its tensors in context
            r.result = self.judged_op(r.result or self.session.op_result(r.pair))
        return sorted(found.values(), key=lambda r: r.pair.index)

    def _scan_roots(self) -> list[Root]:
        """Every root the scan found (bisection reaches the first; compare reports them all: they agree)."""
        if self.scan_result is None:
            return []
        out = []
        for le in self.scan_result.roots:
            pos = self.position[le.pair.index]
            chk = self.culprit_check.check(pos, frozenset())
            out.append(Root(le.pair, RootKind.OUTPUTS, chk.why, chk.result, chk.caveats, le))
        return out

    def first_root(self) -> Root | None:
        rs = self.roots()
        if not rs:
            return None
        r = rs[0]
        if r.result is None:
            r.result = self.judged_op(self.session.op_result(r.pair, inputs=True, purpose=Purpose.CULPRIT_CHECK))
        if r.local is None and r.pair.index in self.position:
            r.local = self.culprit_check.local(self.position[r.pair.index], r.result)
        return r

    def error_sources(self, k: int = 3) -> list[LocalError]:
        """The ops that grow error most (finite relative gain above 1, output beyond its floor), largest first:
        where to look when nothing is a root but the output still moved."""
        if self.scan_result is None:
            return []
        grown = [
            le
            for le in self.scan_result.locals
            if le.kind in (LocalKind.CARRIES, LocalKind.ROOT)
            and (le.selection is None or not le.selection.conclusive)  # a selection's gain says nothing
            and le.gain_rel is not None
            and 1 < le.gain_rel < float("inf")
        ]
        return sorted(grown, key=lambda le: -(le.gain_rel or 0))[:k]

    def benign_evidence(self) -> list[Said]:
        """Why a pair with differences and no root is benign (empty when it is bitwise clean)."""
        if self.first_root() is not None:
            return []
        out: list[Said] = []
        if self.search == SearchMode.SCAN:
            out.append(self.search_reason)
        for c in self.checks or []:
            if c.status == CheckStatus.BENIGN:
                out.append(because(Why.BENIGN_CHECK, c.kind, c.name, c.detail))
        if self.scan_result is not None:
            reach = self.scan_result.reach  # what a flipped selection reaches differs by the flip, not by noise
            worst = max(
                (
                    le
                    for pos, le in enumerate(self.scan_result.locals)
                    if le.out is not None and not (reach and reach[pos] is not None)
                ),
                key=lambda le: le.out_rel or 0.0,
                default=None,
            )
            if worst is not None and worst.out_rel:
                out.append(because(Why.LARGEST_CARRIED, worst.out_rel, worst.pair.name))
        return out

    # ---------------------------------------------------------------------------- save / resume
    def to_json(self) -> SessionJson:
        return steps_json(self.mode, self.state.history)

    def replay(self, data: SessionJson) -> list[str]:
        """Re-apply saved marks by op key; returns the keys that no longer exist."""
        self.reset()
        self.start()
        missing = []
        for s in data.get("steps", []):
            pos = self.key_position.get(s.get("key"))
            if pos is None:
                missing.append(str(s.get("key")))
                continue
            if self.finished:
                break
            if s.get("source") == Source.COMPUTED:
                mark, detail = self.oracle.verdict(pos)
                self.mark(pos, mark, Source.COMPUTED, detail)
            else:
                mark = Mark(s.get("mark", Mark.GOOD))  # a session file's text
                self.mark(pos, mark, Source.USER, s.get("detail") or because(Why.MARKED_BY_USER))
        return missing
