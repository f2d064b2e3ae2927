"""msprobe's per-tensor numbers, computed the way msprobe 26.x computes them, for `--csv` in msprobe's profile.

They are not dumptui's numbers (core/compare/metrics.py): msprobe's `EucDist` is the absolute ||N-B||_2, its
`MaxRelativeErr` divides by the bench value with the dtype's machine epsilon added where the bench is 0 (so a
zero bench element gives a huge ratio rather than being left out), and its thousandth ratios count relative
errors strictly below 0.001 / 0.005. Sources: msprobe's `core/compare/npy_compare.py` (relative error, the
checks and their messages), its builtin algorithms (`alg_euclidean_distance`, `alg_one_thousand_error`, ...)
and `multiprocessing_compute.check_accuracy`; checked cell by cell against the CSVs msprobe 26.2 wrote for
the shared MindSpore fixtures (tests/test_msprobe_csv.py).

NPU = the target, Bench = the reference. Tensors are read chunk by chunk, so memory stays bounded; sums are
accumulated in float64 as msprobe does after its `astype(float)`, while the relative error is computed in
the bench dtype (float32 data: float32 arithmetic and float32 epsilon), as msprobe does.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from dumptui.core.model.dump import TensorRef

CHUNK = 1 << 20  # elements per chunk: large enough for numpy to be efficient, small enough to stay cheap
THOUSANDTH, FIVE_THOUSANDTHS = 0.001, 0.005
FLOAT64_EPS = float(np.finfo(np.float64).eps)  # msprobe's Const.FLOAT_EPSILON: "all zero" norm threshold

# msprobe's spellings of values that are not numbers (CompareConst)
NAN_TEXT = "Nan"
UNSUPPORTED = "unsupported"
N_A = "N/A"
YES, NO = "Yes", "No"

# msprobe's error messages (npy_compare.npy_data_check and the algorithms), verbatim
NOT_NDARRAY = "Dump file is not ndarray.\n"
EMPTY = "This is empty data, can not compare.\n"
SCALAR = "This is type of scalar data, can not compare.\n"
SHAPE_DIFFERS = "Shape of NPU and bench Tensor do not match.\n"
DTYPE_DIFFERS = "Dtype of NPU and bench Tensor do not match. Skipped.\n"
NAN_POSITIONS = "The position of inf or nan in NPU and bench Tensor do not match.\n"
ZERO_NPU = "Cannot compare by Cosine Similarity, All the data is Zero in npu dump data."
ZERO_BENCH = "Cannot compare by Cosine Similarity, All the data is Zero in Bench dump data."
COS_NAN = "Cannot compare by Cosine Similarity, the dump data has NaN."
LENGTH_ONE = "This is a 1-d tensor of length 1."
REL_NAN = "Cannot compare by MaxRelativeError, the data contains nan in dump data."

Value = float | str  # a number, or msprobe's spelling of a value that is not one


@dataclass
class SideStats:
    """One tensor's max, min, mean and L2 norm as msprobe reports them: max/min in the tensor's own dtype,
    mean and norm accumulated in float64 and given back in the dtype (msprobe's numpy calls return float32
    for float32 data). `dtype` is numpy's name of the values as read (msprobe prints `str(array.dtype)`)."""

    dtype: str
    shape: tuple[int, ...]
    max: object
    min: object
    mean: float
    l2: float


@dataclass
class Metrics:
    """msprobe's six comparison columns and its message for one tensor pair. `None`: the cell is empty."""

    cosine: Value | None = None
    euc_dist: Value | None = None
    max_abs: Value | None = None
    max_rel: Value | None = None
    thousandth: Value | None = None
    five_thousandths: Value | None = None
    message: str = ""
    compared: bool = False  # the six numbers were computed (no check failed)


def format_value(v: float) -> float:
    """msprobe's `format_value`: rounded to 12 decimals through text."""
    return float(f"{v:.12f}")


