"""Every rank and step of a pair of dumps in one run: each unit bisected (or compared) on its own, then the
ranks ordered against each other by their communication ops (commorder.py) to name the rank, the step and
the op where the divergence was born first.

Steps run one after the other in training, so the first step with a divergence is the one that counts; within
it, the ranks whose first root no other rank's divergence explains diverged first. Each unit's dumps are let
go once its few numbers are taken, so the memory of a run is that of one unit.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from dumptui.core.compare.session import Session
from dumptui.core.io.errors import DumptuiError
from dumptui.core.model.dump import Op
from dumptui.core.model.reason import Said
from dumptui.core.ranks.commorder import CrossRank, RankEvents, first_divergence, rank_events
from dumptui.core.ranks.units import Unit
from dumptui.core.search.bisect import Root
from dumptui.core.search.bisect.types import RootKind
from dumptui.core.search.measure import result_error

# open, align and search one unit (told the step before it on its rank that already differed, and the largest
# error it saw): its session and roots, in execution order
UnitRun = Callable[[Unit, "tuple[str, float] | None"], tuple[Session, list[Root]]]


@dataclass(frozen=True)
class UnitRoot:
    """A root of one unit, placed in its rank's execution order (the reference's)."""

    position: int
    name: str
    op_type: str
    why: Said  # report/reasons.py words it
    at_inputs: bool = False  # an input or parameter of the op differs: the divergence is there before it runs


@dataclass
class UnitOutcome:
    unit: Unit
    rank_id: int  # the rank as a number (rank ids of communication ops are numbers)
    roots: list[UnitRoot] = field(default_factory=list)
    kernels: int = 0
    error: str | None = None  # why the unit could not be searched (path: reason)

    @property
    def first(self) -> UnitRoot | None:
        return min(self.roots, key=lambda r: r.position) if self.roots else None


@dataclass
class StepVerdict:
    """The cross-rank order of one step's divergences (None when no rank of it diverged)."""

    step: str | None
    cross: CrossRank | None
    first_roots: dict[int, UnitRoot]  # rank id -> its first root
    units: dict[int, Unit]


@dataclass
class AllUnits:
    outcomes: list[UnitOutcome]
    steps: list[StepVerdict]
    only_ref: list[Unit] = field(default_factory=list)
    only_target: list[Unit] = field(default_factory=list)
    # per rank, after its last step: (that step, the largest error it saw) when it differed, else None — what
    # the rank's next step is told (a weight updated with that error is carried, not a root)
    carried: dict[str | None, tuple[str, float] | None] = field(default_factory=dict)

    @property
    def first(self) -> StepVerdict | None:
        """The first step in which some rank diverged (its `cross.first` names the rank or ranks)."""
        return next((s for s in self.steps if s.cross is not None), None)

    @property
    def errors(self) -> list[UnitOutcome]:
        return [o for o in self.outcomes if o.error is not None]


def rank_number(unit: Unit, index: int) -> int:
    return int(unit.rank) if unit.rank is not None and unit.rank.isdigit() else index


def _kernels_in_order(session: Session) -> list[Op]:
    return sorted(session.ref.kernels, key=lambda op: op.order)


def run_units(
    units: list[Unit],
    run: UnitRun,
    on_unit: Callable[[Unit, Session, list[Root]], None] | None = None,
    on_outcome: Callable[[UnitOutcome], object] | None = None,
    why_of: Callable[[Unit, Root], Said] | None = None,
) -> AllUnits:
    """Search every unit with `run`, in step then rank order; `on_unit` sees each unit's session and roots
    before they are let go (to report them), `on_outcome` each unit's outcome as soon as it is known (the
    app's picker fills its rows so). `why_of` gives each root's why as the unit's own report says it (the
    view's words of its cause, report/cause.py), else the root's reason. A unit that cannot be opened is
    recorded with its reason."""
    outcomes: list[UnitOutcome] = []
    events: dict[str | None, RankEvents] = {}
    ranks_seen: dict[str | None, int] = {}
    # rank -> (its step before, the largest relative error seen there) when that step differed at all
    differed: dict[str | None, tuple[str, float] | None] = {}
    for unit in sorted(units, key=Unit.sort_key):
        rank_id = rank_number(unit, ranks_seen.setdefault(unit.rank, len(ranks_seen)))
        outcome = UnitOutcome(unit, rank_id)
        outcomes.append(outcome)
        try:
            session, roots = run(unit, differed.get(unit.rank))
        except DumptuiError as e:
            outcome.error = str(e)
            differed[unit.rank] = None
            if on_outcome is not None:
                on_outcome(outcome)
            continue
        level = largest_error(session)
        differed[unit.rank] = (unit.step or "", level) if level > 0 else None
        kernels = _kernels_in_order(session)
        outcome.kernels = len(kernels)
        position = {op.key: i for i, op in enumerate(kernels)}
        for root in roots:
            op = root.pair.ref
            if op is None or op.key not in position:
                continue  # a target-only op has no place in the reference's order
            at_inputs = root.kind != RootKind.OUTPUTS
            why = why_of(unit, root) if why_of is not None else root.why
            outcome.roots.append(UnitRoot(position[op.key], root.pair.name, root.pair.op_type, why, at_inputs))
        evs, unmatched = rank_events(rank_id, kernels)
        events.setdefault(unit.step, RankEvents()).add(rank_id, evs, unmatched)
        if on_unit is not None:
            on_unit(unit, session, roots)
        if on_outcome is not None:
            on_outcome(outcome)
    return AllUnits(outcomes, _order_steps(outcomes, events), carried=dict(differed))


def largest_error(session: Session) -> float:
    """The largest relative error of any tensor pair the search compared (0 when all were equal). A tensor
    held in a less precise dtype on one side carries at least that dtype's rounding in each element, though
    statistics average it away: its floor counts then."""
    level = 0.0
    for r in session.results():
        e = result_error(r)
        if e is None or e.nonfinite:
            continue
        level = max(level, e.rel)
        if (
            r.statistics_only
            and r.ref is not None
            and r.target is not None
            and r.ref.dtype != r.target.dtype
            and e.rel > 0
        ):
            level = max(level, session.thresholds.floor(r.ref.dtype, r.target.dtype)[0])
    return level


def _order_steps(outcomes: list[UnitOutcome], events: dict[str | None, RankEvents]) -> list[StepVerdict]:
    steps: list[StepVerdict] = []
    for step in dict.fromkeys(o.unit.step for o in outcomes):
        mine = [o for o in outcomes if o.unit.step == step]
        first_roots = {o.rank_id: first for o in mine if (first := o.first) is not None}
        units = {o.rank_id: o.unit for o in mine}
        cross = None
        if first_roots:
            # a divergence in an op's inputs is there before the op runs: a collective it feeds carries it to
            # the other ranks (a broadcast from a rank whose weight differs); one born in the op's output is
            # not carried by that same op (an all_reduce with another reduction, on every rank: concurrent)
            cross = first_divergence(
                events.get(step, RankEvents()),
                {r: root.position - (0.5 if root.at_inputs else 0) for r, root in first_roots.items()},
            )
        steps.append(StepVerdict(step, cross, first_roots, units))
    return steps
