"""Counted progress while a dump is indexed, for whoever shows it (the CLI's bar, an indexing process's
parent): `with reporting(fn):` around the indexing, and the readers' long loops call `report` or iterate
through `counted`. Each stage says what it counts; `total` is None where the count is not known beforehand
(the lines of a graph file). Without a `reporting` around it, the hooks cost a look at a context variable."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TypeVar

T = TypeVar("T")

# what indexing does, in order, and what each counts: also the stage's number in an indexing process's report
STAGES: Sequence[tuple[str, str]] = (
    ("finding the format", "files"),
    ("listing tensor files", "files"),
    ("reading dump.json", "calls"),
    ("reading the graph files", "lines"),
    ("linking the dataflow", "nodes"),
    ("checking tensor files", "files"),
    ("storing the index", "ops"),
    ("reading the index cache", "ops"),
)
STAGE_NAMES = tuple(name for name, _unit in STAGES)
UNITS = dict(STAGES)
EVERY = 4096  # items between two reports of a long loop: a report costs far more than an item

Report = Callable[[str, int, "int | None"], None]  # (stage, done, total or None)

_REPORT: ContextVar[Report | None] = ContextVar("dumptui_indexing_report", default=None)


@contextmanager
def reporting(report: Report | None) -> Iterator[None]:
    """The indexing within the `with` reports its stages to `report` (None: to nobody)."""
    token = _REPORT.set(report)
    try:
        yield
    finally:
        _REPORT.reset(token)


def report(stage: str, done: int, total: int | None = None) -> None:
    fn = _REPORT.get()
    if fn is not None:
        fn(stage, done, total)


def counted(stage: str, items: Iterable[T], total: int | None = None) -> Iterator[T]:
    """`items`, with (stage, done, total) reported every EVERY items and at the end; `total` taken from
    `items` when it has a length."""
    fn = _REPORT.get()
    if fn is None:
        yield from items
        return
    if total is None and isinstance(items, Sequence):
        total = len(items)
    done = 0
    fn(stage, 0, total)
    for item in items:
        yield item
        done += 1
        if done % EVERY == 0:
            fn(stage, done, total)
    fn(stage, done, total)
