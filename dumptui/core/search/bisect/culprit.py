"""The culprit check and the search for other roots.

When the candidates shrink to one op, its inputs are read: if an input produced by another op diverges, the
search continues from that producer (a good output can hide a bad input); otherwise the op is a root of
divergence. Other roots: side inputs that feed the diverged region from outside the culprit's ancestry are
probed, and each bad one is bisected on its own (graph strategy only).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from dumptui.core.compare.ledger import Purpose
from dumptui.core.compare.results import OpResult, TensorResult
from dumptui.core.compare.session import Session
from dumptui.core.compare.verdict import GOOD, IGNORED, ONLY_REF, ONLY_TARGET, UNREADABLE
from dumptui.core.graph.align import OpPair
from dumptui.core.graph.dataflow import input_source, producer_pair, unproduced
from dumptui.core.model.dump import Role, SourceKind
from dumptui.core.model.numbers import counting
from dumptui.core.model.reason import Reason, Said, Why, because
from dumptui.core.search.bisect.oracle import Oracle
from dumptui.core.search.bisect.strategy import Strategy
from dumptui.core.search.bisect.types import Mark, Root, RootKind
from dumptui.core.search.localerror import Difference, DiffKind, LocalError, LocalKind, unjudged_reason
from dumptui.core.search.measure import result_error
from dumptui.core.search.scan import analyse, input_roles

MAX_FRONTIER = 8  # side inputs checked for other roots of divergence


@dataclass
class CheckOutcome:
    result: OpResult
    continue_from: int | None  # the producer to continue from, when an input it produces carries the error
    why: Reason
    caveats: list[Said]
    local: LocalError | None = None
    undecided: Reason | None = None  # why no root can be named here (the error came through an op not judged)
    # an output of the op named that could not be read: the op is a root by what differs in its definition or
    # its weights, but the error it makes cannot be judged (said with the answer, which is then incomplete)
    unjudged: Reason | None = None
    # the walk ended at an op that only carries error in, from a producer the scan judged good (a value judged
    # at two floors: an fp16 output read as fp32 after a Cast): no root here; the scan's roots are the answer
    carried_only: bool = False


def _carried(r: TensorResult) -> float:
    """How much error an input carries (relative to its RMS; 0 when it was not compared)."""
    err = result_error(r)
    if err is None:
        return 0.0
    return math.inf if err.nonfinite else err.worst_rel


def unjudged_output(label: str, r: TensorResult) -> Reason:
    """The answer's line for an op whose output could not be read: the same reason from the scan and the check."""
    return because(Why.OUTPUT_NOT_JUDGED, label, r.label, r.reason)


