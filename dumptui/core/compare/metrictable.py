"""Every statistic of a tensor pair and of one tensor, once: its name (the `PairStats` field and the JSON key),
its kind, what it means, and its column in dumptui's CSV (`--csv-profile full`) and msprobe's where msprobe has
the same number. The pair statistics record (pairstats.py), the CSV (report/csvout.py), the JSON schema's
`stats` (report/schemas/common.schema.json, held to this table by a test) and the app's statistics table
(present/columns.py) all come from here: a new metric is one line here and its accumulator in metrics.py.
"""

from __future__ import annotations

from dataclasses import dataclass

from dumptui.core.model.vocab import Word


class Kind(Word):
    COUNT = "count"  # an integer count (exact up to 2**53)
    FLAG = "flag"  # true or false
    VALUE = "value"  # a float; None (JSON null, an empty cell) when undefined, with the reason in `undefined`
    INDEX = "index"  # a position in the tensor (a list of integers)


class Undefined(Word):
    """Why a value is undefined (None): report/reasons.py words it."""

    EMPTY = "empty"  # the tensor holds no element
    NO_FINITE_PAIR = "no-finite-pair"  # no element is finite on both sides
    REF_ZEROS = "ref-zeros"  # the reference is all zeros (and the target is not)
    TARGET_ZEROS = "target-zeros"
    NO_REF_ABOVE_EPS = "no-ref-above-eps"  # no reference element has |y| > eps: no relative error
    KL_NOT_ASKED = "kl-not-asked"  # KL divergence is computed only when asked (--kl)
    REF_CONSTANT = "ref-constant"  # KL of a constant tensor: min-max normalisation divides by zero
    TARGET_CONSTANT = "target-constant"


@dataclass(frozen=True)
class Metric:
    name: str
    kind: Kind
    column: str | None = None  # dumptui's CSV column
    msprobe: str | None = None  # msprobe's column of the same number (its own definition may differ: see there)
    label: str = ""  # the app's column heading, when not the name

    @property
    def heading(self) -> str:
        return self.label or self.name


# In the order of `PairStats.to_dict` and the CSV.
PAIR_METRICS: tuple[Metric, ...] = (
    Metric("n", Kind.COUNT, "Element Count"),
    Metric("bitwise_equal", Kind.FLAG),
    Metric("values_equal", Kind.FLAG),
    Metric("compared", Kind.COUNT),
    Metric("nonfinite_mismatch", Kind.COUNT),
    Metric("n_diff", Kind.COUNT, "Diff Count"),
    Metric("n_off", Kind.COUNT),
    Metric("cos", Kind.VALUE, "Cosine", "Cosine"),
    Metric("max_abs", Kind.VALUE, "MaxAbsErr", "MaxAbsErr"),
    Metric("max_abs_index", Kind.INDEX, "MaxAbsErr Index"),
    Metric("max_abs_ref", Kind.VALUE),
    Metric("max_abs_target", Kind.VALUE),
    Metric("mean_abs", Kind.VALUE, "MeanAbsErr"),
    Metric("mean_abs_trimmed", Kind.VALUE),
    Metric("rms_ref", Kind.VALUE),
    Metric("rmse", Kind.VALUE, "RMSE"),
    Metric("rel_euclid", Kind.VALUE, "RelEucDist"),
    Metric("max_rel", Kind.VALUE, "MaxRelativeErr", "MaxRelativeErr"),
    Metric("mean_rel", Kind.VALUE, "MeanRelativeErr"),
    Metric("acc_rel", Kind.VALUE, "AccumulatedRelativeError"),
    Metric("thousandth", Kind.VALUE, "One Thousandth Err Ratio", "One Thousandth Err Ratio"),
    Metric("five_thousandths", Kind.VALUE, "Five Thousandths Err Ratio", "Five Thousandths Err Ratio"),
    Metric("kl", Kind.VALUE, "KullbackLeiblerDivergence"),
)

# One tensor's statistics; the CSV column is "NPU <column>" (target) and "Bench <column>" (reference).
SIDE_METRICS: tuple[Metric, ...] = (
    Metric("count", Kind.COUNT),
    Metric("finite", Kind.COUNT),
    Metric("nan", Kind.COUNT, "NaN"),
    Metric("pos_inf", Kind.COUNT),
    Metric("neg_inf", Kind.COUNT),
    Metric("zeros", Kind.COUNT),
    Metric("min", Kind.VALUE, "min", "Min"),
    Metric("max", Kind.VALUE, "max", "Max"),
    Metric("mean", Kind.VALUE, "mean", "Mean"),
    Metric("std", Kind.VALUE, "std"),
    Metric("l2", Kind.VALUE, "l2norm", "Norm", label="L2"),
)


SIDE_VALUES = tuple(m for m in SIDE_METRICS if m.kind == Kind.VALUE)  # the numbers of a side the app shows


def names(metrics: tuple[Metric, ...], *kinds: Kind) -> tuple[str, ...]:
    return tuple(m.name for m in metrics if m.kind in kinds)


def metric_named(name: str) -> Metric:
    return next(m for m in (*PAIR_METRICS, *SIDE_METRICS) if m.name == name)
