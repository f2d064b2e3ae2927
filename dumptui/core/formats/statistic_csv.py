"""MindSpore's `statistic.csv` (dumps with `saved_data: statistic`): one row per tensor, statistics only.

Three header variants are known (docs/formats.md#mindspore-native-dump): 1.6-2.2 with zero/inf/nan counts, 1.6+ with `L2 Value` and `MD5`,
and 2.4+ whose statistic columns are configurable (`statistic_category`). The first ten columns are fixed.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterator
from typing import Any

from dumptui.core.io import dtypes, limits
from dumptui.core.io.fault import Fault, Flaw
from dumptui.core.io.safeio import text_lines
from dumptui.core.model.dump import INOUT_NAMED
from dumptui.core.model.vocab import Word

FIXED_COLUMNS = [
    "Op Type",
    "Op Name",
    "Task ID",
    "Stream ID",
    "Timestamp",
    "IO",
    "Slot",
    "Data Size",
    "Data Type",
    "Shape",
]
# statistic column (lower case) -> the key of TensorRef.stats
STAT_KEYS = {
    "max value": "max",
    "min value": "min",
    "avg value": "mean",
    "count": "count",
    "negative zero count": "neg_zero",
    "positive zero count": "pos_zero",
    "nan count": "nan",
    "negative inf count": "neg_inf",
    "positive inf count": "pos_inf",
    "zero count": "zero",
    "l2 value": "l2",
    "l2norm value": "l2",
    "md5": "md5",
}


ZERO = 0.0
SAME_LIMIT = 1 << 18  # distinct values shared at most (a few MB); beyond, the table starts again


def _stat_float(v: str | None) -> float | str | None:
    """A statistic cell: a number, None when empty or null, nan for nan; text kept when it is not a number."""
    if v is None:
        return None
    v = v.strip()
    if v == "" or v.lower() in ("null", "none", "nan"):
        return None if v.lower() != "nan" else float("nan")
    try:
        return float(v)
    except ValueError:
        return v[:100]  # text kept (a file's cell can be long: kept short)


class StatisticHeader(Word):
    """Which of MindSpore's statistic.csv headers a file has (report/reasons.py words it)."""

    V16_22 = "1.6-2.2"  # MindSpore 1.6 to 2.2
    L2_MD5 = "1.6+l2-md5"  # the same columns and L2 Value, MD5
    CONFIGURABLE = "2.4+configurable"  # MindSpore 2.4+: the columns statistic_category chooses
    EMPTY = "empty"  # a file without a header


def _variant(statistic_columns: list[str]) -> StatisticHeader:
    rest = [h.lower() for h in statistic_columns]
    if "l2 value" in rest:
        return StatisticHeader.L2_MD5
    if "negative zero count" in rest and "l2norm value" not in rest:
        return StatisticHeader.V16_22
    return StatisticHeader.CONFIGURABLE


def _shape(text: str) -> tuple[int, ...] | None:
    """The quoted shape of a row, `"(1,3,32,32)"`; BadValue when it is not a valid one."""
    inner = text.strip().strip('"').strip("()[] ")
    if not inner:
        return ()
    try:
        dims = [int(x) for x in inner.split(",") if x.strip()]
    except ValueError:
        raise limits.BadValue(f"shape {limits.brief(text)} is not a list of integers") from None
    return limits.shape(dims)


def _count(text: str, what: str) -> int:
    """A non-negative integer cell (timestamp, slot); empty means 0."""
    text = text.strip()
    if not text:
        return 0
    if not text.isascii() or not text.isdigit() or len(text) > limits.MAX_INT_DIGITS:
        raise limits.BadValue(f"{what} {limits.brief(text)} is not a number")
    return int(text)


def _row(header: list[str], row: list[str], same: dict[Any, Any]) -> dict[str, Any]:
    """One row; `same` makes equal things one object across the file (a shape, an op name, a consumer's input
    row that repeats its producer's output row), and every count of 0 is one float: a 2,000,000-row file held
    22 million float objects, most of them 0.0."""
    rec = dict(zip(header, row))
    stats: dict[str, float | str | None] = {}
    for h, v in zip(header[10:], row[10:]):
        k = STAT_KEYS.get(h.lower())
        if k:
            value = v.strip() if k == "md5" else _stat_float(v)
            # most counts are 0: one object for them all (-0.0 keeps its own: its sign is a value)
            stats[k] = ZERO if value == 0 and type(value) is float and math.copysign(1.0, value) > 0 else value
    # a consumer's input row repeats its producer's output row: one dict for both
    stats = same.setdefault(("stats", *stats.items()), stats)
    io = INOUT_NAMED.get(rec["IO"].strip().lower())
    if io is None:
        raise limits.BadValue(f"IO {limits.brief(rec['IO'])} is neither input nor output")
    size = rec["Data Size"].strip()
    shape = _shape(rec["Shape"])
    return dict(
        op_type=same.setdefault(rec["Op Type"], rec["Op Type"]),
        name=same.setdefault(rec["Op Name"], rec["Op Name"]),
        ts=_count(rec["Timestamp"], "timestamp"),
        io=io,
        slot=_count(rec["Slot"], "slot"),
        dtype=dtypes.canonical(rec["Data Type"]) or rec["Data Type"].strip().lower(),
        shape=same.setdefault(shape, shape),
        stats=stats,
        size=int(size) if size.isascii() and size.isdigit() and len(size) <= limits.MAX_INT_DIGITS else None,
    )


def statistic_rows(path: str, skipped: list[Fault] | None = None) -> tuple[StatisticHeader, Iterator[dict[str, Any]]]:
    """The header variant of a statistic.csv, and its rows one at a time as dicts (op_type, name, ts, io,
    slot, dtype, shape, stats, size): a 2,000,000-row file is never held as rows, only as the tensors made of
    them. A row with a bad value is left out, its line and reason added to `skipped`. Raises OSError, or
    ValueError for a header it does not know or a file the csv module cannot split (also while iterating)."""
    reader = csv.reader(text_lines(path))
    try:
        first = next(reader, None)
    except csv.Error as e:
        raise ValueError(f"not a readable csv file: {e}") from None
    if not first:
        return StatisticHeader.EMPTY, iter(())
    header = [h.strip() for h in first]
    if header[:10] != FIXED_COLUMNS:
        raise ValueError(f"unknown statistic.csv header: {limits.brief(','.join(header[:10]), 200)}")

    def rows() -> Iterator[dict[str, Any]]:
        same: dict[Any, Any] = {}
        try:
            for row in reader:
                if not row:  # a blank line
                    continue
                if len(row) != len(header):
                    # a row cut short (the file ends inside it, a write stopped) or run together with the next:
                    # never a tensor with the statistics it happens to have, never left out unsaid
                    if skipped is not None:
                        cut = len(row) < len(header)
                        skipped.append(Fault(Flaw.ROW_COLUMNS, (reader.line_num, cut, len(row), len(header))))
                    continue
                if len(same) > SAME_LIMIT:  # values that do not repeat: the table would only grow
                    same.clear()
                try:
                    yield _row(header, row, same)
                except limits.BadValue as e:
                    if skipped is not None:
                        skipped.append(Fault(Flaw.ROW_BAD, (reader.line_num, str(e))))
        except csv.Error as e:
            raise ValueError(f"not a readable csv file: {e}") from None

    return _variant(header[10:]), rows()


def read_statistic_csv(path: str, skipped: list[Fault] | None = None) -> tuple[list[dict[str, Any]], StatisticHeader]:
    """Every row at once (small files, tests); see `statistic_rows`."""
    variant, rows = statistic_rows(path, skipped)
    return list(rows), variant
