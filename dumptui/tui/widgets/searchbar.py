"""The `/` search box: typing jumps to the first matching op, enter / down to the next, up to the previous."""

from __future__ import annotations

from dataclasses import dataclass

from textual.binding import Binding
from textual.message import Message
from textual.widgets import Input


class SearchBar(Input):
    @dataclass
    class Step(Message):
        """Go to the next (or the previous) match of the query."""

        forward: bool = True

    class Closed(Message):
        """The search box was closed (escape)."""

    HELP_SECTION = "Search box"
    # Shown in the footer while typing: the screen's one-letter keys (q, ?) are letters of the query then,
    # and the footer would otherwise be empty.
    BINDINGS = [
        Binding("escape", "close", "Close the search", id="search.close"),
        Binding("down", "step(True)", "Next match", id="search.next"),
        Binding("up", "step(False)", "Previous match", id="search.previous"),
    ]

    def __init__(self, *, id: str | None = None):
        super().__init__(placeholder="search ops by name (enter/↓ next, ↑ previous, esc close)", id=id)

    def action_close(self) -> None:
        self.post_message(self.Closed())

    def action_step(self, forward: bool) -> None:
        self.post_message(self.Step(forward))
