"""The main screen's thread workers: everything that reads the dumps or their tensors runs here, off the UI
thread, and reports back by message (dumptui/tui/messages.py); a failure ends the worker with its error,
which the screen shows (`MainScreen.show_failure`).

- `open_dumps`: index both dumps (file names only), align them, then build the bisection order;
- `compute_statistics`: every tensor pair in the background, verdicts posted in batches (at most every
  300 ms) so the tree marks fill in without flooding the UI; `escape` cancels. The numpy work runs in the
  screen's worker processes (`pool`), this thread only hands out the jobs and judges what comes back;
- `bisect_work` / `run_bisection`: the Bisection is owned by one worker at a time (a lock), the UI renders
  the `BisectState` snapshots they post; the marks are autosaved after each (present/autosave.py);
- `load_op` / `load_tensor`: the selected op's numbers and one tensor pair's worst elements.

Each waits for its engine call through `wait_abandonable`, so quitting never waits for a long read.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from textual import work
from textual.screen import Screen
from textual.worker import get_current_worker

from dumptui.core.compare import elements
from dumptui.core.compare.batch import evaluate_all
from dumptui.core.compare.processes import ComparePool
from dumptui.core.search.bisect.sessionfile import read_session, session_mismatch
from dumptui.options import pair as pairing
from dumptui.present import autosave as saved
from dumptui.present import relations
from dumptui.present.detail import element_detail_problem
from dumptui.present.driver import BisectCommand, BisectDriver, BisectState
from dumptui.present.progress import CANCELLED, DONE, RUNNING, compare_batches
from dumptui.present.tree import OpTreeModel, preview_pairs
from dumptui.tui.messages import (
    BisectionChanged,
    BisectionReady,
    OpenProgress,
    OpLoaded,
    PreviewReady,
    SessionReady,
    StatisticsProgress,
    TensorLoaded,
    VerdictsKnown,
)
from dumptui.tui.widgets.opdetail import OpDetail
from dumptui.tui.workers import Abandoned, wait_abandonable

VERDICT_BATCH_SECONDS = 0.3  # the statistics worker posts verdicts at most this often (each is a repaint)
JOBS_PER_BATCH = 1024  # tensor pairs per evaluate_all call: a few chunks for each worker process
BYTES_PER_BATCH = 256 << 20  # ...or this much data: big batches go to the engine's worker processes
WORST_ELEMENTS = 8
# How far below the UI the statistics thread runs (Linux schedules threads one by one). 20,000-op demo, a
# busy loop on the other core, keys while the statistics run (bench/bench_tui.py's key loop, three runs
# each): at the UI's priority p95 57-127 ms, max 79-236 ms; 10 below, p95 30-44 ms, max 44-58 ms. Not
# further: a thread that holds the GIL and is scheduled too rarely keeps the UI thread waiting (at 19, the
# slowest keys took 350 ms).
STATISTICS_THREAD_NICE = 10
# A dump listing this many ops (its execution-order csv) is indexed, when not in the index cache, by processes
# of their own (pairing.open_pair): both dumps at once, and none of indexing's transient structures in the UI
# process's heap. Below it, starting the processes would cost more than the indexing.
INDEX_IN_PROCESSES_FROM_OPS = 2000


class BackgroundWork(Screen):
    """The workers of the main screen (its base class); what they read of it is declared here."""

    # Worker processes for the statistics and the scan (None: one per CPU), started once and reused; they run
    # below the UI process's priority (nice), so keys are answered first even when every core is busy.
    STATISTICS_WORKERS: int | None = None
    WORKER_NICE = 10

    options: pairing.PairOptions
    pool: ComparePool  # the worker processes (core/compare/processes.py)
    session_file: str | None
    autosave_to: str  # the pair's autosave file (present/autosave.py)
    session: Any
    driver: BisectDriver | None
    _bisect_lock: threading.Lock
    _stop_run: threading.Event

    @work(thread=True, exclusive=True, group="open", exit_on_error=False)
    def open_dumps(self) -> None:
        worker = get_current_worker()
        options = self.options
        t0 = time.monotonic()
        preview = preview_pairs(options.ref, options.selection("ref").rank)
        if preview:
            self.post_message(PreviewReady(OpTreeModel(preview)))
        # A dump or an option file that cannot be read ends this worker with its error: `show_failure`.
        try:
            big = len(preview) >= INDEX_IN_PROCESSES_FROM_OPS
            ref, target = wait_abandonable(
                lambda: pairing.open_pair(
                    options, in_processes=big, progress=lambda text: self.post_message(OpenProgress("steps", text))
                ),
                worker,
                "dumptui-index",
            )
            self.post_message(OpenProgress("aligning", "aligning the ops of both dumps"))
            session = wait_abandonable(
                lambda: pairing.make_session(options, ref, target, kl=True), worker, "dumptui-align"
            )
        except Abandoned:
            return
        model = OpTreeModel(session.alignment.pairs)
        self.post_message(SessionReady(session, model, time.monotonic() - t0))
        self.post_message(OpenProgress("graph", "building the bisection order"))
        from dumptui.core.search.bisect import Bisection  # networkx: imported after the first paint

        try:
            bisection = wait_abandonable(lambda: Bisection(session, workers=self.pool), worker, "dumptui-graph")
        except Abandoned:
            return
        resume, note, offer = None, "", None
        if self.session_file:
            try:
                resume = read_session(self.session_file)
                note = session_mismatch(resume, options.ref, options.target) or ""
            except ValueError as e:
                note = f"session not resumed: {e}"
        else:
            offer = saved.resumable(self.autosave_to)  # the same pair left with marks: the user is asked
        self.post_message(BisectionReady(BisectDriver(bisection), resume, note, offer))

    @work(thread=True, exclusive=True, group="stats", exit_on_error=False)
    def compute_statistics(self, run: int) -> None:
        """Every tensor pair, batch by batch; the verdicts of each finished batch go to the tree. `run`: the
        screen's number for this run, on every progress message (a cancelled run's last ones are ignored)."""
        worker = get_current_worker()
        session = self.session
        pairs = session.alignment.pairs
        jobs = [len(session.tensor_pairs(p)) for p in pairs]  # tensor pairs per op pair, by pair index
        total = sum(jobs)
        done = 0
        pending: dict[int, str | None] = {}
        last_post = 0.0
        self.post_message(StatisticsProgress(0, total, RUNNING, run))

        def flush(force: bool = False) -> None:
            nonlocal last_post, pending
            now = time.monotonic()
            if pending and (force or now - last_post >= VERDICT_BATCH_SECONDS):
                self.post_message(VerdictsKnown(pending))
                self.post_message(StatisticsProgress(done, total, RUNNING, run))
                pending = {}
                last_post = now

        def size_on_disk(p: Any) -> int:
            return sum(t.size_on_disk or 0 for op in (p.ref, p.target) if op is not None for t in op.tensors())

        def compare_all() -> None:
            nonlocal done
            for batch, batch_jobs in compare_batches(
                pairs, lambda p: jobs[p.index], size_on_disk, JOBS_PER_BATCH, BYTES_PER_BATCH
            ):
                if worker.is_cancelled:
                    break
                evaluate_all(session, batch, workers=self.pool, cancelled=lambda: worker.is_cancelled)
                done += batch_jobs
                for q in batch:
                    pending[q.index] = session.cached_verdict(q)
                flush()

        # In a thread of its own below the UI's priority: judging what the workers send back is Python work
        # that took turns with the UI thread (see STATISTICS_THREAD_NICE).
        try:
            wait_abandonable(compare_all, worker, "dumptui-statistics", nice=STATISTICS_THREAD_NICE)
        except Abandoned:
            self.post_message(StatisticsProgress(min(done, total), total, CANCELLED, run))
            return
        flush(force=True)
        self.post_message(StatisticsProgress(min(done, total), total, CANCELLED if worker.is_cancelled else DONE, run))

    @work(thread=True, group="bisect", exit_on_error=False)
    def bisect_work(self, task: BisectCommand, args: tuple[Any, ...]) -> None:
        worker = get_current_worker()
        driver = self.driver
        assert driver is not None  # bisection work is started once the bisection is ready

        def call() -> tuple[BisectState, str, dict]:
            with self._bisect_lock:
                note = driver.apply(task, *args)
                return driver.state(), note, driver.to_json()

        try:
            state, note, marks = wait_abandonable(call, worker, f"dumptui-bisect-{task}")
        except Abandoned:
            return
        note = "; ".join(filter(None, [note, self._autosave(marks) if task != BisectCommand.POINTS else ""]))
        self.post_message(BisectionChanged(state, task, note))

    def _autosave(self, marks: dict) -> str:
        """The marks saved for the next launch of this pair (`q` never loses a bisection); a note if not."""
        try:
            saved.autosave(self.autosave_to, marks, self.options.ref, self.options.target, vars(self.options))
        except OSError as e:
            return f"bisection not autosaved: {self.autosave_to}: {e.strerror or e}"
        return ""

    @work(thread=True, group="bisect", exit_on_error=False)
    def run_bisection(self) -> None:
        """`a`: step with the computed verdicts until converged; escape stops after the current step."""
        worker = get_current_worker()
        driver = self.driver
        assert driver is not None  # bisection work is started once the bisection is ready
        self._stop_run.clear()
        last = 0.0

        def one_step() -> tuple[BisectState, bool, dict]:
            with self._bisect_lock:
                if not driver.bi.started:
                    driver.start()
                    more = not driver.bi.finished
                else:
                    more = driver.step()
                return driver.state(), more, driver.to_json()

        while True:
            try:
                state, more, marks = wait_abandonable(one_step, worker, "dumptui-bisect-run")
            except Abandoned:
                return
            if not more:
                self.post_message(BisectionChanged(state, "converged", self._autosave(marks)))
                return
            if self._stop_run.is_set():
                note = "; ".join(filter(None, ["bisection stopped", self._autosave(marks)]))
                self.post_message(BisectionChanged(state, "stopped", note))
                return
            now = time.monotonic()
            if now - last >= VERDICT_BATCH_SECONDS:
                self.post_message(BisectionChanged(state, "running"))
                last = now

    @work(thread=True, exclusive=True, group="detail", exit_on_error=False)
    def load_op(self, index: int) -> None:
        worker = get_current_worker()
        session = self.session
        pair = session.alignment.pairs[index]
        try:
            res, rel = wait_abandonable(
                lambda: (session.op_result(pair, purpose="view"), relations.relations_of(session, pair)),
                worker,
                "dumptui-op",
            )
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
        problem = element_detail_problem(r)
        worst = hist = None
        ref, target = r.ref, r.target
        if problem is None and ref is not None and target is not None:  # (the problem says when either is not)
            try:
                worst, hist = wait_abandonable(
                    lambda: (
                        elements.worst_elements(ref, target, WORST_ELEMENTS),
                        elements.error_histogram(ref, target),
                    ),
                    worker,
                    "dumptui-tensor",
                )
            except Abandoned:
                return
            except (OSError, ValueError) as e:
                problem = f"read failed: {e}"
        if not worker.is_cancelled:
            self.post_message(TensorLoaded(index, label, worst, hist, problem))
