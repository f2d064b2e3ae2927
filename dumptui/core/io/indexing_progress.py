"""Counted progress while a dump is indexed, for whoever shows it (the CLI's bar, an indexing process's
parent): `with reporting(fn):` around the indexing, and the readers' long loops call `report` or iterate
through `counted`. Each stage counts one thing (files, lines, ...); `total` is None where the count is not known beforehand
(the lines of a graph file). Without a `reporting` around it, the hooks cost a look at a context variable."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from enum import Enum
from typing import TypeVar

T = TypeVar("T")


class Stage(Enum):
    """What indexing does, in order (also the stage's number in an indexing process's report); what each stage
    counts and its words are report/reasons.py's. Not a string (io is below model's vocabulary base): a stage
    is never written anywhere, only reported."""

    FORMAT = "format"  # finding the format (files looked at)
    LISTING = "listing"  # listing tensor files (files)
    DUMP_JSON = "dump-json"  # reading msprobe's dump.json (calls)
    GRAPH_FILES = "graph-files"  # reading the graph files (lines; no total known beforehand)
    DATAFLOW = "dataflow"  # linking the dataflow (nodes)
    CHECKING = "checking"  # checking tensor files (files)
    STORING = "storing"  # storing the index (ops)
    CACHE = "cache"  # reading the index cache (ops)


STAGE_NAMES: tuple[Stage, ...] = tuple(Stage)
EVERY = 4096  # items between two reports of a long loop: a report costs far more than an item

Report = Callable[[Stage, int, "int | None"], None]  # (stage, done, total or None)

_REPORT: ContextVar[Report | None] = ContextVar("dumptui_indexing_report", default=None)


@contextmanager
def reporting(report: Report | None) -> Iterator[None]:
    """The indexing within the `with` reports its stages to `report` (None: to nobody)."""
    token = _REPORT.set(report)
    try:
        yield
    finally:
        _REPORT.reset(token)


def report(stage: Stage, done: int, total: int | None = None) -> None:
    fn = _REPORT.get()
    if fn is not None:
        fn(stage, done, total)


def counted(stage: Stage, items: Iterable[T], total: int | None = None) -> Iterator[T]:
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