class CulpritCheck:
    def __init__(
        self,
        session: Session,
        order: list[OpPair],
        strategy: Strategy,
        oracle: Oracle,
        judged: Callable[[OpResult], OpResult] | None = None,
    ):
        self.session = session
        self.judged = judged  # the search's verdicts in context: an input carrying noise is close here too
        self.order = order
        self.position = {p.index: i for i, p in zip(counting(len(order)), order)}
        self.strategy = strategy
        self.oracle = oracle
        self.locals: dict[int, LocalError] = {}  # filled by a scan; computed here otherwise
        self.scanned = False  # every op judged by a scan: a root here is one the scan (and compare) names

    def local(self, pos: int, res: OpResult) -> LocalError:
        if pos not in self.locals:
            self.locals[pos] = analyse(self.session, res)
        return self.locals[pos]

    def check(self, pos: int, good: frozenset[int]) -> CheckOutcome:
        """Read the inputs of the op at `pos` and say whether it is a root or where to continue.

        A root: the local-error rule says error is born here (localerror.py). Otherwise the error came in
        through an input: continue from the producer of the input that carries the most."""
        pair = self.order[pos]
        res = self.session.op_result(pair, inputs=True, purpose=Purpose.CULPRIT_CHECK)
        if self.judged is not None:
            res = self.judged(res)
        le = self.local(pos, res)
        carriers, unproduced_bad, caveats = self._inputs(pair, res)
        counted = [r for r in res.outputs if r.verdict != IGNORED]
        unreadable_out = bool(counted) and all(r.verdict == UNREADABLE for r in counted)
        if not carriers and not unproduced_bad and unreadable_out:
            # damage at the op itself: its inputs agree and what reads it diverges, but whether its own output
            # does cannot be seen; naming it (or its consumer) would be a guess the numbers do not back
            why = because(Why.OUTPUT_UNREADABLE_INPUTS_AGREE, pair.label, counted[0].reason)
            return CheckOutcome(res, None, why, caveats, le, undecided=why)
        if le.kind == LocalKind.CARRIES and le.in_slot is not None:
            worst = next((r for r in res.inputs if r.slot == le.in_slot), None)
            if (
                worst is not None
                and worst not in carriers
                and unproduced(pair, worst.slot) is None
                and not self.session.is_final(worst)
            ):
                carriers.insert(0, worst)
        # the input that carries the most first (the docstring's rule): a carrier that only carries noise
        # judged at a stricter floor must not lead the search away from the one that carries the error
        carriers.sort(key=lambda r: -_carried(r))
        led_to_good: list[TensorResult] = []
        if le.kind != LocalKind.ROOT:
            for r in carriers:
                step = self._producer_step(pair, pos, r, good, caveats, led_to_good)
                if step is not None:
                    why = because(Why.INPUT_CARRIES, r.slot, pair.name, r.reason)
                    return CheckOutcome(res, step, why, [], le)
        seen = _Seen(res, le, carriers, unproduced_bad, counted, unreadable_out, caveats)
        return self._not_here(pair, seen, led_to_good) or _here(pair, seen)

    def _inputs(
        self, pair: OpPair, res: OpResult
    ) -> tuple[list[TensorResult], list[tuple[TensorResult, SourceKind]], list[Said]]:
        """The op's inputs sorted: (those that carry a difference from a producer, those that differ with no
        producer (a constant, a graph input), caveats on inputs neither good nor bad)."""
        roles = input_roles(pair)
        caveats: list[Said] = []
        carriers: list[TensorResult] = []
        unproduced_bad: list[tuple[TensorResult, SourceKind]] = []
        retyped = pair.ref is not None and pair.target is not None and pair.ref.op_type != pair.target.op_type
        for r in res.inputs:
            if r.verdict == IGNORED or self.session.is_final(r):  # a wrong transformed weight: a precondition
                continue
            if retyped and r.verdict in (ONLY_REF, ONLY_TARGET) and roles.get(r.slot) == Role.CONSTANT:
                continue  # ops of two definitions (a group and its fused kernel) take their own constants
            origin = unproduced(pair, r.slot)
            bad = r.bad or r.verdict in (ONLY_REF, ONLY_TARGET)
            if origin is not None or roles.get(r.slot) == Role.CONSTANT:
                if bad:
                    unproduced_bad.append((r, origin or SourceKind.CONSTANT))
            elif bad:
                carriers.append(r)
            elif r.verdict not in GOOD:
                caveats.append(because(Why.INPUT_NOT_GOOD, r.slot, r.verdict, r.reason))
        return carriers, unproduced_bad, caveats

    def _not_here(self, pair: OpPair, seen: _Seen, led_to_good: list[TensorResult]) -> CheckOutcome | None:
        """The outcome when no step was taken and the op is no root either (undecided, or carries only)."""
        res, le, carriers, unproduced_bad = seen.res, seen.le, seen.carriers, seen.unproduced_bad
        counted, caveats = seen.counted, seen.caveats
        if (
            le.kind != LocalKind.ROOT
            and not any(r.bad for r in carriers)
            and not unproduced_bad
            and counted
            and not any(r.bad for r in counted)
        ):
            # the search came here through a tensor that differs where it is read but not where it is made (a
            # file missing, renamed or unreadable on one side): this op agrees, so it is no root either
            verdicts = tuple(sorted({str(r.verdict) for r in counted}))
            why = because(Why.AGREES_YET_READ_DIFFERS, pair.label, verdicts)
            return CheckOutcome(res, None, why, caveats, le, undecided=why)
        if seen.unreadable_out and not unproduced_bad:
            # its output cannot be seen and what its inputs carry leads nowhere judged: never named on a guess
            why = because(Why.OUTPUT_UNREADABLE, pair.label, counted[0].reason, caveats)
            return CheckOutcome(res, None, why, caveats, le, undecided=why)
        if le.kind != LocalKind.ROOT and le.unjudged_flow:
            # neither this op (it only carries the error) nor the op the error came through (one side only)
            return CheckOutcome(res, None, le.why, caveats, le, undecided=unjudged_reason(le))
        if (
            self.scanned
            and le.kind in (LocalKind.CARRIES, LocalKind.CLEAN)
            and led_to_good
            and len(led_to_good) == len(carriers)
            and not unproduced_bad
            and not _definition(le)
        ):
            # its error came in through inputs whose producers the scan judged good: the same value judged at two
            # floors (an fp16 output read as fp32 after a Cast). The local-error rule says no root is here, and
            # the scan (compare) names none: neither does the search
            why = because(Why.ONLY_CARRIES, pair.label, [r.slot for r in led_to_good], le.why)
            return CheckOutcome(res, None, why, caveats, le, carried_only=True)
        return None

    def _producer_step(
        self,
        pair: OpPair,
        pos: int,
        r: TensorResult,
        good: frozenset[int],
        caveats: list[Said],
        led_to_good: list[TensorResult],
    ) -> int | None:
        """The producer's position to continue from, or None (with a caveat saying why not; `led_to_good`
        gets the input when its producer was marked good)."""
        prod = producer_pair(self.session.alignment, pair, r.slot)
        ppos = self.position.get(prod.index) if prod is not None else None
        if ppos is not None and ppos != pos and ppos not in good:
            return ppos
        if prod is not None and ppos is not None and ppos in good:
            led_to_good.append(r)
            caveats.append(because(Why.PRODUCER_MARKED_GOOD, r.slot, prod.name))
        elif prod is not None and ppos is None:
            caveats.append(because(Why.PRODUCER_ONE_SIDED, r.slot, prod.ref is None, prod.target is None, prod.name))
        elif prod is None:
            caveats.append(because(Why.PRODUCER_UNKNOWN, r.slot, r.reason, self.strategy.finds_other_roots))
        return None

    # ---------------------------------------------------------------------------- other roots
    def other_roots(self, root: int, good: frozenset[int], notes: list[Said]) -> list[Root]:
        """Other roots: side inputs feeding the diverged region from outside the culprit's ancestry."""
        if not self.strategy.finds_other_roots:
            return []
        st = self.strategy
        found: list[Root] = []
        explained = st.descendants(root) | {root} | st.ancestors(root)
        frontier = {p for b in st.descendants(root) for p in st.predecessors(b) if p not in explained}
        for checked, f in enumerate(sorted(frontier, reverse=True)):
            if checked >= MAX_FRONTIER:
                notes.append(because(Why.SIDE_INPUTS_UNCHECKED, len(frontier) - checked))
                break
            if f in explained or self.oracle.verdict(f, Purpose.OTHER_ROOTS)[0] != Mark.BAD:
                continue
            allowed = set(range(len(self.order))) - explained
            other = self._auto_root(f, allowed | {f}, good)
            if other is not None and other.pair.key != self.order[root].key:
                found.append(other)
                pos = self.position[other.pair.index]
                explained |= st.descendants(pos) | {pos} | st.ancestors(pos)
        return found

    def _auto_root(self, bad: int, allowed: set[int], good: frozenset[int]) -> Root | None:
        """Bisect automatically, within `allowed`, to the root below the bad op `bad`."""
        st = self.strategy
        cands = (st.ancestors(bad, allowed) | {bad}) - good
        hi = bad
        for _ in range(4 * len(self.order) + 8):
            probe = self.choose(frozenset(cands), hi, -1)
            if probe is None:
                out = self.check(hi, good)
                if out.continue_from is None or out.continue_from not in allowed:
                    return Root(self.order[hi], RootKind.OUTPUTS, out.why, out.result, out.caveats, out.local)
                hi = out.continue_from
                cands = (st.ancestors(hi, allowed) | {hi}) - good
                continue
            mark, _ = self.oracle.verdict(probe, Purpose.OTHER_ROOTS)
            if mark == Mark.BAD:
                hi = probe
                cands = st.ancestors(probe, cands) | {probe}
            elif mark == Mark.GOOD:
                cands -= st.ancestors(probe, cands) | {probe}
            else:
                cands.discard(probe)
        return None

    def choose(self, candidates: frozenset[int], hi: int, lo: int) -> int | None:
        """The next probe among `candidates` (never the known bad `hi`, never an op that cannot be probed)."""
        cands = sorted(c for c in candidates - {hi} if self.oracle.known(c) != Mark.SKIP)
        if not cands:
            return None
        return self.strategy.choose(cands, candidates, hi, lo)


