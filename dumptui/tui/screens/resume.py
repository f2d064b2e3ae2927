"""Asked on launch when the same pair was bisected before and left with marks (autosaved after every mark):
enter resumes it, `n` (or escape) starts over and forgets it."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static


class ResumeScreen(ModalScreen[bool]):
    HELP_SECTION = "Dialogs"
    BINDINGS = [
        Binding("enter,y", "answer(True)", "Resume the saved bisection", id="resume.yes"),
        Binding("n,escape", "answer(False)", "Start over (the saved marks are forgotten)", id="resume.no"),
    ]

    def __init__(self, question: str):
        super().__init__()
        self.question = question

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(Text(self.question), id="resume-question")
            yield Static(Text("enter resumes · n starts over", style="dim"))

    def on_mount(self) -> None:
        self.query_one("#dialog").border_title = "resume?"

    def action_answer(self, resume: bool) -> None:
        self.dismiss(resume)
