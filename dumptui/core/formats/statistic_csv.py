"""MindSpore's `statistic.csv` (dumps with `saved_data: statistic`): one row per tensor, statistics only.

Three header variants are known (FORMATS.md): 1.6-2.2 with zero/inf/nan counts, 1.6+ with `L2 Value` and `MD5`,
and 2.4+ whose statistic columns are configurable (`statistic_category`). The first ten columns are fixed.
"""

from __future__ import annotations

import csv
from typing import Any

from .. import dtypes

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
        return v


def _variant(statistic_columns: list[str]) -> str:
    rest = [h.lower() for h in statistic_columns]
    if "l2 value" in rest:
        return "1.6+ with L2 Value/MD5"
    if "negative zero count" in rest and "l2norm value" not in rest:
        return "1.6-2.2"
    return "2.4+ configurable statistic_category"


def _shape(text: str) -> tuple[int, ...] | None:
    inner = text.strip().strip('"').strip("()[] ")
    try:
        return tuple(int(x) for x in inner.split(",") if x.strip()) if inner else ()
    except ValueError:
        return None


def _row(header: list[str], row: list[str]) -> dict[str, Any]:
    rec = dict(zip(header, row))
    stats: dict[str, float | str | None] = {}
    for h, v in zip(header[10:], row[10:]):
        k = STAT_KEYS.get(h.lower())
        if k:
            stats[k] = v.strip() if k == "md5" else _stat_float(v)
    return dict(
        op_type=rec["Op Type"],
        name=rec["Op Name"],
        ts=int(rec["Timestamp"] or 0),
        io=rec["IO"].strip().lower(),
        slot=int(rec["Slot"] or 0),
        dtype=dtypes.canonical(rec["Data Type"]) or rec["Data Type"].strip().lower(),
        shape=_shape(rec["Shape"]),
        stats=stats,
        size=int(rec["Data Size"]) if rec["Data Size"].strip().isdigit() else None,
    )


def read_statistic_csv(path: str) -> tuple[list[dict[str, Any]], str]:
    """Rows of a statistic.csv as dicts (op_type, name, ts, io, slot, dtype, shape, stats, size), and the header
    variant it uses. Raises OSError, or ValueError for a header it does not know."""
    with open(path, "r", encoding="utf-8", errors="replace", newline="") as fh:
        reader = csv.reader(fh)
        first = next(reader, None)
        if not first:
            return [], "empty"
        header = [h.strip() for h in first]
        if header[:10] != FIXED_COLUMNS:
            raise ValueError(f"unknown statistic.csv header: {','.join(header[:10])}")
        return [_row(header, row) for row in reader if len(row) >= 10], _variant(header[10:])
