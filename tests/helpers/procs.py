"""Processes as the tests see them."""

from __future__ import annotations


def alive(pid: int) -> bool:
    """Whether the process runs (a zombie has ended). A process reaped while its /proc entry is read makes the
    read fail with ESRCH (ProcessLookupError), not ENOENT: that is an ended process too, never an error."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"  # a zombie has ended
    except (FileNotFoundError, ProcessLookupError):
        return False


def wait_gone(pids: list[int], timeout: float) -> list[int]:
    """Wait until every process has ended, woken by each one's end (a pidfd becomes readable when its process
    exits, zombie or not), never by polling; the pids still running after `timeout` seconds are returned."""
    import os
    import select
    import time

    deadline = time.monotonic() + timeout
    for pid in pids:
        try:
            fd = os.pidfd_open(pid)
        except ProcessLookupError:  # already ended and reaped
            continue
        try:
            select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        finally:
            os.close(fd)
    return [pid for pid in pids if alive(pid)]
