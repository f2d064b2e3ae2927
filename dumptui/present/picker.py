"""The app's ranks x steps picker: a dump pair of several ranks or steps opened with no --rank / --step lists
every (rank, step) with the answer `bisect --rank all --step all` gives for it, filled as each unit is searched
(the same search: options/pair.search_unit, each step told what its rank's step before carried), the first
divergence marked; the user opens one unit. No Textual here: the screen (tui/screens/picker.py) shows rows."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from dumptui.core.ranks.allunits import AllUnits, UnitOutcome, run_units
from dumptui.core.ranks.units import ALL, Unit, layout, pair_units, units
from dumptui.core.search.bisect.types import InputCheck
from dumptui.options.pair import PairOptions, search_unit
from dumptui.report.cause import why
from dumptui.report.reasons import say_all
from dumptui.report.unitwords import outcome_words

SEARCHING, WAITING = "searching…", "waiting"


@dataclass(frozen=True)
class PickerRow:
    unit: Unit
    state: str  # WAITING, SEARCHING, then outcome_words' state: "diverged", "no divergence", ...
    first_root: str = "-"
    why: str = ""
    first: bool = False  # where the divergence was born first (the step, and the rank no other explains)

    @property
    def cells(self) -> tuple[str, str, str, str]:
        mark = "▶ first" if self.first else self.state
        return self.unit.label, mark, self.first_root, self.why


def wants_picker(options: PairOptions) -> bool:
    """Whether opening this pair needs a choice the user did not make: several ranks or steps in a dump and no
    --rank / --step (nor a per-side one) given."""
    chosen = (options.rank, options.iteration, options.ref_rank, options.ref_iteration)
    if any(c is not None for c in (*chosen, options.target_rank, options.target_iteration)):
        return False
    try:
        found = [layout(path) for path in (options.ref, options.target)]
    except OSError:
        return False  # the main screen says why the dump cannot be read
    return any(len(f) > 1 or any(len(steps) > 1 for steps in f.values()) for f in found)


class UnitPicker:
    """Every unit in both dumps, searched one after the other (`search`, in a worker thread)."""

    def __init__(self, options: PairOptions, cache: bool = True):
        self.options, self.cache = options, cache
        self.common, self.only_ref, self.only_target = pair_units(
            units(options.ref, ALL, ALL), units(options.target, ALL, ALL)
        )
        self.common.sort(key=Unit.sort_key)
        self.rows: dict[Unit, PickerRow] = {u: PickerRow(u, WAITING) for u in self.common}
        self.result: AllUnits | None = None
        self.undecided: dict[Unit, str] = {}

    @property
    def done(self) -> int:
        return sum(1 for r in self.rows.values() if r.state not in (WAITING, SEARCHING))

    def search(self, changed: Callable[[PickerRow], None], cancelled: Callable[[], bool] = lambda: False) -> None:
        """Search every unit in step then rank order; `changed` sees each row as it changes (from this thread)."""

        def run(unit: Unit, carried: tuple[str, float] | None):  # type: ignore[no-untyped-def]
            if cancelled():
                raise _Cancelled
            self.rows[unit] = replace(self.rows[unit], state=SEARCHING)
            changed(self.rows[unit])
            session, bi, roots = search_unit(self.options, unit, carried, "bisect", cache=self.cache)
            checks[unit] = bi.checks or []
            if bi.undecided and not roots:
                self.undecided[unit] = "; ".join(say_all(bi.undecided))
            return session, roots

        checks: dict[Unit, list[InputCheck]] = {}

        def outcome(o: UnitOutcome) -> None:
            state, first_root, why = outcome_words(o, self.undecided)
            self.rows[o.unit] = PickerRow(o.unit, state, first_root, why)
            changed(self.rows[o.unit])

        try:
            self.result = run_units(
                self.common, run, on_outcome=outcome, why_of=lambda unit, root: why(root, checks[unit])
            )
        except _Cancelled:
            return
        first = self.result.first
        if first is not None and first.cross is not None:
            for rank_id in first.cross.first:
                unit = first.units[rank_id]
                self.rows[unit] = replace(self.rows[unit], first=True)
                changed(self.rows[unit])

    def options_for(self, unit: Unit) -> PairOptions:
        """The options that open this one unit (what `--rank R --step S` gives)."""
        return replace(self.options, rank=unit.rank, iteration=unit.step)

    def first_unit(self) -> Unit | None:
        return next((r.unit for r in self.rows.values() if r.first), None)


class _Cancelled(Exception):
    """The app quit while units were still being searched."""
