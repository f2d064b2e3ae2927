"""The main screen's thread workers: each runs one blocking call of the pair's controller
(present/controller.py) off the UI thread and posts what it returns (dumptui/tui/messages.py) to the screen; a
failure ends the worker with its error, which the screen shows (`MainScreen.show_failure`).

- `open_dumps`: preview, index, align, then the bisection order and what to resume;
- `compute_statistics`: every tensor pair in the engine's worker processes, the verdicts posted in batches;
  `escape` cancels;
- `bisect` / `run_bisection`: one command, or `a`'s run to the end (escape stops it after a step);
- `load_op` / `load_tensor`: the selected op's numbers and one tensor pair's worst elements.

Each waits for its call through `wait_abandonable`, so quitting never waits for a long read. The workers
belong to the screen (Textual cancels them with it, and their state changes reach it), but they read nothing
of it: what they work on is passed in, what they find is posted.
"""

from __future__ import annotations

import time
from typing import Any

from textual.dom import DOMNode
from textual.worker import Worker, get_current_worker

from dumptui.present.controller import PairController
from dumptui.present.driver import BisectCommand, BisectState, RunProgress
from dumptui.present.progress import CANCELLED, DONE, RUNNING
from dumptui.present.types import TensorResult, Verdict
from dumptui.tui.messages import (
    BisectionChanged,
    BisectionReady,
    FirstProbe,
    OpenProgress,
    OpLoaded,
    PreviewReady,
    SearchProgress,
    SessionReady,
    StatisticsProgress,
    TensorLoaded,
    VerdictsKnown,
)
from dumptui.tui.workers import Abandoned, wait_abandonable

# How far below the UI the statistics thread runs (Linux schedules threads one by one): far enough that keys
# answer while the statistics run, not further: a thread that holds the GIL and is scheduled too rarely keeps
# the UI thread waiting (docs/speed.md, measurements behind the design).
STATISTICS_THREAD_NICE = 10


class PairWork:
    """The blocking work on the pair, each kind in its worker group ("open", "stats", "bisect", "detail",
    "tensor"), run as workers of `screen` and reporting to it by message."""

    def __init__(self, screen: DOMNode, controller: PairController):
        self.screen = screen
        self.controller = controller

    def _start(self, job: Any, group: str, exclusive: bool) -> Worker[None]:
        return self.screen.run_worker(job, group=group, exclusive=exclusive, thread=True, exit_on_error=False)

    # ------------------------------------------------------------------ opening
    def open_dumps(self) -> Worker[None]:
        return self._start(self._open_dumps, "open", exclusive=True)

    def _open_dumps(self) -> None:
        worker, post, ctl = get_current_worker(), self.screen.post_message, self.controller
        started = time.monotonic()
        preview = ctl.preview()
        if preview is not None:
            post(PreviewReady(preview))
        # A dump or an option file that cannot be read ends this worker with its error: `show_failure`.
        try:
            ref, target = wait_abandonable(
                lambda: ctl.index(lambda text: post(OpenProgress("steps", text))), worker, "dumptui-index"
            )
            post(OpenProgress("aligning", "aligning the ops of both dumps"))
            model = wait_abandonable(lambda: ctl.align(ref, target), worker, "dumptui-align")
        except Abandoned:
            return
        post(SessionReady(model, time.monotonic() - started))
        post(OpenProgress("graph", "building the bisection order"))
        try:
            driver = wait_abandonable(ctl.build_bisection, worker, "dumptui-graph")
        except Abandoned:
            return
        resume, note, offer = ctl.resume_choice()
        post(BisectionReady(driver, resume, note, offer))

    # ------------------------------------------------------------------ statistics
    def compute_statistics(self, run: int) -> Worker[None]:
        """Every tensor pair; the verdicts of each finished batch go to the tree. `run`: the screen's number
        for this run, on every progress message (a cancelled run's last ones are ignored)."""
        return self._start(lambda: self._compute_statistics(run), "stats", exclusive=True)

    def _compute_statistics(self, run: int) -> None:
        worker, post, ctl = get_current_worker(), self.screen.post_message, self.controller
        total = ctl.statistics_total()
        done = 0
        post(StatisticsProgress(0, total, RUNNING, run))

        def report(now_done: int, now_total: int, verdicts: dict[int, Verdict | None]) -> None:
            nonlocal done
            done = now_done
            post(VerdictsKnown(verdicts))
            post(StatisticsProgress(now_done, now_total, RUNNING, run))

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
            post(StatisticsProgress(done, total, CANCELLED, run))
            return
        post(StatisticsProgress(done, total, CANCELLED if worker.is_cancelled else DONE, run))

    # ------------------------------------------------------------------ bisection
    def bisect(self, command: BisectCommand, args: tuple[Any, ...] = ()) -> Worker[None]:
        return self._start(lambda: self._bisect(command, args), "bisect", exclusive=False)

    def _bisect(self, command: BisectCommand, args: tuple[Any, ...]) -> None:
        worker, post = get_current_worker(), self.screen.post_message

        def counted(done: int, total: int) -> None:
            post(SearchProgress(done, total))

        def first_look(state: BisectState) -> None:
            post(FirstProbe(state))

        try:
            state, note = wait_abandonable(
                lambda: self.controller.bisect(command, *args, progress=counted, first_look=first_look),
                worker,
                f"dumptui-bisect-{command}",
                # below the UI too: a noisy pair's start judges every op here (the Python half of its scan)
                nice=STATISTICS_THREAD_NICE,
            )
        except Abandoned:
            return
        post(BisectionChanged(state, command, note))

    def run_bisection(self) -> Worker[None]:
        """`a`: step with the computed verdicts until converged; escape stops it after the current step."""
        return self._start(self._run_bisection, "bisect", exclusive=False)

    def _run_bisection(self) -> None:
        worker, post = get_current_worker(), self.screen.post_message
        try:
            state, how, note = wait_abandonable(
                lambda: self.controller.run_to_end(
                    lambda: worker.is_cancelled,
                    lambda s: post(BisectionChanged(s, BisectCommand.RUN, run=RunProgress.STEPPED)),
                ),
                worker,
                "dumptui-bisect-run",
            )
        except Abandoned:
            return
        post(BisectionChanged(state, BisectCommand.RUN, note, run=how))

    # ------------------------------------------------------------------ the selected op and tensor
    def load_op(self, index: int) -> Worker[None]:
        return self._start(lambda: self._load_op(index), "detail", exclusive=True)

    def _load_op(self, index: int) -> None:
        worker = get_current_worker()
        try:
            res, rel = wait_abandonable(lambda: self.controller.op_detail(index), worker, "dumptui-op")
        except Abandoned:
            return
        if not worker.is_cancelled:
            self.screen.post_message(OpLoaded(index, res, rel))

    def load_tensor(self, index: int, label: str, result: TensorResult) -> Worker[None]:
        return self._start(lambda: self._load_tensor(index, label, result), "tensor", exclusive=True)

    def _load_tensor(self, index: int, label: str, result: TensorResult) -> None:
        worker = get_current_worker()
        try:
            worst, hist, problem = wait_abandonable(
                lambda: self.controller.tensor_detail(result), worker, "dumptui-tensor"
            )
        except Abandoned:
            return
        if not worker.is_cancelled:
            self.screen.post_message(TensorLoaded(index, label, worst, hist, problem))
