"""The ranks x steps picker (present/picker.py decides and words every row): a table of every (rank, step)
that fills as each unit is searched, the first divergence marked; Enter opens that unit, `U` in the main view
comes back here."""

from __future__ import annotations

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static
from textual.worker import get_current_worker

from dumptui.present.picker import PickerRow, UnitPicker
from dumptui.present.words import plural


class PickerScreen(Screen[None]):
    HELP_SECTION = "Ranks and steps (the picker)"
    BINDINGS = [
        Binding("enter", "open_unit", "Open", id="picker.open", priority=True),  # the table's own enter: the same
        Binding("q", "app.quit", "Quit", id="picker.quit"),
        Binding("question_mark", "app.help", "Help", id="picker.help"),
    ]
    COLUMNS = ("unit", "answer", "first root (position in execution order)", "why")

    def __init__(self, picker: UnitPicker):
        super().__init__()
        self.picker = picker

    def compose(self) -> ComposeResult:
        yield Static(self._title(), id="picker-title")
        yield DataTable(id="units", cursor_type="row", zebra_stripes=True)
        yield Static("", id="picker-status")
        yield Footer()

    def _title(self) -> str:
        n = len(self.picker.common)
        extra = [
            f"only in the {side}: " + ", ".join(u.label for u in missing)
            for side, missing in (("reference", self.picker.only_ref), ("target", self.picker.only_target))
            if missing
        ]
        return "; ".join([f"{plural(n, 'rank and step', 'ranks and steps')} in both dumps: enter opens one", *extra])

    def on_mount(self) -> None:
        table = self.query_one("#units", DataTable)
        for col in self.COLUMNS:
            table.add_column(col, key=col)
        for row in self.picker.rows.values():
            table.add_row(*row.cells, key=row.unit.label)
        table.focus()
        self._status()
        self.search()

    @work(thread=True, exclusive=True, group="picker")
    def search(self) -> None:
        worker = get_current_worker()
        self.picker.search(
            lambda row: self.app.call_from_thread(self.show_row, row), cancelled=lambda: worker.is_cancelled
        )
        self.app.call_from_thread(self._searched)

    def _searched(self) -> None:
        """Every unit searched: the cursor on where the divergence is born first (unless the user moved it)."""
        first = self.picker.first_unit()
        table = self.query_one("#units", DataTable)
        if first is not None and table.cursor_row == 0:
            table.move_cursor(row=self.picker.common.index(first))
        self._status()

    def show_row(self, row: PickerRow) -> None:
        table = self.query_one("#units", DataTable)
        for col, value in zip(self.COLUMNS, row.cells):
            table.update_cell(row.unit.label, col, value, update_width=True)
        self._status()

    def _status(self) -> None:
        n, done = len(self.picker.common), self.picker.done
        first = self.picker.first_unit()
        if done < n:
            words = f"searching every rank and step: {done} of {n} done"
        elif first is not None:
            words = f"every unit searched: the divergence is born first at {first.label} (▶)"
        elif self.picker.result is not None:
            words = "every unit searched: no divergence in any rank or step"
        else:
            words = f"{done} of {n} searched"
        self.query_one("#picker-status", Static).update(words)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.action_open_unit()

    def action_open_unit(self) -> None:
        table = self.query_one("#units", DataTable)
        if not self.picker.common:
            return
        unit = self.picker.common[table.cursor_row]
        self.app.open_unit(unit)  # type: ignore[attr-defined]  # DumpTuiApp's
