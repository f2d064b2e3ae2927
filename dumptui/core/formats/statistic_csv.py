"""MindSpore's `statistic.csv` (dumps with `saved_data: statistic`): one row per tensor, statistics only.

Three header variants are known (FORMATS.md): 1.6-2.2 with zero/inf/nan counts, 1.6+ with `L2 Value` and `MD5`,
and 2.4+ whose statistic columns are configurable (`statistic_category`). The first ten columns are fixed.
"""

from __future__ import annotations

import csv
from typing import Any

from dumptui.core.io import dtypes, limits
from dumptui.core.io.safeio import text_lines

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


def _variant(statistic_columns: list[str]) -> str:
    rest = [h.lower() for h in statistic_columns]
    if "l2 value" in rest:
        return "1.6+ with L2 Value/MD5"
    if "negative zero count" in rest and "l2norm value" not in rest:
        return "1.6-2.2"
    return "2.4+ configurable statistic_category"


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


def _row(header: list[str], row: list[str]) -> dict[str, Any]:
    rec = dict(zip(header, row))
    stats: dict[str, float | str | None] = {}
    for h, v in zip(header[10:], row[10:]):
        k = STAT_KEYS.get(h.lower())
        if k:
            stats[k] = v.strip() if k == "md5" else _stat_float(v)
    io = rec["IO"].strip().lower()
    if io not in ("input", "output"):
        raise limits.BadValue(f"IO {limits.brief(rec['IO'])} is neither input nor output")
    size = rec["Data Size"].strip()
    return dict(
        op_type=rec["Op Type"],
        name=rec["Op Name"],
        ts=_count(rec["Timestamp"], "timestamp"),
        io=io,
        slot=_count(rec["Slot"], "slot"),
        dtype=dtypes.canonical(rec["Data Type"]) or rec["Data Type"].strip().lower(),
        shape=_shape(rec["Shape"]),
        stats=stats,
        size=int(size) if size.isascii() and size.isdigit() and len(size) <= limits.MAX_INT_DIGITS else None,
    )


def read_statistic_csv(path: str, skipped: list[str] | None = None) -> tuple[list[dict[str, Any]], str]:
    """Rows of a statistic.csv as dicts (op_type, name, ts, io, slot, dtype, shape, stats, size), and the header
    variant it uses. A row with a bad value is left out, its line and reason added to `skipped`. Raises
    OSError, or ValueError for a header it does not know or a file the csv module cannot split."""
    reader = csv.reader(text_lines(path))
    try:
        first = next(reader, None)
        if not first:
            return [], "empty"
        header = [h.strip() for h in first]
        if header[:10] != FIXED_COLUMNS:
            raise ValueError(f"unknown statistic.csv header: {limits.brief(','.join(header[:10]), 200)}")
        rows = []
        for row in reader:
            if len(row) < 10:
                continue
            try:
                rows.append(_row(header, row))
            except limits.BadValue as e:
                if skipped is not None:
                    skipped.append(f"line {reader.line_num}: {e}")
    except csv.Error as e:
        raise ValueError(f"not a readable csv file: {e}") from None
    return rows, _variant(header[10:])
