"""The main screen: op tree (or flat list) on the left, the selected op in the centre, the bisection below.

It paints before anything is indexed: everything that reads the dumps runs in the thread workers of
`PairWork` (background.py); this class handles what they post, the keys, and what is on screen. The panes are
widgets bound to its reactives (`data_bind` in `compose`): they redraw when the screen's state changes; the
exports are an `Exports` object (exports.py).

Which commands exist and when each is available is the action table's business (dumptui/present/keys.py);
this screen keeps the state that table reads as reactive variables, so a change of state refreshes the
footer, and shows every failure in one place (`show_failure`).

Longer than the usual 400 lines because it is the one place the screen's state is kept and changed.
"""

from __future__ import annotations

import gc
import time
from typing import Any

from textual import events, on
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.reactive import var
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import DataTable
from textual.worker import Worker, WorkerState

from dumptui.options import pair as pairing
from dumptui.present.autosave import resume_question
from dumptui.present.controller import PairController
from dumptui.present.copy import CopyChoice, copy_choices
from dumptui.present.driver import BisectCommand, BisectState
from dumptui.present.failures import describe, failure_line
from dumptui.present.keys import SCREEN, KeyContext, action_named, available_now, waiting_for
from dumptui.present.keys import state as key_state
from dumptui.present.paths import shown_pair
from dumptui.present.picker import opened_unit
from dumptui.present.progress import (
    CANCELLED,
    DONE,
    FAILED,
    RUNNING,
    WAITING,
    no_diverged_yet,
    search_words,
    task_words,
)
from dumptui.present.search import count_matches, find_op, next_diverged, next_root
from dumptui.present.status import StatusFacts
from dumptui.present.tree import OpTreeModel, is_bad
from dumptui.present.types import Verdict
from dumptui.report import fmt
from dumptui.tui import keymap
from dumptui.tui.messages import (
    BisectionChanged,
    BisectionReady,
    FirstProbe,
    OpenProgress,
    OpLoaded,
    OpMessage,
    PreviewReady,
    SearchProgress,
    SessionReady,
    StatisticsProgress,
    TensorLoaded,
    VerdictsKnown,
)
from dumptui.tui.screens import views
from dumptui.tui.screens.background import PairWork
from dumptui.tui.screens.copy import CopyScreen, copied_words
from dumptui.tui.screens.error import OpenErrorScreen
from dumptui.tui.screens.exports import Exports
from dumptui.tui.screens.resume import ResumeScreen
from dumptui.tui.styles import ThemeStyles
from dumptui.tui.widgets.bisectpanel import BisectPanel
from dumptui.tui.widgets.flatlist import FlatOpList
from dumptui.tui.widgets.footer import KeysFooter
from dumptui.tui.widgets.opdetail import OpDetail, RelationList, TensorTable
from dumptui.tui.widgets.opspane import OpsPane
from dumptui.tui.widgets.optree import OpTree
from dumptui.tui.widgets.searchbar import SearchBar
from dumptui.tui.widgets.statusline import StatusLine
from dumptui.tui.workers import Abandoned

SELECT_DEBOUNCE_SECONDS = 0.06  # holding `j` does not start a read per line
TENSOR_PLACEHOLDER_SECONDS = 0.15


