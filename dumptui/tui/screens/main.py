"""The main screen: op tree (or flat list) on the left, the selected op in the centre, the bisection below.

It paints before anything is indexed: the thread workers of `PairWork` (background.py) read the dumps. The
screen composes the panes and forwards the keys and what the workers post. The decisions (the status line,
what a bisection step changes, where a jump or a search goes, a failure's words) are its presenter's,
`MainView` (present/mainview.py, no Textual); `WorkFeed` (feed.py) applies what the workers post, `OpShown`
(opshown.py) reads the op in the centre, `Navigation` (navigate.py) moves the cursor, `Exports` (exports.py)
writes files. The panes are bound to the screen's reactives (`data_bind`): they redraw when its state changes.

Which commands exist and when each is available is the action table's business (dumptui/present/keys.py);
the reactives it reads refresh the footer when they change. Every failure is shown in one place (`show_failure`).
"""

from __future__ import annotations

from typing import Any

from textual import events, on
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.reactive import var
from textual.screen import Screen
from textual.widgets import DataTable
from textual.worker import Worker

from dumptui.options import pair as pairing
from dumptui.present.controller import PairController
from dumptui.present.driver import BisectCommand
from dumptui.present.keys import SCREEN, KeyContext, action_named, available_now, waiting_for
from dumptui.present.keys import state as key_state
from dumptui.present.mainview import MainView
from dumptui.present.progress import WAITING, task_words
from dumptui.present.status import StatusFacts
from dumptui.present.tree import OpTreeModel
from dumptui.tui import keymap
from dumptui.tui import messages as m
from dumptui.tui.screens import views
from dumptui.tui.screens.background import PairWork
from dumptui.tui.screens.copy import offer_copy
from dumptui.tui.screens.exports import Exports
from dumptui.tui.screens.feed import WorkFeed
from dumptui.tui.screens.navigate import Navigation
from dumptui.tui.screens.opshown import OpShown
from dumptui.tui.styles import ThemeStyles
from dumptui.tui.widgets.bisectpanel import BisectPanel
from dumptui.tui.widgets.flatlist import FlatOpList
from dumptui.tui.widgets.footer import KeysFooter
from dumptui.tui.widgets.opdetail import OpDetail, RelationList, TensorTable
from dumptui.tui.widgets.opspane import OpsPane
from dumptui.tui.widgets.optree import OpTree
from dumptui.tui.widgets.searchbar import SearchBar
from dumptui.tui.widgets.statusline import StatusLine


