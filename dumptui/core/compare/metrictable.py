"""Every statistic of a tensor pair and of one tensor, once: its name (the `PairStats` field and the JSON key),
its kind, what it means, and its column in dumptui's CSV (`--csv-profile full`) and msprobe's where msprobe has
the same number. The pair statistics record (pairstats.py), the CSV (report/csvout.py), the JSON schema's
`stats` (report/schemas/common.schema.json, held to this table by a test) and the app's statistics table
(present/columns.py) all come from here: a new metric is one line here and its accumulator in metrics.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Kind(str, Enum):
    COUNT = "count"  # an integer count (exact up to 2**53)
    FLAG = "flag"  # true or false
    VALUE = "value"  # a float; None (JSON null, an empty cell) when undefined, with the reason in `undefined`
    INDEX = "index"  # a position in the tensor (a list of integers)


@dataclass(frozen=True)
class Metric:
    name: str
    kind: Kind
    meaning: str
    column: str | None = None  # dumptui's CSV column
    msprobe: str | None = None  # msprobe's column of the same number (its own definition may differ: see there)
    label: str = ""  # the app's column heading, when not the name

    @property
    def heading(self) -> str:
        return self.label or self.name


# In the order of `PairStats.to_dict` and the CSV.
PAIR_METRICS: tuple[Metric, ...] = (
    Metric("n", Kind.COUNT, "elements in the pair", "Element Count"),
    Metric("bitwise_equal", Kind.FLAG, "both tensors hold the same bytes"),
    Metric(
        "values_equal", Kind.FLAG, "the same values (NaN where NaN), though the bytes may differ (-0.0, NaN payloads)"
    ),
    Metric("compared", Kind.COUNT, "elements finite on both sides, which the error metrics use"),
    Metric("nonfinite_mismatch", Kind.COUNT, "elements NaN or infinite on one side only, or a different one"),
    Metric("n_diff", Kind.COUNT, "elements that differ", "Diff Count"),
    Metric("n_off", Kind.COUNT, "elements off by more than the element tolerance, plus the non-finite mismatches"),
    Metric("cos", Kind.VALUE, "cosine similarity of the two tensors (float64)", "Cosine", "Cosine"),
    Metric("max_abs", Kind.VALUE, "largest |target - ref|", "MaxAbsErr", "MaxAbsErr"),
    Metric("max_abs_index", Kind.INDEX, "where the largest |target - ref| is", "MaxAbsErr Index"),
    Metric("max_abs_ref", Kind.VALUE, "largest |ref|"),
    Metric("max_abs_target", Kind.VALUE, "largest |target|"),
    Metric("mean_abs", Kind.VALUE, "mean |target - ref|", "MeanAbsErr"),
    Metric("mean_abs_trimmed", Kind.VALUE, "mean |target - ref| without the largest 1 % (the verdict's error)"),
    Metric("rms_ref", Kind.VALUE, "root mean square of the reference"),
    Metric("rmse", Kind.VALUE, "root mean square of target - ref", "RMSE"),
    Metric(
        "rel_euclid", Kind.VALUE, "||target - ref|| / ||ref|| (msprobe's EucDist is the absolute one)", "RelEucDist"
    ),
    Metric(
        "max_rel",
        Kind.VALUE,
        "largest |target - ref| / |ref| over the elements with |ref| > eps",
        "MaxRelativeErr",
        "MaxRelativeErr",
    ),
    Metric("mean_rel", Kind.VALUE, "mean |target - ref| / |ref| over the elements with |ref| > eps", "MeanRelativeErr"),
    Metric(
        "acc_rel",
        Kind.VALUE,
        "sum of |target - ref| / |ref| over the elements with |ref| > eps",
        "AccumulatedRelativeError",
    ),
    Metric(
        "thousandth",
        Kind.VALUE,
        "share of elements with |target - ref| <= 0.001 max(|ref|, eps)",
        "One Thousandth Err Ratio",
        "One Thousandth Err Ratio",
    ),
    Metric(
        "five_thousandths",
        Kind.VALUE,
        "share of elements with |target - ref| <= 0.005 max(|ref|, eps)",
        "Five Thousandths Err Ratio",
        "Five Thousandths Err Ratio",
    ),
    Metric(
        "kl",
        Kind.VALUE,
        "Kullback-Leibler divergence of the min-max- and sum-normalised tensors (P ref, Q target)",
        "KullbackLeiblerDivergence",
    ),
)

# One tensor's statistics; the CSV column is "NPU <column>" (target) and "Bench <column>" (reference).
SIDE_METRICS: tuple[Metric, ...] = (
    Metric("count", Kind.COUNT, "elements"),
    Metric("finite", Kind.COUNT, "finite elements"),
    Metric("nan", Kind.COUNT, "NaN elements", "NaN"),
    Metric("pos_inf", Kind.COUNT, "+Inf elements"),
    Metric("neg_inf", Kind.COUNT, "-Inf elements"),
    Metric("zeros", Kind.COUNT, "elements equal to 0"),
    Metric("min", Kind.VALUE, "smallest finite value", "min", "Min"),
    Metric("max", Kind.VALUE, "largest finite value", "max", "Max"),
    Metric("mean", Kind.VALUE, "mean of the finite values", "mean", "Mean"),
    Metric("std", Kind.VALUE, "standard deviation of the finite values", "std"),
    Metric("l2", Kind.VALUE, "L2 norm of the finite values", "l2norm", "Norm", label="L2"),
)


SIDE_VALUES = tuple(m for m in SIDE_METRICS if m.kind == Kind.VALUE)  # the numbers of a side the app shows


def names(metrics: tuple[Metric, ...], *kinds: Kind) -> tuple[str, ...]:
    return tuple(m.name for m in metrics if m.kind in kinds)


def metric_named(name: str) -> Metric:
    return next(m for m in (*PAIR_METRICS, *SIDE_METRICS) if m.name == name)