@dataclass
class _Seen:
    """What a check read of one op: its results, local error, inputs sorted, outputs counted."""

    res: OpResult
    le: LocalError
    carriers: list[TensorResult]
    unproduced_bad: list[tuple[TensorResult, SourceKind]]
    counted: list[TensorResult]
    unreadable_out: bool
    caveats: list[Said]


def _definition(le: LocalError) -> list[Difference]:
    """What differs in the op's definition (a scalar argument, an attribute), constants aside."""
    return [d for d in le.differs if d.kind != DiffKind.CONSTANT]


def _here(pair: OpPair, seen: _Seen) -> CheckOutcome:
    """The op named: why (its own error, or an input with no producer that differs), with its caveats."""
    le, carriers, unproduced_bad, counted = seen.le, seen.carriers, seen.unproduced_bad, seen.counted
    definition = _definition(le)
    carried_in = le.data_in.worst_rel if le.data_in is not None else 0.0
    why = (
        because(Why.INPUTS_AGREE_OUTPUTS_DIVERGE, carried_in, le.floor)
        if not carriers
        else because(Why.OUTPUTS_AND_UNPRODUCED_DIVERGE)
        if le.kind != LocalKind.ROOT
        else because(Why.BORN_HERE, le.why)
    )
    unjudged = None
    if unproduced_bad and not carriers:  # never "inputs agree" beside the input that differs
        why = because(Why.OUTPUTS_DIVERGE)
        if seen.unreadable_out:  # never "outputs diverge" beside an output nobody could read
            why = because(Why.OWN_OUTPUT_UNREADABLE, counted[0].reason)
            unjudged = unjudged_output(pair.label, counted[0])
    for r, origin in unproduced_bad:
        names = {src.ref for src in input_source(pair, r.slot) if src is not None and src.kind != SourceKind.CONSTANT}
        why = why.also(because(Why.UNPRODUCED_DIFFERS, origin, sorted(names), r.slot, r.reason))
    if unproduced_bad and not carriers:
        why = why.also(because(Why.OTHER_INPUTS, carried_in, le.floor))
    # what the app's culprit panel says of such an op: a scalar argument, an attribute, a reduce op (a
    # constant input that differs is said above, with its numbers)
    if definition and le.kind == LocalKind.ROOT:
        why = why.also(because(Why.DEFINITION_DIFFERS, definition))
    return CheckOutcome(seen.res, None, why, seen.caveats, le, unjudged=unjudged)
