"""msprobe's highlighting of a comparison table: which rows its xlsx paints red or yellow, and why.

The rules are msprobe's (`core/compare/highlight.py`, constants from `CompareConst`), applied per op: a row
alone is red when its NPU max/min is nan/inf or its max difference exceeds 1e10; an op's output row is then
compared with each of the op's input rows (tensor modes: the max absolute error grows by an order of
magnitude past 1 -> yellow; the one-thousandth ratio falls from above 0.9 to below 0.6 -> red, or by more
than 0.1 -> yellow; the cosine falls by more than 0.1 -> yellow; statistics modes: the order of magnitude,
and the output's max relative error above 50 % -> red, above 10 % while the input's is below 1 % -> yellow);
inconsistent requires_grad -> yellow. Red wins over yellow; the reasons go into `Err_message`, as msprobe does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from dumptui.core.model.dump import INPUT, OUTPUT, InOut

OVERFLOW = ("nan\t", "inf\t", "-inf\t", "nan", "inf", "-inf")
MAX_DIFF_RED = 1e10
ONE_THOUSAND_IN_RED, ONE_THOUSAND_OUT_RED, ONE_THOUSAND_DIFF_YELLOW = 0.9, 0.6, 0.1
COSINE_DIFF_YELLOW = 0.1
MAX_RELATIVE_OUT_RED, MAX_RELATIVE_OUT_YELLOW, MAX_RELATIVE_IN_YELLOW = 0.5, 0.1, 0.01

RED, YELLOW = "FFFF0000", "FFFF00"  # msprobe's fill colours


@dataclass
class Highlights:
    red: dict[int, list[str]] = field(default_factory=dict)  # row index -> reasons
    yellow: dict[int, list[str]] = field(default_factory=dict)

    def add(self, colour: dict[int, list[str]], row: int, why: str) -> None:
        colour.setdefault(row, []).append(why)

    def colour(self, row: int) -> str | None:
        return RED if row in self.red else (YELLOW if row in self.yellow else None)

    def reasons(self, row: int) -> list[str]:
        return self.red.get(row) or self.yellow.get(row) or []


def number(text: str) -> float | None:
    """A cell as msprobe's rules see it: a number, or None for text (`Nan`, `N/A`, empty)."""
    try:
        v = float(text)
    except (TypeError, ValueError):
        return None
    return v if text.strip().lower() not in ("nan", "inf", "-inf", "+inf", "infinity", "-infinity") else None


def percent(text: str) -> float | None:
    """A statistics-mode relative error (`12.5%`) as a fraction, or a plain number."""
    if isinstance(text, str) and text.endswith("%"):
        return number(text[:-1]) / 100 if number(text[:-1]) is not None else None  # type: ignore[operator]
    return number(text)


def _order(v: float) -> float:
    return 0.0 if v < 1 else math.log10(v)


def find(rows: list[dict[str, str]], groups: list[tuple[int, InOut]], mode: str) -> Highlights:
    """The rows to paint; `groups[i]` is (op pair, io) of `rows[i]`."""
    hl = Highlights()
    if mode == "api-md5":
        return hl
    statistics = mode in ("api-statistics", "mindspore-statistic")
    diff_col = "Max diff" if statistics else "MaxAbsErr"
    for i, row in enumerate(rows):
        if row.get("NPU max", "") in OVERFLOW or row.get("NPU min", "") in OVERFLOW:
            hl.add(hl.red, i, "maximum or minimum is nan, -inf, or inf")
            continue
        d = number(row.get(diff_col, ""))
        if d is not None and abs(d) > MAX_DIFF_RED:
            hl.add(hl.red, i, "maximum absolute error exceeds 1e+10")
    by_op: dict[int, list[int]] = {}
    for i, (op, _io) in enumerate(groups):
        by_op.setdefault(op, []).append(i)
    for members in by_op.values():
        ins = [i for i in members if groups[i][1] == INPUT and _numeric(rows[i], diff_col)]
        outs = [i for i in members if groups[i][1] == OUTPUT and _numeric(rows[i], diff_col)]
        for o in outs:
            if o in hl.red:
                continue
            for i in ins:
                _order_magnitude(hl, rows[i], rows[o], o, diff_col)
                if statistics:
                    _max_relative(hl, rows[i], rows[o], o)
                else:
                    _thousandth(hl, rows[i], rows[o], o)
                    _cosine(hl, rows[i], rows[o], o)
    for i, row in enumerate(rows):
        if row.get("Requires_grad Consistent") == "False":
            hl.add(hl.yellow, i, "requires_grad is inconsistent")
    for i in list(hl.yellow):
        if i in hl.red:
            del hl.yellow[i]
    return hl


def _numeric(row: dict[str, str], diff_col: str) -> bool:
    return all(number(row.get(c, "")) is not None for c in ("NPU max", "Bench max", diff_col))


def _order_magnitude(hl: Highlights, api_in: dict[str, str], api_out: dict[str, str], o: int, col: str) -> None:
    a, b = abs(number(api_in[col]) or 0.0), abs(number(api_out[col]) or 0.0)
    if a > b or a <= 1 or b <= 1:
        return
    if _order(b) - _order(a) >= 1:
        hl.add(
            hl.yellow,
            o,
            "maximum absolute error of both input/parameters and output exceed 1, "
            "with the output larger by an order of magnitude",
        )


def _thousandth(hl: Highlights, api_in: dict[str, str], api_out: dict[str, str], o: int) -> None:
    col = "One Thousandth Err Ratio"
    a, b = number(api_in.get(col, "")), number(api_out.get(col, ""))
    if a is None or b is None:
        return
    if a > ONE_THOUSAND_IN_RED and b < ONE_THOUSAND_OUT_RED:
        hl.add(hl.red, o, "The input/parameter's one thousandth err ratio exceeds 0.9, while the output's is below 0.6")
    elif a - b > ONE_THOUSAND_DIFF_YELLOW:
        hl.add(
            hl.yellow,
            o,
            "The output's one thousandth err ratio decreases by more than 0.1 compared to the input/parameter's",
        )


def _cosine(hl: Highlights, api_in: dict[str, str], api_out: dict[str, str], o: int) -> None:
    a, b = number(api_in.get("Cosine", "")), number(api_out.get("Cosine", ""))
    if a is not None and b is not None and a - b > COSINE_DIFF_YELLOW:
        hl.add(hl.yellow, o, "The output's cosine decreases by more than 0.1 compared to the input/parameter's")


def _max_relative(hl: Highlights, api_in: dict[str, str], api_out: dict[str, str], o: int) -> None:
    b = percent(api_out.get("MaxRelativeErr", ""))
    if b is None:
        return
    if b > MAX_RELATIVE_OUT_RED:
        hl.add(hl.red, o, "maximum relative error exceeds 0.5")
    a = percent(api_in.get("MaxRelativeErr", ""))
    if a is not None and b > MAX_RELATIVE_OUT_YELLOW and a < MAX_RELATIVE_IN_YELLOW:
        hl.add(
            hl.yellow, o, "The output's maximum relative error exceeds 0.1, while the input/parameter's is below 0.01"
        )


def with_reasons(rows: list[dict[str, str]], hl: Highlights) -> list[dict[str, str]]:
    """The rows with the highlight reasons appended to `Err_message`, one per line, as msprobe writes them."""
    out = []
    for i, row in enumerate(rows):
        reasons = hl.reasons(i)
        if reasons and "Err_message" in row:
            row = dict(row)
            row["Err_message"] = "\n".join([row["Err_message"]] + reasons if row["Err_message"] else reasons)
        out.append(row)
    return out