def _as_float_dtype(dt: np.dtype) -> np.dtype:
    """The dtype msprobe computes relative errors in: the bench dtype when it is a float, else float64."""
    return dt if dt.kind == "f" else np.dtype(np.float64)


def side_stats(t: TensorRef) -> SideStats | None:
    """Max/min/mean/norm of a readable tensor with data; None when it cannot be read or is empty."""
    if not t.has_data or t.problem:
        return None
    try:
        chunks = t.chunks(CHUNK)
        first = next(chunks, None)
    except (OSError, ValueError):
        return None
    if first is None or first.size == 0:
        return None
    dt = first.dtype
    maxes, mins, total, sq, n = [], [], 0.0, 0.0, 0
    for part in _chain(first, chunks):
        maxes.append(np.max(part))
        mins.append(np.min(part))
        wide = part.astype(np.float64)
        total += float(np.sum(wide))
        sq += float(np.dot(wide, wide))
        n += part.size
    mx, mn = np.max(np.array(maxes, dtype=dt)), np.min(np.array(mins, dtype=dt))
    with np.errstate(all="ignore"):
        if n == first.size:  # one chunk: numpy's own calls, as msprobe makes them (same rounding in the dtype)
            mean, l2 = float(np.mean(first)), float(np.linalg.norm(first))
        else:  # float64 sums over the chunks, given back in the dtype
            mean, l2 = total / n, math.sqrt(sq)
            if dt.kind == "f":
                mean, l2 = float(dt.type(mean)), float(dt.type(l2))
    shape = tuple(t.shape) if t.shape is not None else (n,)
    return SideStats(declared_dtype(t, dt), shape, mx, mn, mean, l2)


def _chain(first: np.ndarray, rest: Iterator[np.ndarray]) -> Iterator[np.ndarray]:
    yield first
    yield from rest


def declared_dtype(t: TensorRef, read_as: np.dtype) -> str:
    """The dtype msprobe prints: what the file declares. A payload dumptui reads differently from its header
    (the float16-header MindSpore bug, core/io/npy.py) is still named by its header, as `np.load` names it."""
    if t.repaired and t.dtype:
        return t.dtype
    return str(read_as)


def precheck(target: TensorRef | None, ref: TensorRef | None) -> str:
    """msprobe's `npy_data_check` before any metric: '' when the pair can be compared, else its message."""
    if target is None or ref is None or not target.has_data or not ref.has_data:
        return NOT_NDARRAY
    if target.problem or ref.problem:
        return NOT_NDARRAY
    n_shape, b_shape = tuple(target.shape or ()), tuple(ref.shape or ())
    if (target.size or 0) == 0 or (ref.size or 0) == 0:
        return EMPTY
    msg = ""
    if not n_shape or not b_shape:
        msg += SCALAR
    if n_shape != b_shape:
        msg += SHAPE_DIFFERS
    if target.dtype != ref.dtype:
        msg += DTYPE_DIFFERS
    return msg


def compare(target: TensorRef | None, ref: TensorRef | None) -> Metrics:
    """msprobe's six numbers for one tensor pair (target = NPU, reference = Bench), or its message."""
    msg = precheck(target, ref)
    if msg:
        return Metrics(message=msg)
    assert target is not None and ref is not None
    dot = nn = bb = sqdiff = 0.0
    max_abs = 0.0
    max_rel: float | None = None
    lt1 = lt5 = total = 0
    rel_nan = False
    for n, b in zip(target.chunks(CHUNK), ref.chunks(CHUNK)):
        n, b, mismatch = _zero_nonfinite(n, b)
        if mismatch:
            return Metrics(message=NAN_POSITIONS)
        rel = _relative_error(n, b)
        if rel.size:
            m = float(np.max(rel))
            rel_nan = rel_nan or math.isnan(m)
            max_rel = m if max_rel is None or m > max_rel else max_rel
        lt1 += int(np.count_nonzero(rel < THOUSANDTH))
        lt5 += int(np.count_nonzero(rel < FIVE_THOUSANDTHS))
        total += rel.size
        n64, b64 = n.astype(np.float64), b.astype(np.float64)
        d = n64 - b64
        dot += float(np.dot(n64, b64))
        nn += float(np.dot(n64, n64))
        bb += float(np.dot(b64, b64))
        sqdiff += float(np.dot(d, d))
        if d.size:
            max_abs = max(max_abs, float(np.max(np.abs(d))))
    out = Metrics(compared=True)
    out.cosine, out.message = _cosine(dot, nn, bb, total)
    out.euc_dist = math.sqrt(sqdiff)
    out.max_abs = format_value(max_abs)
    if rel_nan or max_rel is None:
        out.max_rel = NAN_TEXT
        out.message += REL_NAN
    else:
        out.max_rel = format_value(max_rel)
    out.thousandth = format_value(lt1 / total) if total else NAN_TEXT
    out.five_thousandths = format_value(lt5 / total) if total else NAN_TEXT
    return out


