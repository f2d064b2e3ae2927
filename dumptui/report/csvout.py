"""`compare --csv FILE --csv-profile full`: dumptui's own, richer table (every metric of core/compare/metrics.py,
both sides' statistics, the verdict and the local error). For msprobe's table see msprobe_csv.py.

NPU = the target (e.g. Ascend310), Bench = the reference (e.g. Ascend910). Column names are dumptui's
where the meaning is dumptui's: `RelEucDist` is the relative Euclidean distance (msprobe's `EucDist` is the
absolute one), and there is no msprobe verdict column (`Verdict` is dumptui's). Numbers are numbers: an
undefined value is an empty cell, never a word and never 0, with the reason in `Err_message`.
"""

from __future__ import annotations

import csv
import io
import math
from typing import IO

from dumptui.core.compare.metrictable import PAIR_METRICS, SIDE_METRICS, Kind
from dumptui.core.compare.results import OpResult, TensorResult
from dumptui.core.compare.verdict import BAD
from dumptui.core.model.dump import OUTPUT
from dumptui.core.search.judgement import NO_JUDGEMENT, RunJudgement
from dumptui.core.search.localerror import LocalError
from dumptui.report.cells import csv_safe_row
from dumptui.report.reasons import say, say_all, undefined_words
from dumptui.report.selection import gain_words, reason_text

HEADER = [
    "Index",
    "Position",  # the op's position in execution order, as bisect and compare number it (#N)
    "Op Type",
    "NPU Name",
    "Bench Name",
    "IO",
    "Slot",
    "NPU Dtype",
    "Bench Dtype",
    "NPU Tensor Shape",
    "Bench Tensor Shape",
    "Cosine",
    "MaxAbsErr",
    "MaxAbsErr Index",
    "MeanAbsErr",
    "RMSE",
    "RelEucDist",
    "MaxRelativeErr",
    "MeanRelativeErr",
    "AccumulatedRelativeError",
    "One Thousandth Err Ratio",
    "Five Thousandths Err Ratio",
    "KullbackLeiblerDivergence",
    "Diff Count",
    "Element Count",
    "NPU NaN",
    "NPU Inf",
    "Bench NaN",
    "Bench Inf",
    "NPU max",
    "NPU min",
    "NPU mean",
    "NPU std",
    "NPU l2norm",
    "Bench max",
    "Bench min",
    "Bench mean",
    "Bench std",
    "Bench l2norm",
    "Verdict",
    "Err_message",
    "Paired By",
    "NPU Path",
    "Bench Path",
    "Local Error",
    "Input Error",
    "Local Gain",
    "Root",
]

# (column, PairStats field) of every number with a column of its own, from the one metric table
_METRIC_COLS = [(m.column, m.name) for m in PAIR_METRICS if m.column and m.kind in (Kind.VALUE, Kind.COUNT)]
_SIDE_COLS = [(m.column, m.name) for m in SIDE_METRICS if m.column and m.kind == Kind.VALUE]


def _v(x: object) -> str:
    """A number as text; empty when undefined or NaN (the reason is in Err_message), `inf`/`-inf` as such."""
    if x is None:
        return ""
    if isinstance(x, float) and not math.isfinite(x):
        return "" if math.isnan(x) else ("inf" if x > 0 else "-inf")
    return repr(x) if isinstance(x, float) else str(x)


def row(index: int, res: OpResult, r: TensorResult, le: LocalError | None = None, is_root: bool = False) -> dict:
    p = res.pair
    st = r.stats
    d: dict[str, object] = {h: "" for h in HEADER}
    d.update(
        {
            "Index": index,
            "Position": p.index + 1,
            "Op Type": p.op_type,
            "NPU Name": p.target.name if p.target else "",
            "Bench Name": p.ref.name if p.ref else "",
            "IO": r.io,
            "Slot": r.slot,
            "NPU Dtype": r.target.dtype if r.target else "",
            "Bench Dtype": r.ref.dtype if r.ref else "",
            "NPU Tensor Shape": list(r.target.shape) if r.target and r.target.shape is not None else "",
            "Bench Tensor Shape": list(r.ref.shape) if r.ref and r.ref.shape is not None else "",
            "Verdict": r.verdict,
            "Paired By": say(p.how),
            "NPU Path": r.target.path if r.target else "",
            "Bench Path": r.ref.path if r.ref else "",
        }
    )
    messages = [reason_text(r.reason), *say_all(r.notes)]
    if st is not None:
        for col, attr in _METRIC_COLS:
            d[col] = _v(getattr(st, attr))
        d["MaxAbsErr Index"] = list(st.max_abs_index) if st.max_abs_index is not None else ""
        for side, pre in ((st.target, "NPU"), (st.ref, "Bench")):
            d[f"{pre} NaN"] = side.nan
            d[f"{pre} Inf"] = side.pos_inf + side.neg_inf
            for col, attr in _SIDE_COLS:
                d[f"{pre} {col}"] = _v(getattr(side, attr))
        messages += [f"{k}: {why}" for k, why in undefined_words(st.undefined).items()]
    d["Err_message"] = "; ".join(m for m in messages if m)
    if r.io == OUTPUT and (le is None or r.slot == le.out_slot):
        if le is not None:
            d["Local Error"] = _v(le.out_rel)
            d["Input Error"] = _v(le.data_in.worst_rel) if le.data_in is not None else "0"
            d["Local Gain"] = gain_words(le) if le.resized else _v(le.gain_rel)
        if le is not None or is_root:
            d["Root"] = "Yes" if is_root else "No"
    return d


def write_csv(
    fh: IO[str], results: list[OpResult], only_bad: bool = False, judgement: RunJudgement = NO_JUDGEMENT
) -> int:
    """Every tensor row of `results`; the local error and Root as `judgement` decided (the same roots as the
    answer names: a root born of a weight is a root here too)."""
    n = 0
    w = csv.DictWriter(fh, fieldnames=HEADER, lineterminator="\n")
    w.writeheader()
    for res in results:
        for r in res.inputs + res.outputs:
            if only_bad and r.verdict not in BAD:
                continue
            n += 1
            index = res.pair.index
            w.writerow(csv_safe_row(row(n, res, r, judgement.local_of(index), judgement.is_root(index))))
    return n


def csv_text(
    results: list[OpResult], only_bad: bool = False, judgement: RunJudgement = NO_JUDGEMENT
) -> tuple[str, int]:
    """The same CSV as text (the app hands it to a browser as a download): (text, rows)."""
    buf = io.StringIO(newline="")
    n = write_csv(buf, results, only_bad, judgement)
    return buf.getvalue(), n
