"""Cold indexing in processes of their own: each dump missing from the index cache is indexed by a worker
process (core/io/executor.py `LocalProcesses`, one per dump) that stores it there, both dumps at once; the
caller then opens them from the cache.

Why (the app on big dumps): indexing makes and drops many transient objects. Done in the UI process, they
left its heap fragmented, so after a cold open of the 20,000-op demo the app kept ~20 MB more for the rest
of the session than after an open from the cache; and the two dumps took turns on one core (threads share
the GIL). In processes, both dumps are indexed in parallel and the UI process holds only what the cache
gives back, as on any later open.

Anything that goes wrong here (no cache folder to write, a dump that cannot be indexed) only means the
caller indexes that dump itself, with its usual errors.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
from collections.abc import Callable
from functools import partial
from typing import Any

from dumptui.core.formats.registry import open_dump
from dumptui.core.index import cache as indexcache
from dumptui.core.io.executor import LocalProcesses
from dumptui.core.io.fault import Fault, Flaw
from dumptui.core.io.indexing_progress import STAGE_NAMES, Stage, reporting

Request = tuple[str, str | None, str | None, str | None, str | None]  # path, rank, graph, iteration, fmt
# (which dump: its path here, its side from open_pair; stage, done, total or None): how far its indexing has come
IndexingReport = Callable[[str, Stage, int, "int | None"], None]

REPORT_SECONDS = 0.1  # how often the caller hears how far the children have come
_FIELDS = 3  # a child's report on the board: stage number (0: not started), done, total (-1: unknown)

# in a child: the board shared with the caller (a few integers per request, written here, read there)
_board: Any = None


def _keep_board(board: Any) -> None:
    global _board  # noqa: PLW0603 (a worker's setup: the only way to hand it its shared board)
    _board = board


def _to_board(slot: int) -> Callable[[Stage, int, int | None], None]:
    def report(stage: Stage, done: int, total: int | None) -> None:
        at = slot * _FIELDS
        _board[at + 1], _board[at + 2] = done, -1 if total is None else total
        _board[at] = STAGE_NAMES.index(stage) + 1

    return report


def _index_into_cache(task: tuple[Request, tuple[str, ...], int | None]) -> str | Fault:
    """In the child: index the dump and store it in the cache; '' when stored, else why not. `dumps`: every
    dump folder of the caller's run, none of which may hold the entry (a cache folder inside the other dump).
    `slot`: where on the board it reports how far it has come."""
    request, dumps, slot = task
    path, rank, graph, iteration, fmt = request
    indexcache.protect(*dumps)
    try:
        with reporting(_to_board(slot) if slot is not None and _board is not None else None):
            open_dump(path, rank=rank, graph=graph, iteration=iteration, fmt=fmt, cache=True)
    except Exception as e:  # the caller indexes it again in its own process and reports the error there
        return f"{type(e).__name__}: {e}"
    entry = indexcache.entry_path(path, fmt, (rank, graph, iteration))
    return "" if indexcache.current(entry) else Fault(Flaw.NOT_STORED)


def missing_from_cache(requests: list[Request]) -> list[Request]:
    """The requests whose dump has no current cache entry (all of them when the cache is off)."""
    out = []
    for req in requests:
        path, rank, graph, iteration, fmt = req
        if not indexcache.enabled() or not os.path.isdir(path):
            continue  # nothing a child could store for the caller
        try:
            entry = indexcache.entry_path(path, fmt, (rank, graph, iteration))
        except OSError:
            continue
        if not indexcache.current(entry):
            out.append(req)
    return out


def index_into_cache(requests: list[Request], report: IndexingReport | None = None) -> dict[Request, str | Fault]:
    """Index every request missing from the cache, each in a worker process, all at once; returns, per
    request indexed, '' when its entry is now in the cache, else why not. The processes end with this call
    (their memory goes with them); they also end if the caller's process ends first. `report`: told every
    REPORT_SECONDS how far each dump's indexing has come (from this thread)."""
    todo = missing_from_cache(requests)
    if not todo:
        return {}
    board = multiprocessing.get_context("spawn").RawArray("q", _FIELDS * len(todo))
    ex = LocalProcesses(len(todo), setup=partial(_keep_board, board))
    dumps = tuple(req[0] for req in requests)
    found: dict[int, str | Fault] = {}
    failed: list[Exception] = []
    finished = threading.Event()

    def collect() -> None:  # the results, in a thread of their own: this one reports the board meanwhile
        try:
            found.update(ex.map(_index_into_cache, [(req, dumps, slot) for slot, req in enumerate(todo)]))
        except Exception as e:  # a child that died (killed, out of memory): the caller indexes in-process
            failed.append(e)
        finally:
            finished.set()

    try:
        threading.Thread(target=collect, name="dumptui-indexing", daemon=True).start()
        while True:
            ended = finished.wait(REPORT_SECONDS if report else None)
            if report is not None:
                for slot, req in enumerate(todo):
                    stage, done, total = board[slot * _FIELDS : slot * _FIELDS + _FIELDS]
                    if stage:
                        report(req[0], STAGE_NAMES[stage - 1], done, None if total < 0 else total)
            if ended:
                break
        if failed:  # a child that died (killed, out of memory): the caller indexes in-process
            return {req: Fault(Flaw.INDEXING_PROCESS_FAILED, (str(failed[0]),)) for req in todo}
        return {req: found[slot] for slot, req in enumerate(todo)}
    finally:
        ex.close()
