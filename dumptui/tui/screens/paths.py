"""Modal dialogs that ask for paths: save the session (`S`) and export a re-dump config (`e`). Each path
is checked before the dialog closes (never inside a dump folder); enter confirms, escape cancels."""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar, Generic, TypeVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label, Static

Answer = TypeVar("Answer")
Refuse = Callable[[str], str | None]  # why a path cannot be used, or None


class PathDialog(ModalScreen[Answer | None], Generic[Answer]):
    """A dialog of path inputs: enter closes it with the answer unless a path is refused (the reason is shown
    and the dialog stays); escape closes it with None."""

    HELP_SECTION = "Dialogs"
    DIALOG_TITLE: ClassVar[str]  # the border's title (a dialog given a title of its own shows that)
    FIRST_INPUT: ClassVar[str]  # the id of the input focused on opening
    dialog_title: str | None = None

    def on_mount(self) -> None:
        self.query_one("#dialog").border_title = self.dialog_title or self.DIALOG_TITLE
        self.query_one(f"#{self.FIRST_INPUT}", Input).focus()

    def value(self, input_id: str) -> str:
        return self.query_one(f"#{input_id}", Input).value.strip()

    def answer(self) -> tuple[Answer, str | None]:
        """The answer from the inputs, and why it is refused (None: accepted)."""
        raise NotImplementedError

    @on(Input.Submitted)
    def submitted(self, _event: Input.Submitted) -> None:
        answer, reason = self.answer()
        if reason:
            self.query_one("#dialog-error", Static).update(Text(reason, style="bold red"))
            return
        self.dismiss(answer)

    def action_cancel(self) -> None:
        self.dismiss(None)


class SaveScreen(PathDialog[str]):
    """Ask where to save the bisection session."""

    BINDINGS = [Binding("escape", "cancel", "Cancel", id="save.cancel")]
    DIALOG_TITLE = "save session"
    FIRST_INPUT = "save-path"

    def __init__(
        self,
        default: str,
        refuse: Refuse,
        label: str = "Save the bisection session to (enter saves, escape cancels):",
        note: str = "resume later with: dumptui REF TARGET --session FILE",
        title: str = "save session",
    ):
        super().__init__()
        self.default = default
        self.refuse = refuse
        self.label, self.note, self.title = label, note, title
        # the border's title: Textual runs PathDialog.on_mount after a subclass's own, so it is read from here
        self.dialog_title = title

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label(self.label)
            yield Input(self.default, id="save-path")
            yield Static("", id="dialog-error")
            yield Static(Text(self.note, style="dim"))

    def answer(self) -> tuple[str, str | None]:
        path = self.value("save-path")
        return path, self.refuse(path)


class ExportScreen(PathDialog[tuple[str, str]]):
    """Ask for the data_dump.json to write and the folder the next MindSpore run should dump into."""

    BINDINGS = [Binding("escape", "cancel", "Cancel", id="export.cancel")]
    DIALOG_TITLE = "export re-dump config"
    FIRST_INPUT = "export-path"

    def __init__(
        self,
        default_out: str,
        default_dump_dir: str,
        summary: str,
        refuse_out: Refuse,
        refuse_dir: Refuse,
        out_label: str = "write the MindSpore config (data_dump.json, dump_mode 1) to:",
    ):
        super().__init__()
        self.out_label = out_label
        self.default_out = default_out
        self.default_dump_dir = default_dump_dir
        self.summary = summary
        self.refuse_out = refuse_out
        self.refuse_dir = refuse_dir

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(Text(self.summary))
            yield Label(self.out_label)
            yield Input(self.default_out, id="export-path")
            yield Label("the next run dumps into (absolute path, put in the config):")
            yield Input(self.default_dump_dir, id="export-dump-dir")
            yield Static("", id="dialog-error")
            yield Static(Text("enter writes · tab moves · escape cancels", style="dim"))

    def answer(self) -> tuple[tuple[str, str], str | None]:
        out, dump_dir = self.value("export-path"), self.value("export-dump-dir")
        return (out, dump_dir), self.refuse_out(out) or self.refuse_dir(dump_dir)


class CsvExportScreen(PathDialog[tuple[str, str]]):
    """Ask where to write the comparison as CSV and in which profile (the same table as `compare --csv`)."""

    BINDINGS = [Binding("escape", "cancel", "Cancel", id="csv.cancel")]
    DIALOG_TITLE = "export CSV"
    FIRST_INPUT = "csv-path"

    def __init__(self, default_out: str, refuse_out: Refuse, label: str, profiles: dict[str, str], profile: str):
        super().__init__()
        self.default_out, self.refuse_out, self.label = default_out, refuse_out, label
        self.profiles, self.profile = profiles, profile

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label(self.label)
            yield Input(self.default_out, id="csv-path")
            yield Label(f"profile ({' or '.join(self.profiles)}; compare --csv-profile):")
            yield Input(self.profile, id="csv-profile")
            yield Static(Text("; ".join(f"{k}: {v}" for k, v in self.profiles.items()), style="dim"))
            yield Static("", id="dialog-error")
            yield Static(Text("enter writes · tab moves · escape cancels", style="dim"))

    def answer(self) -> tuple[tuple[str, str], str | None]:
        out, profile = self.value("csv-path"), self.value("csv-profile").lower()
        refused = None if profile in self.profiles else f"profile {profile!r}: one of {', '.join(self.profiles)}"
        return (out, profile), self.refuse_out(out) or refused
