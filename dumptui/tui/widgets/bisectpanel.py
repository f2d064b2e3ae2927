"""The bisection panel: the error plot and the interval over the execution order, the probe and the engine's
verdict for it, steps left, the culprit with its proof at convergence, and the history. Renders the lines
present/panel.py decides for its width from `BisectState` snapshots (the Bisection belongs to a worker)."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.reactive import var
from textual.widgets import Static

from dumptui.present.bars import BAR_LEGEND
from dumptui.present.columns import fit_name
from dumptui.present.driver import BisectState
from dumptui.present.panel import Line, panel_lines, plain
from dumptui.present.tree import OpTreeModel
from dumptui.present.types import OpPair, Verdict
from dumptui.present.words import plural
from dumptui.report import fmt
from dumptui.tui.styles import ThemeStyles


class BisectPanel(VerticalScroll):
    HELP_SECTION = "Bisection panel"
    BINDINGS = [
        Binding("up,k", "scroll_up", "Scroll up", id="bisect_panel.up", show=False),
        Binding("down,j", "scroll_down", "Scroll down", id="bisect_panel.down", show=False),
    ]

    def action_first(self) -> None:
        """g (the screen's binding, for every list and pane; home does the same here): the panel's top."""
        self.scroll_home(animate=False)

    def action_last(self) -> None:
        """G: the end of the history."""
        self.scroll_end(animate=False)

    # bound to the main screen's (`data_bind`): the theme's styles, and the op tree's model for the probe's verdict
    theme_styles: var[ThemeStyles] = var(ThemeStyles({}), init=False)
    model: var[OpTreeModel | None] = var(None, init=False)

    def __init__(self, *, id: str | None = None):
        super().__init__(id=id)
        self.state: BisectState | None = None
        self.order: list[OpPair] = []
        self.busy = ""
        self.lines: list[Line] = []

    def watch_theme_styles(self) -> None:
        if self.state is not None:
            self.show(self.state, busy=self.busy)

    def compose(self) -> ComposeResult:
        yield Static(Text("waiting for the dumps…"), id="bisect-status")
        yield Static("", id="bisect-history")

    def on_mount(self) -> None:
        self.border_title = "bisection"
        self.border_subtitle = BAR_LEGEND

    # ------------------------------------------------------------------ rendering
    def show(self, state: BisectState | None, order: list[OpPair] | None = None, busy: str = "") -> None:
        self.state = state
        if order is not None:
            self.order = order
        self.busy = busy
        self.set_class(state is not None and state.finished, "-finished")
        self._draw_status()
        self._draw_history()
        self._draw_title()

    def set_busy(self, busy: str) -> None:
        self.busy = busy
        self._draw_status()
        self._draw_title()

    def _width(self) -> int:
        """The lines' width: a column is kept for the scrollbar, which appears once they overflow."""
        region = self.scrollable_content_region.width or (self.size.width - 4) or 60
        return max(20, region - (0 if self.show_vertical_scrollbar else 1))

    def _draw_title(self) -> None:
        s = self.state
        if s is None or not s.started:
            self.border_title = "bisection" + (f" · {self.busy}" if self.busy else "")
            return
        mode = "graph-aware" if s.mode == "graph" else "execution order"
        if s.finished:
            what = (
                "converged"
                if s.culprit is not None
                else "undecided"
                if s.undecided
                else ("benign" if s.benign else "no divergence")
            )
        else:
            what = f"{plural(len(s.candidates), 'suspect')} · ≤{plural(s.steps_left, 'step')} left"
        self.border_title = f"bisection · {mode} · {what}" + (f" · {self.busy}" if self.busy else "")

    def _draw_status(self) -> None:
        width = self._width()
        order = self.order

        def number_of(pos: int) -> str:
            return f"#{order[pos].index + 1}" if 0 <= pos < len(order) else "?"

        s = self.state
        model = self.model
        probe = s.probe_index if s is not None else None
        probe_verdict = model.verdict(probe) if model is not None and probe is not None else None
        self.lines = panel_lines(s, width, self.busy, number_of, probe_verdict)
        text = Text("\n", no_wrap=True, overflow="crop").join(self._text(line) for line in self.lines)
        self.query_one("#bisect-status", Static).update(text)

    def _text(self, line: Line) -> Text:
        text = Text(no_wrap=True, overflow="crop")
        for chunk, role in line:
            text.append(fmt.clean(chunk), style=self.theme_styles.role(role))
        return text

    def on_resize(self) -> None:
        if self.state is not None:
            self._draw_status()
            self._draw_history()

    def visible_lines(self) -> list[str]:
        """The panel's lines on screen now (without scrolling): what a user sees of it."""
        top = round(self.scroll_y)
        height = self.scrollable_content_region.height
        return [plain(line) for line in self.lines[top : top + height]]

    def _draw_history(self) -> None:
        s = self.state
        st = self.theme_styles
        out = self.query_one("#bisect-history", Static)
        if s is None or not s.history:
            out.update("")
            return
        lines = [Text("history (latest first):", style="bold")]
        name_room = max(24, self._width() // 2 - 16)
        for h in reversed(s.history):
            line = Text(f"{h.number:3d}. #{h.index + 1} ", no_wrap=True, overflow="ellipsis")
            line.append(fit_name(fmt.clean(h.name), name_room))
            line.append(
                f" {h.mark}",
                style=st.verdict(Verdict.DIVERGED if h.mark == "bad" else Verdict.EQUAL if h.mark == "good" else None),
            )
            line.append(f" ({h.source}, {h.candidates_before} suspects) ", style=st.muted)
            line.append(fmt.clean(h.detail), style=st.muted)
            lines.append(line)
        out.update(Text("\n", no_wrap=True, overflow="ellipsis").join(lines))
