"""The bisection panel: the interval drawn over the execution order, the probe and the engine's verdict for
it, steps left, the culprit with its proof at convergence, and the history. Renders `BisectState`
snapshots only (the Bisection itself belongs to a worker)."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widget import Widget
from textual.widgets import Static

from ...core.align import EXACT, OpPair
from ...present.bars import BAR_LEGEND, interval_bar
from ...present.bisection import BisectState
from ...present.columns import elide_left
from ...report import fmt
from ..styles import ThemeStyles, labelled

MARK_WORD = {"good": "good", "bad": "bad", "skip": "not comparable (space skips it)"}


class IntervalBar(Widget):
    """The interval over the execution order, drawn for the bar's own width at each render."""

    DEFAULT_CSS = "IntervalBar { height: 1; }"

    def __init__(self, *, id: str | None = None):
        super().__init__(id=id)
        self.state: BisectState | None = None
        self.theme_styles = ThemeStyles({})

    def show(self, state: BisectState | None, theme_styles: ThemeStyles) -> None:
        self.state = state
        self.theme_styles = theme_styles
        self.refresh()

    def render(self) -> Text:
        s = self.state
        text = Text(no_wrap=True, overflow="crop")
        if s is None or s.n == 0:
            return text
        for cell in interval_bar(s, self.size.width):
            text.append(cell.char, style=self.theme_styles.bar(cell.kind))
        return text


class BisectPanel(VerticalScroll):
    HELP_SECTION = "Bisection panel"
    BINDINGS = [
        Binding("up,k", "scroll_up", "Scroll up", id="bisect_panel.up", show=False),
        Binding("down,j", "scroll_down", "Scroll down", id="bisect_panel.down", show=False),
    ]

    def __init__(self, *, id: str | None = None):
        super().__init__(id=id)
        self.theme_styles = ThemeStyles({})
        self.state: BisectState | None = None
        self.order: list[OpPair] = []
        self.busy = ""
        self.verdict_of = lambda i: None

    def compose(self) -> ComposeResult:
        yield IntervalBar(id="bar")
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
        self._draw_bar()
        self._draw_status()
        self._draw_history()
        self._draw_title()

    def set_busy(self, busy: str) -> None:
        self.busy = busy
        self._draw_status()
        self._draw_title()

    def _width(self) -> int:
        return max(10, self.scrollable_content_region.width or (self.size.width - 2) or 60)

    def _op(self, pos: int | None) -> str:
        if pos is None or not 0 <= pos < len(self.order):
            return "?"
        return f"#{self.order[pos].index + 1}"

    def _draw_title(self) -> None:
        s = self.state
        if s is None or not s.started:
            self.border_title = "bisection" + (f" · {self.busy}" if self.busy else "")
            return
        mode = "graph-aware" if s.mode == "graph" else "execution order"
        if s.finished:
            what = "converged" if s.culprit is not None else "undecided" if s.undecided else "no divergence"
        else:
            what = f"{len(s.candidates)} suspects · ≤{s.steps_left} steps left"
        self.border_title = f"bisection · {mode} · {what}" + (f" · {self.busy}" if self.busy else "")

    def _draw_bar(self) -> None:
        self.query_one(IntervalBar).show(self.state, self.theme_styles)

    def _draw_status(self) -> None:
        st = self.theme_styles
        s = self.state
        width = self._width()
        lines: list[Text] = []
        if s is None:
            lines.append(Text(self.busy or "waiting for the dumps…", style=st.muted))
        elif not s.started:
            lines.append(Text(self.busy or "press space to start the bisection", style=st.muted))
        elif s.finished and s.culprit is not None:
            c = s.culprit
            head = Text.assemble(
                ("CULPRIT ", st.error),
                f"#{c.index + 1} ",
                (elide_left(fmt.clean(c.label), width - 20), "bold"),
                f" ({fmt.clean(c.op_type)})",
            )
            lines.append(head)
            if c.proof:
                lines.append(labelled("proof: ", "bold", c.proof))
            why = labelled("why: ", "bold", c.why)
            if c.how != EXACT:
                why.append(f"  (paired by {fmt.clean(c.how)})", style=st.muted)
            lines.append(why)
            for kind, text in c.hints:
                lines.append(labelled(f"hint ({fmt.clean(kind)}): ", st.variable("warning", True), text))
            for cav in c.caveats:
                lines.append(labelled("caveat: ", st.variable("warning", True), cav))
            if s.others:
                lines.append(Text("other roots of divergence:", style="bold"))
                for o in s.others:
                    lines.append(
                        Text(f"  #{o.index + 1} {fmt.clean(o.label)} ({fmt.clean(o.op_type)}): {fmt.clean(o.why)}")
                    )
            else:
                lines.append(Text("other roots of divergence: none found", style=st.muted))
        elif s.finished and s.undecided:
            lines.append(Text("Undecided: damage hides the answer", style=st.error))
            for why in s.undecided:
                lines.append(labelled("  - ", "bold", why))
        elif s.finished:
            lines.append(
                labelled(
                    "No divergence: ",
                    st.variable("success", True),
                    "the outputs agree within tolerance"
                    + (" and the weights and inputs agree" if s.checks and not s.check_problems else ""),
                )
            )
        else:
            if s.probe is not None:
                probe = Text.assemble(("probe ", "bold"), f"{self._op(s.probe)} ")
                probe.append_text(st.mark(self.verdict_of(s.probe_index)))
                probe.append(" " + elide_left(fmt.clean(s.probe_name), width - 16))
                lines.append(probe)
                computed = Text.assemble(("computed: ", "bold"))
                mark = s.probe_mark or "?"
                computed.append(
                    MARK_WORD.get(mark, mark),
                    style=st.verdict("diverged" if mark == "bad" else "equal" if mark == "good" else None),
                )
                computed.append(" - " + fmt.clean(s.probe_detail))
                lines.append(computed)
                lines.append(Text("space accepts · g good · b bad · a runs to the end · u undo", style=st.muted))
            interval = s.interval
            if interval is not None:
                lines.append(
                    Text(
                        f"{len(s.candidates)} suspects {self._op(interval[0])}..{self._op(interval[1])},"
                        f" at most {s.steps_left} steps left"
                    )
                )
        if s is not None and s.checks:
            lines.append(labelled("preconditions: ", "bold", s.checks))
            for p in s.check_problems:
                lines.append(Text("  " + fmt.clean(p), style=st.variable("warning", False)))
        if s is not None:
            for n in s.notes:
                lines.append(labelled("note: ", "bold", n))
        self.query_one("#bisect-status", Static).update(Text("\n").join(lines))

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
            line.append(elide_left(fmt.clean(h.name), name_room))
            line.append(
                f" {h.mark}", style=st.verdict("diverged" if h.mark == "bad" else "equal" if h.mark == "good" else None)
            )
            line.append(f" ({h.source}, {h.candidates_before} suspects) ", style=st.muted)
            line.append(fmt.clean(h.detail), style=st.muted)
            lines.append(line)
        out.update(Text("\n", no_wrap=True, overflow="ellipsis").join(lines))
