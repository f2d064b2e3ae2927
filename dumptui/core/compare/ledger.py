"""The read ledger: which tensor pairs were read, and why, each counted once.

Bisection promises to read little; the ledger is how it proves it (`bisect` prints the count by purpose). A
pair read twice (a cheap byte compare, then the statistics) is one read, booked under its first purpose.
"""

from __future__ import annotations

import threading
from array import array
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
    """Thread-safe: workers of the app and of a full compare book reads concurrently.

    A session keeps every read booked for as long as it runs (the app's: every tensor pair, 70,000 of the
    20,000-op demo pair), so the reads are kept by (io, slot): one dict of op -> purpose each, no tuple a read
    (4 MB of the demo's); their booking order as one number each in an array."""

    def __init__(self) -> None:
        self._by_slot: dict[tuple[InOut, int], dict[str, Purpose]] = {}  # (io, slot) -> op -> purpose
        self._slots: list[tuple[InOut, int]] = []  # the (io, slot) of each dict above, by its number
        self._number: dict[tuple[InOut, int], int] = {}  # ...and its number by (io, slot)
        self._order = array("q")  # each read's (io, slot) number << 32 | its place in that dict, as booked
        self._counts: dict[Purpose, int] = {}  # purpose -> reads, in the order purposes first appeared
        self._lock = threading.Lock()

    def book(self, purpose: Purpose, op: str, io: InOut, slot: int) -> None:
        with self._lock:
            where = (io, slot)
            ops = self._by_slot.get(where)
            if ops is None:
                ops = self._by_slot[where] = {}
                self._number[where] = len(self._slots)
                self._slots.append(where)
            if op not in ops:
                self._order.append(self._number[where] << 32 | len(ops))
                ops[op] = purpose
                self._counts[purpose] = self._counts.get(purpose, 0) + 1

    @property
    def count(self) -> int:
        return len(self._order)

    def reads(self) -> list[Read]:
        """Every read, in the order they were booked."""
        with self._lock:
            booked = [list(self._by_slot[where].items()) for where in self._slots]
            out = []
            for code in self._order:
                op, purpose = booked[code >> 32][code & 0xFFFFFFFF]
                out.append(Read(purpose, op, *self._slots[code >> 32]))
            return out

    def by_purpose(self) -> dict[Purpose, int]:
        """Purpose -> reads, in the order purposes first appeared."""
        with self._lock:
            return dict(self._counts)

    def summary(self) -> str:
        """`32 (23 precondition, 1 graph output, ...)`."""
        parts = ", ".join(f"{n} {k}" for k, n in self.by_purpose().items())
        return f"{self.count} ({parts})" if parts else str(self.count)
