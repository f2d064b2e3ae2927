"""The background work in words, and how the full compare is cut into batches.

The full compare runs batch by batch so that its progress moves smoothly and a cancel takes effect
promptly; a batch is closed at a number of tensor pairs or at an amount of data, whichever comes first
(big batches are what the engine hands to its worker processes).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from enum import Enum

from dumptui.core.graph.align import OpPair
from dumptui.core.io.indexing_progress import Stage
from dumptui.present.driver import BisectCommand
from dumptui.report.reasons import STAGE_WORDS


class StatisticsState(str, Enum):
    """The full compare in the app: not started yet, running, done, cancelled by the user, or failed."""

    WAITING = "waiting"
    RUNNING = "running"
    DONE = "done"
    CANCELLED = "cancelled"
    FAILED = "failed"

    __str__ = str.__str__


WAITING, RUNNING, DONE, CANCELLED, FAILED = (
    StatisticsState.WAITING,
    StatisticsState.RUNNING,
    StatisticsState.DONE,
    StatisticsState.CANCELLED,
    StatisticsState.FAILED,
)

# what the bisection worker is doing, by the command the screen gave it
TASK_WORDS = {
    BisectCommand.START: "checking inputs and the graph output",
    BisectCommand.REPLAY: "resuming the session",
    BisectCommand.ACCEPT: "probing",
    BisectCommand.OVERRULE: "probing",
    BisectCommand.UNDO: "undoing",
    BisectCommand.RESET: "starting over",
    BisectCommand.POINTS: "updating the plot",
    BisectCommand.RUN: "running to the end (escape stops)",
}


def task_words(task: BisectCommand | None) -> str:
    """ "" when the bisection worker is idle (None)."""
    return TASK_WORDS[task] if task is not None else ""


def search_words(task: BisectCommand | None, done: int, total: int) -> str:
    """The bisection worker's words while its search is prepared (a noisy pair: every op judged first)."""
    return f"{task_words(task)}: judging every op, {done:,} of {total:,} ({percent(done, total)})"


def percent(done: int, total: int) -> str:
    return f"{100 * done / total:.0f}%" if total else "0%"


def statistics_words(state: StatisticsState, done: int, total: int, failure: str = "") -> str:
    """The status line's part about the full compare ("" before it starts); `failure`: the path and reason of
    the error that stopped it."""
    if state == RUNNING:
        return f"statistics {percent(done, total)} (esc cancels)"
    if state == CANCELLED:
        return "statistics cancelled (ctrl+p: compute)"
    if state == FAILED:
        return f"statistics failed: {failure} (ctrl+p: compute again)" if failure else "statistics failed (ctrl+p)"
    if state == DONE:
        return "statistics done"
    return ""


def no_diverged_yet(state: StatisticsState, done: int, total: int, filtering: bool = False) -> str:
    """What `n` / `N` (or `f`, `filtering`) say when no diverged op is known."""
    if state == DONE:
        return "no diverged op: every compared op agrees"
    if state == FAILED:
        return "no diverged op known: the statistics stopped on an error (ctrl+p: compute)"
    if filtering:
        return f"no diverged op known yet: the list fills as statistics arrive ({percent(done, total)})"
    return f"no diverged op known yet (statistics {percent(done, total)} computed)"


def compare_batches(
    pairs: Sequence[OpPair],
    jobs_of: Callable[[OpPair], int],
    bytes_of: Callable[[OpPair], int],
    max_jobs: int,
    max_bytes: int,
) -> Iterator[tuple[list[OpPair], int]]:
    """`pairs` in order, cut into batches of at most `max_jobs` tensor pairs or `max_bytes` (a batch
    closes at the pair that reaches either). Yields (batch, tensor pairs in it)."""
    batch: list[OpPair] = []
    jobs = size = 0
    for p in pairs:
        batch.append(p)
        jobs += jobs_of(p)
        size += bytes_of(p)
        if jobs >= max_jobs or size >= max_bytes:
            yield batch, jobs
            batch, jobs, size = [], 0, 0
    if batch:
        yield batch, jobs


class EveryFewCounts:
    """A count passed on at most every `seconds` (the first, then the latest after each interval, and always
    the last one, `done == total`): each one the app shows is a repaint, and a noisy pair's search counts every
    tensor pair it compares (tens of thousands: repainted per count, the UI thread spent seconds in Textual's
    compositor). `clock`: seconds, monotonic (a test gives its own)."""

    def __init__(self, report: Callable[[int, int], None], seconds: float, clock: Callable[[], float]):
        self.report, self.seconds, self.clock = report, seconds, clock
        self._last: float | None = None

    def __call__(self, done: int, total: int) -> None:
        now = self.clock()
        if done >= total or self._last is None or now - self._last >= self.seconds:
            self._last = now
            self.report(done, total)


class IndexingWords:
    """How far the indexing of each dump has come, in words for the status line: each side's stage and count,
    with the time left where the stage knows its total (from the stage's own rate so far). `clock`: seconds,
    monotonic (a test gives its own)."""

    def __init__(self, clock: Callable[[], float]):
        self.clock = clock
        self._sides: dict[str, tuple[Stage, float, int, int | None]] = {}  # side -> (stage, its start, done, total)

    def update(self, side: str, stage: Stage, done: int, total: int | None) -> str:
        now = self.clock()
        was = self._sides.get(side)
        started = was[1] if was is not None and was[0] == stage else now
        self._sides[side] = (stage, started, done, total)
        return "indexing " + " · ".join(self._words(s, now) for s in self._sides)

    def _words(self, side: str, now: float) -> str:
        stage, started, done, total = self._sides[side]
        doing, unit = STAGE_WORDS[stage]
        count = f"{done:,} {unit}" if total is None else f"{done:,} of {total:,} {unit}"
        elapsed = now - started
        if total is not None and 0 < done < total and elapsed >= 1.0:
            count += f", ~{(total - done) * elapsed / done:.0f} s left"
        return f"{side}: {doing} {count}".rstrip()
