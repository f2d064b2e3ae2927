"""Many small tensor pairs at once: metrics.py's statistics computed for thousands of pairs as the rows of one
array, so that a pair costs a few microseconds of Python instead of a hundred. A noisy scan is mostly such
pairs, and one at a time the arithmetic is a tenth of compare_arrays' cost, the rest one numpy call and one
record field at a time.

The definitions and the numbers are metrics.py's (tests/core/compare/test_smallpairs.py holds every field to
compare_arrays within 1e-12 relative). A pair is computed here when it fits one chunk and is trimmed without a
sample (fewer than TRIM_SAMPLED_FROM elements), both sides hold real numbers float64 holds exactly (not int64,
not complex, not bool) and every element is finite on both sides; every other pair is computed by
compare_arrays, one at a time, as before.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import TypeVar

import numpy as np

from dumptui.core.compare.metrics import (
    EPS,
    KL_SMOOTHING,
    TRIM,
    TRIM_SAMPLED_FROM,
    ElementTolerance,
    compare_arrays,
    compare_read,
    compare_tensors,
)
from dumptui.core.compare.metrictable import Undefined
from dumptui.core.compare.pairstats import (
    PAIR_FLOATS,
    RECORD_COLUMNS,
    SIDE_ORDER,
    PairStats,
    flag_bit,
    none_bit,
    pair_column,
    records_from_rows,
    side_column,
)
from dumptui.core.model.dump import TensorRef

BATCH_ELEMENTS = 1 << 19  # elements per side computed at once: a few 4 MB float64 arrays, cache-friendly

SmallPair = tuple[np.ndarray, np.ndarray, tuple[int, ...], ElementTolerance]  # ref, target, shape, tolerance

_P = {name: pair_column(name) for name in ("n", "compared", "n_diff", "n_off")}
_F = {name: pair_column(name) for name in PAIR_FLOATS}  # every value of the metric table
_BIT = {name: 1 << none_bit(col) for name, col in _F.items()}
_BITWISE, _VALUES_EQUAL = 1 << flag_bit("bitwise_equal"), 1 << flag_bit("values_equal")
_REL = ("max_rel", "mean_rel", "acc_rel")
_NO_REL = Undefined.NO_REF_ABOVE_EPS
_SIDE_NAMES = SIDE_ORDER  # a side's counts, then its values (the metric table's)
_REF_COLS = np.array([side_column("ref", name) for name in _SIDE_NAMES])
_TARGET_COLS = np.array([side_column("target", name) for name in _SIDE_NAMES])
_ZERO_WHEN_EQUAL = np.array(
    [
        _F[name]
        for name in ("max_abs", "mean_abs", "mean_abs_trimmed", "rmse", "rel_euclid", "max_rel", "mean_rel", "acc_rel")
    ]
)
_REF_MIN, _REF_MAX = side_column("ref", "min"), side_column("ref", "max")
_TARGET_MIN, _TARGET_MAX = side_column("target", "min"), side_column("target", "max")


def qualifies(ref: np.ndarray, target: np.ndarray) -> bool:
    """Whether the pair's statistics can be computed here (finiteness is checked on the way)."""
    return 0 < ref.size == target.size < TRIM_SAMPLED_FROM and _exact(ref.dtype) and _exact(target.dtype)


def _exact(dt: np.dtype) -> bool:
    return (dt.kind == "f" and dt.itemsize <= 8) or (dt.kind in "iu" and dt.itemsize < 8)


def compare_many(pairs: list[SmallPair], kl: bool = True) -> list[PairStats]:
    """The statistics of each pair (ref, target, the ref's shape, tolerance), as compare_arrays gives them."""
    out: list[PairStats | None] = [None] * len(pairs)
    for n, part in _row_groups(pairs):
        for i, st in zip(part, _rows(n, [pairs[i] for i in part], kl)):
            out[i] = st
    done: list[PairStats] = []
    for st, (ref, target, shape, tol) in zip(out, pairs):
        # not qualified, or not finite everywhere: one at a time
        done.append(st if st is not None else compare_arrays(ref.reshape(shape), target, tol, kl=kl))
    return done


_T = TypeVar("_T")

# (relative error, share of elements off the element tolerance) of a pair, as a replay's proof quotes them
Deviation = tuple[float, float]


