"""What a dump reader is: a name, a cheap test that a folder holds its format, and `open` that indexes it.

The registry in `dumptui.core.formats` lists one `Reader` per format; adding a format is one module with a
class like these and one line there. `Selection` carries what the user chose (rank, graph, iteration) to the
reader, and `choose_one` is how every reader turns "several found" into one or into a message listing them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol, TypeVar

from dumptui.core.io.errors import DumpError
from dumptui.core.model.dump import Dump, FormatName

T = TypeVar("T")


@dataclass(frozen=True)
class Selection:
    """Which part of a dump to index; None: the only one there is (several: the reader asks to choose)."""

    rank: str | None = None
    graph: str | None = None
    iteration: str | None = None


class Reader(Protocol):
    """One dump format. The three descriptive members are read-only: class attributes implement them."""

    @property
    def name(self) -> FormatName:
        """The format `detect` reports for a dump it recognises."""
        ...

    @property
    def formats(self) -> tuple[FormatName, ...]:
        """Every format `open_dump(fmt=...)` hands to this reader, `name` first."""
        ...

    @property
    def priority(self) -> int:
        """`detect` asks the readers by decreasing priority: the most specific first."""
        ...

    def looks_like(self, path: str) -> bool:
        """Cheap test (folder names, a few file names) that the folder `path` holds this format."""
        ...

    def open(self, path: str, selection: Selection) -> Dump:
        """The index of the dump at `path`; DumpError when it cannot be opened as selected."""
        ...


def choose_one(path: str, found: Mapping[str, T], wanted: str | None, noun: str, option: str) -> tuple[str, T]:
    """(id, value) of the entry of `found` (not empty, in the order to list) that `wanted` names, else of the
    only one; a DumpError listing the ids when `wanted` is not there or there are several to choose from."""
    ids = ", ".join(found)
    if wanted is not None:
        if wanted not in found:
            raise DumpError(path, f"no {noun} {wanted}; {noun}s here: {ids}")
        return wanted, found[wanted]
    if len(found) > 1:
        raise DumpError(path, f"{len(found)} {noun}s ({ids}): choose one with {option}")
    return next(iter(found.items()))
