"""The command palette (ctrl+p): the main actions of the main screen, those available right now."""
from __future__ import annotations

from functools import partial

from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.markup import escape

# (action on the main screen, title); the help text comes from the action's key binding
PALETTE = (
    ("accept", "Bisection: start / accept the computed verdict"),
    ("run_all", "Bisection: run to the end"),
    ("mark('good')", "Bisection: mark the probe good"),
    ("mark('bad')", "Bisection: mark the probe bad"),
    ("undo", "Bisection: undo the last mark"),
    ("reset", "Bisection: start over"),
    ("export", "Export a re-dump config (data_dump.json) for the interval"),
    ("save", "Save the bisection session"),
    ("toggle_view", "View: toggle tree / flat execution-order list"),
    ("only_diverged", "View: only diverged ops (toggle)"),
    ("next_diverged", "Go to the next diverged op"),
    ("previous_diverged", "Go to the previous diverged op"),
    ("search", "Search ops by name"),
    ("compute_statistics", "Compute all statistics (after a cancel)"),
    ("cancel", "Cancel the background work"),
    ("app.help", "Help: every key"),
)


class DumpCommands(Provider):
    def _commands(self):
        from .screens.main import MainScreen
        screen = self.screen
        if not isinstance(screen, MainScreen):
            return
        keys = {b.action: b for b in screen.BINDINGS}
        for action, title in PALETTE:
            name = action.split("(")[0]
            if name.startswith("app."):
                enabled = True
            else:
                enabled = screen.check_action(name, ()) is True
            if not enabled:
                continue
            binding = keys.get(action)
            help_text = None
            if binding is not None:
                help_text = escape(f"{binding.tooltip or binding.description} · key {self.app.get_key_display(binding)}")
            yield title, help_text, partial(self.app.call_later, self.app.run_action, action, screen)

    async def discover(self) -> Hits:
        for title, help_text, callback in self._commands():
            yield DiscoveryHit(title, callback, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for title, help_text, callback in self._commands():
            score = matcher.match(title)
            if score > 0:
                yield Hit(score, matcher.highlight(title), callback, help=help_text)
