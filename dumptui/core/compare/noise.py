"""The noise model: how much two correct runs may differ, per dtype and along the compute path.

Error of a tensor pair is measured on two scales, robustly (`TensorError`):
- relative: the mean |target - ref| without the largest 1 % of elements (a few whole-step jumps of a
  discontinuous op must not decide), divided by the RMS of the reference;
- absolute: the same trimmed mean, undivided.
The floor is the error a correct op may add in a dtype. Anchored on the Ascend operator precision standard
(mean relative error below 2^-13 for fp32, 2^-10 for fp16, 2^-7 for bf16): a tensor pair within the floor
of the less precise of its dtypes agrees; the compute path lowers the precision when the data went through
fp16/bf16 on the way (a Cast inserted on one side, a network input rounded to bf16).

Precision kinds: fp32, fp16 and bf16 have the floors above; int8 has none of its own dtype, since a
quantised value is dequantised before it is compared: its floor comes from its scales. Rounding to a step s
adds an error uniform in ±s/2, whose RMS is s/√12; relative to the RMS of the values quantised, and with the
same head room the fp16 floor leaves over fp16's own rounding (x2), that is the floor of the op that uses an
int8 weight (`quantisation_floor`, per channel or per tensor), propagated to its consumers as the fp16 floor
is: a tensor beyond it with no root upstream carries noise.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from dumptui.core.compare.metrics import TRIM
from dumptui.core.compare.pairstats import PairStats
from dumptui.core.io import dtypes

FLOOR = {"float64": 2.0**-40, "float32": 2.0**-13, "float16": 2.0**-10, "bfloat16": 2.0**-7}
PRECISION_ORDER = ("bfloat16", "float16", "float32", "float64")  # least precise first
ELEMENT_FACTOR = 10  # one element may be off by 10x the floor (the standard's max relative error)
QUANT_HEADROOM = 2.0  # an int8 floor is twice the RMS rounding error its scales give (as fp16's is)
PRECISION_KINDS = ("float32", "float16", "bfloat16", "int8")


def floor_of(dtype: str | None, floors: dict[str, float] | None = None, scale: float = 1.0) -> float:
    """The floor of one dtype; integers and booleans are exact (0); unknown floats count as float32."""
    if dtype is None:
        return (floors or FLOOR).get("float32", FLOOR["float32"]) * scale
    table = {**FLOOR, **(floors or {})}
    if dtype in table:
        return table[dtype] * scale
    if dtypes.is_float(dtype) or dtypes.is_complex(dtype):
        return table["float32"] * scale
    return 0.0


def quantisation_floor(scales: Iterable[float] | np.ndarray, values: np.ndarray) -> float:
    """The relative error quantising `values` with these steps adds (one step per channel, or one for all):
    step/√12 (the RMS of a rounding error uniform in ±step/2), as an RMS over the channels, divided by the
    RMS of the values, times QUANT_HEADROOM. 0 when the values are all zero."""
    s = np.abs(np.asarray(list(scales) if not isinstance(scales, np.ndarray) else scales, dtype=np.float64))
    v = np.asarray(values, dtype=np.float64)
    rms = float(np.sqrt(np.mean(v * v))) if v.size else 0.0
    if rms == 0.0 or s.size == 0:
        return 0.0
    return QUANT_HEADROOM * float(np.sqrt(np.mean(s * s) / 12.0)) / rms


def least_precise(names: Iterable[str | None]) -> str | None:
    """The least precise floating dtype among `names` (None when none is floating)."""
    present = {n for n in names if n}
    for d in PRECISION_ORDER:
        if d in present:
            return d
    floats = [n for n in present if dtypes.is_float(n) or dtypes.is_complex(n)]
    return "float32" if floats else None


@dataclass(frozen=True, slots=True)  # one per compared pair in a scan: no __dict__ each
class TensorError:
    """One tensor pair's error on both scales. `rel`/`abs` are trimmed (robust to a few outliers);
    `rel_l2`/`abs_rms` keep the outliers (what a consumer of the tensor may see of them)."""

    rel: float
    abs: float
    rel_l2: float
    abs_rms: float
    nonfinite: int = 0  # positions where NaN/Inf differ
    n: int = 0

    @property
    def worst_rel(self) -> float:
        """The relative error with outliers kept, infinite when NaN/Inf positions differ."""
        return math.inf if self.nonfinite else max(self.rel, self.rel_l2)


ZERO_ERROR = TensorError(0.0, 0.0, 0.0, 0.0)
# the errors of equal pairs of n elements: one each (frozen), shared by every op of a scan that has one
_NO_ERROR: dict[int, TensorError] = {}


def _no_error(n: int) -> TensorError:
    found = _NO_ERROR.get(n)
    if found is None:
        found = TensorError(0.0, 0.0, 0.0, 0.0, 0, n)
        if len(_NO_ERROR) < 4096:
            _NO_ERROR[n] = found
    return found


def tensor_error(st: PairStats) -> TensorError | None:
    """The error of a compared pair, or None when nothing could be compared."""
    if st.bitwise_equal or st.values_equal:
        return _no_error(st.n)
    if st.compared == 0:
        return (
            TensorError(math.inf, math.inf, math.inf, math.inf, st.nonfinite_mismatch, st.n)
            if st.nonfinite_mismatch
            else None
        )
    trimmed = st.mean_abs_trimmed if st.mean_abs_trimmed is not None else (st.mean_abs or 0.0)
    scale = st.rms_ref or 0.0
    if scale == 0.0:
        scale = _rms_target(st)
    rmse = st.rmse or 0.0
    if scale == 0.0:
        rel = 0.0 if trimmed == 0 else math.inf
        rel_l2 = 0.0 if rmse == 0 else math.inf
    else:
        rel, rel_l2 = trimmed / scale, rmse / scale
    return TensorError(rel, trimmed, rel_l2, rmse, st.nonfinite_mismatch, st.n)


def _rms_target(st: PairStats) -> float:
    t = st.target
    if t.l2 is None or not t.finite:
        return 0.0
    return t.l2 / math.sqrt(t.finite)


def stats_error(rel: Mapping[str, float | None] | None) -> TensorError | None:
    """A statistic-only pair's error: the largest relative difference of max/min/mean/L2 (a lower bound of
    the tensor's error, and said so wherever it is shown)."""
    if not rel:
        return None
    vals = [abs(v) for v in rel.values() if v is not None]
    if not vals:
        return None
    worst = max(vals)
    return TensorError(worst, worst, worst, worst)


def fmt_rel(v: float) -> str:
    if math.isinf(v):
        return "inf"
    return f"{v:.2e}" if v else "0"


TRIM_PERCENT = f"{TRIM:.0%}"
