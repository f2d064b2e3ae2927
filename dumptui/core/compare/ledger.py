"""The read ledger: which tensor pairs were read, and why, each counted once.

Bisection promises to read little; the ledger is how it proves it (`bisect` prints the count by purpose). A
pair read twice (a cheap byte compare, then the statistics) is one read, booked under its first purpose.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from dumptui.core.model.dump import InOut


@dataclass(frozen=True)
class Read:
    purpose: str  # "precondition", "graph output", "probe", "culprit check", "other roots", "compare"...
    op: str  # the op pair's key
    io: InOut
    slot: int

    def __str__(self) -> str:
        return f"{self.purpose}: {self.op} {self.io}.{self.slot}"


class ReadLedger:
    """Thread-safe: workers of the app and of a full compare book reads concurrently."""

    def __init__(self) -> None:
        # (op, io, slot) -> purpose; a Read is made only when asked for: a full compare books every pair
        self._reads: dict[tuple[str, InOut, int], str] = {}
        self._lock = threading.Lock()

    def book(self, purpose: str, op: str, io: InOut, slot: int) -> None:
        key = (op, io, slot)
        with self._lock:
            if key not in self._reads:
                self._reads[key] = purpose or "compare"

    @property
    def count(self) -> int:
        return len(self._reads)

    def reads(self) -> list[Read]:
        with self._lock:
            return [Read(purpose, *key) for key, purpose in self._reads.items()]

    def by_purpose(self) -> dict[str, int]:
        """Purpose -> reads, in the order purposes first appeared."""
        out: dict[str, int] = {}
        for r in self.reads():
            out[r.purpose] = out.get(r.purpose, 0) + 1
        return out

    def summary(self) -> str:
        """`32 (23 precondition, 1 graph output, ...)`."""
        parts = ", ".join(f"{n} {k}" for k, n in self.by_purpose().items())
        return f"{self.count} ({parts})" if parts else str(self.count)