def deviations_many(pairs: list[SmallPair]) -> list[Deviation | None]:
    """Of each pair, what noise.tensor_error(st).rel and st.n_off / st.compared give for the statistics
    compare_many computes (bit for bit: the same arithmetic on the same rows), without the rest of the record:
    a replay's proof asks for these two alone, and the record (both sides' statistics, cosine, the relative
    errors' counts, the largest difference's place, the bit word) was most of a replay's cost. None for a pair
    compare_many computes one at a time (not qualified, or NaN/Inf in it): the caller computes its record."""
    out: list[Deviation | None] = [None] * len(pairs)
    for n, part in _row_groups(pairs):
        for i, dev in zip(part, _deviation_rows(n, [pairs[i] for i in part])):
            out[i] = dev
    return out


def _row_groups(pairs: list[SmallPair]) -> Iterator[tuple[int, list[int]]]:
    """(n, the positions of qualified pairs of n elements), at most BATCH_ELEMENTS elements a group: the rows
    computed together."""
    groups: dict[int, list[int]] = {}
    for i, (ref, target, _shape, _tol) in enumerate(pairs):
        if qualifies(ref, target):
            groups.setdefault(ref.size, []).append(i)
    for n, members in groups.items():
        step = max(1, BATCH_ELEMENTS // n)
        for start in range(0, len(members), step):
            yield n, members[start : start + step]


def _as_rows(n: int, items: list[SmallPair]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The pairs as rows in float64: (Y the references, X the targets, which rows are bitwise equal, each row's
    X.X and Y.Y)."""
    m = len(items)
    Y, X = np.empty((m, n)), np.empty((m, n))
    equal = np.zeros(m, dtype=bool)
    for r, (ref, target, _shape, _tol) in enumerate(items):
        yr, xr = ref.reshape(-1), target.reshape(-1)
        Y[r], X[r] = yr, xr
        equal[r] = yr.dtype == xr.dtype and yr.tobytes() == xr.tobytes()
    with np.errstate(over="ignore", invalid="ignore"):
        XX, YY = _rowdot(X, X), _rowdot(Y, Y)
    return Y, X, equal, XX, YY


def _finite_rows_only(
    finite: np.ndarray, items: list[SmallPair], rows: Callable[[list[SmallPair]], list[_T]]
) -> list[_T | None]:
    """`rows` of the finite pairs alone (the others: None, computed one by one, NaN/Inf counted and masked)."""
    kept = np.flatnonzero(finite)
    done = iter(rows([items[i] for i in kept]) if kept.size else ())
    return [next(done) if ok else None for ok in finite]


def _off_and_trimmed(
    AD: np.ndarray, T: np.ndarray, YY: np.ndarray, items: list[SmallPair], n: int
) -> tuple[np.ndarray, np.ndarray]:
    """Per row: the elements off the element tolerance (|d| > atol + rtol |y| + rms_tol rms(y); T = |Y|) and
    the mean |d| without its largest TRIM share."""
    tols = [t for _r, _t, _s, t in items]
    rtol = np.array([t.rtol for t in tols])
    atol = np.array([t.atol for t in tols])
    rms_tol = np.array([t.rms_tol for t in tols])
    lim = T * rtol[:, None]
    lim += (atol + rms_tol * np.sqrt(YY / n))[:, None]
    off = np.count_nonzero(lim < AD, axis=1)
    k = int(n * TRIM)
    trimmed = AD.mean(axis=1) if k == 0 else np.partition(AD, n - k, axis=1)[:, : n - k].sum(axis=1) / (n - k)
    return off, trimmed


def _deviation_rows(n: int, items: list[SmallPair]) -> list[Deviation | None]:
    """_rows's arithmetic for the mean trimmed error, the reference's (else the target's) RMS and the elements
    off; None for a pair with a non-finite element (as _rows, which computes those one by one)."""
    Y, X, equal, XX, YY = _as_rows(n, items)
    finite = np.isfinite(XX) & np.isfinite(YY)
    if not finite.all():
        return _finite_rows_only(finite, items, lambda kept: _deviation_rows(n, kept))
    off, trimmed = _off_and_trimmed(np.abs(np.subtract(X, Y)), np.abs(Y), YY, items, n)
    rms_ref, l2_target = np.sqrt(YY / n), np.sqrt(XX)
    out: list[Deviation | None] = []
    for r in range(len(items)):
        tail = int(off[r]) / n  # (a finite pair: every element compared)
        if equal[r]:
            out.append((0.0, 0.0))  # bitwise equal: no error (and no element off)
            continue
        mean_error, scale = float(trimmed[r]), float(rms_ref[r])
        if scale == 0.0:
            scale = float(l2_target[r]) / math.sqrt(n)
        if scale == 0.0:
            out.append((0.0 if mean_error == 0 else math.inf, tail))
        else:
            out.append((mean_error / scale, tail))
    return out


def compare_tensor_pairs(
    jobs: list[tuple[TensorRef, TensorRef, ElementTolerance]], kl: bool = True
) -> list[tuple[PairStats | None, str | None]]:
    """compare_tensors for each (ref, target, tolerance): (statistics, None), or (None, why) when a read
    fails. The small pairs are read, then computed together, a slice of BATCH_ELEMENTS at a time."""
    out: list[tuple[PairStats | None, str | None]] = [(None, "not computed")] * len(jobs)
    small: list[tuple[int, SmallPair]] = []
    held = 0
    equal = _EqualPairs()

    def flush() -> None:
        for (i, _pair), st in zip(small, compare_many([pair for _i, pair in small], kl)):
            out[i] = (st, None)
        small.clear()

    for i, (ref, target, tol) in enumerate(jobs):
        if (ref.size or 0) < TRIM_SAMPLED_FROM and (target.size or 0) < TRIM_SAMPLED_FROM:
            try:
                y, x = ref.read(), target.read()
            except (OSError, ValueError) as e:
                out[i] = (None, f"read failed: {e}")
                continue
            if qualifies(y, x):
                small.append((i, (y, x, tuple(ref.shape or ()), tol)))
                held += y.size
                if held >= BATCH_ELEMENTS:
                    flush()
                    held = 0
                continue
            try:
                out[i] = (equal.stats(ref, target, y, x, tol, kl), None)
            except ValueError as e:
                out[i] = (None, f"read failed: {e}")
            continue
        try:
            out[i] = (compare_tensors(ref, target, tol, kl=kl), None)
        except (OSError, ValueError) as e:
            out[i] = (None, f"read failed: {e}")
    flush()
    return out


class _EqualPairs:
    """compare_read of small pairs that are not computed together, a bitwise-equal pair's record made once
    per distinct value: such a record depends on the values and the element count alone (metrics.py's
    `_equal_pair_stats`, no tolerance, no shape), and a MindSpore 2.x scan has thousands of them, the scalar
    arguments dumped as inputs (transpose flags, data formats: a few distinct values)."""

    MAX_BYTES = 256  # values this small are remembered
    MAX_KEPT = 1024

    def __init__(self) -> None:
        self.kept: dict[tuple[np.dtype, int, bytes], PairStats] = {}

    def stats(
        self, ref: TensorRef, target: TensorRef, y: np.ndarray, x: np.ndarray, tol: ElementTolerance, kl: bool
    ) -> PairStats:
        if not (y.dtype == x.dtype and y.size == x.size and y.nbytes <= self.MAX_BYTES):
            return compare_read(ref, target, y, x, tol, kl=kl)
        raw = y.tobytes()
        if raw != x.tobytes():
            return compare_read(ref, target, y, x, tol, kl=kl)
        key = (y.dtype, ref.size or 0, raw)
        st = self.kept.get(key)
        if st is None:
            st = compare_read(ref, target, y, x, tol, kl=kl)
            if not st.bitwise_equal or len(self.kept) >= self.MAX_KEPT:
                return st
            self.kept[key] = st
        return st.copy()


def _rowdot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Each row's dot product, as np.dot gives it for that row alone (a stacked matmul calls the same BLAS
    product per row; einsum sums in another order, a few ulps apart)."""
    dots: np.ndarray = np.matmul(a[:, None, :], b[:, :, None])[:, 0, 0]
    return dots


def _rows(n: int, items: list[SmallPair], kl: bool) -> list[PairStats | None]:
    """The records of `items` (all of `n` elements); None for a pair with a non-finite element."""
    m = len(items)
    Y, X, equal, XX, YY = _as_rows(n, items)
    finite = np.isfinite(XX) & np.isfinite(YY)
    if not finite.all():  # those pairs are computed one by one (NaN/Inf counted and masked there)
        return _finite_rows_only(finite, items, lambda kept: _rows(n, kept, kl))
    V = np.zeros((m, RECORD_COLUMNS))
    V[:, _P["n"]] = n
    V[:, _P["compared"]] = n
    for side, S, SS in (("ref", Y, YY), ("target", X, XX)):
        _side_columns(V, side, S, SS, n)
    sxy = _rowdot(X, Y)
    D = np.subtract(X, Y)
    sdd = _rowdot(D, D)
    AD = np.abs(D, out=D)
    rows = np.arange(m)
    at = AD.argmax(axis=1)
    V[:, _F["max_abs"]] = AD[rows, at]
    V[:, _F["max_abs_ref"]] = Y[rows, at]
    V[:, _F["max_abs_target"]] = X[rows, at]
    sad = AD.sum(axis=1)
    n_diff = np.count_nonzero(AD, axis=1)  # finite values converted exactly: differ exactly where |x-y| > 0
    T = np.abs(Y)
    big = T > EPS
    nbig = np.count_nonzero(big, axis=1)
    off, trimmed = _off_and_trimmed(AD, T, YY, items, n)
    np.maximum(T, EPS, out=T)
    R = np.divide(AD, T, out=T)
    within1 = np.count_nonzero(R <= 1e-3, axis=1)
    within5 = np.count_nonzero(R <= 5e-3, axis=1)
    R *= big
    rel_max, rel_sum = R.max(axis=1), R.sum(axis=1)
    if kl:
        kl_values = _kl(X, Y, V)
    nx, ny = np.sqrt(XX), np.sqrt(YY)
    with np.errstate(divide="ignore", invalid="ignore"):
        V[:, _F["cos"]] = np.clip(sxy / (nx * ny), -1.0, 1.0)
        V[:, _F["rel_euclid"]] = np.sqrt(sdd) / ny
        V[:, _F["mean_rel"]] = rel_sum / nbig
    V[:, _P["n_diff"]] = n_diff
    V[:, _P["n_off"]] = off
    V[:, _F["mean_abs"]] = sad / n
    V[:, _F["mean_abs_trimmed"]] = trimmed
    V[:, _F["rms_ref"]] = np.sqrt(YY / n)
    V[:, _F["rmse"]] = np.sqrt(sdd / n)
    V[:, _F["max_rel"]] = rel_max
    V[:, _F["acc_rel"]] = rel_sum
    V[:, _F["thousandth"]] = within1 / n
    V[:, _F["five_thousandths"]] = within5 / n
    if kl:
        V[:, _F["kl"]] = kl_values
    _equal_rows(V, equal, n)
    words: list[int] = []
    indexes: list[tuple[int, ...] | None] = []
    reasons: list[dict[str, Undefined] | None] = []
    for r, (_ref, _target, shape, _tol) in enumerate(items):
        if equal[r]:
            w, why = _equal_word(V, r, int(nbig[r]))
            words.append(w)
            indexes.append(None)
            reasons.append(why)
        else:
            w, why = _word(V, r, kl, float(nx[r]), float(ny[r]), float(sdd[r]), int(nbig[r]), int(n_diff[r]))
            words.append(w)
            indexes.append(_unravel(int(at[r]), shape))
            reasons.append(why)
    return list(records_from_rows(V, words, indexes, reasons))


def _side_columns(V: np.ndarray, side: str, S: np.ndarray, SS: np.ndarray, n: int) -> None:
    """One side's statistics (metrics._Side over one chunk: its variance formula chosen the same way)."""
    csum = S.sum(axis=1)
    cmean = csum / n
    with np.errstate(over="ignore", invalid="ignore"):
        well = SS / n - cmean * cmean > 1e-3 * (SS / n)
        quick = np.maximum(SS - n * cmean * cmean, 0.0)
    m2 = quick
    if not well.all():
        dev = S[~well] - cmean[~well, None]
        m2 = quick.copy()
        m2[~well] = _rowdot(dev, dev)
    for name, values in (
        ("count", n),
        ("finite", n),
        ("zeros", n - np.count_nonzero(S, axis=1)),
        ("min", S.min(axis=1)),
        ("max", S.max(axis=1)),
        ("mean", cmean),
        ("std", np.sqrt(m2 / n)),
        ("l2", np.sqrt(SS)),
    ):
        V[:, side_column(side, name)] = values


def _kl(X: np.ndarray, Y: np.ndarray, V: np.ndarray) -> np.ndarray:
    """metrics._Acc._kl per row (0 where a side is constant: the record says undefined there)."""
    ymin, ymax = V[:, _REF_MIN], V[:, _REF_MAX]
    xmin, xmax = V[:, _TARGET_MIN], V[:, _TARGET_MAX]
    yrange, xrange_ = ymax - ymin, xmax - xmin
    valid = (yrange > 0) & (xrange_ > 0)
    out = np.zeros(len(V))
    if not valid.any():
        return out
    Yv, Xv = Y[valid], X[valid]
    p = Yv - ymin[valid, None]
    p *= (1.0 / yrange[valid])[:, None]
    p += KL_SMOOTHING
    q = Xv - xmin[valid, None]
    q *= (1.0 / xrange_[valid])[:, None]
    q += KL_SMOOTHING
    kl_p, kl_q = p.sum(axis=1), q.sum(axis=1)
    np.divide(p, q, out=q)
    np.log(q, out=q)
    kl_a = _rowdot(p, q)
    # math.log as metrics.py takes it (numpy's log may differ from it in the last bit)
    out[valid] = [
        max(a / p_ + math.log(q_ / p_), 0.0) for a, p_, q_ in zip(kl_a.tolist(), kl_p.tolist(), kl_q.tolist())
    ]
    return out


def _word(
    V: np.ndarray, r: int, kl: bool, nx: float, ny: float, sdd: float, nbig: int, n_diff: int
) -> tuple[int, dict[str, Undefined] | None]:
    """The bit word and the reasons for the undefined values of a computed row (metrics._Acc.finish's rules,
    in its order: the reasons keep their order in JSON)."""
    why: dict[str, Undefined] = {}
    word = 0
    undefined = 0
    if nx == 0 and ny == 0:
        V[r, _F["cos"]] = 1.0
    elif nx == 0 or ny == 0:
        why["cos"] = Undefined.TARGET_ZEROS if nx == 0 else Undefined.REF_ZEROS
        undefined |= _BIT["cos"]
    if ny == 0:
        if sdd == 0:
            V[r, _F["rel_euclid"]] = 0.0
        else:
            why["rel_euclid"] = Undefined.REF_ZEROS
            undefined |= _BIT["rel_euclid"]
    if not nbig:
        for k in _REL:
            why[k] = _NO_REL
            undefined |= _BIT[k]
    ref_constant = V[r, _REF_MAX] <= V[r, _REF_MIN]
    target_constant = V[r, _TARGET_MAX] <= V[r, _TARGET_MIN]
    if not kl:
        why["kl"] = Undefined.KL_NOT_ASKED
        undefined |= _BIT["kl"]
    elif ref_constant:
        why["kl"] = Undefined.REF_CONSTANT
        undefined |= _BIT["kl"]
    elif target_constant:
        why["kl"] = Undefined.TARGET_CONSTANT
        undefined |= _BIT["kl"]
    elif n_diff == 0:
        V[r, _F["kl"]] = 0.0
    if n_diff == 0:
        word |= _VALUES_EQUAL
    return word | undefined, why or None


def _equal_rows(V: np.ndarray, equal: np.ndarray, n: int) -> None:
    """The bitwise-equal pairs' rows (metrics._equal_pair_stats): the reference's side on both sides, every
    difference exactly zero."""
    rows = np.flatnonzero(equal)
    if not rows.size:
        return
    V[np.ix_(rows, _TARGET_COLS)] = V[np.ix_(rows, _REF_COLS)]
    V[rows, _P["n_diff"]] = 0
    V[rows, _P["n_off"]] = 0
    V[rows, _F["cos"]] = 1.0
    V[np.ix_(rows, _ZERO_WHEN_EQUAL)] = 0.0
    l2 = V[rows, side_column("ref", "l2")]
    V[rows, _F["rms_ref"]] = np.sqrt(l2 * l2 / n)
    V[rows, _F["thousandth"]] = 1.0
    V[rows, _F["five_thousandths"]] = 1.0
    V[rows, _F["kl"]] = 0.0  # undefined where the reference is constant (_equal_word)


def _equal_word(V: np.ndarray, r: int, nbig: int) -> tuple[int, dict[str, Undefined] | None]:
    """A bitwise-equal row's bit word and reasons: no largest difference to point at."""
    why: dict[str, Undefined] = {}
    undefined = _BIT["max_abs_ref"] | _BIT["max_abs_target"]
    if not nbig:
        for k in _REL:
            why[k] = _NO_REL
            undefined |= _BIT[k]
    if not V[r, _REF_MAX] > V[r, _REF_MIN]:
        why["kl"] = Undefined.REF_CONSTANT
        undefined |= _BIT["kl"]
    return _BITWISE | _VALUES_EQUAL | undefined, why or None


def _unravel(flat: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    """np.unravel_index for one index, without its per-call cost."""
    out = []
    for dim in reversed(shape):
        flat, i = divmod(flat, dim)
        out.append(i)
    return tuple(reversed(out))
