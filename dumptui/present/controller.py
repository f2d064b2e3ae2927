"""What the app does with one pair of dumps, without Textual: the controller the main screen drives.

It owns the engine's state for the pair (the options, the worker processes, the Session, the bisection's
driver and its lock, the autosave file) and offers each piece of work the app runs off its UI thread as one
blocking call: open (preview, index, align, bisection order, resume), the statistics of every tensor pair,
the bisection's commands and its run to the end, one op's and one tensor's numbers, the exports. The screen
runs these calls in its thread workers (tui/screens/background.py), posts what they return as messages and
draws it; it reaches the engine only through here and the rest of present/ (an import contract).

Plain Python: the tests drive it directly, no app needed (tests/present/test_controller.py).
"""

from __future__ import annotations

import io
import os
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from dumptui.core.compare import elements
from dumptui.core.compare.batch import evaluate_all
from dumptui.core.compare.elements import WorstElement
from dumptui.core.compare.ledger import Purpose
from dumptui.core.compare.results import OpResult, TensorResult
from dumptui.core.compare.session import Session
from dumptui.core.compare.verdict import Verdict
from dumptui.core.graph.align import OpPair
from dumptui.core.io.executor import Cancel, LocalProcesses
from dumptui.core.io.indexing_progress import Stage
from dumptui.core.io.procs import lean_heap
from dumptui.core.io.safeio import write_text
from dumptui.core.model.dump import Dump, Severity
from dumptui.core.search.bisect.sessionfile import (
    SessionError,
    SessionJson,
    read_session,
    session_mismatch,
    session_payload,
)
from dumptui.core.search.compare_all import compare_pair, every_op_judged
from dumptui.core.search.judgement import RunJudgement, judge
from dumptui.core.search.remedy import Remedy, remedies
from dumptui.core.tools import redump
from dumptui.options import pair as pairing
from dumptui.present import autosave as saved
from dumptui.present import relations
from dumptui.present.detail import element_detail_problem
from dumptui.present.driver import BisectCommand, BisectDriver, BisectState, RedumpPlan, RunProgress, redump_plan
from dumptui.present.progress import EveryFewCounts, IndexingWords, compare_batches
from dumptui.present.tree import OpTreeModel, preview_pairs
from dumptui.report.csvprofiles import DEFAULT_PROFILE, write_profile
from dumptui.report.reasons import say, say_all
from dumptui.report.remedyfiles import remedy_files, write_files
from dumptui.report.share import report_text

VERDICT_BATCH_SECONDS = 0.3  # verdicts and bisection states are reported at most this often (each is a repaint)
# ...and at most this many verdicts a report: the UI thread applies a report in one step (its folders' counts,
# the tree's labels), and after a noisy pair's scan the statistics find every verdict cached at once (29,195
# op pairs in one report on the 20,000-op demo: a step of a tenth of a second or more, a key waits behind it)
VERDICTS_PER_REPORT = 1000
# the search's count is shown at most this often: each is a repaint (Textual's compositor on the UI thread:
# at 10 a second, a third of that thread's CPU while the 20,000-op demo was judged beside a busy loop)
SEARCH_COUNT_SECONDS = 0.25
JOBS_PER_BATCH = 1024  # tensor pairs per evaluate_all call: a few chunks for each worker process
BYTES_PER_BATCH = 256 << 20  # ...or this much data: big batches go to the engine's worker processes
WORST_ELEMENTS = 8
# inputs' origins the alignment remembers (core/graph/align.py `remember_at_most`): a scan's asks in a row
ORIGINS_REMEMBERED = 4096
# A dump listing this many ops (its execution-order csv) is indexed, when not in the index cache, by processes
# of their own (pairing.open_pair): both dumps at once, and none of indexing's transient structures in the UI
# process's heap. Below it, starting the processes would cost more than the indexing.
INDEX_IN_PROCESSES_FROM_OPS = 2000

Progress = Callable[[str], object]
Histogram = tuple[list[int], int, int]  # counts per power of two of |diff|, first exponent, zeros


