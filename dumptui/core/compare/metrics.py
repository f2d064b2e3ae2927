"""Comparison statistics for one tensor pair, computed in chunks with float64 accumulation.

x is the target (e.g. Ascend310), y the reference (e.g. Ascend910); both are read chunk by chunk from their
memory maps, so memory stays bounded by a chunk whatever the tensor size. Definitions (docs/formats.md#comparison-metrics):

- cosine `x.y / (|x| |y|)`: 1 when both are all zeros, undefined when only one is.
- max / mean absolute error, RMSE `sqrt(mean((x-y)^2))`, relative Euclidean distance `|x-y| / |y|`.
- max / mean / accumulated relative error `|x-y| / |y|` over the elements with `|y| > eps` (float64 eps).
- one / five thousandths ratio: share of elements with `|x-y| <= t * max(|y|, eps)`, t = 0.001 / 0.005.
- KL divergence of the min-max-normalised, sum-normalised tensors, P from y and Q from x, with 1e-12 added to
  every normalised element so that a zero on one side does not make it infinite.
- "off" elements: `|x-y| > atol + rtol*|y| + rms_tol*rms(y)` for the tolerance given (see verdict.py).
NaN and Inf are counted per side; positions where both sides hold the same non-finite value are no
difference; every other element statistic is computed over the elements finite on both sides.
Undefined values are None with the reason in `undefined`, never 0.

Longer than our usual module on purpose: one pass over the chunks computes every statistic with shared,
reused buffers (`_Work`) and one accumulator (`_Acc`); cut apart, each piece would need its own pass or its own
view of the buffers. Per-element looks at a pair (worst elements, histogram, rounding) are in elements.py.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import numpy as np

from dumptui.core.compare.metrictable import Undefined
from dumptui.core.compare.pairstats import PairStats, SideStats
from dumptui.core.model.dump import SMALL_READ, TensorRef

EPS = float(np.finfo(np.float64).eps)
CHUNK = 1 << 16  # elements per chunk: 512 KB per float64 buffer, the working set stays in cache
READ_ONCE_UP_TO = 1 << 24  # bytes a side up to which a pair that needs two passes is read into memory once
KL_SMOOTHING = 1e-12
TRIM = 0.01  # the trimmed mean drops the largest 1 % of |x-y|: a few jumps of a discontinuous op
SAMPLE_MAX = 1 << 20  # above this many elements, the trimmed mean is taken over an evenly strided sample
TRIM_SAMPLED_FROM = 1 << 14  # from this many values, the trimmed mean's cut is found from a sample first
TRIM_SAMPLE = 4096  # ...of about this many values
TRIM_SEED = 20261206  # the positions of trimmed_mean's second sample (fixed: the same answer every run)


def format_cos(v: float | None) -> str:
    """Six decimals; a cosine below 1 that would print as 1.000000 shows its distance to 1 instead."""
    if v is None:
        return "undefined"
    s = f"{v:.6f}"
    if s == "1.000000" and v < 1.0:
        return f"1-{1.0 - v:.1e}"
    return s


@dataclass(frozen=True, slots=True)
class ElementTolerance:
    atol: float = 0.0
    rtol: float = 0.0
    rms_tol: float = 0.0


class _Side:
    """Running per-side statistics (Chan's parallel variance: exact combination of chunk means and M2)."""

    def __init__(self) -> None:
        self.s = SideStats()
        self.sum = 0.0
        self.m2 = 0.0
        self.mean = 0.0
        self.sumsq = 0.0
        self.lo = math.inf
        self.hi = -math.inf

    def add(
        self, v64: np.ndarray, sumsq: float, native: np.ndarray | None = None, scratch: np.ndarray | None = None
    ) -> None:
        """Fold in one chunk; `native` (same values, storage dtype) makes min/max/zero counts cheaper."""
        n = v64.size
        if n == 0:
            return
        csum = float(v64.sum())
        cmean = csum / n
        if sumsq / n - cmean * cmean > 1e-3 * (sumsq / n):
            cm2 = max(sumsq - n * cmean * cmean, 0.0)  # well conditioned: no cancellation worth a pass
        else:
            dev = v64 - cmean
            cm2 = float(np.dot(dev, dev))
        k = self.s.finite
        if k == 0:
            self.mean, self.m2 = cmean, cm2
        else:
            tot = k + n
            delta = cmean - self.mean
            self.mean += delta * n / tot
            self.m2 += cm2 + delta * delta * k * n / tot
        self.s.finite += n
        self.sum += csum
        self.sumsq += sumsq
        src = native if native is not None and _cheap_native(native.dtype) else v64
        self.lo = min(self.lo, float(src.min()))
        self.hi = max(self.hi, float(src.max()))
        if scratch is not None and scratch.size >= n:
            self.s.zeros += int(np.count_nonzero(np.equal(src, 0, out=scratch[:n])))
        else:
            self.s.zeros += n - int(np.count_nonzero(src))

    def finish(self) -> SideStats:
        s = self.s
        if s.finite:
            s.min, s.max = self.lo, self.hi
            s.mean = self.mean
            s.std = math.sqrt(self.m2 / s.finite)
            s.l2 = math.sqrt(self.sumsq)
        return s


def _cheap_native(dtype: np.dtype) -> bool:
    """Whether min/max/comparisons run faster on the storage dtype than on the float64 copy: integers and
    float32/float64 do (less memory to stream); float16 does not (numpy converts it element by element:
    60x slower than on the float64 copy, whose values are the same exactly)."""
    return dtype.kind in "iu" or (dtype.kind == "f" and dtype.itemsize >= 4)


def as_real(a: np.ndarray) -> np.ndarray:
    if a.dtype.kind == "c":
        return a.view(a.real.dtype)
    if a.dtype.kind == "b":
        return a.view(np.uint8)
    return a


ChunksFn = Callable[[], Iterable[tuple[np.ndarray, np.ndarray]]]  # a fresh pass over the (target, ref) chunk pairs


def chunk_pairs(x: TensorRef, y: TensorRef, elems: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Both tensors' chunks side by side; each pair is overwritten by the next (read into one buffer a side)."""
    return zip(x.chunks(elems, reuse=True), y.chunks(elems, reuse=True))


def compare_tensors(
    ref: TensorRef, target: TensorRef, tol: ElementTolerance = ElementTolerance(), chunk: int = CHUNK, kl: bool = True
) -> PairStats:
    """Statistics of target vs ref. Both must be readable and hold the same number of elements."""
    exact_int = _exact_int(ref.dtype) or _exact_int(target.dtype)
    both = ref.nbytes() + target.nbytes()
    _local.held = None
    if both <= 2 * SMALL_READ:
        # small: read each once, then every pass works in memory
        y, x = ref.read(), target.read()
    elif (kl or tol.rms_tol) and both <= 2 * READ_ONCE_UP_TO:
        # a first pass takes the whole-tensor numbers (KL's ranges, rms(y)): read each file once into this
        # thread's buffers, not twice a chunk at a time (a 0.6 GB compare of 8 MB activations read 0.3 GB less)
        buffers = _read_buffers(max(ref.nbytes(), target.nbytes()))
        y, x = ref.read(into=buffers[0]), target.read(into=buffers[1])
    else:
        return compare_arrays_chunks(
            lambda: chunk_pairs(target, ref, chunk), _size(ref), ref.shape or (), tol, exact_int=exact_int, kl=kl
        )
    _local.held = ((ref, y), (target, x))
    return compare_read(ref, target, y, x, tol, chunk, kl)


def _held(path: str) -> tuple[TensorRef, np.ndarray] | None:
    """The tensor at `path` and its values (flat) as this thread's last compare_tensors read it whole, while
    nothing has been read over it; None when that compare did not."""
    for t, values in getattr(_local, "held", None) or ():
        if t.path == path:
            return t, np.asarray(values).reshape(-1)
    return None


def held_values(path: str) -> np.ndarray | None:
    """The values (flat, as TensorRef.read gives them) of the file at `path` as this thread's last
    compare_tensors read it whole (_held); None when that compare did not."""
    held = _held(path)
    return None if held is None else held[1]


def held_payload(path: str) -> np.ndarray | None:
    """The payload (bytes, as uint8) of the file at `path` as this thread's last compare_tensors read it whole
    (_held); None when that compare did not read `path` so (read in chunks, or its values are not the file's
    bytes: widened bfloat16, a decoded or Fortran-order payload). A consumer's input that copies that file is
    compared with these bytes, not with the file read again."""
    held = _held(path)
    if held is None:
        return None
    lay = held[0].layout()
    if lay.decoder is not None or lay.fortran or lay.widen_bf16 or lay.storage is None:
        return None
    return held[1].view(np.uint8)


def compare_read(
    ref: TensorRef,
    target: TensorRef,
    y: np.ndarray,
    x: np.ndarray,
    tol: ElementTolerance = ElementTolerance(),
    chunk: int = CHUNK,
    kl: bool = True,
) -> PairStats:
    """compare_tensors of a small pair whose values are read already (`y` = ref.read(), `x` = target.read())."""
    exact_int = _exact_int(ref.dtype) or _exact_int(target.dtype)

    def mem() -> Iterator[tuple[np.ndarray, np.ndarray]]:
        for s in range(0, y.size, chunk):
            yield x[s : s + chunk], y[s : s + chunk]

    return compare_arrays_chunks(mem, _size(ref), ref.shape or (), tol, exact_int=exact_int, kl=kl)


def compare_arrays(
    y: np.ndarray, x: np.ndarray, tol: ElementTolerance = ElementTolerance(), chunk: int = CHUNK, kl: bool = True
) -> PairStats:
    """Same as compare_tensors on in-memory arrays (y = reference, x = target)."""
    xf, yf = np.asarray(x).reshape(-1), np.asarray(y).reshape(-1)
    if xf.size != yf.size:
        raise ValueError("arrays differ in size")

    def gen() -> Iterator[tuple[np.ndarray, np.ndarray]]:
        for s in range(0, max(xf.size, 1), chunk):
            yield xf[s : s + chunk], yf[s : s + chunk]

    return compare_arrays_chunks(
        gen, yf.size, np.shape(y), tol, exact_int=xf.dtype.kind in "iu" and xf.dtype.itemsize == 8, kl=kl
    )


def _size(t: TensorRef) -> int:
    n = t.size
    return 0 if n is None else n


def _exact_int(dt: str | None) -> bool:
    return dt in ("int64", "uint64")


class _Work:
    """Reusable float64/bool buffers of one chunk: fresh 8 MB allocations cost more than the arithmetic."""

    def __init__(self, m: int) -> None:
        self.size = m
        self.x = np.empty(m)
        self.y = np.empty(m)
        self.d = np.empty(m)
        self.t = np.empty(m)
        self.u = np.empty(m)
        self.v = np.empty(m)
        self.b = np.empty(m, dtype=bool)
        self.b2 = np.empty(m, dtype=bool)


_local = threading.local()


def _read_buffers(nbytes: int) -> tuple[np.ndarray, np.ndarray]:
    """This thread's two buffers (bytes) of at least `nbytes` each that compare_tensors reads a pair into,
    grown when needed and kept (at most READ_ONCE_UP_TO each): their pages stay mapped from pair to pair."""
    held = getattr(_local, "read_buffers", None)
    if held is None or held[0].nbytes < nbytes:
        held = _local.read_buffers = (np.empty(nbytes, np.uint8), np.empty(nbytes, np.uint8))
    return held


def _work(m: int) -> _Work:
    """This thread's buffers, grown when needed (one set per worker thread, reused across tensors)."""
    w = getattr(_local, "work", None)
    if w is None or w.size < m:
        w = _local.work = _Work(max(m, CHUNK))
    return w


def _load(work: _Work, xc: np.ndarray, yc: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Chunk pair as float64 (exact for every dtype we read except int64 beyond 2^53), plus raw views."""
    xr, yr = as_real(np.asarray(xc)), as_real(np.asarray(yc))
    m = xr.size
    x64, y64 = work.x[:m], work.y[:m]
    np.copyto(x64, xr, casting="unsafe")
    np.copyto(y64, yr, casting="unsafe")
    return xr, yr, x64, y64


class _Pre:
    """Whole-tensor numbers some element tests need before the main pass: rms(y), the ranges for KL."""

    def __init__(self, ranges: bool = True) -> None:
        self.n = 0
        self.yy = 0.0
        self.ranges = ranges  # the ranges only KL uses (four passes over every chunk)
        self.xmin = self.ymin = math.inf
        self.xmax = self.ymax = -math.inf

    def add(self, x64: np.ndarray, y64: np.ndarray) -> None:
        if x64.size == 0:
            return
        self.n += x64.size
        self.yy += float(np.dot(y64, y64))
        if not self.ranges:
            return
        self.xmin = min(self.xmin, float(x64.min()))
        self.xmax = max(self.xmax, float(x64.max()))
        self.ymin = min(self.ymin, float(y64.min()))
        self.ymax = max(self.ymax, float(y64.max()))


def _finite_pair(
    x64: np.ndarray, y64: np.ndarray, xr: np.ndarray, yr: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[tuple[int, int, int]], int]:
    """Masks for the slow path: (x, y, raw x, raw y, positions kept, per-side counts, mismatches)."""
    fx, fy = np.isfinite(x64), np.isfinite(y64)
    counts = []
    for v in (x64, y64):
        counts.append(
            (
                int(np.count_nonzero(np.isnan(v))),
                int(np.count_nonzero(v == np.inf)),
                int(np.count_nonzero(v == -np.inf)),
            )
        )
    same = (np.isnan(x64) & np.isnan(y64)) | ((~fx) & (~fy) & (x64 == y64))
    mismatch = int(np.count_nonzero(~(fx & fy) & ~same))
    keep = fx & fy
    return x64[keep], y64[keep], xr[keep], yr[keep], np.flatnonzero(keep), counts, mismatch


def compare_arrays_chunks(
    chunks_fn: ChunksFn, n: int, shape: tuple[int, ...], tol: ElementTolerance, exact_int: bool = False, kl: bool = True
) -> PairStats:
    """One pass over the chunks (two when the tensor spans several chunks and a tolerance or KL needs
    whole-tensor numbers first). `kl=False` skips the KL divergence (its logarithms cost more than the rest)."""
    st = PairStats(n=n)
    if n == 0:
        st.bitwise_equal = st.values_equal = True
        for k in _ELEMENT_METRICS:
            st.set_undefined(k, Undefined.EMPTY)
        return st
    if _bitwise_equal(chunks_fn):
        return _equal_pair_stats(chunks_fn, n)
    first = next(iter(chunks_fn()), None)
    single = first is not None and np.asarray(first[0]).size == n
    work = _work(np.asarray(first[0]).size if first is not None else 0)
    pre = None
    if not single and (kl or tol.rms_tol):
        pre = _Pre(ranges=kl)
        for xc, yc in chunks_fn():
            xr, yr, x64, y64 = _load(work, xc, yc)
            if not (math.isfinite(float(np.dot(x64, x64))) and math.isfinite(float(np.dot(y64, y64)))):
                x64, y64, *_ = _finite_pair(x64, y64, xr, yr)
            pre.add(x64, y64)
    acc = _Acc(st, tol, kl, exact_int, pre)
    offset = 0
    for xc, yc in chunks_fn():
        xr, yr, x64, y64 = _load(work, xc, yc)
        acc.chunk(work, xr, yr, x64, y64, offset)
        offset += xr.size
    acc.finish(shape)
    return st


class _Acc:
    """Accumulates every statistic over chunks; `pre` (or, for one chunk, the chunk itself) supplies the
    whole-tensor numbers for the element tolerance and KL."""

    def __init__(self, st: PairStats, tol: ElementTolerance, kl: bool, exact_int: bool, pre: _Pre | None) -> None:
        self.st, self.tol, self.kl, self.exact_int, self.pre = st, tol, kl, exact_int, pre
        self.xs, self.ys = _Side(), _Side()
        self.sxy = self.sdd = self.sad = 0.0
        self.max_abs, self.max_idx = -1.0, 0
        self.max_ref: float | None = None
        self.max_tgt: float | None = None
        self.rel_max, self.rel_sum, self.rel_count = 0.0, 0.0, 0
        self.within1 = self.within5 = 0
        self.off = 0
        self.kl_a = self.kl_p = self.kl_q = 0.0
        self.finite_all = True
        self.stride = max(1, -(-st.n // SAMPLE_MAX))
        # |x-y| (strided above SAMPLE_MAX) for the trimmed mean, written in place (a list of chunk copies was
        # copied once more into one array at the end)
        self.samples = np.empty(-(-st.n // self.stride) + 64)
        self.kept = 0

    def chunk(self, work: _Work, xr: np.ndarray, yr: np.ndarray, x64: np.ndarray, y64: np.ndarray, offset: int) -> None:
        st = self.st
        xx, yy = float(np.dot(x64, x64)), float(np.dot(y64, y64))
        pos = None
        if not (math.isfinite(xx) and math.isfinite(yy)):
            # Slow path: mask non-finite values; equal NaN/Inf at a position is no difference.
            self.finite_all = False
            x64, y64, xr, yr, pos, counts, mismatch = _finite_pair(x64, y64, xr, yr)
            for side, (nan, pinf, ninf) in zip((self.xs, self.ys), counts):
                side.s.nan += nan
                side.s.pos_inf += pinf
                side.s.neg_inf += ninf
            st.nonfinite_mismatch += mismatch
            xx, yy = float(np.dot(x64, x64)), float(np.dot(y64, y64))
        m = x64.size
        self.xs.add(x64, xx, xr, work.b)
        self.ys.add(y64, yy, yr, work.b)
        if m == 0:
            return
        pre = self.pre
        if pre is None:  # one chunk: it is the whole tensor
            pre = _Pre()
            pre.n, pre.yy = m, yy
            pre.xmin, pre.xmax, pre.ymin, pre.ymax = self.xs.lo, self.xs.hi, self.ys.lo, self.ys.hi
        self.sxy += float(np.dot(x64, y64))
        d = np.subtract(x64, y64, out=work.d[:m])
        self.sdd += float(np.dot(d, d))
        ad = np.abs(d, out=d)
        i = int(np.argmax(ad))
        if ad[i] > self.max_abs:
            self.max_abs = float(ad[i])
            self.max_idx = offset + (int(pos[i]) if pos is not None else i)
            self.max_ref, self.max_tgt = float(y64[i]), float(x64[i])
        self.sad += float(ad.sum())
        part = ad[:: self.stride]
        if self.kept + part.size > self.samples.size:  # more chunks than foreseen (each rounds its stride up)
            self.samples = np.concatenate([self.samples[: self.kept], np.empty(self.samples.size + part.size)])
        self.samples[self.kept : self.kept + part.size] = part
        self.kept += part.size
        if self.exact_int:
            st.n_diff += int(np.count_nonzero(xr != yr))
        else:  # the float64 copies are exact, and two finite doubles differ exactly where their difference is not 0
            st.n_diff += int(np.count_nonzero(ad))
        # Relative error |d| / |y| over |y| > eps; for the thousandths ratios the denominator is max(|y|, eps).
        t = np.abs(y64, out=work.t[:m])
        big = np.greater(t, EPS, out=work.b2[:m])
        nbig = int(np.count_nonzero(big))
        self.rel_count += nbig
        # element tolerance: |d| > atol + rtol*|y| + rms_tol*rms(y)
        lim = np.multiply(t, self.tol.rtol, out=work.u[:m])
        rms_y = math.sqrt(pre.yy / pre.n) if pre.n else 0.0
        lim += self.tol.atol + self.tol.rms_tol * rms_y
        self.off += int(np.count_nonzero(np.greater(ad, lim, out=work.b[:m])))
        if self.kl:
            self._kl(work, x64, y64, pre)
        if nbig == m:
            r = np.divide(ad, t, out=t)
            self.rel_max = max(self.rel_max, float(r.max()))
            self.rel_sum += float(r.sum())
            self.within1 += int(np.count_nonzero(np.less_equal(r, 1e-3, out=work.b[:m])))
            self.within5 += int(np.count_nonzero(np.less_equal(r, 5e-3, out=work.b[:m])))
        else:
            np.maximum(t, EPS, out=t)
            r = np.divide(ad, t, out=t)
            self.within1 += int(np.count_nonzero(np.less_equal(r, 1e-3, out=work.b[:m])))
            self.within5 += int(np.count_nonzero(np.less_equal(r, 5e-3, out=work.b[:m])))
            if nbig:
                # zero the |y| <= eps elements out of max and sum (a masked reduction is ten times slower)
                np.multiply(r, big, out=r)
                self.rel_max = max(self.rel_max, float(r.max()))
                self.rel_sum += float(r.sum())

    def _kl(self, work: _Work, x64: np.ndarray, y64: np.ndarray, pre: _Pre) -> None:
        """KL(P || Q), P = p / Sp, p_i = (y_i - ymin) / yrange + s, likewise Q from x; accumulating
        A = sum p ln(p / q), Sp and Sq gives KL = A / Sp + ln(Sq / Sp) with exact normalisation."""
        yrange, xrange_ = pre.ymax - pre.ymin, pre.xmax - pre.xmin
        if not (yrange > 0 and xrange_ > 0):
            return
        m = y64.size
        p = np.subtract(y64, pre.ymin, out=work.u[:m])
        p *= 1.0 / yrange
        p += KL_SMOOTHING
        q = np.subtract(x64, pre.xmin, out=work.v[:m])
        q *= 1.0 / xrange_
        q += KL_SMOOTHING
        self.kl_p += float(p.sum())
        self.kl_q += float(q.sum())
        np.divide(p, q, out=q)
        np.log(q, out=q)
        self.kl_a += float(np.dot(p, q))

    def finish(self, shape: tuple[int, ...]) -> None:
        st = self.st
        st.n_diff += st.nonfinite_mismatch
        st.ref, st.target = self.ys.finish(), self.xs.finish()
        for side in (st.ref, st.target):
            side.count = st.n
        compared = st.ref.finite if self.finite_all else min(st.ref.finite, st.target.finite)
        st.compared = compared
        st.values_equal = st.n_diff == 0
        st.n_off = self.off + st.nonfinite_mismatch
        if compared == 0:
            for k in _ELEMENT_METRICS:
                st.set_undefined(k, Undefined.NO_FINITE_PAIR)
            return
        nx_, ny_ = math.sqrt(self.xs.sumsq), math.sqrt(self.ys.sumsq)
        if nx_ == 0 and ny_ == 0:
            st.cos = 1.0
        elif nx_ == 0 or ny_ == 0:
            st.set_undefined("cos", Undefined.TARGET_ZEROS if nx_ == 0 else Undefined.REF_ZEROS)
        else:
            st.cos = max(-1.0, min(1.0, self.sxy / (nx_ * ny_)))
        st.max_abs = self.max_abs
        st.max_abs_index = tuple(int(v) for v in np.unravel_index(self.max_idx, shape)) if shape else ()
        st.max_abs_ref, st.max_abs_target = self.max_ref, self.max_tgt
        st.mean_abs = self.sad / compared
        st.mean_abs_trimmed = trimmed_mean(self.samples[: self.kept], scratch=True)  # the samples' last use
        st.rms_ref = math.sqrt(self.ys.sumsq / compared)
        st.rmse = math.sqrt(self.sdd / compared)
        if ny_ == 0:
            if self.sdd == 0:
                st.rel_euclid = 0.0
            else:
                st.set_undefined("rel_euclid", Undefined.REF_ZEROS)
        else:
            st.rel_euclid = math.sqrt(self.sdd) / ny_
        if self.rel_count:
            st.max_rel, st.mean_rel, st.acc_rel = self.rel_max, self.rel_sum / self.rel_count, self.rel_sum
        else:
            for k in ("max_rel", "mean_rel", "acc_rel"):
                st.set_undefined(k, Undefined.NO_REF_ABOVE_EPS)
        st.thousandth = self.within1 / compared
        st.five_thousandths = self.within5 / compared
        if not self.kl:
            st.set_undefined("kl", Undefined.KL_NOT_ASKED)
        elif st.ref.max is not None and st.ref.min is not None and st.ref.max <= st.ref.min:
            st.set_undefined("kl", Undefined.REF_CONSTANT)
        elif st.target.max is not None and st.target.min is not None and st.target.max <= st.target.min:
            st.set_undefined("kl", Undefined.TARGET_CONSTANT)
        elif st.values_equal:
            st.kl = 0.0
        else:
            st.kl = max(self.kl_a / self.kl_p + math.log(self.kl_q / self.kl_p), 0.0)


_ELEMENT_METRICS = (
    "cos",
    "max_abs",
    "mean_abs",
    "rmse",
    "rel_euclid",
    "max_rel",
    "mean_rel",
    "acc_rel",
    "thousandth",
    "five_thousandths",
    "kl",
)


def trimmed_mean(values: np.ndarray, trim: float = TRIM, scratch: bool = False) -> float:
    """Mean of `values` without the largest `trim` share of them (none dropped below 1/trim values).

    The kept values are summed themselves (not the total less the cut ones: one huge value would take every
    digit of the rest with it). Without partitioning every value (that took a third of a noisy scan, and
    np.partition degrades on ties: 80 ms for 512k mostly-zero values): a strided sample gives a threshold `t`
    a little below the cut; the values up to `t` are all kept, and of those above it the smallest, or, when
    fewer than k are above it, copies of `t` make up the rest. Only when the sample misleads (fewer than k
    values reach `t`, or far more than k exceed it) is every value partitioned. `scratch`: `values` is the caller's to reorder (that partition is then made in
    place: what np.partition does to its copy, so the same sum, without the copy)."""
    n = values.size
    if n == 0:
        return 0.0
    k = int(n * trim)
    if k == 0:
        return float(values.mean())
    if n >= TRIM_SAMPLED_FROM:
        for sample in _trim_samples(values):
            found = _trimmed_from_sample(values, sample, trim, k)
            if found is not None:
                return found
    if scratch:
        values.partition(n - k)
        return float(values[: n - k].sum()) / (n - k)
    return float(np.partition(values, n - k)[: n - k].sum()) / (n - k)


def _trim_samples(values: np.ndarray) -> Iterator[np.ndarray]:
    """The samples trimmed_mean tries for its threshold, in turn: every (n // TRIM_SAMPLE)-th value, then, when
    that one misleads, TRIM_SAMPLE values at positions drawn with a fixed seed. A stride is blind to data laid
    out with the same period: the |x-y| of a 1x32x256x256 activation, strided by 2 then by 256, are one column
    of every image, its padded border, where the error is not the rest's; every Conv2D output of a 6-layer pair
    partitioned all its million values (a quarter of the compare's work)."""
    n = values.size
    yield values[:: max(1, n // TRIM_SAMPLE)]
    yield values[np.random.default_rng(TRIM_SEED).integers(0, n, TRIM_SAMPLE)]


def _trimmed_from_sample(values: np.ndarray, sample: np.ndarray, trim: float, k: int) -> float | None:
    """trimmed_mean's answer from a threshold `t` that `sample` puts a little below the cut; None when the
    sample misleads (fewer than k values reach `t`, or far more than k exceed it)."""
    n = values.size
    j = int(sample.size * (1 - 2 * trim))  # twice the share cut: the sample's error stays well inside
    t = np.partition(sample, j)[j]
    high = values > t
    n_above = int(np.count_nonzero(high))  # counted first: the values above t are gathered only when used
    if k <= n_above <= 8 * k + 64:
        rest = n_above - k  # of the values above t, the smallest `rest` are kept
        kept = float(values[~high].sum()) + float(np.partition(values[high], rest)[:rest].sum())
        return kept / (n - k)
    if n_above < k:
        low: np.ndarray = values[values < t]
        if low.size <= n - k:  # the cut falls among the values equal to t
            return (float(low.sum()) + (n - k - low.size) * float(t)) / (n - k)
    return None


def _bits(a: np.ndarray) -> np.ndarray:
    """The raw bits as unsigned integers of the same width (so NaN payloads and -0.0 compare exactly)."""
    a = np.ascontiguousarray(a)
    size = a.dtype.itemsize
    return a.view(f"u{size}") if size in (1, 2, 4, 8) else a.view(np.uint64)


def _bitwise_equal(chunks_fn: ChunksFn) -> bool:
    """Same dtype and same bits everywhere (stops at the first differing chunk, so it is cheap when not)."""
    for xc, yc in chunks_fn():
        xa, ya = np.asarray(xc), np.asarray(yc)
        if xa.dtype != ya.dtype or xa.shape != ya.shape or not np.array_equal(_bits(xa), _bits(ya)):
            return False
    return True


def _equal_pair_stats(chunks_fn: ChunksFn, n: int) -> PairStats:
    """Bitwise-equal pair: one side's statistics serve both, every difference is exactly zero."""
    side = _Side()
    rel_count = 0
    work = None
    for _xc, yc in chunks_fn():
        yr = as_real(np.asarray(yc))
        if work is None:
            work = _Work(yr.size)
        v = work.y[: yr.size]
        np.copyto(v, yr, casting="unsafe")
        vv = float(np.dot(v, v))
        if not math.isfinite(vv):
            side.s.nan += int(np.count_nonzero(np.isnan(v)))
            side.s.pos_inf += int(np.count_nonzero(v == np.inf))
            side.s.neg_inf += int(np.count_nonzero(v == -np.inf))
            keep = np.isfinite(v)
            v, yr = v[keep], yr[keep]
            vv = float(np.dot(v, v))
        side.add(v, vv, yr, work.b)
        t = np.abs(v, out=work.t[: v.size])
        rel_count += int(np.count_nonzero(np.greater(t, EPS, out=work.b2[: v.size])))
    s = side.finish()
    s.count = n
    st = PairStats(n=n, bitwise_equal=True, values_equal=True, compared=s.finite)
    st.ref = st.target = s
    if s.finite == 0:
        for k in _ELEMENT_METRICS:
            st.set_undefined(k, Undefined.NO_FINITE_PAIR)
        return st
    st.cos = 1.0
    st.max_abs = st.mean_abs = st.mean_abs_trimmed = st.rmse = st.rel_euclid = 0.0
    st.rms_ref = math.sqrt(s.l2 * s.l2 / s.finite) if s.l2 is not None else None
    st.thousandth = st.five_thousandths = 1.0
    if rel_count:
        st.max_rel = st.mean_rel = st.acc_rel = 0.0
    else:
        for k in ("max_rel", "mean_rel", "acc_rel"):
            st.set_undefined(k, Undefined.NO_REF_ABOVE_EPS)
    assert s.max is not None and s.min is not None  # finish() sets both when s.finite > 0 (checked above)
    if s.max > s.min:
        st.kl = 0.0
    else:
        st.set_undefined("kl", Undefined.REF_CONSTANT)
    return st


def side_stats(t: TensorRef, chunk: int = CHUNK) -> SideStats:
    """Statistics of one tensor (min/max/mean/std/L2, NaN/Inf counts), chunked."""
    side = _Side()
    n = 0
    for c in t.chunks(chunk):
        v = as_real(np.asarray(c)).astype(np.float64)
        n += v.size
        vv = float(np.dot(v, v))
        if not math.isfinite(vv):
            side.s.nan += int(np.count_nonzero(np.isnan(v)))
            side.s.pos_inf += int(np.count_nonzero(v == np.inf))
            side.s.neg_inf += int(np.count_nonzero(v == -np.inf))
            v = v[np.isfinite(v)]
            vv = float(np.dot(v, v))
        side.add(v, vv)
    s = side.finish()
    s.count = n
    return s
