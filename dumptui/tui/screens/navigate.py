"""Moving about the main screen's op lists: the jumps to the probe, the culprit, the roots and the next
diverged op (`]` / `[`), the diverged-only filter (`f`), and the `/` search with n / N walking its matches.

Where each goes is the presenter's decision (`MainView`, present/mainview.py); this puts the cursor there
and says so in the lists' pane. Owned by the main screen, whose actions and search-bar handlers call it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dumptui.tui.screens.main import MainScreen


class Navigation:
    def __init__(self, host: MainScreen):
        self.host = host
        self.view = host.view
        self.filter_dirty = False  # new verdicts the diverged-only lists do not show yet

    def goto(self, index: int | None) -> None:
        """`p` / `C`: the probe or the culprit, the list given the keys."""
        if index is not None:
            self.host.select_op(index, focus_list=True)

    def next_root(self) -> None:
        """`r`: the culprit, then the other roots in execution order, wrapping; after the op shown."""
        target, only_root = self.view.next_root()
        self.goto(target)
        if only_root:
            self.host.notify("the culprit is the only root of divergence", timeout=4)

    def goto_diverged(self, forward: bool) -> None:
        host = self.host
        if host.model is None:
            return
        if (index := self.view.next_diverged(host.model, forward)) is None:
            host.notify(self.view.no_diverged_words(host.stats_state), timeout=4)
        else:
            host.select_op(index)

    def only_diverged(self, only: bool) -> None:
        """The filter turned on or off: the lists again; said when no op is known diverged yet."""
        host = self.host
        self.reload_lists()
        if only and host.model is not None and not host.model.diverged:
            host.notify(self.view.no_diverged_words(host.stats_state, filtering=True), timeout=5)

    def reload_lists(self) -> None:
        host = self.host
        self.filter_dirty = False
        if host.model is not None:
            empty = self.view.no_diverged_words(host.stats_state, filtering=True)
            host.ops.reload(host.model, host.only_diverged, self.view.current, empty)

    def refresh_filter(self) -> None:
        """Twice a second: new verdicts of diverged ops reach the diverged-only lists."""
        host = self.host
        if self.filter_dirty and host.only_diverged and host.model is not None:
            self.reload_lists()

    def query(self, text: str, forward: bool, inclusive: bool) -> None:
        """The search box's text changed (or enter / shift+enter in it)."""
        host = self.host
        if host.model is not None:
            host.search_query = text.strip()
            self.search(forward, inclusive, walking=not host.ops.search.has_focus)

    def search(self, forward: bool, inclusive: bool, walking: bool) -> None:
        """The next (or previous) op matching the query, from the op shown; the count under the list."""
        host = self.host
        if host.model is None:
            return
        answer = self.view.search(host.model, host.search_query, host.only_diverged, forward, inclusive)
        host.ops.search.show_matches(answer.shown, answer.scope, walking)
        if answer.index is not None:
            host.select_op(answer.index)
        elif walking and answer.shown is not None:
            host.notify(answer.miss, timeout=4, markup=False)

    def left(self) -> None:
        """enter: the match is shown, the list has the keys, n / N walk the matches."""
        self.host.ops.shown.focus()
        if self.host.search_query:
            self.host.ops.search.show_matches(self.view.search_matches, walking=True)

    def closed(self) -> None:
        self.host.search_query = ""
        self.host.ops.shown.focus()

    def end(self) -> None:
        self.host.ops.search.clear()
        self.host.search_query = ""
