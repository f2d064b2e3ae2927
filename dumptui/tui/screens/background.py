"""The main screen's thread workers: each runs one blocking call of the pair's controller
(present/controller.py) off the UI thread and posts what it returns (dumptui/tui/messages.py); a failure ends
the worker with its error, which the screen shows (`MainScreen.show_failure`).

- `open_dumps`: preview, index, align, then the bisection order and what to resume;
- `compute_statistics`: every tensor pair in the engine's worker processes, the verdicts posted in batches;
  `escape` cancels;
- `bisect_work` / `run_bisection`: one command, or `a`'s run to the end (escape stops it after a step);
- `load_op` / `load_tensor`: the selected op's numbers and one tensor pair's worst elements.

Each waits for its call through `wait_abandonable`, so quitting never waits for a long read.
"""

from __future__ import annotations

import time
from typing import Any

from textual import work
from textual.screen import Screen
from textual.worker import get_current_worker

from dumptui.present.controller import PairController
from dumptui.present.driver import BisectCommand
from dumptui.present.progress import CANCELLED, DONE, RUNNING
from dumptui.tui.messages import (
    BisectionChanged,
    BisectionReady,
    OpenProgress,
    OpLoaded,
    PreviewReady,
    SearchProgress,
    SessionReady,
    StatisticsProgress,
    TensorLoaded,
    VerdictsKnown,
)
from dumptui.tui.widgets.opdetail import OpDetail
from dumptui.tui.workers import Abandoned, wait_abandonable

# How far below the UI the statistics thread runs (Linux schedules threads one by one). 20,000-op demo, a
# busy loop on the other core, keys while the statistics run (bench/bench_tui.py's key loop, three runs
# each): at the UI's priority p95 57-127 ms, max 79-236 ms; 10 below, p95 30-44 ms, max 44-58 ms. Not
# further: a thread that holds the GIL and is scheduled too rarely keeps the UI thread waiting (at 19, the
# slowest keys took 350 ms).
STATISTICS_THREAD_NICE = 10


class BackgroundWork(Screen):
    """The workers of the main screen (its base class): they read nothing of it but its controller."""

    controller: PairController

    @work(thread=True, exclusive=True, group="open", exit_on_error=False)
    def open_dumps(self) -> None:
        worker = get_current_worker()
        ctl = self.controller
        started = time.monotonic()
        preview = ctl.preview()
        if preview is not None:
            self.post_message(PreviewReady(preview))
        # A dump or an option file that cannot be read ends this worker with its error: `show_failure`.
        try:
            ref, target = wait_abandonable(
                lambda: ctl.index(lambda text: self.post_message(OpenProgress("steps", text))), worker, "dumptui-index"
            )
            self.post_message(OpenProgress("aligning", "aligning the ops of both dumps"))
            model = wait_abandonable(lambda: ctl.align(ref, target), worker, "dumptui-align")
        except Abandoned:
            return
        self.post_message(SessionReady(model, time.monotonic() - started))
        self.post_message(OpenProgress("graph", "building the bisection order"))
        try:
            driver = wait_abandonable(ctl.build_bisection, worker, "dumptui-graph")
        except Abandoned:
            return
        resume, note, offer = ctl.resume_choice()
        self.post_message(BisectionReady(driver, resume, note, offer))

    @work(thread=True, exclusive=True, group="stats", exit_on_error=False)
    def compute_statistics(self, run: int) -> None:
        """Every tensor pair; the verdicts of each finished batch go to the tree. `run`: the screen's number
        for this run, on every progress message (a cancelled run's last ones are ignored)."""
        worker = get_current_worker()
        ctl = self.controller
        total = ctl.statistics_total()
        done = 0
        self.post_message(StatisticsProgress(0, total, RUNNING, run))

        def report(now_done: int, now_total: int, verdicts: dict[int, str | None]) -> None:
            nonlocal done
            done = now_done
            self.post_message(VerdictsKnown(verdicts))
            self.post_message(StatisticsProgress(now_done, now_total, RUNNING, run))

        # In a thread of its own below the UI's priority: judging what the workers send back is Python work
        # that took turns with the UI thread (see STATISTICS_THREAD_NICE).
        try:
            done = wait_abandonable(
                lambda: ctl.run_statistics(lambda: worker.is_cancelled, report),
                worker,
                "dumptui-statistics",
                nice=STATISTICS_THREAD_NICE,
            )
        except Abandoned:
            self.post_message(StatisticsProgress(done, total, CANCELLED, run))
            return
        self.post_message(StatisticsProgress(done, total, CANCELLED if worker.is_cancelled else DONE, run))

    @work(thread=True, group="bisect", exit_on_error=False)
    def bisect_work(self, task: BisectCommand, args: tuple[Any, ...]) -> None:
        worker = get_current_worker()

        def counted(done: int, total: int) -> None:
            self.post_message(SearchProgress(done, total))

        try:
            state, note = wait_abandonable(
                lambda: self.controller.bisect(task, *args, progress=counted),
                worker,
                f"dumptui-bisect-{task}",
            )
        except Abandoned:
            return
        self.post_message(BisectionChanged(state, task, note))

    @work(thread=True, group="bisect", exit_on_error=False)
    def run_bisection(self) -> None:
        """`a`: step with the computed verdicts until converged; escape stops after the current step."""
        worker = get_current_worker()
        try:
            state, how, note = wait_abandonable(
                lambda: self.controller.run_to_end(
                    lambda: worker.is_cancelled, lambda s: self.post_message(BisectionChanged(s, "running"))
                ),
                worker,
                "dumptui-bisect-run",
            )
        except Abandoned:
            return
        self.post_message(BisectionChanged(state, how, note))

    @work(thread=True, exclusive=True, group="detail", exit_on_error=False)
    def load_op(self, index: int) -> None:
        worker = get_current_worker()
        try:
            res, rel = wait_abandonable(lambda: self.controller.op_detail(index), worker, "dumptui-op")
        except Abandoned:
            return
        if not worker.is_cancelled:
            self.post_message(OpLoaded(index, res, rel))

    @work(thread=True, exclusive=True, group="tensor", exit_on_error=False)
    def load_tensor(self, index: int, label: str) -> None:
        worker = get_current_worker()
        r = self.query_one(OpDetail).tensor_result(label)
        if r is None:
            return
        try:
            worst, hist, problem = wait_abandonable(lambda: self.controller.tensor_detail(r), worker, "dumptui-tensor")
        except Abandoned:
            return
        if not worker.is_cancelled:
            self.post_message(TensorLoaded(index, label, worst, hist, problem))
