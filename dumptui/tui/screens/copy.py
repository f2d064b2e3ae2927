"""`y`: a list of what can be copied here (present/copy.py); enter puts it on the terminal's clipboard through
OSC 52, which works over SSH, and the notification says what was copied."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen, Screen
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from dumptui.present.columns import fit_name
from dumptui.present.copy import CopyChoice
from dumptui.report import fmt


class CopyScreen(ModalScreen[CopyChoice | None]):
    HELP_SECTION = "Dialogs"
    BINDINGS = [Binding("escape,y", "cancel", "Close without copying", id="copy.cancel")]

    def __init__(self, choices: list[CopyChoice]):
        super().__init__()
        self.choices = choices

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield OptionList(
                *[Option(Text(fmt.clean(c.label)), id=str(k)) for k, c in enumerate(self.choices)], id="copy-list"
            )

    def on_mount(self) -> None:
        dialog = self.query_one("#dialog")
        dialog.border_title = "copy (enter) · escape closes"
        self.query_one(OptionList).focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(self.choices[int(event.option.id or 0)])

    def action_cancel(self) -> None:
        self.dismiss(None)


def copied_words(choice: CopyChoice, width: int = 60) -> str:
    return f"copied {choice.label}: {fit_name(fmt.clean(choice.text), width)}"


def offer_copy(screen: Screen[Any], choices: list[CopyChoice]) -> None:
    """The dialog over `screen`; the choice copied and said (nothing to offer: said too)."""

    def copy(choice: CopyChoice | None) -> None:
        if choice is not None:
            screen.app.copy_to_clipboard(choice.text)
            screen.notify(copied_words(choice), timeout=5, markup=False)

    if choices:
        screen.app.push_screen(CopyScreen(choices), copy)
    else:
        screen.notify("nothing to copy here yet", timeout=4)
