"""The background work in words, and how the full compare is cut into batches.

The full compare runs batch by batch so that its progress moves smoothly and a cancel takes effect
promptly; a batch is closed at a number of tensor pairs or at an amount of data, whichever comes first
(big batches are what the engine hands to its worker processes).
"""

from __future__ import annotations

from typing import Callable, Iterator, Sequence

from dumptui.core.graph.align import OpPair

# the full compare's states
WAITING, RUNNING, DONE, CANCELLED, FAILED = "waiting", "running", "done", "cancelled", "failed"

# what the bisection worker is doing, by the task the screen gave it ("" = idle)
TASK_WORDS = {
    "start": "checking inputs and the graph output",
    "replay": "resuming the session",
    "accept": "probing",
    "overrule": "probing",
    "undo": "undoing",
    "reset": "starting over",
    "run": "running to the end (escape stops)",
}


def task_words(task: str) -> str:
    return TASK_WORDS.get(task, task)


def search_words(task: str, done: int, total: int) -> str:
    """The bisection worker's words while its search is prepared (a noisy pair: every op judged first)."""
    return f"{task_words(task)}: judging every op, {done:,} of {total:,} ({percent(done, total)})"


def percent(done: int, total: int) -> str:
    return f"{100 * done / total:.0f}%" if total else "0%"


def statistics_words(state: str, done: int, total: int, failure: str = "") -> str:
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


def no_diverged_yet(state: str, done: int, total: int, filtering: bool = False) -> str:
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
