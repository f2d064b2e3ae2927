"""A dump that cannot be opened: its path and the reason, instead of a traceback."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static

from dumptui.report import fmt


class OpenErrorScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,enter", "close", "Quit", id="open_error.quit")]

    def __init__(self, path: str, reason: str, back: bool = False):
        super().__init__()
        self.path = path
        self.reason = reason
        self.back = back  # a unit chosen in the picker: closing goes back to it, not out of the app

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(Text("Cannot open the dumps", style="bold red"))
            yield Static(Text.assemble(("path:   ", "bold"), fmt.clean(self.path)), id="error-path")
            yield Static(Text.assemble(("reason: ", "bold"), fmt.clean(self.reason)), id="error-reason")
            leave = "back to the ranks and steps" if self.back else "quits"
            yield Static(
                Text(f"headless: dumptui info PATH shows what a dump holds · q, enter or escape: {leave}", style="dim")
            )

    def on_mount(self) -> None:
        self.query_one("#dialog").border_title = "error"

    def action_close(self) -> None:
        self.dismiss(None)
