"""The `/` search box: typing jumps to the first matching op, enter / down to the next, up to the previous.

It is the whole of the search's wiring: its owner handles one message (`SearchBar.Query`: the text and which
way to look), says what was found with `show_matches`, and gets the keys back on `SearchBar.Closed`."""

from __future__ import annotations

from dataclasses import dataclass

from textual import on
from textual.binding import Binding
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Input

from dumptui.present.search import match_words


class SearchBar(Input):
    @dataclass
    class Query(Message):
        """Look for `text`: forward or back from the row shown; `inclusive`: the row shown may be the match
        (while typing, the first match stays put as the query grows)."""

        text: str
        forward: bool = True
        inclusive: bool = False

    class Closed(Message):
        """The search box was closed (escape): the list it searched has the keys again."""

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
        self.counted: Widget | None = None  # where the match count is shown (its border subtitle)

    def on_mount(self) -> None:
        self.display = False

    def open(self, counted: Widget) -> None:
        """Show the box and take the keys; the match count goes on `counted`'s border."""
        self.counted = counted
        self.display = True
        self.focus()

    def show_matches(self, matches: int | None, scope: str = "") -> None:
        """`matches` found for the query (None: an empty query); `scope` says which rows were searched when
        none matched ("among the diverged ops")."""
        if self.counted is None:
            return
        if matches is None:
            self.counted.border_subtitle = ""
        elif matches == 0:
            self.counted.border_subtitle = "no match" + (f" {scope}" if scope else "")
        else:
            self.counted.border_subtitle = match_words(matches)

    @on(Input.Changed)
    def _changed(self, event: Input.Changed) -> None:
        event.stop()
        self.post_message(self.Query(event.value, forward=True, inclusive=True))

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.post_message(self.Query(event.value, forward=True))

    def action_step(self, forward: bool) -> None:
        self.post_message(self.Query(self.value, forward=forward))

    def action_close(self) -> None:
        self.display = False
        self.show_matches(None)
        self.post_message(self.Closed())
