"""Per-element looks at one tensor pair, for the detail view and the preconditions: the worst elements, the
histogram of the errors, and whether a single fp16/bf16 rounding explains every difference."""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from dumptui.core.compare.metrics import CHUNK, as_real, chunk_pairs
from dumptui.core.io import dtypes
from dumptui.core.model.dump import TensorRef, TensorStats


@dataclass
class WorstElement:
    index: tuple[int, ...]
    ref: float
    target: float
    diff: float


def _chunk_differences(
    target: TensorRef, ref: TensorRef, chunk: int
) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    """Per chunk: target and reference as float64, |target - ref|, and where they hold the same value
    (NaN against NaN included: no difference)."""
    for xc, yc in chunk_pairs(target, ref, chunk):
        x64 = as_real(np.asarray(xc)).astype(np.float64)
        y64 = as_real(np.asarray(yc)).astype(np.float64)
        with np.errstate(invalid="ignore"):
            d = np.abs(x64 - y64)
        yield x64, y64, d, (x64 == y64) | (np.isnan(x64) & np.isnan(y64))


def worst_elements(ref: TensorRef, target: TensorRef, k: int = 10, chunk: int = CHUNK) -> list[WorstElement]:
    """The k elements with the largest |target - ref| (non-finite mismatches first), for the detail view."""
    shape = ref.shape or ()
    cands: list[tuple[float, int, float, float]] = []
    offset = 0
    for x64, y64, d, same in _chunk_differences(target, ref, chunk):
        d[same] = 0.0
        d[np.isnan(d)] = np.inf
        kk = min(k, d.size)
        if kk:
            idx = np.argpartition(d, d.size - kk)[d.size - kk :]
            for i in idx:
                if d[i] > 0:
                    cands.append((float(d[i]), offset + int(i), float(y64[i]), float(x64[i])))
        cands.sort(key=lambda c: -c[0])
        del cands[k:]
        offset += x64.size
    out = []
    for diff, gi, yv, xv in cands:
        index = tuple(int(v) for v in np.unravel_index(gi, shape)) if shape else ()
        out.append(WorstElement(index, yv, xv, diff))
    return out


def error_histogram(ref: TensorRef, target: TensorRef, chunk: int = CHUNK) -> tuple[list[int], int, int]:
    """Counts of |target - ref| per power-of-two bin: (counts, exponent of the first bin, exact zeros).

    Bin i holds differences in [2^(e0+i), 2^(e0+i+1)); non-finite differences go to the last bin.
    """
    bins: dict[int, int] = {}
    zeros = 0
    inf_count = 0
    for _x64, _y64, d, same in _chunk_differences(target, ref, chunk):
        zeros += int(np.count_nonzero(same))
        d = d[~same]
        fin = np.isfinite(d)
        inf_count += int(d.size - np.count_nonzero(fin))
        d = d[fin]
        if d.size:
            _, e = np.frexp(d)  # d = m * 2^e with m in [0.5, 1): d in [2^(e-1), 2^e)
            vals, counts = np.unique(e - 1, return_counts=True)
            for v, c in zip(vals.tolist(), counts.tolist()):
                bins[v] = bins.get(v, 0) + c
    if not bins and not inf_count:
        return [], 0, zeros
    lo = min(bins) if bins else 0
    hi = max(bins) if bins else 0
    hist = [bins.get(e, 0) for e in range(lo, hi + 1)]
    if inf_count:
        hist.append(inf_count)
    return hist, lo, zeros


def within_rounding(ref: TensorRef, target: TensorRef, chunk: int = CHUNK) -> str | None:
    """The low-precision format (float16/bfloat16) whose rounding explains every difference, or None.

    A deliberate conversion rounds each value once: |x - y| <= u * max(|x|, |y|) + smallest subnormal,
    with u the unit roundoff of the format. Values beyond float16's range rule float16 out.
    """
    for fmt in ("float16", "bfloat16"):
        u, tiny = dtypes.UNIT_ROUNDOFF[fmt], dtypes.SMALLEST_SUBNORMAL[fmt]
        ok = True
        for xc, yc in chunk_pairs(target, ref, chunk):
            x64 = as_real(np.asarray(xc)).astype(np.float64)
            y64 = as_real(np.asarray(yc)).astype(np.float64)
            with np.errstate(invalid="ignore"):
                d = np.abs(x64 - y64)
                lim = np.maximum(np.abs(x64), np.abs(y64)) * u + tiny
                bad = ~((d <= lim) | (x64 == y64) | (np.isnan(x64) & np.isnan(y64)))
            if fmt == "float16" and (np.nanmax(np.abs(y64), initial=0.0) > 65504.0):
                bad = np.ones(1, bool)
            if bad.any():
                ok = False
                break
        if ok:
            return fmt
    return None


