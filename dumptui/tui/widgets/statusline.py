"""The status line over the panes: the lines present/status.py decides from the screen's facts, styled."""

from __future__ import annotations

from rich.text import Text
from textual.reactive import var
from textual.widgets import Static

from dumptui.present.status import StatusFacts, status_line
from dumptui.tui.styles import ThemeStyles


class StatusLine(Static):
    # bound to the main screen's (`data_bind`)
    facts: var[StatusFacts] = var(StatusFacts(), init=False)
    theme_styles: var[ThemeStyles] = var(ThemeStyles({}), init=False)

    def watch_facts(self) -> None:
        self._draw()

    def watch_theme_styles(self) -> None:
        self._draw()

    def on_resize(self) -> None:
        self._draw()

    def _draw(self) -> None:
        line = Text(no_wrap=True, overflow="crop")
        for chunk, role in status_line(
            self.facts, self.size.width or (self.app.size.width if self.is_attached else 80)
        ):
            line.append(chunk, style=self.theme_styles.role(role))
        # one line, fixed size: no layout pass (this runs twice a second, and layouts cost keys their latency)
        self.update(line, layout=False)
