"""The op the main screen shows in its centre, and the tensor highlighted there: when each is read and
when the pane says "reading".

The cursor resting on an op shows it: at once when every tensor pair of it is compared already, else after
a short pause (holding `j` does not start a read per line), in the "detail" worker. A highlighted tensor's
worst elements are read in the "tensor" worker; the pane says "reading" only if that is slow. Which op is
current is the presenter's state (`MainView.current`, present/mainview.py). Owned by the main screen.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.timer import Timer

from dumptui.tui import messages as m

if TYPE_CHECKING:
    from dumptui.tui.screens.main import MainScreen

SELECT_DEBOUNCE_SECONDS = 0.06  # holding `j` does not start a read per line
TENSOR_PLACEHOLDER_SECONDS = 0.15


class OpShown:
    def __init__(self, host: MainScreen):
        self.host = host
        self.view = host.view
        self.controller = host.controller
        self._load_timer: Timer | None = None
        self._tensor_timer: Timer | None = None

    def show(self, index: int) -> None:
        host = self.host
        if not self.view.show(index, host.detail.index == index):
            return
        if self._load_timer is not None:
            self._load_timer.stop()
            self._load_timer = None
        if self.controller.all_compared(index):
            # Every tensor pair already compared: nothing to read, shown in one update, right after the
            # cursor's own repaint (the detail's new layout repaints the whole screen: the key is answered
            # first). Should the engine fail here, the worker below repeats the call and reports the error.
            host.workers.cancel_group(host, "detail")
            host.call_after_refresh(self._show_cached, index)
            return
        self._show_pending(index)
        self._load_timer = host.set_timer(SELECT_DEBOUNCE_SECONDS, lambda: host.pair_work.load_op(index))

    def _show_pending(self, index: int) -> None:
        verdict = self.host.model.verdict(index) if self.host.model is not None else None
        self.host.detail.show_pending(self.controller.pairs[index], verdict, self.view.kernel_count)

    def _show_cached(self, index: int) -> None:
        detail = self.host.detail
        if index != self.view.current or detail.index == index and detail.result is not None:
            return  # the cursor moved on (or it is shown already): keys pressed quickly skip the ops between
        try:
            res, rel = self.controller.op_detail(index)
        except Exception:
            self._show_pending(index)
            self.host.pair_work.load_op(index)
            return
        detail.show_result(res, rel, self.view.kernel_count)

    def loaded(self, msg: m.OpLoaded) -> None:
        if msg.index == self.view.current:
            self.host.detail.show_result(msg.result, msg.relations, self.view.kernel_count)
            self.host.feed.refresh_verdicts_of([msg.index])

    def tensor_highlighted(self, label: str) -> None:
        detail = self.host.detail
        result = detail.tensor_result(label)
        if result is None or self.view.current is None:
            return
        # The "reading" placeholder only if the read is slow: a small tensor's detail replaces the previous
        # one in a single repaint.
        if self._tensor_timer is not None:
            self._tensor_timer.stop()
        self._tensor_timer = self.host.set_timer(
            TENSOR_PLACEHOLDER_SECONDS, lambda: detail.show_tensor(label, loading=True)
        )
        self.host.pair_work.load_tensor(self.view.current, label, result)

    def tensor_loaded(self, msg: m.TensorLoaded) -> None:
        if msg.index == self.view.current and msg.label == self.host.detail.highlighted_label:
            if self._tensor_timer is not None:
                self._tensor_timer.stop()
                self._tensor_timer = None
            self.host.detail.show_tensor(msg.label, msg.worst, msg.histogram, msg.problem)