class MainScreen(Screen[None]):
    VERTICAL_BREAKPOINTS = [(0, "-tiny"), (22, "-short"), (36, "-tall")]
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (120, "-wide")]

    BINDINGS = keymap.bindings(SCREEN)

    # Worker processes for the statistics and the scan (None: one per CPU), `WORKER_NICE` below the UI's
    # priority, so keys are answered first even when every core is busy (tests and benches set fewer).
    STATISTICS_WORKERS: int | None = None
    WORKER_NICE = 10

    # The state the action table and the lists read; each watcher redraws what depends on it. `var`: the
    # screen itself does not repaint on a change, only the widgets the watcher touches.
    flat_mode = var(False, init=False)  # the flat execution-order list is shown, not the tree
    only_diverged = var(False, init=False)  # both lists show the diverged ops only
    bisect_task: var[BisectCommand | None] = var(None, init=False)  # the bisection worker's command; None idle
    stats_state = var(WAITING, init=False)  # the full compare: waiting | running | done | cancelled | failed
    stats_run = 0  # the current run of the statistics (each cancel or new run counts one)
    available: var[frozenset[str]] = var(frozenset(), init=False)  # ids of the commands available now
    # What the widgets draw with, bound to theirs in `compose` (`data_bind`): a change here redraws them.
    theme_styles: var[ThemeStyles] = var(ThemeStyles({}), init=False)  # the theme's colours as rich styles
    model: var[OpTreeModel | None] = var(None, init=False)  # the aligned pairs and their verdicts, once open
    tags: var[dict[int, str]] = var(dict, init=False)  # ops tagged culprit / root / probe in the op lists
    roots: var[frozenset[int]] = var(frozenset(), init=False)  # the bisection's roots (their hints say so)
    selection_words: var[dict[int, str]] = var(dict, init=False)  # selection ops judged by their own inputs, in words
    status: var[StatusFacts] = var(StatusFacts(), init=False)  # what the status line says
    search_query = var("", init=False)  # the `/` search's query: n / N walk its matches while it is set

    def __init__(self, options: pairing.PairOptions, session_file: str | None = None, picked: bool = False):
        super().__init__()
        self.options = options
        self.picked = picked  # opened from the picker of ranks and steps (`U` goes back to it)
        # the engine's state for the pair and the work on it (present/controller.py): the workers call it
        self.controller = PairController(options, session_file, self.STATISTICS_WORKERS, self.WORKER_NICE)
        self.pair_work = PairWork(self, self.controller)  # the workers that call it off the UI thread
        self.exports = Exports(self, self.controller)  # S, e, R, x: files written or downloaded
        self.preview_model: OpTreeModel | None = None  # names only, while the dumps are indexed
        self.bstate: BisectState | None = None
        self.stats_done = 0
        self.stats_total = 0
        self.stats_failure = ""
        self.open_stage = "indexing the dumps (file names only)"
        self.open_started = time.monotonic()
        self.opened_seconds: float | None = None
        self.current: int | None = None
        self.search_matches = 0
        self.kernel_count = 0
        self._load_timer: Timer | None = None
        self._tensor_timer: Timer | None = None
        self._filter_dirty = False
        self.failure: tuple[str, str] | None = None  # (work, what failed: path and reason), until it is retried

    # ------------------------------------------------------------------ layout
    def compose(self) -> ComposeResult:
        yield StatusLine(id="status").data_bind(MainScreen.theme_styles, facts=MainScreen.status)
        with Horizontal(id="body"):
            yield OpsPane(id="left").data_bind(MainScreen.theme_styles, MainScreen.tags)
            yield OpDetail(id="detail").data_bind(
                MainScreen.theme_styles, MainScreen.model, MainScreen.roots, MainScreen.selection_words
            )
        yield BisectPanel(id="bisect").data_bind(MainScreen.theme_styles, MainScreen.model)
        yield KeysFooter()

    @property
    def ops(self) -> OpsPane:
        return self.query_one(OpsPane)

    @property
    def op_tree(self) -> OpTree:
        return self.ops.op_tree

    @property
    def tree_model(self) -> OpTreeModel:
        """The op tree's model; the views that use it exist only once the dumps are open."""
        assert self.model is not None
        return self.model

    @property
    def flat(self) -> FlatOpList:
        return self.ops.flat

    @property
    def detail(self) -> OpDetail:
        return self.query_one(OpDetail)

    @property
    def panel(self) -> BisectPanel:
        return self.query_one(BisectPanel)

    @property
    def op_list(self) -> OpTree | FlatOpList:
        """The list on show: the tree or the flat list."""
        return self.ops.shown

    def on_unmount(self) -> None:
        self.controller.close()

    def on_mount(self) -> None:
        self.detail.border_title = "op"
        self._apply_theme()
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self._apply_theme())
        self.set_interval(0.5, self._draw_status)
        self.set_interval(0.5, self._refresh_filter)
        self.op_tree.focus()
        self._draw_status()
        self.pair_work.open_dumps()

    def _apply_theme(self) -> None:
        self.theme_styles = ThemeStyles(self.app.get_css_variables())  # the widgets bound to it redraw

    # ------------------------------------------------------------------ which commands make sense now
    def key_context(self) -> KeyContext:
        return KeyContext(
            indexed=self.model is not None,
            bisection_ready=self.controller.driver is not None,
            bisect_task=self.bisect_task,
            bisection=self.bstate,
            statistics=self.stats_state,
            searching=bool(self.search_query),
            picked=self.picked,
        )

    def on_key(self, event: events.Key) -> None:
        """A bisection key pressed before the bisection can take it is answered, never dropped unsaid."""
        if waiting_for(event.key, self.key_context()) is not None:
            event.stop()
            self.notify(f"not ready: {self.panel.busy or task_words(self.bisect_task) or self.open_stage}", timeout=3)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        entry = action_named(action, SCREEN)
        if entry is None:
            return True
        return key_state(entry, self.key_context())

    def _update_available(self) -> None:
        """After any change of the state the action table reads (the footer follows through `available`)."""
        self.available = available_now(self.key_context())

    def watch_available(self) -> None:
        # Only when a command's availability changed: each refresh recomposes the footer (tens of
        # milliseconds a time, felt as lag while workers post their progress).
        self.refresh_bindings()

    def watch_bisect_task(self, task: BisectCommand | None) -> None:
        self.panel.set_busy(task_words(task))
        self._update_available()

    def watch_stats_state(self) -> None:
        self._draw_status()
        self._update_available()

    # ------------------------------------------------------------------ status line
    def _draw_status(self) -> None:
        """The status line's facts now (its widget redraws when they change; twice a second while opening,
        for the seconds counted)."""
        ref, target = (fmt.clean(p) for p in shown_pair(self.options.ref, self.options.target))
        failure_work, failure = self.failure if self.failure is not None else ("", "")
        self.status = StatusFacts(
            ref=ref,
            target=target,
            opened=self.controller.session is not None,
            stage=self.open_stage,
            opening_seconds=0.0 if self.controller.session is not None else time.monotonic() - self.open_started,
            preparing_bisection=self.controller.driver is None and not self.bisect_task,
            stats_state=self.stats_state,
            stats_done=self.stats_done,
            stats_total=self.stats_total,
            stats_failure=fmt.clean(self.stats_failure),
            diverged=self.model.diverged if self.model is not None else 0,
            failure_work=failure_work,
            failure=failure,
            unit=opened_unit(self.options) if self.picked else "",
        )

    # ------------------------------------------------------------------ opening

    def on_open_progress(self, msg: OpenProgress) -> None:
        self.open_stage = msg.text
        self._draw_status()
        if self.model is None:  # the status line is cut at 80 columns: the pane has room for each dump's count
            self.detail.show_no_op("opening the dumps…\n" + "\n".join(msg.text.split(" · ")))

    def on_preview_ready(self, msg: PreviewReady) -> None:
        """Names only: browse and expand now; numbers, marks and selection come with the index."""
        if self.model is None:
            self.preview_model = msg.model
            self.ops.show_preview(msg.model)

    def on_session_ready(self, msg: SessionReady) -> None:
        # The index is long-lived: out of the cyclic GC's sight, a full collection stops costing a second
        # of frozen UI on a 20,000-op dump (and quitting stops waiting for it).
        gc.freeze()
        self.kernel_count = self.controller.kernel_count()
        model = self.model = msg.model
        self.opened_seconds = msg.seconds
        model.set_verdicts(self.controller.one_sided_verdicts())
        self.ops.show_opened(model, self.preview_model)
        self.preview_model = None
        # the dumps are open: "opening the dumps…" would stay while the cursor rests on a folder
        self.detail.show_no_op("no op selected yet: move the cursor to an op (enter opens a folder)")
        self._draw_status()
        self._report_problems()
        self._update_available()

    def _report_problems(self) -> None:
        unreadable, warnings = self.controller.open_problems()
        for side, errors in unreadable:
            if errors:
                shown = "; ".join(f"{fmt.clean(path)}: {fmt.clean(reason)}" for path, reason in errors[:3])
                more = f" (and {len(errors) - 3} more)" if len(errors) > 3 else ""
                self.notify(
                    f"{side}: {len(errors)} unreadable: {shown}{more}", severity="warning", timeout=10, markup=False
                )
        for w in warnings:
            self.notify(fmt.clean(w), severity="warning", markup=False)

    def on_bisection_ready(self, msg: BisectionReady) -> None:
        gc.freeze()  # the bisection's graph over the pairs is long-lived too
        self.controller.adopt(msg.driver)
        self.panel.show(None, order=msg.driver.bi.order)
        if msg.resume_note:
            self.notify(msg.resume_note, severity="warning", timeout=8, markup=False)
        if msg.resume is not None:
            self._run_bisect(BisectCommand.REPLAY, msg.resume)
        elif msg.offer is not None:
            offer = msg.offer
            self.app.push_screen(
                ResumeScreen(resume_question(offer)),
                lambda yes: (
                    self._run_bisect(BisectCommand.REPLAY, offer) if yes else self._run_bisect(BisectCommand.START)
                ),
            )
        else:
            self._run_bisect(BisectCommand.START)

    # ------------------------------------------------------------------ statistics

    def on_statistics_progress(self, msg: StatisticsProgress) -> None:
        if msg.run != self.stats_run:
            return  # a run the user cancelled: its last messages must not undo the cancel
        self.stats_done, self.stats_total = msg.done, msg.total
        self.stats_state = msg.state  # its watcher redraws the status when the state changes...
        self._draw_status()  # ...and the numbers change every time
        if msg.state == DONE and self.controller.driver is not None and self.bstate is not None:
            self.pair_work.bisect(BisectCommand.POINTS)  # a clean pair's plot: every op compared now, none "not read"

    def on_verdicts_known(self, msg: VerdictsKnown) -> None:
        # The results behind these verdicts stay in the session's cache for good: frozen, the cyclic GC never
        # scans them again (a full collection over tens of thousands of results froze the UI).
        gc.freeze()
        self._apply_verdicts(msg.verdicts)

    def _apply_verdicts(self, verdicts: dict[int, Verdict | None]) -> None:
        if self.model is None:
            return
        ops, folders = self.model.set_verdicts(verdicts)
        if not ops:
            return
        self.ops.relabel(ops, folders)
        self.detail.refresh_relations(ops)
        if self.bstate is not None and self.bstate.probe_index in ops:
            self.panel.show(self.bstate, busy=task_words(self.bisect_task))
        if self.only_diverged and any(is_bad(self.model.verdict(i)) for i in ops):
            self._filter_dirty = True

    def _rejudged(self) -> None:
        """The search judged verdicts in context (its scan ended): the marks and the op shown from before say
        what each pair's own numbers said; they are shown again as the search judged them."""
        if self.model is not None:
            self._refresh_verdicts_of(list(self.model.verdicts))
        if self.current is not None and self.detail.index == self.current and self.detail.result is not None:
            self.pair_work.load_op(self.current)  # its rows again, as judged (on_op_loaded shows them)

    def _refresh_verdicts_of(self, indices: list[int | None]) -> None:
        """Verdicts the bisection or the detail view just computed (cached lookups, no read)."""
        if self.controller.session is None:
            return
        self._apply_verdicts(self.controller.verdicts_of(i for i in indices if i is not None))

    def _start_statistics_once(self) -> None:
        """The full compare starts once the bisection has its probe: the preconditions and the first probe
        (what the user acts on) get the CPU and the disk first, not a share of them."""
        if self.stats_state == WAITING and self.controller.session is not None:
            self.stats_state = RUNNING
            self.pair_work.compute_statistics(self.stats_run)

    # ------------------------------------------------------------------ bisection
    def _run_bisect(self, task: BisectCommand, *args: Any) -> None:
        self.retry_work("bisect")
        self.bisect_task = task
        self.pair_work.bisect(task, args)

    def on_search_progress(self, msg: SearchProgress) -> None:
        if self.bisect_task:  # (a count that arrives after its command ended says nothing)
            self.panel.set_busy(search_words(self.bisect_task, msg.done, msg.total))

    def on_first_probe(self, msg: FirstProbe) -> None:
        """A noisy pair's search judges every op before its first mark: meanwhile its first probe is selected,
        its numbers shown and its mark said pending. The statistics still wait for the search (its scan
        computes most of them: started now, they would compute the same tensor pairs a second time)."""
        state = msg.state
        if (self.bstate is not None and self.bstate.started) or state.probe_index is None:
            return  # the search has answered already
        self.bstate = state
        self.panel.show(state, busy=self.panel.busy)
        self.tags = {state.probe_index: "probe"}
        if self.current is None:  # the user has not moved to an op of their own meanwhile
            self.select_op(state.probe_index)

    def on_bisection_changed(self, msg: BisectionChanged) -> None:
        state = msg.state
        rejudged = self.bstate is None or self.bstate.judged != state.judged
        self.bstate = state
        if rejudged:
            self._rejudged()
        self.panel.show(state, busy=task_words(self.bisect_task))
        if msg.command is BisectCommand.POINTS:
            return  # the plot's numbers only: the cursor stays where the user left it
        tags: dict[int, str] = {}
        if state.culprit is not None:
            tags[state.culprit.index] = "culprit"
            for o in state.others:
                tags.setdefault(o.index, "root")
        elif state.probe_index is not None:
            tags[state.probe_index] = "probe"
        self.tags = tags
        if not msg.stepping:
            self.roots = frozenset(i for i, tag in tags.items() if tag in ("culprit", "root"))
            if dict(state.selections) != self.selection_words:
                self.selection_words = dict(state.selections)
        self._refresh_verdicts_of(
            [h.index for h in state.history] + [state.probe_index] + ([state.culprit.index] if state.culprit else [])
        )
        if not msg.stepping:
            target = state.culprit.index if state.culprit is not None else state.probe_index
            if target is None and self.current is None and self.model is not None and self.model.pairs:
                target = 0  # no divergence: the first op, rather than a pane still saying "opening"
            if target is not None:
                self.select_op(target)
        if msg.note:
            self.notify(msg.note, markup=False, timeout=6)
        self._start_statistics_once()
        self._update_available()

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        worker = event.worker
        failed = event.state == WorkerState.ERROR and not isinstance(worker.error, Abandoned)
        if failed and worker.error is not None:
            self.show_failure(worker.group, worker.error)
        if worker.group == "bisect" and event.state in (WorkerState.SUCCESS, WorkerState.ERROR, WorkerState.CANCELLED):
            if not any(w.group == "bisect" and w.is_running for w in self.workers if w is not worker):
                self.bisect_task = None
        if worker.group == "stats" and failed:
            self.stats_state = FAILED
        if worker.group in ("open", "bisect") and failed:
            self._start_statistics_once()  # no bisection: the statistics still help

    def show_failure(self, work: str, error: BaseException, path: str = "") -> None:
        """The one place a failure reaches the user: what failed, the path and the reason; no traceback.
        The dumps that cannot be opened end the app (exit code 2) after the user has read why."""
        if work == "open":
            failure = describe(error, f"{self.options.ref} / {self.options.target}")
            self.open_stage = "cannot open the dumps"
            self._draw_status()
            self.app.push_screen(OpenErrorScreen(failure.path, failure.reason, self.picked), self._after_open_error)
            return
        failure = describe(error, path or self._failure_subject(work))
        if work == "stats":
            self.stats_failure = str(failure)  # the status line keeps it: an error state, not a toast only
        self.failure = (work, fmt.clean(failure_line(work, failure)))
        self._draw_status()
        self.notify(self.failure[1], severity="error", timeout=15, markup=False)

    def _after_open_error(self, _result: object) -> None:
        """A unit chosen in the picker that cannot be opened: back to the picker; else the app ends (exit 2)."""
        if self.picked:  # once the dialog is gone: this unit's screen too, the picker again
            self.app.call_later(self.app.back_to_picker)  # type: ignore[attr-defined]  # DumpTuiApp's
        else:
            self.app.exit(return_code=2)

    def retry_work(self, work: str) -> None:
        """Work that failed is started again: its failure is no longer the state."""
        if self.failure is not None and self.failure[0] == work:
            self.failure = None

    def _failure_subject(self, work: str) -> str:
        """What a failed worker was working on, when its error names no file: the op (and tensor) shown."""
        if work in ("detail", "tensor") and self.controller.session is not None and self.current is not None:
            op = self.controller.pairs[self.current].label
            label = self.detail.highlighted_label if work == "tensor" else None
            return f"{op} {label}" if label else op
        return ""

    # ------------------------------------------------------------------ the selected op
    def select_op(self, index: int, focus_list: bool = False) -> None:
        """Put the list cursor on an op (expanding its folders) and show it in the centre."""
        self.ops.select(index)
        self._show_op(index)
        if focus_list:
            self.op_list.focus()

    def _show_op(self, index: int) -> None:
        if self.controller.session is None or (index == self.current and self.detail.index == index):
            return
        self.current = index
        self.retry_work("detail")
        self.retry_work("tensor")
        pair = self.controller.pairs[index]
        if self._load_timer is not None:
            self._load_timer.stop()
            self._load_timer = None
        if self.controller.all_compared(index):
            # Every tensor pair already compared: nothing to read, shown in one update, right after the
            # cursor's own repaint (the detail's new layout repaints the whole screen: the key is answered
            # first). Should the engine fail here, the worker below repeats the call and reports the error.
            self.workers.cancel_group(self, "detail")
            self.call_after_refresh(self._show_cached, index)
            return
        self.detail.show_pending(pair, self.tree_model.verdict(index), self.kernel_count)
        self._load_timer = self.set_timer(SELECT_DEBOUNCE_SECONDS, lambda: self.pair_work.load_op(index))

    def _show_cached(self, index: int) -> None:
        if index != self.current or self.detail.index == index and self.detail.result is not None:
            return  # the cursor moved on (or it is shown already): keys pressed quickly skip the ops between
        try:
            res, rel = self.controller.op_detail(index)
        except Exception:
            self.detail.show_pending(self.controller.pairs[index], self.tree_model.verdict(index), self.kernel_count)
            self.pair_work.load_op(index)
            return
        self.detail.show_result(res, rel, self.kernel_count)

    def on_op_loaded(self, msg: OpLoaded) -> None:
        if msg.index != self.current:
            return
        self.detail.show_result(msg.result, msg.relations, self.kernel_count)
        self._refresh_verdicts_of([msg.index])

    @on(OpTree.OpHighlighted)
    @on(FlatOpList.OpHighlighted)
    def op_highlighted(self, msg: OpMessage) -> None:
        self._show_op(msg.index)

    @on(OpTree.OpActivated)
    @on(FlatOpList.OpActivated)
    def op_activated(self, msg: OpMessage) -> None:
        self._show_op(msg.index)
        self.query_one(TensorTable).focus()

    @on(DataTable.RowHighlighted, "#tensors")
    def tensor_highlighted(self, event: DataTable.RowHighlighted) -> None:
        label = str(event.row_key.value)
        result = self.detail.tensor_result(label)
        if result is None or self.current is None:
            return
        # The "reading" placeholder only if the read is slow: a small tensor's detail replaces the previous
        # one in a single repaint.
        if self._tensor_timer is not None:
            self._tensor_timer.stop()
        self._tensor_timer = self.set_timer(
            TENSOR_PLACEHOLDER_SECONDS, lambda: self.detail.show_tensor(label, loading=True)
        )
        self.pair_work.load_tensor(self.current, label, result)

    def on_tensor_loaded(self, msg: TensorLoaded) -> None:
        if msg.index == self.current and msg.label == self.detail.highlighted_label:
            if self._tensor_timer is not None:
                self._tensor_timer.stop()
                self._tensor_timer = None
            self.detail.show_tensor(msg.label, msg.worst, msg.histogram, msg.problem)

    def on_relation_list_chosen(self, msg: RelationList.Chosen) -> None:
        self.select_op(msg.index, focus_list=True)

    # ------------------------------------------------------------------ actions: bisection
    def action_accept(self) -> None:
        self._run_bisect(BisectCommand.ACCEPT)

    def action_mark(self, mark: str) -> None:
        self._run_bisect(BisectCommand.OVERRULE, mark)

    def action_undo(self) -> None:
        self._run_bisect(BisectCommand.UNDO)

    def action_reset(self) -> None:
        self._run_bisect(BisectCommand.RESET)

    def action_run_all(self) -> None:
        self.bisect_task = BisectCommand.RUN
        self.pair_work.run_bisection()

    def action_cancel(self) -> None:
        if self.stats_state == RUNNING:
            self.workers.cancel_group(self, "stats")
            self.stats_run += 1  # what the cancelled run still sends is not this screen's state any more
            self.stats_state = CANCELLED
        if self.bisect_task == BisectCommand.RUN:
            self.controller.stop_run.set()

    def action_compute_statistics(self) -> None:
        self.retry_work("stats")
        self.stats_failure = ""
        self.stats_state = RUNNING
        self.stats_run += 1
        self.pair_work.compute_statistics(self.stats_run)

    # ------------------------------------------------------------------ actions: jumps, zoom, copy
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
        roots = [st.culprit.index, *(o.index for o in st.others)]
        target = next_root(roots, self.current)
        if target is not None:
            self.select_op(target, focus_list=True)
        if len(set(roots)) == 1:
            self.notify("the culprit is the only root of divergence", timeout=4)

    def zoomed_pane(self) -> str | None:
        return views.zoomed_pane(self)

    def action_zoom(self) -> None:
        views.toggle_zoom(self)

    def copy_choices(self) -> list[CopyChoice]:
        pair = (
            self.controller.pairs[self.current]
            if self.controller.session is not None and self.current is not None
            else None
        )
        label = self.detail.highlighted_label
        tensor = self.detail.tensor_result(label) if label is not None else None
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

    # ------------------------------------------------------------------ actions: exports (exports.py)
    def action_save(self) -> None:
        self.exports.save()

    def action_export(self) -> None:
        self.exports.redump(self.bstate)

    def action_export_remedy(self) -> None:
        self.exports.remedy()

    def action_export_csv(self) -> None:
        self.exports.csv()

    def action_export_report(self) -> None:
        self.exports.report()

    def action_pick_unit(self) -> None:
        self.app.back_to_picker()  # type: ignore[attr-defined]  # DumpTuiApp's

    # ------------------------------------------------------------------ actions: navigation and views
    def _rows(self) -> list[int]:
        return self.tree_model.rows(self.only_diverged)

    def action_next_diverged(self) -> None:
        self._goto_diverged(True)

    def action_previous_diverged(self) -> None:
        self._goto_diverged(False)

    def _goto_diverged(self, forward: bool) -> None:
        index = next_diverged(self.tree_model.rows(), self.tree_model.verdict, self.current, forward)
        if index is None:
            self.notify(no_diverged_yet(self.stats_state, self.stats_done, self.stats_total), timeout=4)
            return
        self.select_op(index)

    def action_only_diverged(self) -> None:
        self.only_diverged = not self.only_diverged

    def watch_only_diverged(self, only: bool) -> None:
        self._reload_lists()
        if only and not self.tree_model.diverged:
            self.notify(no_diverged_yet(self.stats_state, self.stats_done, self.stats_total, filtering=True), timeout=5)

    def _reload_lists(self) -> None:
        self._filter_dirty = False
        empty = no_diverged_yet(self.stats_state, self.stats_done, self.stats_total, filtering=True)
        self.ops.reload(self.tree_model, self.only_diverged, self.current, empty)

    def _refresh_filter(self) -> None:
        if self._filter_dirty and self.only_diverged and self.model is not None:
            self._reload_lists()

    def action_toggle_view(self) -> None:
        self.flat_mode = not self.flat_mode

    def watch_flat_mode(self, flat: bool) -> None:
        self.ops.show_list(flat, self.current)

    def action_search(self) -> None:
        self.ops.search.open(counted=self.ops)

    def on_search_bar_query(self, msg: SearchBar.Query) -> None:
        if self.model is None:
            return
        self.search_query = msg.text.strip()
        self._search(msg.forward, msg.inclusive, walking=not self.ops.search.has_focus)

    def _search(self, forward: bool, inclusive: bool, walking: bool) -> None:
        """The next (or previous) op matching the query, from the op shown; the count under the list."""
        bar = self.ops.search
        if not self.search_query:
            bar.show_matches(None)
            return
        rows, pairs = self._rows(), self.controller.pairs
        self.search_matches = count_matches(pairs, rows, self.search_query)
        index = find_op(pairs, rows, self.search_query, self.current, forward, inclusive)
        scope = "among the diverged ops" if self.only_diverged else ""
        bar.show_matches(self.search_matches if index is not None else 0, scope, walking)
        if index is not None:
            self.select_op(index)
        elif walking:
            self.notify(f"no match for {fmt.clean(self.search_query)!r} {scope}".rstrip(), timeout=4, markup=False)

    def on_search_bar_left(self, _msg: SearchBar.Left) -> None:
        """enter: the match is shown, the list has the keys, n / N walk the matches."""
        self.op_list.focus()
        if self.search_query:
            self.ops.search.show_matches(self.search_matches, walking=True)

    def on_search_bar_closed(self, _msg: SearchBar.Closed) -> None:
        self.search_query = ""
        self.op_list.focus()

    def action_search_next(self) -> None:
        self._search(True, inclusive=False, walking=True)

    def action_search_previous(self) -> None:
        self._search(False, inclusive=False, walking=True)

    def action_end_search(self) -> None:
        self.ops.search.clear()
        self.search_query = ""

    def watch_search_query(self) -> None:
        self._update_available()

    # ------------------------------------------------------------------ g / G, home / end
    def action_first(self) -> None:
        self._to_end(last=False)

    def action_last(self) -> None:
        self._to_end(last=True)

    def _to_end(self, last: bool) -> None:
        """The focused list's (or pane's) first or last line: each of them has `action_first` / `action_last`."""
        move = getattr(self.focused, "action_last" if last else "action_first", None)
        if callable(move):
            move()
