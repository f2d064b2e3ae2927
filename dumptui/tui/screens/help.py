"""`?`: every key, generated from the action table and the widgets' own bindings (never a hand-written list)."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from dumptui.present.bars import BAR_LEGEND
from dumptui.present.errorplot import PLOT_LEGEND
from dumptui.present.keys import by_id
from dumptui.present.labels import marks_legend
from dumptui.tui.keymap import HelpRow, HelpSection, binding


class HelpScreen(ModalScreen[None]):
    HELP_SECTION = "This help"
    BINDINGS = [
        Binding("escape,q,question_mark", "close", "Close the help", id="help.close"),
        Binding("up,k", "scroll('up')", "Scroll up", id="help.up", show=False),
        Binding("down,j", "scroll('down')", "Scroll down", id="help.down", show=False),
        binding(by_id("nav.first")),  # g / home, G / end: as in every list of the main screen
        binding(by_id("nav.last")),
    ]

    def __init__(self, sections: list[HelpSection], marks: list[tuple[str, str]] | None = None):
        """`marks`: the (mark, meaning) rows to explain instead of the dump-pair app's lists and bisection."""
        super().__init__()
        self.sections = sections
        self.marks = marks

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-body"):
            yield Static(self._render_sections(), id="help-text")
            yield Static(
                self._render_marks() if self.marks is None else self._render_given(self.marks), id="help-marks"
            )

    def _render_given(self, marks: list[tuple[str, str]]) -> Group:
        t = _two_columns("Marks")
        t.add_column("mark", no_wrap=True, style="bold", min_width=3)
        t.add_column("what", ratio=1)
        for mark, meaning in marks:
            t.add_row(mark, meaning)
        return Group(Text(""), t)

    def _render_marks(self) -> Group:
        """What every character of the lists, the bisection bar and the error plot means."""
        t = _two_columns("Marks (op tree, flat list, producers / consumers)")
        t.add_column("mark", no_wrap=True, style="bold", min_width=3)
        t.add_column("what", ratio=1)
        for mark, meaning in marks_legend():
            t.add_row(mark, meaning)
        t.add_row("n✗", "a folder: n ops inside diverged")
        t.add_row("◀", "the probe (P), the culprit (!) or another root (^) of the bisection")
        lines = [
            Text("Bisection bar and error plot", style="bold underline"),
            Text(f"ops   {BAR_LEGEND}"),
            Text("err   each op's output error; gain  its local gain (output error / input error)"),
            Text(f"      {PLOT_LEGEND}"),
        ]
        return Group(Text(""), t, Text(""), *lines)

    def on_mount(self) -> None:
        body = self.query_one("#help-body")
        body.border_title = "keys (escape closes)"
        body.border_subtitle = "dimmed: not available right now"

    def _render_sections(self) -> Group:
        width = max(len(keys) for _t, rows in self.sections for keys, *_ in rows) + 2
        tables = []
        for title, rows in self.sections:
            t = _two_columns(title)
            t.add_column("key", no_wrap=True, style="bold", min_width=width)
            t.add_column("what", ratio=1)
            for keys, desc, _bid, ok in rows:
                t.add_row(Text(keys, style="" if ok else "dim"), Text(desc, style="" if ok else "dim"))
            tables.append(t)
        return Group(*tables)

    @property
    def rows(self) -> list[HelpRow]:
        return [r for _t, rows in self.sections for r in rows]

    def action_close(self) -> None:
        self.dismiss(None)

    def action_first(self) -> None:
        self.query_one("#help-body", VerticalScroll).scroll_home(animate=False)

    def action_last(self) -> None:
        self.query_one("#help-body", VerticalScroll).scroll_end(animate=False)

    def action_scroll(self, direction: str) -> None:
        body = self.query_one("#help-body", VerticalScroll)
        body.scroll_relative(y=-1 if direction == "up" else 1, animate=False)


def _two_columns(title: str) -> Table:
    """A borderless table under an underlined title, as every section of the help is laid out."""
    return Table(
        box=None,
        show_header=False,
        pad_edge=False,
        expand=True,
        padding=(0, 1),
        title=Text(title, style="bold underline"),
        title_justify="left",
    )
