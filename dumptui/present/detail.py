"""The centre pane's decisions: which tensor pair of an op to detail first, whether its elements can be shown
at all, and which columns of its tables fit the width (dropped by priority, never cut mid-cell)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from dumptui.core.compare.metrictable import SIDE_VALUES
from dumptui.core.compare.pairstats import SideStats
from dumptui.core.compare.results import OpResult, TensorResult
from dumptui.core.compare.verdict import BAD
from dumptui.core.model.dump import TensorRef
from dumptui.present.words import cos_words, nonfinite_words
from dumptui.report import fmt
from dumptui.report.reasons import say


def default_row(res: OpResult) -> int:
    """The tensor to detail first: the first bad output, else the first bad input, else the first output."""
    rows = res.inputs + res.outputs
    for group in (res.outputs, res.inputs):
        for r in group:
            if r.verdict in BAD:
                return rows.index(r)
    return len(res.inputs) if res.outputs else 0


def element_detail_problem(r: TensorResult) -> str | None:
    """Why the worst elements and the error histogram of a tensor pair cannot be computed, or None."""
    ref, target = r.ref, r.target
    if ref is None or target is None:
        return say(r.reason)
    if not ref.has_data or not target.has_data:
        return "statistics-only dump: no tensor data"
    if ref.problem or target.problem:
        return say(ref.problem or target.problem)
    if (ref.size or 0) != (target.size or 0):
        return f"{ref.size} vs {target.size} elements"
    if not ref.size:
        return "empty tensor"
    return None


# ---------------------------------------------------------------------------------------------- columns
# The tensor table's columns in display order, each with its priority (0 is kept first): at 80x24 the table
# keeps what decides a verdict (tensor, verdict, cos, max abs) and drops the rest, never cutting a cell.
TENSOR_COLUMNS: tuple[tuple[str, str, int], ...] = (
    ("tensor", "tensor", 0),
    ("verdict", "verdict", 1),
    ("cos", "cos", 2),
    ("max_abs", "max abs", 3),
    ("max_rel", "max rel", 5),
    ("nonfinite", "NaN/Inf", 4),
    ("shape", "shape dtype", 6),
    ("rmse", "RMSE", 7),
)


def _side(t: TensorRef | None) -> str:
    return "-" if t is None else f"{shape_text(t.shape)} {t.dtype or '?'}"


def shape_text(s: Sequence[int] | None) -> str:
    return "?" if s is None else "(" + ",".join(str(x) for x in s) + ")"


def shape_dtype(r: TensorResult) -> str:
    """`(1,8,16,32) float32`, or `ref | target` when the sides differ."""
    a, b = _side(r.ref), _side(r.target)
    return a if a == b else f"{a} | {b}"


def nonfinite_cell(r: TensorResult) -> str:
    st = r.stats
    if st is None:
        return "-"
    words = nonfinite_words(st)
    return words or "-"


def tensor_row(r: TensorResult, number: Callable[[float | None], str]) -> dict[str, str]:
    """One tensor pair's cells by column key (`number` formats a float as every report does)."""
    s = r.stats
    return {
        "tensor": r.label,
        "verdict": r.verdict,
        "cos": cos_words(s),
        "max_abs": number(s.max_abs) if s else "-",
        "max_rel": number(s.max_rel) if s else "-",
        "nonfinite": nonfinite_cell(r),
        "shape": shape_dtype(r),
        "rmse": number(s.rmse) if s else "-",
    }


def choose_columns(widths: Sequence[int], priorities: Sequence[int], room: int, pad: int = 2) -> list[int]:
    """The columns (indices, in display order) that fit `room` characters, each taking its width plus `pad`;
    the lowest priority (highest number) is dropped first. The first column is always kept."""
    keep = sorted(range(len(widths)), key=lambda i: priorities[i])
    while len(keep) > 1 and sum(widths[i] + pad for i in keep) > room:
        keep.pop()
    return sorted(keep)


def tensor_columns(rows: Sequence[dict[str, str]], room: int, pad: int = 2) -> list[tuple[str, str, int]]:
    """(key, label, width) of the tensor table's columns that fit `room`; a NaN/Inf column with nothing in it
    is left out."""
    cols = [c for c in TENSOR_COLUMNS if c[0] != "nonfinite" or any(r["nonfinite"] != "-" for r in rows)]
    widths = [max([len(label)] + [len(r[key]) for r in rows]) for key, label, _p in cols]
    chosen = choose_columns(widths, [p for _k, _l, p in cols], room, pad)
    return [(cols[i][0], cols[i][1], widths[i]) for i in chosen]


# which side statistics stay when the pane is narrow (1 first); the numbers themselves are the metric table's
_SIDE_PRIORITY = {"min": 1, "max": 2, "mean": 3, "std": 5, "l2": 6}
# the statistics of one tensor pair per side: (label, priority, right-aligned); `side_stats_cells` fills a row
STATS_COLUMNS: tuple[tuple[str, int, bool], ...] = (
    ("", 0, False),
    ("shape dtype", 7, False),
    *((m.heading, _SIDE_PRIORITY[m.name], True) for m in SIDE_VALUES),
    ("nan/inf", 4, False),
)


def side_stats_cells(ss: SideStats | None) -> list[str]:
    """One side's cells of the statistics table after its label and shape columns."""
    if ss is None:
        return ["-"] * (len(SIDE_VALUES) + 1)
    return [fmt.g(getattr(ss, m.name)) for m in SIDE_VALUES] + [fmt.nonfinite(ss)]


def stats_columns(rows: Sequence[Sequence[str]], room: int, gap: int = 2) -> list[int]:
    """The statistics columns that fit `room` (no table wraps its own columns onto a second line); an empty
    nan/inf column is left out."""
    idx = [i for i, (label, _p, _r) in enumerate(STATS_COLUMNS) if label != "nan/inf" or any(r[i] != "-" for r in rows)]
    widths = [max([len(STATS_COLUMNS[i][0])] + [len(r[i]) for r in rows]) for i in idx]
    chosen = choose_columns(widths, [STATS_COLUMNS[i][1] for i in idx], room, gap)
    return [idx[k] for k in chosen]
