"""Cold indexing in processes of their own: each dump missing from the index cache is indexed by a spawned
process that stores it there, both dumps at once; the caller then opens them from the cache.

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
from concurrent.futures import ProcessPoolExecutor
from functools import partial

from dumptui.core.formats import open_dump
from dumptui.core.index import cache as indexcache
from dumptui.core.io.procs import start_resource_tracker, worker_start

Request = tuple[str, str | None, str | None, str | None, str | None]  # path, rank, graph, iteration, fmt


def _index_into_cache(request: Request, dumps: tuple[str, ...] = ()) -> str:
    """In the child: index the dump and store it in the cache; '' when stored, else why not. `dumps`: every
    dump folder of the caller's run, none of which may hold the entry (a cache folder inside the other dump)."""
    path, rank, graph, iteration, fmt = request
    indexcache.protect(*dumps)
    try:
        open_dump(path, rank=rank, graph=graph, iteration=iteration, fmt=fmt, cache=True)
    except Exception as e:  # the caller indexes it again in its own process and reports the error there
        return f"{type(e).__name__}: {e}"
    entry = indexcache.entry_path(path, fmt, (rank, graph, iteration))
    return "" if indexcache.current(entry) else "not stored in the index cache"


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


def index_into_cache(requests: list[Request]) -> dict[Request, str]:
    """Index every request missing from the cache, each in a spawned process, all at once; returns, per
    request indexed, '' when its entry is now in the cache, else why not. The processes end with this call
    (their memory goes with them); they also end if the caller's process ends first."""
    todo = missing_from_cache(requests)
    if not todo:
        return {}
    start_resource_tracker()
    ex = ProcessPoolExecutor(
        max_workers=len(todo),
        mp_context=multiprocessing.get_context("spawn"),
        initializer=partial(worker_start, 0, os.getpid()),
    )
    try:
        dumps = tuple(req[0] for req in requests)
        return dict(zip(todo, ex.map(partial(_index_into_cache, dumps=dumps), todo)))
    except Exception as e:  # a child that died (killed, out of memory): the caller indexes in-process
        return {req: f"indexing process failed: {e}" for req in todo}
    finally:
        ex.shutdown(wait=True, cancel_futures=True)
