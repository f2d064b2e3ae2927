"""The main screen's state and decisions, without Textual: what the status line says, what a new bisection
state changes on screen, where the jumps and the `/` search go, how a failure is worded and recorded.

The screen (tui/screens/main.py) keeps what its widgets are bound to (Textual reactives: the model, the
tags, the bisection's command, the statistics' state, the search query) and passes it in; this object keeps
the rest: the bisection's last state, the statistics' counts, the op shown, the failure on show. It reads
the engine through the controller (present/controller.py) only.

Plain Python: tests/present/test_mainview.py drives it with no app.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field

from dumptui.core.compare.results import TensorResult
from dumptui.options import pair as pairing
from dumptui.present.controller import PairController
from dumptui.present.copy import CopyChoice, copy_choices
from dumptui.present.driver import BisectCommand, BisectState
from dumptui.present.failures import describe, failure_line
from dumptui.present.keys import KeyContext
from dumptui.present.paths import shown_pair
from dumptui.present.picker import opened_unit
from dumptui.present.progress import StatisticsState, no_diverged_yet
from dumptui.present.search import count_matches, find_op, next_diverged, next_root
from dumptui.present.status import StatusFacts
from dumptui.present.tree import OpTreeModel, is_bad
from dumptui.report import fmt

UNREADABLE_SHOWN = 3  # unreadable files named in the notice after opening; the rest are counted


@dataclass(frozen=True)
class BisectionShown:
    """What a new bisection state changes on screen, in the order the screen applies it."""

    rejudged: bool  # the search judged verdicts in context: the marks shown so far are shown again
    plot_only: bool = False  # the plot's numbers only: the cursor stays where the user left it
    tags: dict[int, str] = field(default_factory=dict)  # culprit / root / probe marks in the op lists
    roots: frozenset[int] | None = None  # the roots the hints name (None: unchanged while `a` steps)
    selections: dict[int, str] | None = None  # selection ops judged by their own inputs (None: unchanged)
    refresh: list[int] = field(default_factory=list)  # ops whose verdicts the bisection has just computed
    target: int | None = None  # the op to select (None: the cursor stays)


@dataclass(frozen=True)
class SearchAnswer:
    """Where the `/` search goes and what its count line says."""

    index: int | None  # the match to select (None: no match)
    shown: int | None  # the count under the list (None: no query, 0: no match)
    scope: str = ""  # the rows searched, said when none matched
    miss: str = ""  # the notice when walking with n / N finds nothing


def bisection_tags(state: BisectState) -> dict[int, str]:
    """The culprit and the other roots once found; until then the probe."""
    tags: dict[int, str] = {}
    if state.culprit is not None:
        tags[state.culprit.index] = "culprit"
        for o in state.others:
            tags.setdefault(o.index, "root")
    elif state.probe_index is not None:
        tags[state.probe_index] = "probe"
    return tags


def after_worker(group: str, ended: bool, failed: bool, others_running: bool) -> tuple[bool, bool, bool]:
    """What a worker's end changes: (the bisection is idle, the statistics failed, start the statistics).
    With no bisection (its opening or its search failed) the statistics still help."""
    return (
        group == "bisect" and ended and not others_running,
        group == "stats" and failed,
        group in ("open", "bisect") and failed,
    )


class MainView:
    """The screen's plain state and the decisions made from it (see the module's docstring)."""

    def __init__(self, options: pairing.PairOptions, controller: PairController, picked: bool = False):
        self.options = options
        self.controller = controller
        self.picked = picked  # opened from the picker of ranks and steps (`U` goes back to it)
        self.bstate: BisectState | None = None  # the bisection's last state
        self.stats_run = 0  # the current run of the statistics (each cancel or new run counts one)
        self.stats_done = 0
        self.stats_total = 0
        self.stats_failure = ""
        self.open_stage = "indexing the dumps (file names only)"
        self.open_started = time.monotonic()
        self.opened_seconds: float | None = None
        self.current: int | None = None  # the op shown in the centre
        self.search_matches = 0
        self.kernel_count = 0
        self.failure: tuple[str, str] | None = None  # (work, what failed: path and reason), until it is retried

    # ------------------------------------------------------------------ what the status line and keys read
    def key_context(
        self, indexed: bool, bisect_task: BisectCommand | None, statistics: StatisticsState, searching: bool
    ) -> KeyContext:
        return KeyContext(
            indexed=indexed,
            bisection_ready=self.controller.driver is not None,
            bisect_task=bisect_task,
            bisection=self.bstate,
            statistics=statistics,
            searching=searching,
            picked=self.picked,
        )

    def status_facts(
        self, stats_state: StatisticsState, model: OpTreeModel | None, bisect_task: BisectCommand | None
    ) -> StatusFacts:
        ref, target = (fmt.clean(p) for p in shown_pair(self.options.ref, self.options.target))
        failure_work, failure = self.failure if self.failure is not None else ("", "")
        opened = self.controller.session is not None
        return StatusFacts(
            ref=ref,
            target=target,
            opened=opened,
            stage=self.open_stage,
            opening_seconds=0.0 if opened else time.monotonic() - self.open_started,
            preparing_bisection=self.controller.driver is None and not bisect_task,
            stats_state=stats_state,
            stats_done=self.stats_done,
            stats_total=self.stats_total,
            stats_failure=fmt.clean(self.stats_failure),
            diverged=model.diverged if model is not None else 0,
            failure_work=failure_work,
            failure=failure,
            unit=opened_unit(self.options) if self.picked else "",
        )

    def problem_notices(self) -> list[tuple[str, int | None]]:
        """The warnings opening left (each with how long it stays up; None: the default): unreadable files
        per side, a few named, then the engine's warnings."""
        unreadable, warnings = self.controller.open_problems()
        out: list[tuple[str, int | None]] = []
        for side, errors in unreadable:
            if errors:
                shown = "; ".join(
                    f"{fmt.clean(path)}: {fmt.clean(reason)}" for path, reason in errors[:UNREADABLE_SHOWN]
                )
                more = f" (and {len(errors) - UNREADABLE_SHOWN} more)" if len(errors) > UNREADABLE_SHOWN else ""
                out.append((f"{side}: {len(errors)} unreadable: {shown}{more}", 10))
        out.extend((fmt.clean(w), None) for w in warnings)
        return out

    def no_diverged_words(self, stats_state: StatisticsState, filtering: bool = False) -> str:
        return no_diverged_yet(stats_state, self.stats_done, self.stats_total, filtering=filtering)

    # ------------------------------------------------------------------ statistics
    def statistics_progress(self, run: int, done: int, total: int) -> bool:
        """A run's count; False for a run the user cancelled (its last messages must not undo the cancel)."""
        if run != self.stats_run:
            return False
        self.stats_done, self.stats_total = done, total
        return True

    def new_statistics_run(self) -> int:
        """`c`: the statistics again, its failure forgotten; what an older run still sends is ignored."""
        self.retry("stats")
        self.stats_failure = ""
        self.stats_run += 1
        return self.stats_run

    def cancel_statistics(self) -> None:
        self.stats_run += 1  # what the cancelled run still sends is not the screen's state any more

    @property
    def bisection_started(self) -> bool:
        return self.controller.driver is not None and self.bstate is not None

    # ------------------------------------------------------------------ bisection
    def first_probe(self, state: BisectState) -> bool:
        """A noisy pair's first probe, before its search has judged every op: adopted (True) unless the
        search has answered already."""
        if (self.bstate is not None and self.bstate.started) or state.probe_index is None:
            return False
        self.bstate = state
        return True

    def bisection_changed(
        self, state: BisectState, command: BisectCommand | None, stepping: bool, model: OpTreeModel | None
    ) -> BisectionShown:
        """A new state from the bisection's worker. While `a` steps (`stepping`) the cursor, the roots and the
        selection hints stay; once it answers, the culprit (or the probe) is selected; with no divergence at
        all the first op, rather than a pane still saying "opening"."""
        rejudged = self.bstate is None or self.bstate.judged != state.judged
        self.bstate = state
        if command is BisectCommand.POINTS:
            return BisectionShown(rejudged, plot_only=True)
        tags = bisection_tags(state)
        refresh = [h.index for h in state.history]
        refresh += [i for i in (state.probe_index, state.culprit.index if state.culprit else None) if i is not None]
        if stepping:
            return BisectionShown(rejudged, tags=tags, refresh=refresh)
        target = state.culprit.index if state.culprit is not None else state.probe_index
        if target is None and self.current is None and model is not None and model.pairs:
            target = 0
        roots = frozenset(i for i, tag in tags.items() if tag in ("culprit", "root"))
        return BisectionShown(rejudged, False, tags, roots, dict(state.selections), refresh, target)

    # ------------------------------------------------------------------ failures
    def fail(self, work: str, error: BaseException, path: str = "", tensor: str | None = None) -> str:
        """A failed piece of work (not the opening: that ends the screen) becomes the state the status line
        shows, until it is retried; the notice's words. `tensor`: the tensor shown, named when the error
        names no file."""
        failure = describe(error, path or self.failure_subject(work, tensor))
        if work == "stats":
            self.stats_failure = str(failure)  # the status line keeps it: an error state, not a toast only
        self.failure = (work, fmt.clean(failure_line(work, failure)))
        return self.failure[1]

    def open_failure(self, error: BaseException) -> tuple[str, str]:
        """The dumps cannot be opened: the path and the reason the dialog shows."""
        failure = describe(error, f"{self.options.ref} / {self.options.target}")
        self.open_stage = "cannot open the dumps"
        return failure.path, failure.reason

    def failure_subject(self, work: str, tensor: str | None) -> str:
        """What a failed worker was working on, when its error names no file: the op (and tensor) shown."""
        if work in ("detail", "tensor") and self.controller.session is not None and self.current is not None:
            op = self.controller.pairs[self.current].label
            label = tensor if work == "tensor" else None
            return f"{op} {label}" if label else op
        return ""

    def retry(self, work: str) -> None:
        """Work that failed is started again: its failure is no longer the state."""
        if self.failure is not None and self.failure[0] == work:
            self.failure = None

    # ------------------------------------------------------------------ the op shown, jumps, search, copy
    def show(self, index: int, shown_in_detail: bool) -> bool:
        """The cursor rests on op `index`: True when it is to be shown (it becomes the current op)."""
        if self.controller.session is None or (index == self.current and shown_in_detail):
            return False
        self.current = index
        self.retry("detail")
        self.retry("tensor")
        return True

    def probe(self) -> int | None:
        return self.bstate.probe_index if self.bstate is not None else None

    def culprit(self) -> int | None:
        return self.bstate.culprit.index if self.bstate is not None and self.bstate.culprit is not None else None

    def next_root(self) -> tuple[int | None, bool]:
        """`r`: the culprit, then the other roots in execution order, wrapping, after the op shown; and
        whether the culprit is the only root (said, since `r` then stays put)."""
        st = self.bstate
        if st is None or st.culprit is None:
            return None, False
        roots = [st.culprit.index, *(o.index for o in st.others)]
        return next_root(roots, self.current), len(set(roots)) == 1

    def next_diverged(self, model: OpTreeModel, forward: bool) -> int | None:
        return next_diverged(model.rows(), model.verdict, self.current, forward)

    def search(
        self, model: OpTreeModel, query: str, only_diverged: bool, forward: bool, inclusive: bool
    ) -> SearchAnswer:
        """The next (or previous) op matching `query` among the rows shown, from the op shown."""
        if not query:
            return SearchAnswer(None, None)
        rows, pairs = model.rows(only_diverged), self.controller.pairs
        self.search_matches = count_matches(pairs, rows, query)
        index = find_op(pairs, rows, query, self.current, forward, inclusive)
        scope = "among the diverged ops" if only_diverged else ""
        miss = f"no match for {fmt.clean(query)!r} {scope}".rstrip()
        return SearchAnswer(index, self.search_matches if index is not None else 0, scope, miss)

    def copy_choices(self, tensor: TensorResult | None) -> list[CopyChoice]:
        """`y`: what can be copied about the op shown, its highlighted tensor and the culprit."""
        opened = self.controller.session is not None
        pair = self.controller.pairs[self.current] if opened and self.current is not None else None
        return copy_choices(pair, tensor, self.bstate, fmt.g)

    def probe_among(self, indices: Iterable[int]) -> bool:
        return self.bstate is not None and self.bstate.probe_index in set(indices)


def refilter_needed(model: OpTreeModel, only_diverged: bool, changed: Iterable[int]) -> bool:
    """New verdicts call for the diverged-only lists to be rebuilt (at most twice a second) when one is bad."""
    return only_diverged and any(is_bad(model.verdict(i)) for i in changed)
