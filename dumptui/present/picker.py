"""The picker of a dump pair with several ranks or steps: which (rank, step) to open, and the every-unit answer
(`bisect --rank all --step all`) filling its table as each unit is searched.

The answer is the engine's (core/ranks/allunits.py `run_units`, each unit searched by `search_unit`, the one
search a single unit's run makes too, each root's why as the unit's own report says it): this module only
words it for the table, with the headless table's words of a unit (report/unitwords.py). The search runs in a worker
(`search_every_unit`, off the UI thread); what it tells is applied to a `UnitPicker` on the UI thread
(`started`, `answered`, `finished`), which the screen (tui/screens/picker.py) draws.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from dumptui.core.io.errors import DumptuiError
from dumptui.core.ranks.allunits import AllUnits, UnitOutcome, run_units
from dumptui.core.ranks.units import ALL, Unit, layout, pair_units, units
from dumptui.core.search.bisect.types import InputCheck
from dumptui.options.pair import PairOptions, search_unit
from dumptui.report.cause import why
from dumptui.report.fmt import clean
from dumptui.report.names import cut_name
from dumptui.report.reasons import say_all
from dumptui.report.unitwords import NO_DIVERGENCE, UNDECIDED, UNREADABLE, outcome_words

__all__ = [
    "UNDECIDED",
    "UNREADABLE",
    "AllUnits",
    "PickerCancelled",
    "Unit",
    "UnitAnswer",
    "UnitChoice",
    "UnitPicker",
    "opened_unit",
    "search_every_unit",
    "unit_options",
    "units_to_pick",
    "wants_picker",
]

# what a cell says of its unit: the states of report/unitwords.py once searched, these before and beside
WAITING, SEARCHING, DIVERGED, SAME, ONLY_REF, ONLY_TARGET = (
    "waiting",
    "searching",
    "diverged",
    NO_DIVERGENCE,
    "only ref",
    "only target",
)
FIRST_MARK = "»"  # the unit (or concurrent units) where the divergence was born first
CELL_NAME_ROOM = 16  # a root's name in a cell, cut in the middle beyond it: 3 steps fit in 80 columns


class PickerCancelled(Exception):
    """The picker closed (or the app quit) while its search ran: it stops before the next unit."""


@dataclass(frozen=True)
class UnitChoice:
    """The units a pair holds (in both dumps, in step then rank order), and those in one dump only."""

    common: list[Unit]
    only_ref: list[Unit] = field(default_factory=list)
    only_target: list[Unit] = field(default_factory=list)


def _chosen(options: PairOptions) -> bool:
    return any(
        getattr(options, f"{side}{level}") is not None
        for side in ("", "ref_", "target_")
        for level in ("rank", "iteration")
    )


def units_to_pick(options: PairOptions) -> UnitChoice | None:
    """The units to choose from when the pair holds several ranks or steps and none was chosen (`--rank`,
    `--step`); None otherwise (one unit: opened at once; a dump that cannot be listed: the main screen says
    why). Folder names only: nothing is indexed."""
    if _chosen(options):
        return None
    try:
        shapes = [layout(options.ref), layout(options.target)]
        several_ranks = any(len(found) > 1 for found in shapes)
        several_steps = any(len(steps) > 1 for found in shapes for steps in found.values())
        if not several_ranks and not several_steps:
            return None
        # every level by its name (a single rank too: its row says "rank 0"), as `--rank all --step all` lists them
        common, only_ref, only_target = pair_units(units(options.ref, ALL, ALL), units(options.target, ALL, ALL))
    except (DumptuiError, OSError):
        return None
    if len(common) < 2 and not only_ref and not only_target:
        return None
    return UnitChoice(common, only_ref, only_target)


def opened_unit(options: PairOptions) -> str:
    """The words of the unit a picker's choice opened ("rank 1, step 0"), for the main screen's status line."""
    return Unit(options.rank, options.iteration).label


def wants_picker(options: PairOptions) -> bool:
    """Whether opening this pair needs a choice the user did not make (several ranks or steps, none given)."""
    return units_to_pick(options) is not None


def unit_options(options: PairOptions, unit: Unit) -> PairOptions:
    """The options that open one unit, as `--rank R --step S` would."""
    return replace(options, rank=unit.rank, iteration=unit.step)


@dataclass(frozen=True)
class UnitAnswer:
    """One unit's answer in the headless table's words (report/unitwords.py), and its first root's bare name
    for a cell."""

    unit: Unit
    state: str  # "diverged", NO_DIVERGENCE, UNDECIDED, UNREADABLE
    first_root: str = "-"  # `#position name (type)` with how many more
    why: str = ""  # the first root's why as the unit's own report says it; the error; the undecided reason
    root: str = ""  # the first root's name


def answer_of(outcome: UnitOutcome, undecided: dict[Unit, str]) -> UnitAnswer:
    """`bisect --rank all --step all`'s line of a unit (report/ranks.py), as data."""
    state, first_root, why_words = outcome_words(outcome, undecided)
    first = outcome.first
    return UnitAnswer(outcome.unit, state, first_root, why_words, first.name if first is not None else "")


