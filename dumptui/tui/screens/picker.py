"""The picker of a pair with several ranks or steps: ranks down, steps across, each cell filled with its
unit's answer as the search of every unit (`bisect --rank all --step all`) gives it, the unit where the
divergence was born first marked (the cursor moves there unless the user moved it); enter opens the highlighted
unit in the main screen, `U` there comes back. Its keys are the key table's (present/keys.py, `PICKER`).

Thin: what a cell says and which unit it is are the presenter's (present/picker.py); the search runs in a
thread worker below the UI's priority, and stops before its next unit when the screen goes (quit)."""

from __future__ import annotations

import threading

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import DataTable, Static
from textual.worker import Worker, WorkerState, get_current_worker

from dumptui.options.pair import PairOptions
from dumptui.present.failures import describe
from dumptui.present.keys import PICKER
from dumptui.present.paths import shown_pair
from dumptui.present.picker import (
    DIVERGED,
    ONLY_REF,
    ONLY_TARGET,
    UNDECIDED,
    UNREADABLE,
    PickerCancelled,
    Unit,
    UnitChoice,
    UnitPicker,
    search_every_unit,
    unit_options,
)
from dumptui.report import fmt
from dumptui.tui import keymap
from dumptui.tui.messages import UnitAnswered, UnitsSearched, UnitStarted
from dumptui.tui.widgets.footer import KeysFooter
from dumptui.tui.workers import Abandoned, wait_abandonable

SEARCH_NICE = 10  # the search runs this far below the UI's priority (as the main screen's statistics do)
STYLES = {DIVERGED: "bold red", UNDECIDED: "magenta", UNREADABLE: "magenta", ONLY_REF: "dim", ONLY_TARGET: "dim"}


class UnitTable(DataTable):
    """The ranks x steps table. Its enter is the key table's (present/keys.py, `PICKER`), bound here and not as
    a priority on the screen: handled in the table's own queue, so `up right enter` typed in one burst opens
    the cell the arrows lead to (a priority binding answered enter before the arrows reached the table)."""

    BINDINGS = keymap.bindings(PICKER)

    def action_open_unit(self) -> None:
        screen = self.screen
        if isinstance(screen, PickerScreen):
            screen.open_highlighted()


class PickerScreen(Screen[None]):
    def __init__(self, options: PairOptions, choice: UnitChoice):
        super().__init__()
        self.options = options
        self.picker = UnitPicker(choice)
        self.stop = threading.Event()  # set when the screen goes: the search stops before its next unit

    def compose(self) -> ComposeResult:
        ref, target = (fmt.clean(p) for p in shown_pair(self.options.ref, self.options.target))
        yield Static(Text.assemble(("dumptui ", "bold"), f"{ref} ↔ {target}"), id="picker-pair")
        yield Static(id="picker-progress")
        yield UnitTable(id="picker-table", cursor_type="cell", zebra_stripes=False)
        yield Static(id="picker-detail")
        yield KeysFooter()

    @property
    def table(self) -> DataTable:
        return self.query_one("#picker-table", DataTable)

    def on_mount(self) -> None:
        table = self.table
        table.border_title = "ranks × steps · enter opens one"
        table.add_column("", key="rank")
        for i, label in enumerate(self.picker.column_labels()):
            table.add_column(label, key=str(i))
        for r, label in enumerate(self.picker.row_labels()):
            table.add_row(Text(label, style="bold"), *self._cells(r), key=str(r))
        first = self.picker.initial()
        if first is not None:
            row, column = self.picker.position_of(first)
            table.move_cursor(row=row, column=column + 1)
        table.focus()
        self._draw_words()
        self.run_worker(self._search, group="picker", thread=True, exit_on_error=False)

    def on_unmount(self) -> None:
        self.stop.set()

    # ------------------------------------------------------------------ the search
    def _search(self) -> None:
        worker, post = get_current_worker(), self.post_message

        def cancelled() -> bool:
            return self.stop.is_set() or worker.is_cancelled

        try:
            result = wait_abandonable(
                lambda: search_every_unit(
                    self.options,
                    self.picker.choice,
                    cancelled,
                    lambda unit: post(UnitStarted(unit)),
                    lambda answer: post(UnitAnswered(answer)),
                ),
                worker,
                "dumptui-every-unit",
                nice=SEARCH_NICE,
            )
        except (Abandoned, PickerCancelled):
            return
        post(UnitsSearched(result))

    def on_unit_started(self, msg: UnitStarted) -> None:
        self.picker.started(msg.unit)
        self._redraw(msg.unit)

    def on_unit_answered(self, msg: UnitAnswered) -> None:
        self.picker.answered(msg.answer)
        self._redraw(msg.answer.unit)

    def on_units_searched(self, msg: UnitsSearched) -> None:
        self.picker.finished(msg.result)
        for r in range(len(self.picker.ranks)):
            for c in range(len(self.picker.steps)):
                self._redraw_cell(r, c)
        first = self.picker.first_unit()
        if first is not None and self.highlighted() == self.picker.initial():  # not moved by the user
            row, column = self.picker.position_of(first)
            self.table.move_cursor(row=row, column=column + 1)
        self._draw_words()

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker.group == "picker" and event.state == WorkerState.ERROR and event.worker.error is not None:
            self.picker.failed(str(describe(event.worker.error, f"{self.options.ref} / {self.options.target}")))
            self._draw_words()

    # ------------------------------------------------------------------ drawing
    def _cell(self, unit: Unit | None) -> Text:
        return Text(self.picker.cell(unit), style=STYLES.get(self.picker.state(unit), ""))

    def _cells(self, row: int) -> list[Text]:
        return [self._cell(self.picker.unit_at(row, c)) for c in range(len(self.picker.steps))]

    def _redraw_cell(self, row: int, column: int) -> None:
        self.table.update_cell(str(row), str(column), self._cell(self.picker.unit_at(row, column)), update_width=True)

    def _redraw(self, unit: Unit) -> None:
        row, column = self.picker.position_of(unit)
        self._redraw_cell(row, column)
        self._draw_words()

    def highlighted(self) -> Unit | None:
        coordinate = self.table.cursor_coordinate
        return self.picker.unit_at(coordinate.row, coordinate.column - 1)

    def _draw_words(self) -> None:
        self.query_one("#picker-progress", Static).update(Text(self.picker.progress()))
        self.query_one("#picker-detail", Static).update(Text(self.picker.describe(self.highlighted())))

    @on(DataTable.CellHighlighted)
    def _moved(self, event: DataTable.CellHighlighted) -> None:
        if event.coordinate.column == 0 and len(self.picker.steps):  # the ranks' column names, no unit
            self.table.move_cursor(column=1)
            return
        self._draw_words()

    @on(DataTable.CellSelected)
    def _chosen(self, _event: DataTable.CellSelected) -> None:  # a click on the highlighted cell
        self.open_highlighted()

    # ------------------------------------------------------------------ keys
    def open_highlighted(self) -> None:
        unit = self.highlighted()
        if not self.picker.can_open(unit):
            self.notify(self.picker.describe(unit), severity="warning", timeout=4, markup=False)
            return
        assert unit is not None
        self.app.open_unit(unit_options(self.options, unit), unit.label)  # type: ignore[attr-defined]  # DumpTuiApp's
