"""What the main screen's workers post (background.py), applied to its panes and its state: the opening's
progress, the statistics and their verdicts, the bisection's states, the workers' ends and failures.

The decisions (what a bisection state changes, how a failure is worded, which run a count belongs to) are
the presenter's (`MainView`, present/mainview.py); this applies them to the widgets and the screen's
reactives. Owned by the main screen, whose message handlers call it.
"""

from __future__ import annotations

import gc
from typing import TYPE_CHECKING, Any

from textual.worker import Worker, WorkerState

from dumptui.present.autosave import resume_question
from dumptui.present.driver import BisectCommand
from dumptui.present.mainview import after_worker, refilter_needed
from dumptui.present.progress import CANCELLED, DONE, FAILED, RUNNING, WAITING, search_words, task_words
from dumptui.present.types import Verdict
from dumptui.tui import messages as m
from dumptui.tui.screens.error import OpenErrorScreen
from dumptui.tui.screens.resume import ResumeScreen
from dumptui.tui.workers import Abandoned

if TYPE_CHECKING:
    from dumptui.tui.screens.main import MainScreen

ENDED = (WorkerState.SUCCESS, WorkerState.ERROR, WorkerState.CANCELLED)


class WorkFeed:
    """One method per message the workers post (`on_open_progress` for `OpenProgress`...: its handler name)."""

    def __init__(self, host: MainScreen):
        self.host = host
        self.view = host.view
        self.controller = host.controller

    # ------------------------------------------------------------------ opening
    def on_open_progress(self, msg: m.OpenProgress) -> None:
        host = self.host
        self.view.open_stage = msg.text
        host.draw_status()
        if host.model is None:  # the status line is cut at 80 columns: the pane has room for each dump's count
            host.detail.show_no_op("opening the dumps…\n" + "\n".join(msg.text.split(" · ")))

    def on_preview_ready(self, msg: m.PreviewReady) -> None:
        """Names only: browse and expand now; numbers, marks and selection come with the index."""
        if self.host.model is None:
            self.host.preview_model = msg.model
            self.host.ops.show_preview(msg.model)

    def on_session_ready(self, msg: m.SessionReady) -> None:
        # The index is long-lived: out of the cyclic GC's sight, a full collection stops costing a second
        # of frozen UI on a 20,000-op dump (and quitting stops waiting for it).
        gc.freeze()
        host = self.host
        self.view.kernel_count = self.controller.kernel_count()
        model = host.model = msg.model
        self.view.opened_seconds = msg.seconds
        model.set_verdicts(self.controller.one_sided_verdicts())
        host.ops.show_opened(model, host.preview_model)
        host.preview_model = None
        # the dumps are open: "opening the dumps…" would stay while the cursor rests on a folder
        host.detail.show_no_op("no op selected yet: move the cursor to an op (enter opens a folder)")
        host.draw_status()
        for text, timeout in self.view.problem_notices():
            kwargs: dict[str, Any] = {} if timeout is None else {"timeout": timeout}
            host.notify(text, severity="warning", markup=False, **kwargs)
        host.update_available()

    def on_bisection_ready(self, msg: m.BisectionReady) -> None:
        gc.freeze()  # the bisection's graph over the pairs is long-lived too
        self.controller.adopt(msg.driver)
        self.host.panel.show(None, order=msg.driver.bi.order)
        if msg.resume_note:
            self.host.notify(msg.resume_note, severity="warning", timeout=8, markup=False)
        if msg.resume is not None:
            self.run_bisect(BisectCommand.REPLAY, msg.resume)
        elif (offer := msg.offer) is not None:
            self.host.app.push_screen(
                ResumeScreen(resume_question(offer)),
                lambda yes: self.run_bisect(*((BisectCommand.REPLAY, offer) if yes else (BisectCommand.START,))),
            )
        else:
            self.run_bisect(BisectCommand.START)

    # ------------------------------------------------------------------ statistics and verdicts
    def on_statistics_progress(self, msg: m.StatisticsProgress) -> None:
        if not self.view.statistics_progress(msg.run, msg.done, msg.total):
            return  # a run the user cancelled: its last messages must not undo the cancel
        self.host.stats_state = msg.state  # its watcher redraws the status when the state changes...
        self.host.draw_status()  # ...and the numbers change every time
        if msg.state == DONE and self.view.bisection_started:
            # a clean pair's plot: every op compared now, none "not read"
            self.host.pair_work.bisect(BisectCommand.POINTS)

    def on_verdicts_known(self, msg: m.VerdictsKnown) -> None:
        # The results behind these verdicts stay in the session's cache for good: frozen, the cyclic GC never
        # scans them again (a full collection over tens of thousands of results froze the UI).
        gc.freeze()
        self.apply_verdicts(msg.verdicts)

    def apply_verdicts(self, verdicts: dict[int, Verdict | None]) -> None:
        host = self.host
        if host.model is None:
            return
        ops, folders = host.model.set_verdicts(verdicts)
        if not ops:
            return
        host.ops.relabel(ops, folders)
        host.detail.refresh_relations(ops)
        if self.view.probe_among(ops):
            host.panel.show(self.view.bstate, busy=task_words(host.bisect_task))
        if refilter_needed(host.model, host.only_diverged, ops):
            host.navigation.filter_dirty = True

    def refresh_verdicts_of(self, indices: list[int]) -> None:
        """Verdicts the bisection or the detail view just computed (cached lookups, no read)."""
        if self.controller.session is not None:
            self.apply_verdicts(self.controller.verdicts_of(indices))

    def start_statistics_once(self) -> None:
        """The full compare starts once the bisection has its probe: the preconditions and the first probe
        (what the user acts on) get the CPU and the disk first, not a share of them."""
        if self.host.stats_state == WAITING and self.controller.session is not None:
            self.host.stats_state = RUNNING
            self.host.pair_work.compute_statistics(self.view.stats_run)

    def compute_statistics(self) -> None:
        """`c`: the statistics again (a new run: what an older one still sends is ignored)."""
        run = self.view.new_statistics_run()
        self.host.stats_state = RUNNING
        self.host.pair_work.compute_statistics(run)

    def cancel(self) -> None:
        """escape: the statistics cancelled, `a`'s run stopped after its step."""
        host = self.host
        if host.stats_state == RUNNING:
            self.controller.cancel_statistics()
            host.workers.cancel_group(host, "stats")
            self.view.cancel_statistics()
            host.stats_state = CANCELLED
        if host.bisect_task == BisectCommand.RUN:
            self.controller.stop_run.set()

    # ------------------------------------------------------------------ bisection
    def run_all(self) -> None:
        """`a`: the bisection run to the end, a step at a time."""
        self.host.bisect_task = BisectCommand.RUN
        self.host.pair_work.run_bisection()

    def run_bisect(self, task: BisectCommand, *args: Any) -> None:
        self.view.retry("bisect")
        self.host.bisect_task = task
        self.host.pair_work.bisect(task, args)

    def on_search_progress(self, msg: m.SearchProgress) -> None:
        if self.host.bisect_task:  # (a count that arrives after its command ended says nothing)
            self.host.panel.set_busy(search_words(self.host.bisect_task, msg.done, msg.total))

    def on_first_probe(self, msg: m.FirstProbe) -> None:
        """A noisy pair's search judges every op before its first mark: meanwhile its first probe is selected,
        its numbers shown and its mark said pending. The statistics still wait for the search (its scan
        computes most of them: started now, they would compute the same tensor pairs a second time)."""
        probe = msg.state.probe_index
        if not self.view.first_probe(msg.state) or probe is None:
            return  # the search has answered already
        self.host.panel.show(msg.state, busy=self.host.panel.busy)
        self.host.tags = {probe: "probe"}
        if self.view.current is None:  # the user has not moved to an op of their own meanwhile
            self.host.select_op(probe)

    def on_bisection_changed(self, msg: m.BisectionChanged) -> None:
        host, view = self.host, self.view
        shown = view.bisection_changed(msg.state, msg.command, msg.stepping, host.model)
        if shown.rejudged:
            # The search judged verdicts in context (its scan ended): the marks and the op shown from before
            # say what each pair's own numbers said; they are shown again as the search judged them.
            if host.model is not None:
                self.refresh_verdicts_of(list(host.model.verdicts))
            current = view.current
            if current is not None and host.detail.index == current and host.detail.result is not None:
                host.pair_work.load_op(current)  # its rows again, as judged (on_op_loaded shows them)
        host.panel.show(msg.state, busy=task_words(host.bisect_task))
        if shown.plot_only:
            return
        host.tags = shown.tags
        if shown.roots is not None:
            host.roots = shown.roots
        if shown.selections is not None and shown.selections != host.selection_words:
            host.selection_words = shown.selections
        self.refresh_verdicts_of(shown.refresh)
        if shown.target is not None:
            host.select_op(shown.target)
        if msg.note:
            host.notify(msg.note, markup=False, timeout=6)
        self.start_statistics_once()
        host.update_available()

    # ------------------------------------------------------------------ the workers' ends, failures
    def worker_state_changed(self, event: Worker.StateChanged) -> None:
        worker = event.worker
        failed = event.state == WorkerState.ERROR and not isinstance(worker.error, Abandoned)
        if failed and worker.error is not None:
            self.show_failure(worker.group, worker.error)
        others = any(w.group == worker.group and w.is_running for w in self.host.workers if w is not worker)
        idle, stats_failed, start_statistics = after_worker(worker.group, event.state in ENDED, failed, others)
        if idle:
            self.host.bisect_task = None
        if stats_failed:
            self.host.stats_state = FAILED
        if start_statistics:
            self.start_statistics_once()  # no bisection: the statistics still help

    def show_failure(self, work: str, error: BaseException, path: str = "") -> None:
        """What failed, the path and the reason; no traceback. The dumps that cannot be opened end the app
        (exit code 2) after the user has read why."""
        host = self.host
        if work == "open":
            failed_path, reason = self.view.open_failure(error)
            host.draw_status()
            host.app.push_screen(OpenErrorScreen(failed_path, reason, self.view.picked), self._after_open_error)
            return
        line = self.view.fail(work, error, path, host.detail.highlighted_label if work == "tensor" else None)
        host.draw_status()
        host.notify(line, severity="error", timeout=15, markup=False)

    def _after_open_error(self, _result: object) -> None:
        """A unit chosen in the picker that cannot be opened: back to the picker; else the app ends (exit 2)."""
        if self.view.picked:  # once the dialog is gone: this unit's screen too, the picker again
            self.host.app.call_later(self.host.app.back_to_picker)  # type: ignore[attr-defined]  # DumpTuiApp's
        else:
            self.host.app.exit(return_code=2)