def search_every_unit(
    options: PairOptions,
    choice: UnitChoice,
    cancelled: Callable[[], bool],
    started: Callable[[Unit], object],
    answered: Callable[[UnitAnswer], object],
    cache: bool = True,
) -> AllUnits:
    """Every unit searched as `bisect --rank all --step all` searches it, in step then rank order: `started`
    told before each, `answered` after. Raises PickerCancelled before the next unit once `cancelled()`."""
    undecided: dict[Unit, str] = {}
    checks: dict[Unit, list[InputCheck]] = {}  # a root's why as its unit's own report words it (report/cause.py)

    def run(unit: Unit, carried: tuple[str, float] | None):  # type: ignore[no-untyped-def]
        if cancelled():
            raise PickerCancelled(unit.label)
        started(unit)
        session, search, roots = search_unit(options, unit, carried, "bisect", cache=cache)
        checks[unit] = search.checks or []
        if search.undecided and not roots:
            undecided[unit] = "; ".join(say_all(search.undecided))
        return session, roots

    result = run_units(
        choice.common,
        run,
        on_outcome=lambda o: answered(answer_of(o, undecided)),
        why_of=lambda unit, root: why(root, checks[unit]),
    )
    result.only_ref, result.only_target = list(choice.only_ref), list(choice.only_target)
    return result


def _label(level: str, value: str | None) -> str:
    return f"{level} {value}" if value else f"the only {level}"