def _viewed(name: str) -> Any:
    """The presenter's attribute `name`, read through the screen (the tests and the bench read them there)."""
    return property(lambda self: getattr(self.view, name))


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
    available: var[frozenset[str]] = var(frozenset(), init=False)  # ids of the commands available now
    # What the widgets draw with, bound to theirs in `compose` (`data_bind`): a change here redraws them.
    theme_styles: var[ThemeStyles] = var(ThemeStyles({}), init=False)  # the theme's colours as rich styles
    model: var[OpTreeModel | None] = var(None, init=False)  # the aligned pairs and their verdicts, once open
    tags: var[dict[int, str]] = var(dict, init=False)  # ops tagged culprit / root / probe in the op lists
    roots: var[frozenset[int]] = var(frozenset(), init=False)  # the bisection's roots (their hints say so)
    selection_words: var[dict[int, str]] = var(dict, init=False)  # selection ops judged by their own inputs, in words
    status: var[StatusFacts] = var(StatusFacts(), init=False)  # what the status line says
    search_query = var("", init=False)  # the `/` search's query: n / N walk its matches while it is set

    # the presenter's state, read through the screen
    bstate, current, failure, kernel_count, opened_seconds = map(
        _viewed, ("bstate", "current", "failure", "kernel_count", "opened_seconds")
    )
    stats_run, stats_done, stats_total, search_matches = map(
        _viewed, ("stats_run", "stats_done", "stats_total", "search_matches")
    )

    def __init__(self, options: pairing.PairOptions, session_file: str | None = None, picked: bool = False):
        super().__init__()
        self.options = options
        self.picked = picked  # opened from the picker of ranks and steps (`U` goes back to it)
        # the engine's state for the pair and the work on it (present/controller.py): the workers call it
        self.controller = PairController(options, session_file, self.STATISTICS_WORKERS, self.WORKER_NICE)
        self.view = MainView(options, self.controller, picked)  # the state and decisions (present/mainview.py)
        self.pair_work = PairWork(self, self.controller)  # the workers that call it off the UI thread
        self.feed = WorkFeed(self)  # what they post, applied
        self.shown = OpShown(self)  # the op in the centre: when it is read
        self.navigation = Navigation(self)  # ] [ f / n N: where the cursor goes
        self.exports = Exports(self, self.controller)  # S, e, R, x: files written or downloaded
        self.preview_model: OpTreeModel | None = None  # names only, while the dumps are indexed

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
    def flat(self) -> FlatOpList:
        return self.ops.flat

    @property
    def detail(self) -> OpDetail:
        return self.query_one(OpDetail)

    @property
    def panel(self) -> BisectPanel:
        return self.query_one(BisectPanel)

    def on_unmount(self) -> None:
        self.controller.close()

    def on_mount(self) -> None:
        self.detail.border_title = "op"
        self._apply_theme()
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self._apply_theme())
        self.set_interval(0.5, self.draw_status)
        self.set_interval(0.5, self.navigation.refresh_filter)
        self.op_tree.focus()
        self.draw_status()
        self.pair_work.open_dumps()

    def _apply_theme(self) -> None:
        self.theme_styles = ThemeStyles(self.app.get_css_variables())  # the widgets bound to it redraw

    # ------------------------------------------------------------------ which commands make sense now
    def key_context(self) -> KeyContext:
        return self.view.key_context(
            self.model is not None, self.bisect_task, self.stats_state, bool(self.search_query)
        )

    def on_key(self, event: events.Key) -> None:
        """A bisection key pressed before the bisection can take it is answered, never dropped unsaid."""
        if waiting_for(event.key, self.key_context()) is not None:
            event.stop()
            busy = self.panel.busy or task_words(self.bisect_task) or self.view.open_stage
            self.notify(f"not ready: {busy}", timeout=3)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        entry = action_named(action, SCREEN)
        return True if entry is None else key_state(entry, self.key_context())

    def update_available(self) -> None:
        """After any change of the state the action table reads (the footer follows through `available`)."""
        self.available = available_now(self.key_context())

    def watch_available(self) -> None:
        # Only when a command's availability changed: each refresh recomposes the footer (tens of
        # milliseconds a time, felt as lag while workers post their progress).
        self.refresh_bindings()

    def watch_bisect_task(self, task: BisectCommand | None) -> None:
        self.panel.set_busy(task_words(task))
        self.update_available()

    def watch_stats_state(self) -> None:
        self.draw_status()
        self.update_available()

    def draw_status(self) -> None:
        """The status line's facts now (redrawn when they change; twice a second while opening, for the seconds)."""
        self.status = self.view.status_facts(self.stats_state, self.model, self.bisect_task)

    # ------------------------------------------------------------------ what the workers post (feed.py)
    @on(m.PairPosted)
    def pair_posted(self, msg: m.PairPosted) -> None:
        getattr(self.feed, msg.handler_name)(msg)  # `on_open_progress` for `OpenProgress`...

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        self.feed.worker_state_changed(event)

    def show_failure(self, work: str, error: BaseException, path: str = "") -> None:
        """The one place a failure reaches the user: what failed, the path and the reason; no traceback."""
        self.feed.show_failure(work, error, path)

    def retry_work(self, work: str) -> None:
        """Work that failed is started again: its failure is no longer the state."""
        self.view.retry(work)

    # ------------------------------------------------------------------ the selected op (opshown.py)
    def select_op(self, index: int, focus_list: bool = False) -> None:
        """Put the list cursor on an op (expanding its folders) and show it in the centre."""
        self.ops.select(index)
        self.shown.show(index)
        if focus_list:
            self.ops.shown.focus()

    def on_op_loaded(self, msg: m.OpLoaded) -> None:
        self.shown.loaded(msg)

    @on(OpTree.OpHighlighted)
    @on(FlatOpList.OpHighlighted)
    def op_highlighted(self, msg: m.OpMessage) -> None:
        self.shown.show(msg.index)

    @on(OpTree.OpActivated)
    @on(FlatOpList.OpActivated)
    def op_activated(self, msg: m.OpMessage) -> None:
        self.shown.show(msg.index)
        self.query_one(TensorTable).focus()

    @on(DataTable.RowHighlighted, "#tensors")
    def tensor_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self.shown.tensor_highlighted(str(event.row_key.value))

    def on_tensor_loaded(self, msg: m.TensorLoaded) -> None:
        self.shown.tensor_loaded(msg)

    def on_relation_list_chosen(self, msg: RelationList.Chosen) -> None:
        self.select_op(msg.index, focus_list=True)

    # ------------------------------------------------------------------ actions: bisection and statistics
    def action_accept(self) -> None:
        self.feed.run_bisect(BisectCommand.ACCEPT)

    def action_mark(self, mark: str) -> None:
        self.feed.run_bisect(BisectCommand.OVERRULE, mark)

    def action_undo(self) -> None:
        self.feed.run_bisect(BisectCommand.UNDO)

    def action_reset(self) -> None:
        self.feed.run_bisect(BisectCommand.RESET)

    def action_run_all(self) -> None:
        self.feed.run_all()

    def action_cancel(self) -> None:
        self.feed.cancel()

    def action_compute_statistics(self) -> None:
        self.feed.compute_statistics()

    # ------------------------------------------------------------------ actions: jumps, zoom, copy, exports
    def action_goto_probe(self) -> None:
        self.navigation.goto(self.view.probe())

    def action_goto_culprit(self) -> None:
        self.navigation.goto(self.view.culprit())

    def action_next_root(self) -> None:
        self.navigation.next_root()

    def zoomed_pane(self) -> str | None:
        return views.zoomed_pane(self)

    def action_zoom(self) -> None:
        views.toggle_zoom(self)

    def action_copy(self) -> None:
        label = self.detail.highlighted_label
        offer_copy(self, self.view.copy_choices(self.detail.tensor_result(label) if label is not None else None))

    def action_save(self) -> None:
        self.exports.save()

    def action_export(self) -> None:
        self.exports.redump(self.view.bstate)

    def action_export_remedy(self) -> None:
        self.exports.remedy()

    def action_export_csv(self) -> None:
        self.exports.csv()

    def action_export_report(self) -> None:
        self.exports.report()

    def action_pick_unit(self) -> None:
        self.app.back_to_picker()  # type: ignore[attr-defined]  # DumpTuiApp's

    # ------------------------------------------------------------------ actions: navigation, views, search
    def action_next_diverged(self) -> None:
        self.navigation.goto_diverged(True)

    def action_previous_diverged(self) -> None:
        self.navigation.goto_diverged(False)

    def action_only_diverged(self) -> None:
        self.only_diverged = not self.only_diverged

    def watch_only_diverged(self, only: bool) -> None:
        self.navigation.only_diverged(only)

    def action_toggle_view(self) -> None:
        self.flat_mode = not self.flat_mode

    def watch_flat_mode(self, flat: bool) -> None:
        self.ops.show_list(flat, self.view.current)

    def action_search(self) -> None:
        self.ops.search.open(counted=self.ops)

    def on_search_bar_query(self, msg: SearchBar.Query) -> None:
        self.navigation.query(msg.text, msg.forward, msg.inclusive)

    def on_search_bar_left(self, _msg: SearchBar.Left) -> None:
        self.navigation.left()

    def on_search_bar_closed(self, _msg: SearchBar.Closed) -> None:
        self.navigation.closed()

    def action_search_next(self) -> None:
        self.navigation.search(True, inclusive=False, walking=True)

    def action_search_previous(self) -> None:
        self.navigation.search(False, inclusive=False, walking=True)

    def action_end_search(self) -> None:
        self.navigation.end()

    def watch_search_query(self) -> None:
        self.update_available()

    # ------------------------------------------------------------------ g / G, home / end
    def action_first(self) -> None:
        views.to_end(self, last=False)

    def action_last(self) -> None:
        views.to_end(self, last=True)
