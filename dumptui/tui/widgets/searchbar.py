"""The `/` search box: typing jumps to the first matching op, ↓ / ↑ to the next / previous, enter goes there and
gives the keys back to the list (the query stays: its owner walks the matches with n / N), escape ends the search.

It is the whole of the search's wiring: its owner handles `SearchBar.Query` (the text and which way to look),
says what was found with `show_matches`, takes the keys back on `SearchBar.Left` (the search goes on) and
`SearchBar.Closed` (the search ended), and ends a search from its own keys with `clear`."""

from __future__ import annotations

from dataclasses import dataclass

from textual import on
from textual.binding import Binding
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Input

from dumptui.present.search import matches_line


class SearchBar(Input):
    @dataclass
    class Query(Message):
        """Look for `text`: forward or back from the row shown; `inclusive`: the row shown may be the match
        (while typing, the first match stays put as the query grows)."""

        text: str
        forward: bool = True
        inclusive: bool = False

    class Left(Message):
        """enter: the list has the keys again; the query stays, its matches walked from the list."""

    class Closed(Message):
        """escape in the box: the search ended (the query is cleared); the list has the keys again."""

    HELP_SECTION = "Search box"
    # Shown in the footer while typing: the screen's one-letter keys (q, ?) are letters of the query then,
    # and the footer would otherwise be empty.
    BINDINGS = [
        Binding(
            "enter",
            "submit",
            "Go there",
            id="search.enter",
            tooltip="Go to the match and back to the list (n / N walk the matches, escape ends the search)",
        ),
        Binding("escape", "close", "End the search", id="search.close"),
        Binding("down", "step(True)", "Next match", id="search.down"),
        Binding("up", "step(False)", "Previous match", id="search.up"),
    ]

    def __init__(self, *, id: str | None = None):
        super().__init__(placeholder="search ops by name (enter: go there, ↓/↑ next/previous, esc ends)", id=id)
        self.counted: Widget | None = None  # where the match count is shown (its border subtitle)

    def on_mount(self) -> None:
        self.display = False

    def open(self, counted: Widget) -> None:
        """Show the box and take the keys (a query left with enter is kept, to refine); the match count goes
        on `counted`'s border."""
        self.counted = counted
        self.display = True
        self.focus()

    def show_matches(self, matches: int | None, scope: str = "", walking: bool = False) -> None:
        """`matches` found for the query (None: an empty query); `scope` says which rows were searched when
        none matched ("among the diverged ops"); `walking`: the list has the keys (it says what n / N do)."""
        if self.counted is not None:
            self.counted.border_subtitle = matches_line(matches, scope, walking)

    def clear(self) -> None:
        """End the search: the box hidden and emptied, the count gone."""
        self.display = False
        self.value = ""
        self.show_matches(None)

    @on(Input.Changed)
    def _changed(self, event: Input.Changed) -> None:
        event.stop()
        self.post_message(self.Query(event.value, forward=True, inclusive=True))

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.post_message(self.Query(event.value, forward=True, inclusive=True))
        self.post_message(self.Left())

    def action_step(self, forward: bool) -> None:
        self.post_message(self.Query(self.value, forward=forward))

    def action_close(self) -> None:
        self.clear()
        self.post_message(self.Closed())