class PairController:
    """The engine's state for one pair and the work on it; see the module's docstring.

    Threads: `session` and `driver` are set once (by `align` and `adopt`) and read by any thread; the
    bisection is used by one thread at a time (`bisect_lock`), the UI thread renders the `BisectState`
    snapshots the calls return.
    """

    def __init__(
        self, options: pairing.PairOptions, session_file: str | None = None, workers: int | None = None, nice: int = 10
    ):
        self.options = options
        self.session_file = session_file  # a saved session to resume
        self.autosave_to = saved.autosave_path(options.ref, options.target, vars(options))
        # Worker processes for the statistics and the scan (None: one per CPU), started once and reused; they
        # run `nice` below the UI process's priority, so keys are answered first even when every core is busy.
        # Every file read goes to them (offload): the UI process keeps only the verdicts' bookkeeping.
        self.pool = LocalProcesses(workers, nice=nice, offload=True)
        lean_heap()  # this process reads no tensor data (the pool does): freed memory goes back to the system
        self.session: Session | None = None
        self.driver: BisectDriver | None = None
        self.bisect_lock = threading.Lock()
        self.stop_run = threading.Event()  # `a`'s run stops after its current step
        self.statistics_cancel = Cancel()  # the current statistics run's (escape sets it: cancel_statistics)
        self._preview_count = 0

    def close(self) -> None:
        self.pool.close(kill=True)

    def dumps(self) -> list[Dump]:
        return [self.opened.ref, self.opened.target]

    @property
    def opened(self) -> Session:
        """The Session; only asked for once the dumps are open."""
        assert self.session is not None
        return self.session

    # ------------------------------------------------------------------ what the screen reads (UI thread)
    @property
    def pairs(self) -> list[OpPair]:
        return self.opened.alignment.pairs

    def kernel_count(self) -> int:
        return len(self.opened.alignment.kernels)

    def judged(self, r: TensorResult) -> TensorResult:
        """A tensor pair's verdict as the search judged it (in context once its scan ran): every pane, mark and
        export shows this one, never the cache's own."""
        bi = self.driver.bi if self.driver is not None else None
        return bi.judged(r) if bi is not None else r

    def judged_op(self, res: OpResult) -> OpResult:
        bi = self.driver.bi if self.driver is not None else None
        return bi.judged_op(res) if bi is not None else res

    def verdicts_of(self, indices: Iterable[int]) -> dict[int, Verdict | None]:
        """The verdicts computed so far, as the search judged them (cached lookups, no read)."""
        session, pairs = self.opened, self.opened.alignment.pairs
        return {i: session.cached_verdict(pairs[i], self.judged) for i in indices}

    def one_sided_verdicts(self) -> dict[int, Verdict | None]:
        """The ops in one dump only: their verdict is known without reading anything."""
        session = self.opened
        return {p.index: session.cached_verdict(p) for p in session.alignment.unpaired()}

    def open_problems(self) -> tuple[list[tuple[str, list[tuple[str, str]]]], list[str]]:
        """What opening found: per side the (path, reason) of each file it could not read, and the alignment's
        warnings."""
        session = self.opened
        unreadable = [
            (side, [(p.path, say(p.reason)) for p in d.problems if p.severity == Severity.ERROR])
            for side, d in (("ref", session.ref), ("target", session.target))
        ]
        return unreadable, say_all(session.alignment.warnings)

    # ------------------------------------------------------------------ opening
    def preview(self) -> OpTreeModel | None:
        """The reference's op names from its execution-order files, before anything is indexed."""
        pairs = preview_pairs(self.options.ref, self.options.selection("ref").rank)
        self._preview_count = len(pairs)
        return OpTreeModel(pairs) if pairs else None

    def index(self, progress: Progress) -> tuple[Dump, Dump]:
        """Both dumps indexed (file names only); a dump or option file that cannot be read raises its error."""
        big = self._preview_count >= INDEX_IN_PROCESSES_FROM_OPS
        words = IndexingWords(time.monotonic)

        def indexing(side: str, stage: Stage, done: int, total: int | None) -> None:
            progress(words.update(side, stage, done, total))

        return pairing.open_pair(self.options, in_processes=big, progress=progress, indexing=indexing, share_text=True)

    def align(self, ref: Dump, target: Dump) -> OpTreeModel:
        """The ops of both dumps paired: the Session, and the tree's model of it."""
        self.session = pairing.make_session(self.options, ref, target, kl=True, executor=self.pool)
        self.session.compact_records = True  # every tensor pair's record is kept for the session: packed
        self.session.alignment.remember_at_most = ORIGINS_REMEMBERED
        return OpTreeModel(self.session.alignment.pairs)

    def build_bisection(self) -> BisectDriver:
        """The bisection order and the dataflow graph over the pairs (networkx: imported after the first paint)."""
        from dumptui.core.search.bisect import Bisection

        return BisectDriver(Bisection(self.opened))

    def adopt(self, driver: BisectDriver) -> None:
        """The bisection is ready for the user's commands (on the UI thread, once it has shown it)."""
        self.driver = driver

    def resume_choice(self) -> tuple[SessionJson | None, str, SessionJson | None]:
        """(the saved session given with --session, a note why it is not resumed, the autosave to offer)."""
        if self.session_file:
            try:
                resume = read_session(self.session_file)
            except SessionError as e:
                return None, f"session not resumed: {e.path}: {say(e.reason)}", None
            other = session_mismatch(resume, self.options.ref, self.options.target)
            if other:  # another pair's marks are refused, never re-applied here with a toast
                return None, f"session not resumed: {say(other)}", None
            return resume, "", None
        saved.prune(os.path.dirname(self.autosave_to))  # autosaves of dumps deleted since: never offered again
        return None, "", saved.resumable(self.autosave_to)  # the same pair left with marks: the user is asked

    # ------------------------------------------------------------------ the statistics of every tensor pair
    def statistics_total(self) -> int:
        session = self.opened
        return sum(len(session.tensor_pairs(p)) for p in session.alignment.pairs)

    def run_statistics(
        self, cancelled: Callable[[], bool], report: Callable[[int, int, dict[int, Verdict | None]], None]
    ) -> int:
        """Every tensor pair, batch by batch in the worker processes; `report(done, total, verdicts)` with the
        verdicts of the ops finished since the last report, at most every VERDICT_BATCH_SECONDS (and once at
        the end). Returns how many tensor pairs were compared."""
        session = self.opened
        pairs = session.alignment.pairs
        jobs = [len(session.tensor_pairs(p)) for p in pairs]  # tensor pairs per op pair, by pair index
        total = sum(jobs)
        done = 0
        pending: dict[int, Verdict | None] = {}
        last = 0.0
        # the run's token: escape sets it (cancel_statistics), which wakes a wait for the workers at once;
        # `cancelled` (the UI's worker cancelled otherwise) is looked at where the token is
        cancel = self.statistics_cancel = Cancel(also=cancelled)

        def size_on_disk(p: OpPair) -> int:
            return sum(t.size_on_disk or 0 for op in (p.ref, p.target) if op is not None for t in op.tensors())

        for batch, batch_jobs in compare_batches(
            pairs, lambda p: jobs[p.index], size_on_disk, JOBS_PER_BATCH, BYTES_PER_BATCH
        ):
            if cancel.is_set():
                break
            if not all(session.cached(r, t) is not None for q in batch for _io, _s, r, t in session.tensor_pairs(q)):
                # (after a noisy pair's scan most batches are known already: no op's result is built for them,
                # a second of this thread's Python, and of the UI thread's waits for the GIL, on the 20,000 ops)
                evaluate_all(session, batch, cancel=cancel)
            done += batch_jobs
            for q in batch:
                pending[q.index] = session.cached_verdict(q, self.judged)
                if len(pending) >= VERDICTS_PER_REPORT:
                    report(min(done, total), total, pending)
                    pending, last = {}, time.monotonic()
            now = time.monotonic()
            if now - last >= VERDICT_BATCH_SECONDS:
                report(min(done, total), total, pending)
                pending, last = {}, now
        if pending:
            report(min(done, total), total, pending)
        return min(done, total)

    def cancel_statistics(self) -> None:
        """escape: the statistics run stops (its pending work dropped, a wait for the workers woken)."""
        self.statistics_cancel.set()

    # ------------------------------------------------------------------ the bisection
    def _driver(self) -> BisectDriver:
        assert self.driver is not None, "bisection work is started once the bisection is ready"
        return self.driver

    def bisect(
        self,
        task: BisectCommand,
        *args: Any,
        progress: Callable[[int, int], None] | None = None,
        first_look: Callable[[BisectState], None] | None = None,
    ) -> tuple[BisectState, str]:
        """One command of the user's; the marks autosaved after it. (state, note to show). `progress(done,
        total)`: the scan's count when the command starts the search (a noisy pair judges every op first);
        `first_look(state)`: meanwhile, the probe it offers first with its own numbers (BisectDriver.start)."""
        driver = self._driver()
        if progress is not None:
            progress = EveryFewCounts(progress, SEARCH_COUNT_SECONDS, time.monotonic)
        with self.bisect_lock:
            note = driver.apply(task, *args, progress=progress, first_look=first_look)
            state, marks = driver.state(), driver.to_json()
        if task != BisectCommand.POINTS:
            note = "; ".join(filter(None, [note, self.autosave(marks)]))
        return state, note

    def run_to_end(
        self, cancelled: Callable[[], bool], report: Callable[[BisectState], object]
    ) -> tuple[BisectState, RunProgress, str]:
        """`a`: step with the computed verdicts until converged, reporting the state at most every
        VERDICT_BATCH_SECONDS; `stop_run` (escape) or `cancelled` stop it after the current step.
        (final state, CONVERGED or STOPPED, note)."""
        driver = self._driver()
        self.stop_run.clear()
        last = 0.0
        while True:
            with self.bisect_lock:
                if not driver.bi.started:
                    driver.start()
                    more = not driver.bi.finished
                else:
                    more = driver.step()
                state, marks = driver.state(), driver.to_json()
            if not more:
                return state, RunProgress.CONVERGED, self.autosave(marks)
            if self.stop_run.is_set() or cancelled():
                return state, RunProgress.STOPPED, "; ".join(filter(None, ["bisection stopped", self.autosave(marks)]))
            now = time.monotonic()
            if now - last >= VERDICT_BATCH_SECONDS:
                report(state)
                last = now

    def autosave(self, marks: SessionJson) -> str:
        """The marks saved for the next launch of this pair (`q` never loses a bisection); a note if not."""
        try:
            saved.autosave(self.autosave_to, marks, self.options.ref, self.options.target, vars(self.options))
        except OSError as e:
            return f"bisection not autosaved: {self.autosave_to}: {e.strerror or e}"
        return ""

    def marks(self, timeout: float) -> SessionJson | None:
        """The bisection's marks as saved; None when no bisection, or it stays busy for `timeout` seconds."""
        if self.driver is None or not self.bisect_lock.acquire(timeout=timeout):
            return None
        try:
            return self.driver.to_json()
        finally:
            self.bisect_lock.release()

    def is_busy(self) -> bool:
        return self.bisect_lock.locked()

    # ------------------------------------------------------------------ one op, one tensor
    def op_detail(self, index: int) -> tuple[OpResult, list[relations.Relation]]:
        """The op's numbers (its tensor pairs read and compared when not yet) and where its inputs come from."""
        session = self.opened
        pair = session.alignment.pairs[index]
        return self.judged_op(session.op_result(pair, purpose=Purpose.VIEW)), relations.relations_of(session, pair)

    def all_compared(self, index: int) -> bool:
        """Every tensor pair of the op is compared already: its detail needs no read (cached lookups)."""
        session = self.opened
        pair = session.alignment.pairs[index]
        return all(session.cached(r, t) is not None for _io, _slot, r, t in session.tensor_pairs(pair))

    def tensor_detail(self, r: TensorResult) -> tuple[list[WorstElement] | None, Histogram | None, str | None]:
        """One tensor pair's worst elements and error histogram, or the problem that stops them."""
        problem = element_detail_problem(r)
        ref, target = r.ref, r.target
        if problem is not None or ref is None or target is None:  # (the problem says when either is not)
            return None, None, problem
        try:
            return elements.worst_elements(ref, target, WORST_ELEMENTS), elements.error_histogram(ref, target), None
        except (OSError, ValueError) as e:
            return None, None, f"read failed: {e}"

    # ------------------------------------------------------------------ exports
    def resume_command(self, session_path: str) -> str:
        """The exact command that resumes a saved session of this pair (paths quoted for a shell)."""
        import shlex

        words = ["dumptui", os.path.abspath(self.options.ref), os.path.abspath(self.options.target)]
        return " ".join(shlex.quote(w) for w in [*words, "--session", session_path])

    def session_payload(self, marks: SessionJson) -> SessionJson:
        return session_payload(marks, self.options.ref, self.options.target, vars(self.options))

    def redump_plan(self, state: BisectState) -> RedumpPlan:
        return redump_plan(self._driver().bi.order, self.opened.alignment.pairs, state)

    def redump_config(self, plan: RedumpPlan, dump_dir: str) -> redump.DumpConfig:
        """The MindSpore dump config (dump_mode 1) for the plan's kernels; ValueError when it cannot be made."""
        return redump.mindspore_config(list(plan.kernels), dump_dir, like=self.opened.target)

    @staticmethod
    def write_text_file(path: str, text: str) -> None:
        """An export the user named (the session, the CSV): its folder made, the file written whole or not at
        all, a FIFO nobody reads refused at once; OSError naming the path."""
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        write_text(path, text)

    def write_redump(self, out: str, config: redump.DumpConfig) -> None:
        redump.write_config(out, config, self.dumps())

    def remedies(self) -> list[Remedy]:
        """Each culprit's remedy (its op replayed at the device's precision: reads its tensors)."""
        with self.bisect_lock:
            roots = self._driver().bi.roots()
        return remedies(self.opened, roots)

    @staticmethod
    def remedy_files(found: list[Remedy]) -> dict[str, str]:
        """The remedy files by name (keep_dtype.cfg, op_precision.ini, converter_ascend.cfg, to_float32.py, REMEDY.txt)."""
        return remedy_files(found)

    @staticmethod
    def write_remedy(folder: str, found: list[Remedy]) -> list[str]:
        return write_files(folder, found)

    def run_judgement(self) -> RunJudgement:
        """What the search decided, every op judged: the finished search's own when it scanned every op (its
        roots are the panel's, the user's marks included), else compare's (a clean pair's bisection reads only
        its probes: the export's local errors and roots need every op, as `compare` judges them)."""
        bi = self.driver.bi if self.driver is not None else None
        if bi is not None and bi.scan_result is not None and bi.finished:
            return judge(bi)
        return judge(every_op_judged(self.opened))

    def report_page(self) -> tuple[str, int]:
        """The report `dumptui report` writes for this pair (one self-contained HTML page) and compare's exit
        code: the same comparison, its tensor pairs already compared by the app."""
        return report_text(self.opened, compare_pair(self.opened))

    def comparison_csv(self, profile: str = DEFAULT_PROFILE) -> tuple[str, int]:
        """Every tensor pair as CSV in `profile` (text, rows): the same table as `compare --csv`, its verdicts,
        local errors and roots the run's judgement."""
        session = self.opened
        judgement = self.run_judgement()
        results = [judgement.op(session.op_result(p, purpose=Purpose.VIEW)) for p in session.alignment.pairs]
        out = io.StringIO()
        rows = write_profile(out, profile, session.ref, session.target, results, judgement)
        return out.getvalue(), rows
