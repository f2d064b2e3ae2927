"""What `dumptui open-result` shows of an msprobe result: its rows grouped by op into a tree, in an order the
user picks, and where the first failing row is. No Textual here (tui/result_app.py draws it)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from dumptui.report.msprobe_read import MsprobeResult, ResultRow

# the columns shown beside each tensor, when the result has them (tensor modes, then statistics modes)
SUMMARY_COLUMNS = ("Cosine", "MaxAbsErr", "MaxRelativeErr", "Max diff", "Accuracy Reached or Not", "Result")


def _num(text: str) -> float:
    try:
        v = float(text)
    except (TypeError, ValueError):
        return math.nan
    return v


def _nan_last(v: float, reverse: bool = False) -> tuple[int, float]:
    return (1, 0.0) if math.isnan(v) else (0, -v if reverse else v)


@dataclass(frozen=True)
class SortOrder:
    key: str
    label: str
    row_key: Callable[[ResultRow], object]


SORTS = (
    SortOrder("order", "execution order", lambda r: r.order),
    SortOrder("name", "name", lambda r: (r.op, r.tensor)),
    SortOrder("cosine", "cosine, lowest first", lambda r: (_nan_last(_num(r.cells.get("Cosine", ""))), r.order)),
    SortOrder(
        "maxabs",
        "max abs error, largest first",
        lambda r: (_nan_last(_num(r.cells.get("MaxAbsErr") or r.cells.get("Max diff", "")), reverse=True), r.order),
    ),
    SortOrder("failing", "failing first", lambda r: (not r.failing, r.order)),
)


@dataclass
class OpGroup:
    op: str
    rows: list[ResultRow]

    @property
    def failing(self) -> bool:
        return any(r.failing for r in self.rows)


def group(result: MsprobeResult, sort: SortOrder) -> list[OpGroup]:
    """Ops in the order of their best-placed row under `sort`; an op's rows in that order too."""
    rows = sorted(result.rows, key=sort.row_key)  # type: ignore[arg-type, return-value]
    groups: dict[str, OpGroup] = {}
    for r in rows:
        groups.setdefault(r.op, OpGroup(r.op, [])).rows.append(r)
    return list(groups.values())


def next_sort(current: SortOrder) -> SortOrder:
    return SORTS[(SORTS.index(current) + 1) % len(SORTS)]


def row_summary(row: ResultRow, header: list[str]) -> str:
    """`output.0  Cosine 0.548  MaxAbsErr 8.03  No` from the columns this result has."""
    parts = [row.tensor or "-"]
    for col in SUMMARY_COLUMNS:
        if col in header and row.cells.get(col, ""):
            v = row.cells[col]
            parts.append(v if col in ("Accuracy Reached or Not", "Result") else f"{col} {_short(v)}")
    return "  ".join(parts)


def _short(text: str) -> str:
    v = _num(text)
    if math.isnan(v):
        return text
    return f"{v:.6g}"


def detail_lines(row: ResultRow, header: list[str]) -> list[tuple[str, str]]:
    """Every column of a row, in the file's order, empty ones left out."""
    return [(h, row.cells.get(h, "")) for h in header if row.cells.get(h, "")]


def find_row(
    result: MsprobeResult, query: str, after: tuple[int, int] | None, forward: bool = True, inclusive: bool = False
) -> ResultRow | None:
    """The next row (in execution order, wrapping) whose op or tensor name holds `query` (any case), from the
    row at `after` (itself too when `inclusive`: typing keeps the cursor on a row that still matches)."""
    words = query.strip().lower()
    if not words:
        return None
    rows = sorted(result.rows, key=lambda r: r.order)
    hits = [r for r in rows if words in r.op.lower() or words in r.name.lower()]
    if not hits:
        return None
    if after is None:
        return hits[0] if forward else hits[-1]
    if forward:
        later = [r for r in hits if r.order > after or (inclusive and r.order == after)]
        return later[0] if later else hits[0]
    earlier = [r for r in hits if r.order < after or (inclusive and r.order == after)]
    return earlier[-1] if earlier else hits[-1]


def count_rows(result: MsprobeResult, query: str) -> int:
    words = query.strip().lower()
    return sum(1 for r in result.rows if words and (words in r.op.lower() or words in r.name.lower()))


def headline(result: MsprobeResult) -> str:
    failing = sum(r.failing for r in result.rows)
    first = result.first_failing()
    where = f"; first failing in execution order: {first.op} {first.tensor}" if first else ""
    return f"{result.path}: {len(result.rows)} rows, {failing} failing ({result.order_source}){where}"