class UnitPicker:
    """The picker's table: ranks down, steps across; each cell the state or answer of its unit."""

    def __init__(self, choice: UnitChoice):
        self.choice = choice
        everything = choice.common + choice.only_ref + choice.only_target
        ordered = sorted(everything, key=Unit.sort_key)
        self.steps: list[str | None] = list(dict.fromkeys(u.step for u in ordered))
        self.ranks: list[str | None] = sorted(
            dict.fromkeys(u.rank for u in ordered), key=lambda r: Unit(r, None).sort_key()
        )
        self.answers: dict[Unit, UnitAnswer] = {}
        self.searching: Unit | None = None
        self.result: AllUnits | None = None
        self.failure = ""  # why the search stopped, when it failed
        self.first: frozenset[Unit] = frozenset()

    # ------------------------------------------------------------------ what the worker tells
    def started(self, unit: Unit) -> None:
        self.searching = unit

    def answered(self, answer: UnitAnswer) -> None:
        self.answers[answer.unit] = answer
        if self.searching == answer.unit:
            self.searching = None

    def finished(self, result: AllUnits) -> None:
        """The whole answer: the units where the divergence was born first are marked."""
        self.result = result
        self.searching = None
        verdict = result.first
        if verdict is not None and verdict.cross is not None:
            self.first = frozenset(verdict.units[r] for r in verdict.cross.first if r in verdict.units)

    def failed(self, why: str) -> None:
        self.failure = why
        self.searching = None

    # ------------------------------------------------------------------ what the screen draws
    @property
    def total(self) -> int:
        return len(self.choice.common)

    @property
    def done(self) -> int:
        return len(self.answers)

    @property
    def complete(self) -> bool:
        return self.result is not None

    def row_labels(self) -> list[str]:
        return [_label("rank", r) for r in self.ranks]

    def column_labels(self) -> list[str]:
        return [_label("step", s) for s in self.steps]

    def unit_at(self, row: int, column: int) -> Unit | None:
        """The unit of a cell; None where the pair has no such rank and step."""
        if not (0 <= row < len(self.ranks) and 0 <= column < len(self.steps)):
            return None
        unit = Unit(self.ranks[row], self.steps[column])
        known = self.choice.common + self.choice.only_ref + self.choice.only_target
        return unit if unit in known else None

    def position_of(self, unit: Unit) -> tuple[int, int]:
        return self.ranks.index(unit.rank), self.steps.index(unit.step)

    def can_open(self, unit: Unit | None) -> bool:
        return unit is not None and unit in self.choice.common

    def state(self, unit: Unit | None) -> str:
        if unit is None:
            return ""
        if unit in self.choice.only_ref:
            return ONLY_REF
        if unit in self.choice.only_target:
            return ONLY_TARGET
        answer = self.answers.get(unit)
        if answer is not None:
            return answer.state
        return SEARCHING if unit == self.searching else WAITING

    def cell(self, unit: Unit | None) -> str:
        """A cell's text: the first root's name (cut in the middle with `…`), or the unit's state."""
        state = self.state(unit)
        mark = f"{FIRST_MARK} " if unit in self.first else ""
        answer = self.answers.get(unit) if unit is not None else None
        if state == DIVERGED and answer is not None:
            return f"{mark}✗ {cut_name(clean(answer.root), CELL_NAME_ROOM)}"
        return {SAME: "✓ same", UNDECIDED: "? undecided", UNREADABLE: "! unreadable"}.get(state, state)

    def describe(self, unit: Unit | None) -> str:
        """The highlighted unit in full: its answer, or what is still to come, and how to open it."""
        if unit is None:
            return "no unit here: the pair has no such rank and step"
        state = self.state(unit)
        answer = self.answers.get(unit)
        head = unit.label
        if state in (ONLY_REF, ONLY_TARGET):
            side = "reference" if state == ONLY_REF else "target"
            return f"{head}: only in the {side} dump, nothing to compare it with"
        if state == DIVERGED and answer is not None:
            first = " · where the divergence was born first" if unit in self.first else ""
            return f"{head}: first root {clean(answer.first_root)}{first} · {clean(answer.why)}"
        if state == SAME:
            return f"{head}: {NO_DIVERGENCE}"
        if state in (UNDECIDED, UNREADABLE) and answer is not None:
            return f"{head}: {state}: {clean(answer.why)}"
        return f"{head}: {state} · enter opens it now"

    def progress(self) -> str:
        """The search's count while it runs; then the whole answer, as `bisect --rank all --step all` gives it."""
        if self.failure:
            return f"the search of every rank and step stopped: {clean(self.failure)}"
        if self.result is None:
            now = f" ({self.searching.label})" if self.searching is not None else ""
            return f"searching every rank and step: {self.done} of {self.total}{now}"
        verdict = self.result.first
        if verdict is None or verdict.cross is None:
            if any(a.state == UNDECIDED for a in self.answers.values()):
                return "undecided: some units could not be judged whole, and no unit has a root of divergence"
            if self.result.errors:
                return f"no divergence found; {len(self.result.errors)} unit(s) could not be read"
            return "no divergence in any rank or step"
        firsts = sorted(self.first, key=Unit.sort_key)
        where = "; ".join(f"{u.label}: {clean(self.answers[u].root)}" for u in firsts if u in self.answers)
        concurrent = " (concurrent)" if verdict.cross.concurrent else ""
        return f"{FIRST_MARK} first divergence{concurrent}: {where}"

    def first_unit(self) -> Unit | None:
        """Where the divergence was born first (the first of concurrent ranks); None before the end or if none."""
        return min(self.first, key=Unit.sort_key) if self.first else None

    def initial(self) -> Unit | None:
        """Where the cursor starts: the first unit in both dumps."""
        return self.choice.common[0] if self.choice.common else None