def _zero_nonfinite(n: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray, bool]:
    """msprobe's `handle_inf_nan`: NaN/Inf at the same positions on both sides become 0 (they are not a
    difference); at different positions the pair cannot be compared."""
    if n.dtype.kind not in "fc" and b.dtype.kind not in "fc":
        return n, b, False
    n_nan, b_nan = np.isnan(n), np.isnan(b)
    n_inf, b_inf = np.isinf(n), np.isinf(b)
    if not (n_nan.any() or b_nan.any() or n_inf.any() or b_inf.any()):
        return n, b, False
    if not (np.array_equal(n_nan, b_nan) and np.array_equal(n_inf, b_inf)):
        return n, b, True
    n, b = n.copy(), b.copy()
    n[n_nan | n_inf] = 0
    b[b_nan | b_inf] = 0
    return n, b, False


def _relative_error(n: np.ndarray, b: np.ndarray) -> np.ndarray:
    """|N-B|/|B| per element in the bench dtype; where B is 0, epsilon is added to both sides first."""
    dt = _as_float_dtype(b.dtype)
    n2, b2 = n.astype(dt, copy=True), b.astype(dt, copy=True)
    zero = b2 == 0
    eps = np.finfo(dt).eps
    b2[zero] += eps
    n2[zero] += eps
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return np.abs((n2 - b2) / b2)


def _cosine(dot: float, nn: float, bb: float, count: int) -> tuple[Value, str]:
    """msprobe's cosine similarity with its special cases and its rounding (12 decimals; 6 above 0.9999;
    exactly 1.0 above 0.99999)."""
    if count == 1:
        return UNSUPPORTED, LENGTH_ONE
    a_norm, b_norm = math.sqrt(nn), math.sqrt(bb)
    if a_norm <= FLOAT64_EPS and b_norm <= FLOAT64_EPS:
        return 1.0, ""
    if a_norm <= FLOAT64_EPS:
        return NAN_TEXT, ZERO_NPU
    if b_norm <= FLOAT64_EPS:
        return NAN_TEXT, ZERO_BENCH
    cos = dot / (a_norm * b_norm)
    if math.isnan(cos):
        return NAN_TEXT, COS_NAN
    value = format_value(cos)
    if value > 0.9999:
        value = round(value, 6)
    return (1.0 if value > 0.99999 else value), ""


def check_accuracy(cosine: Value | None, max_abs: Value | None) -> str:
    """msprobe's "Accuracy Reached or Not": No when (cos < 0.99 and max abs > 0.001) or cos < 0.9 or
    max abs > 1; a cosine of 'Nan' compares as NaN (so only the max abs can say No)."""
    if cosine == "shape unmatched":
        return "Unmatched"
    if "None" in (cosine, max_abs):
        return "None"
    if N_A in (cosine, max_abs):
        return NO
    try:
        c, m = float(cosine), float(max_abs)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return "None"
    if c < 0.99 and m > 0.001:
        return NO
    if c < 0.9 or m > 1:
        return NO
    return YES
