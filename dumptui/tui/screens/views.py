"""The main screen's keys that move the view rather than the bisection: go to the probe, the culprit or the
next root; zoom the focused pane; copy a name, a path or a value. A mixin of MainScreen (it reads the state
the screen keeps)."""

from __future__ import annotations

from textual.screen import Screen
from textual.widget import Widget

from dumptui.present.controller import PairController
from dumptui.present.copy import CopyChoice, copy_choices
from dumptui.present.driver import BisectState
from dumptui.report import fmt
from dumptui.tui.screens.copy import CopyScreen, copied_words

ZOOM_PANES = ("left", "detail", "bisect")  # the ids of the panes `z` can give the whole screen


class ViewActions(Screen):
    controller: PairController
    bstate: BisectState | None
    current: int | None

    def select_op(self, index: int, focus_list: bool = False) -> None:
        raise NotImplementedError

    # ------------------------------------------------------------------ jumps
    def action_goto_probe(self) -> None:
        if self.bstate is not None and self.bstate.probe_index is not None:
            self.select_op(self.bstate.probe_index, focus_list=True)

    def action_goto_culprit(self) -> None:
        if self.bstate is not None and self.bstate.culprit is not None:
            self.select_op(self.bstate.culprit.index, focus_list=True)

    def action_next_root(self) -> None:
        """The culprit, then the other roots in execution order, wrapping; after the op shown."""
        st = self.bstate
        if st is None or st.culprit is None:
            return
        roots = sorted({st.culprit.index, *(o.index for o in st.others)})
        after = [i for i in roots if self.current is None or i > self.current]
        target = after[0] if after else roots[0]
        self.select_op(target, focus_list=True)
        if len(roots) == 1:
            self.notify("the culprit is the only root of divergence", timeout=4)

    # ------------------------------------------------------------------ zoom
    def zoomed_pane(self) -> str | None:
        return next((p for p in ZOOM_PANES if self.has_class(f"-zoom-{p}")), None)

    def _pane_of(self, widget: Widget | None) -> str:
        while widget is not None:
            if widget.id in ZOOM_PANES:
                return widget.id or "left"
            widget = widget.parent if isinstance(widget.parent, Widget) else None
        return "left"

    def action_zoom(self) -> None:
        """The focused pane gets the whole screen; `z` again gives the others back."""
        current = self.zoomed_pane()
        for p in ZOOM_PANES:
            self.remove_class(f"-zoom-{p}")
        if current is None:
            self.add_class(f"-zoom-{self._pane_of(self.focused)}")

    # ------------------------------------------------------------------ copy
    def copy_choices(self) -> list[CopyChoice]:
        opened = self.controller.session is not None and self.current is not None
        pair = self.controller.pairs[self.current] if opened and self.current is not None else None
        detail = self.query_one("#detail")
        label = getattr(detail, "highlighted_label", None)
        tensor = detail.tensor_result(label) if label is not None else None  # type: ignore[attr-defined]
        return copy_choices(pair, tensor, self.bstate, fmt.g)

    def action_copy(self) -> None:
        choices = self.copy_choices()
        if not choices:
            self.notify("nothing to copy here yet", timeout=4)
            return
        self.app.push_screen(CopyScreen(choices), self._copy)

    def _copy(self, choice: CopyChoice | None) -> None:
        if choice is None:
            return
        self.app.copy_to_clipboard(choice.text)
        self.notify(copied_words(choice), timeout=5, markup=False)
