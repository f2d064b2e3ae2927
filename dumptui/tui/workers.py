"""Helpers for thread workers."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import TypeVar

from textual.worker import Worker

T = TypeVar("T")
POLL_SECONDS = 0.05


class Abandoned(Exception):
    """The worker was cancelled while the call it waited for was still running."""


def lower_this_thread(nice: int) -> None:
    """This thread `nice` steps below its process's priority, for good (Linux schedules threads one by one,
    and an unprivileged thread may lower its priority but never raise it again: so only on a thread of its
    own). Elsewhere, or when refused, the thread runs as it is."""
    try:
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, min(19, os.getpriority(os.PRIO_PROCESS, tid) + nice))
    except (OSError, AttributeError):
        pass


def wait_abandonable(fn: Callable[[], T], worker: Worker, name: str = "dumptui-call", nice: int = 0) -> T:
    """Run `fn` in a daemon thread and wait for it, giving up as soon as `worker` is cancelled.

    Why: a thread worker runs in asyncio's default executor, which the app joins when it exits; a call that
    cannot be interrupted (indexing a 20,000-op dump, reading a large tensor) would keep `q` from quitting
    for as long as it runs. A daemon thread is abandoned instead (it only reads: the dumps are opened
    read-only and nothing is written beside them). `nice`: the thread runs that much below the UI's priority.
    """
    box: dict[str, object] = {}
    done = threading.Event()

    def target() -> None:
        if nice:
            lower_this_thread(nice)
        try:
            box["value"] = fn()
        except BaseException as e:  # handed to the waiting worker, which reports it
            box["error"] = e
        finally:
            done.set()

    threading.Thread(target=target, name=name, daemon=True).start()
    while not done.wait(POLL_SECONDS):
        if worker.is_cancelled:
            raise Abandoned(name)
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box["value"]  # type: ignore[return-value]
