"""The read ledger: which tensor pairs were read, and why, each counted once.

Bisection promises to read little; the ledger is how it proves it (`bisect` prints the count by purpose). A
pair read twice (a cheap byte compare, then the statistics) is one read, booked under its first purpose.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from dumptui.core.model.dump import InOut
from dumptui.core.model.vocab import Word


class Purpose(Word):
    """Why a tensor pair was read: the ledger's key, printed by `bisect` and written in its JSON as it is."""

    PRECONDITION = "precondition"  # the inputs and parameters checked before a bisection
    GRAPH_OUTPUT = "graph output"  # the graph's outputs, judged before the search starts
    PROBE = "probe"  # a bisection step
    CULPRIT_CHECK = "culprit check"  # the culprit's own inputs and outputs, and the local error's measure
    OTHER_ROOTS = "other roots"  # the search for further independent roots
    SCAN = "scan"  # a scan for the largest local errors
    VIEW = "view"  # an op shown in the app
    COMPARE = "compare"  # a full compare, and any read that names no purpose


@dataclass(frozen=True)
class Read:
    purpose: Purpose
    op: str  # the op pair's key
    io: InOut
    slot: int

    def __str__(self) -> str:
        return f"{self.purpose}: {self.op} {self.io}.{self.slot}"


class ReadLedger:
    """Thread-safe: workers of the app and of a full compare book reads concurrently."""

    def __init__(self) -> None:
        # (op, io, slot) -> purpose; a Read is made only when asked for: a full compare books every pair
        self._reads: dict[tuple[str, InOut, int], Purpose] = {}
        self._lock = threading.Lock()

    def book(self, purpose: Purpose, op: str, io: InOut, slot: int) -> None:
        key = (op, io, slot)
        with self._lock:
            if key not in self._reads:
                self._reads[key] = purpose

    @property
    def count(self) -> int:
        return len(self._reads)

    def reads(self) -> list[Read]:
        with self._lock:
            return [Read(purpose, *key) for key, purpose in self._reads.items()]

    def by_purpose(self) -> dict[Purpose, int]:
        """Purpose -> reads, in the order purposes first appeared."""
        out: dict[Purpose, int] = {}
        for r in self.reads():
            out[r.purpose] = out.get(r.purpose, 0) + 1
        return out

    def summary(self) -> str:
        """`32 (23 precondition, 1 graph output, ...)`."""
        parts = ", ".join(f"{n} {k}" for k, n in self.by_purpose().items())
        return f"{self.count} ({parts})" if parts else str(self.count)
