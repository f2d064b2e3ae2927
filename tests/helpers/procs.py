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
