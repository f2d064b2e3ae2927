"""The `/` search box: typing jumps to the first matching op, enter / down to the next, up to the previous."""
from __future__ import annotations

from textual.binding import Binding
from textual.widgets import Input

from ..messages import SearchClosed, SearchStep


class SearchBar(Input):
    HELP_SECTION = "Search box"
    BINDINGS = [
        Binding("escape", "close", "Close the search", id="search.close", show=False),
        Binding("down", "step(True)", "Next match", id="search.next", show=False),
        Binding("up", "step(False)", "Previous match", id="search.previous", show=False),
    ]

    def __init__(self, *, id: str | None = None):
        super().__init__(placeholder="search ops by name (enter/↓ next, ↑ previous, esc close)", id=id)

    def action_close(self) -> None:
        self.post_message(SearchClosed())

    def action_step(self, forward: bool) -> None:
        self.post_message(SearchStep(forward))