def within_rounding_rows(pairs: list[tuple[np.ndarray, np.ndarray]]) -> list[str | None]:
    """within_rounding of many small pairs read already: (reference, target) flat arrays of as many elements,
    at least one and at most CHUNK, real (not complex). Pairs of one size are rows of one array, each row
    judged by the same elementwise arithmetic as one pair alone (so with the same answer), in a few numpy calls
    instead of a dozen a pair: a 1,000-layer MLP's preconditions look at 2,001 weight pairs."""
    out: list[str | None] = [None] * len(pairs)
    groups: dict[int, list[int]] = {}
    for i, (ref, target) in enumerate(pairs):
        if not (0 < ref.size == target.size <= CHUNK) or np.iscomplexobj(ref) or np.iscomplexobj(target):
            raise ValueError("within_rounding_rows takes real pairs of 1 to CHUNK elements each side")
        groups.setdefault(ref.size, []).append(i)
    for n, members in groups.items():
        step = max(1, CHUNK // n)
        for start in range(0, len(members), step):
            part = members[start : start + step]
            X, Y = np.empty((len(part), n)), np.empty((len(part), n))
            for r, i in enumerate(part):
                X[r] = as_real(np.asarray(pairs[i][1])).reshape(-1)
                Y[r] = as_real(np.asarray(pairs[i][0])).reshape(-1)
            for i, fmt in zip(part, _rounding_rows(X, Y)):
                out[i] = fmt
    return out


def _rounding_rows(X: np.ndarray, Y: np.ndarray) -> list[str | None]:
    """within_rounding's test, row by row (X: the targets, Y: the references, float64)."""
    found: list[str | None] = [None] * X.shape[0]
    left = np.arange(X.shape[0])
    for fmt, largest in (("float16", 65504.0), ("bfloat16", None)):  # (values beyond float16's range rule it out)
        if not left.size:
            break
        x64, y64 = X[left], Y[left]
        u, tiny = dtypes.UNIT_ROUNDOFF[fmt], dtypes.SMALLEST_SUBNORMAL[fmt]
        with np.errstate(invalid="ignore"):
            d = np.abs(x64 - y64)
            lim = np.maximum(np.abs(x64), np.abs(y64)) * u + tiny
            bad = ~((d <= lim) | (x64 == y64) | (np.isnan(x64) & np.isnan(y64)))
        row_bad = bad.any(axis=1)
        if largest is not None:
            row_bad |= np.nanmax(np.abs(y64), axis=1, initial=0.0) > largest
        for i in left[~row_bad]:
            found[int(i)] = fmt
        left = left[row_bad]
    return found


MEAN_SIGMAS = 6.0  # a mean moved by rounding: within this many standard deviations of the rounding's mean


def stats_within_rounding(ref: TensorStats, target: TensorStats, n: int | None = None) -> str | None:
    """For statistic-only records: the format (float16/bfloat16) whose rounding explains the difference of
    every statistic, or None. Rounding each element moves max and min by one rounding at most and the L2 norm
    by at most u x itself; the mean moves by the mean of n independent roundings, whose standard deviation is
    u x RMS / sqrt(3n): beyond MEAN_SIGMAS of those, a shifted mean is not rounding (a network input whose mean
    moved 7 % is not bf16). Without the element count the mean cannot be judged and is left out."""
    both: dict[str, tuple[float, float]] = {}  # statistic -> (ref, target), where both sides give a number
    for k in ("max", "min", "l2"):
        r, t = ref.get(k), target.get(k)
        if isinstance(r, (int, float)) and isinstance(t, (int, float)):
            both[k] = (r, t)
    if not both:
        return None
    means = [d.get("mean") for d in (ref, target)]
    mean_ref, mean_target = means
    judge_mean = (
        n is not None
        and n > 0
        and "l2" in both
        and isinstance(mean_ref, (int, float))
        and isinstance(mean_target, (int, float))
    )
    for fmt in ("float16", "bfloat16"):
        u, tiny = dtypes.UNIT_ROUNDOFF[fmt], dtypes.SMALLEST_SUBNORMAL[fmt]
        if not all(abs(t - r) <= u * max(abs(t), abs(r)) * 1.0001 + tiny for r, t in both.values()):
            continue
        if judge_mean:
            assert n is not None and isinstance(mean_ref, (int, float)) and isinstance(mean_target, (int, float))
            rms = max(abs(both["l2"][0]), abs(both["l2"][1])) / math.sqrt(n)
            if abs(mean_ref - mean_target) > MEAN_SIGMAS * u * rms / math.sqrt(3 * n) + tiny:
                continue
        return fmt
    return None
