"""Modal dialogs that ask for paths: save the session (`S`) and export a re-dump config (`e`). Each path
is checked before the dialog closes (never inside a dump folder); enter confirms, escape cancels."""
from __future__ import annotations

from typing import Callable

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label, Static


class SaveScreen(ModalScreen[str | None]):
    """Ask where to save the bisection session."""

    HELP_SECTION = "Dialogs"
    BINDINGS = [Binding("escape", "cancel", "Cancel", id="save.cancel")]

    def __init__(self, default: str, refuse: Callable[[str], str | None]):
        super().__init__()
        self.default = default
        self.refuse = refuse

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label("Save the bisection session to (enter saves, escape cancels):")
            yield Input(self.default, id="save-path")
            yield Static("", id="dialog-error")
            yield Static(Text("resume later with: dumptui REF TARGET --session FILE", style="dim"))

    def on_mount(self) -> None:
        self.query_one("#dialog").border_title = "save session"
        self.query_one("#save-path", Input).focus()

    @on(Input.Submitted)
    def submitted(self, event: Input.Submitted) -> None:
        path = event.value.strip()
        reason = self.refuse(path)
        if reason:
            self.query_one("#dialog-error", Static).update(Text(reason, style="bold red"))
            return
        self.dismiss(path)

    def action_cancel(self) -> None:
        self.dismiss(None)


class ExportScreen(ModalScreen[tuple[str, str] | None]):
    """Ask for the data_dump.json to write and the folder the next MindSpore run should dump into."""

    HELP_SECTION = "Dialogs"
    BINDINGS = [Binding("escape", "cancel", "Cancel", id="export.cancel")]

    def __init__(self, default_out: str, default_dump_dir: str, summary: str,
                 refuse_out: Callable[[str], str | None], refuse_dir: Callable[[str], str | None]):
        super().__init__()
        self.default_out = default_out
        self.default_dump_dir = default_dump_dir
        self.summary = summary
        self.refuse_out = refuse_out
        self.refuse_dir = refuse_dir

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(Text(self.summary))
            yield Label("write the MindSpore config (data_dump.json, dump_mode 1) to:")
            yield Input(self.default_out, id="export-path")
            yield Label("the next run dumps into (absolute path, put in the config):")
            yield Input(self.default_dump_dir, id="export-dump-dir")
            yield Static("", id="dialog-error")
            yield Static(Text("enter writes · tab moves · escape cancels", style="dim"))

    def on_mount(self) -> None:
        self.query_one("#dialog").border_title = "export re-dump config"
        self.query_one("#export-path", Input).focus()

    @on(Input.Submitted)
    def submitted(self, _event: Input.Submitted) -> None:
        out = self.query_one("#export-path", Input).value.strip()
        dump_dir = self.query_one("#export-dump-dir", Input).value.strip()
        reason = self.refuse_out(out) or self.refuse_dir(dump_dir)
        if reason:
            self.query_one("#dialog-error", Static).update(Text(reason, style="bold red"))
            return
        self.dismiss((out, dump_dir))

    def action_cancel(self) -> None:
        self.dismiss(None)
