"""Number and name formatting shared by every report and the UI (no rich import: the UI uses it too)."""

from __future__ import annotations

import math
import re

from ..core.metrics import format_cos

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def clean(text: str) -> str:
    """Names come from files: strip terminal control characters before they reach a terminal."""
    return _CONTROL.sub("?", str(text))


def g(v, digits: int = 4) -> str:
    if v is None:
        return "undefined"
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        if v == 0:
            return "0"
        if 1e-3 <= abs(v) < 1e5:
            return f"{v:.{digits}g}"
        return f"{v:.{max(digits - 1, 1)}e}"
    return str(v)


def cos(v) -> str:
    return format_cos(v)


def shape(s) -> str:
    if s is None:
        return "?"
    return "(" + ",".join(str(x) for x in s) + ")"


def pct(v) -> str:
    return "undefined" if v is None else f"{v:.1%}"


def nbytes(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if n < 1024 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


def nonfinite(side) -> str:
    """'-' or e.g. 'nan 3, inf 1'."""
    parts = []
    if side.nan:
        parts.append(f"nan {side.nan}")
    inf = side.pos_inf + side.neg_inf
    if inf:
        parts.append(f"inf {inf}")
    return ", ".join(parts) or "-"
