"""Helpers for thread workers."""

from __future__ import annotations

import threading
from typing import Callable, TypeVar

from textual.worker import Worker

T = TypeVar("T")
POLL_SECONDS = 0.05


class Abandoned(Exception):
    """The worker was cancelled while the call it waited for was still running."""


def wait_abandonable(fn: Callable[[], T], worker: Worker, name: str = "dumptui-call") -> T:
    """Run `fn` in a daemon thread and wait for it, giving up as soon as `worker` is cancelled.

    Why: a thread worker runs in asyncio's default executor, which the app joins when it exits; a call that
    cannot be interrupted (indexing a 20,000-op dump, reading a large tensor) would keep `q` from quitting
    for as long as it runs. A daemon thread is abandoned instead (it only reads: the dumps are opened
    read-only and nothing is written beside them).
    """
    box: dict[str, object] = {}
    done = threading.Event()

    def target() -> None:
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
