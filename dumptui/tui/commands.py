"""The command palette (ctrl+p): the commands of the action table that have a palette title and are
available right now."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.markup import escape

from dumptui.present import keys
from dumptui.tui.keymap import binding

PaletteCommand = tuple[str, str, Callable[[], object]]  # title, help, what runs it


class DumpCommands(Provider):
    def commands(self) -> list[PaletteCommand]:
        """Title, help (with the key) and callback of every command on offer now; none off the main screen."""
        from dumptui.tui.screens.main import MainScreen

        screen = self.screen
        if not isinstance(screen, MainScreen):
            return []
        out: list[PaletteCommand] = []
        for action in keys.palette(screen.key_context()):
            help_text = escape(action.help)
            if action.keys:
                help_text += f" · key {escape(self.app.get_key_display(binding(action)))}"
            out.append(
                (action.palette, help_text, partial(self.app.call_later, self.app.run_action, action.qualified, screen))
            )
        return out

    async def discover(self) -> Hits:
        for title, help_text, callback in self.commands():
            yield DiscoveryHit(title, callback, text=title, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for title, help_text, callback in self.commands():
            score = matcher.match(title)
            if score > 0:
                yield Hit(score, matcher.highlight(title), callback, text=title, help=help_text)
