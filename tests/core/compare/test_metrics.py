"""Every metric against an independent numpy computation, on random and edge data."""

from __future__ import annotations

import math

import numpy as np
import pytest
from helpers.common import write_npy

from dumptui.core.compare.elements import error_histogram, within_rounding, worst_elements
from dumptui.core.compare.metrics import (
    EPS,
    ElementTolerance,
    compare_arrays,
    compare_tensors,
    side_stats,
)
from dumptui.core.compare.metrictable import Undefined
from dumptui.core.io.npy import Layout
from dumptui.core.model.dump import TensorRef

TOL = ElementTolerance(atol=1e-6, rtol=1e-4, rms_tol=0.05)


def reference_metrics(y, x, tol=TOL):
    """Straight numpy over float64, written from the definitions in docs/formats.md#comparison-metrics (independent code path)."""
    y = np.asarray(y, dtype=np.float64).ravel()
    x = np.asarray(x, dtype=np.float64).ravel()
    keep = np.isfinite(x) & np.isfinite(y)
    xs, ys = x[keep], y[keep]
    d = xs - ys
    out = {}
    nx_, ny_ = np.sqrt(np.sum(xs * xs)), np.sqrt(np.sum(ys * ys))
    out["cos"] = float(np.sum(xs * ys) / (nx_ * ny_))
    out["max_abs"] = float(np.max(np.abs(d)))
    out["max_abs_flat"] = int(np.flatnonzero(keep)[np.argmax(np.abs(d))])
    out["mean_abs"] = float(np.mean(np.abs(d)))
    out["rmse"] = float(np.sqrt(np.mean(d * d)))
    out["rel_euclid"] = float(np.sqrt(np.sum(d * d)) / ny_)
    big = np.abs(ys) > EPS
    rel = np.abs(d[big]) / np.abs(ys[big])
    out["max_rel"], out["mean_rel"], out["acc_rel"] = float(rel.max()), float(rel.mean()), float(rel.sum())
    den = np.maximum(np.abs(ys), EPS)
    out["thousandth"] = float(np.mean(np.abs(d) <= 1e-3 * den))
    out["five_thousandths"] = float(np.mean(np.abs(d) <= 5e-3 * den))
    p = (ys - ys.min()) / (ys.max() - ys.min()) + 1e-12
    q = (xs - xs.min()) / (xs.max() - xs.min()) + 1e-12
    p, q = p / p.sum(), q / q.sum()
    out["kl"] = float(np.sum(p * np.log(p / q)))
    out["n_diff"] = int(np.sum(xs != ys))
    rms = np.sqrt(np.mean(ys * ys))
    out["n_off"] = int(np.sum(np.abs(d) > tol.atol + tol.rtol * np.abs(ys) + tol.rms_tol * rms))
    out["ref_mean"], out["ref_std"], out["ref_min"], out["ref_max"] = ys.mean(), ys.std(), ys.min(), ys.max()
    out["tgt_mean"], out["tgt_std"], out["tgt_l2"] = xs.mean(), xs.std(), nx_
    return out


def assert_matches(st, ref, rel=1e-9):
    for k in ("cos", "max_abs", "mean_abs", "rmse", "rel_euclid", "max_rel", "mean_rel", "acc_rel"):
        assert getattr(st, k) == pytest.approx(ref[k], rel=rel, abs=1e-300), k
    # KL of nearly equal tensors is a sum of tiny terms of both signs: summation order shows at 1e-8
    assert st.kl == pytest.approx(ref["kl"], rel=1e-6)
    assert st.thousandth == pytest.approx(ref["thousandth"], abs=1e-12)
    assert st.five_thousandths == pytest.approx(ref["five_thousandths"], abs=1e-12)
    assert st.n_diff == ref["n_diff"]
    assert st.n_off == ref["n_off"]
    assert st.ref.mean == pytest.approx(ref["ref_mean"], rel=1e-9, abs=1e-15)
    assert st.ref.std == pytest.approx(ref["ref_std"], rel=1e-9)
    assert st.ref.min == ref["ref_min"] and st.ref.max == ref["ref_max"]
    assert st.target.mean == pytest.approx(ref["tgt_mean"], rel=1e-9, abs=1e-15)
    assert st.target.std == pytest.approx(ref["tgt_std"], rel=1e-9)
    assert st.target.l2 == pytest.approx(ref["tgt_l2"], rel=1e-12)


@pytest.mark.parametrize("chunk", [1 << 18, 1000, 7])
def test_random_float32_matches_numpy(chunk):
    rng = np.random.default_rng(1)
    y = rng.standard_normal((3, 50, 41)).astype(np.float32)
    x = (y + rng.standard_normal(y.shape).astype(np.float32) * np.float32(1e-3)).astype(np.float32)
    x[1, 2, 3] = 7.5  # a clear maximum to locate
    st = compare_arrays(y, x, TOL, chunk=chunk)
    ref = reference_metrics(y, x)
    assert_matches(st, ref)
    assert st.max_abs_index == (1, 2, 3)
    assert st.max_abs_ref == pytest.approx(float(y[1, 2, 3])) and st.max_abs_target == 7.5
    assert not st.bitwise_equal and st.n == y.size


def test_zeros_in_reference_do_not_enter_relative_error():
    y = np.array([0.0, 1.0, 2.0, 0.0, -4.0], dtype=np.float32)
    x = np.array([0.0, 1.1, 2.0, 1e-20, -4.4], dtype=np.float32)
    st = compare_arrays(y, x, TOL)
    assert st.max_rel == pytest.approx(0.1, rel=1e-6)  # 0.4/4 and 0.1/1; the zeros are left out
    assert st.mean_rel == pytest.approx((0.1 + 0 + 0.1) / 3, rel=1e-6)
    assert_matches(st, reference_metrics(y, x), rel=1e-7)


def test_bitwise_equal_pair():
    y = np.random.default_rng(2).standard_normal(1000).astype(np.float32)
    st = compare_arrays(y, y.copy(), TOL)
    assert st.bitwise_equal and st.values_equal
    assert st.cos == 1.0 and st.max_abs == 0 and st.rmse == 0 and st.kl == 0.0 and st.n_diff == 0
    assert st.ref.std == pytest.approx(float(np.std(y.astype(np.float64))), rel=1e-12)
    assert st.target.l2 == st.ref.l2


def test_empty_tensor():
    st = compare_arrays(np.zeros((0, 3), np.float32), np.zeros((0, 3), np.float32), TOL)
    assert st.n == 0 and st.values_equal
    assert st.cos is None and st.undefined["cos"] is Undefined.EMPTY


def test_all_zeros_both_sides_cosine_is_one():
    z = np.zeros(10, np.float32)
    st = compare_arrays(z, z.copy(), TOL)
    assert st.cos == 1.0


def test_one_side_zero_cosine_undefined_with_reason():
    y = np.zeros(10, np.float32)
    x = np.ones(10, np.float32)
    st = compare_arrays(y, x, TOL)
    assert st.cos is None and st.undefined["cos"] is Undefined.REF_ZEROS
    assert st.rel_euclid is None and st.undefined["rel_euclid"] is Undefined.REF_ZEROS
    assert st.max_rel is None and st.undefined["max_rel"] is Undefined.NO_REF_ABOVE_EPS
    st = compare_arrays(x, y, TOL)
    assert st.cos is None and st.undefined["cos"] is Undefined.TARGET_ZEROS


def test_nan_inf_same_positions_are_no_difference():
    y = np.array([1.0, np.nan, np.inf, -np.inf, 5.0], np.float32)
    x = np.array([1.0, np.nan, np.inf, -np.inf, 5.5], np.float32)
    st = compare_arrays(y, x, TOL)
    assert st.nonfinite_mismatch == 0
    assert st.ref.nan == 1 and st.ref.pos_inf == 1 and st.ref.neg_inf == 1
    assert st.compared == 2 and st.n_diff == 1
    assert st.max_abs == pytest.approx(0.5) and st.max_abs_index == (4,)
    assert st.cos == pytest.approx((1 + 27.5) / (math.sqrt(26) * math.sqrt(1 + 30.25)))


def test_nan_inf_different_positions_count_as_mismatch():
    y = np.array([1.0, np.nan, 3.0, np.inf], np.float32)
    x = np.array([1.0, 2.0, np.nan, -np.inf], np.float32)
    st = compare_arrays(y, x, TOL)
    assert st.nonfinite_mismatch == 3
    assert st.n_diff == 3 and st.n_off == 3
    assert st.ref.nan == 1 and st.target.nan == 1 and st.target.neg_inf == 1


def test_float16_values_are_exact_in_float64():
    rng = np.random.default_rng(3)
    y = rng.standard_normal(5000).astype(np.float16)
    x = (y.astype(np.float32) * np.float32(1.001)).astype(np.float16)
    st = compare_arrays(y, x, TOL)
    assert_matches(st, reference_metrics(y, x))


@pytest.mark.parametrize("chunk", [1 << 18, 999])
def test_float16_sides_zeros_signed_zeros_and_nonfinite_match_numpy(chunk):
    # float16's min/max/zero counts and differences are taken on the exact float64 copies (numpy is slow on
    # float16 itself): every count as numpy gives it on the float16 values
    rng = np.random.default_rng(4)
    y = rng.standard_normal(4000).astype(np.float16)
    y[::7] = 0
    x = (y.astype(np.float32) * np.float32(1.002)).astype(np.float16)
    x[::14] = -0.0  # -0.0 against 0.0 is no difference
    x[5], y[5] = np.inf, np.inf
    x[9], y[9] = np.nan, np.nan  # the same NaN on both sides: no difference either
    st = compare_arrays(y, x, TOL, chunk=chunk)
    assert_matches(st, reference_metrics(y, x))
    fin_x, fin_y = x[np.isfinite(x) & np.isfinite(y)], y[np.isfinite(x) & np.isfinite(y)]
    assert st.ref.zeros == int(np.sum(y[np.isfinite(y)] == 0)) and st.target.zeros == int(
        np.sum(x[np.isfinite(x)] == 0)
    )
    assert st.n_diff == int(np.sum(fin_x != fin_y)) + st.nonfinite_mismatch
    assert (st.target.min, st.target.max) == (float(x[np.isfinite(x)].min()), float(x[np.isfinite(x)].max()))
    eq = compare_arrays(y, y.copy(), TOL, chunk=chunk)
    assert eq.bitwise_equal and eq.ref.zeros == int(np.sum(y[np.isfinite(y)] == 0))
    assert (eq.ref.min, eq.ref.max) == (float(y[np.isfinite(y)].min()), float(y[np.isfinite(y)].max()))


def test_int64_beyond_2_53_counts_differences_exactly():
    y = np.array([2**60, 2**60 + 1, 5], np.int64)
    x = np.array([2**60 + 1, 2**60 + 1, 5], np.int64)  # float64 cannot tell 2**60 from 2**60+1
    st = compare_arrays(y, x, ElementTolerance())
    assert st.n_diff == 1 and not st.values_equal


def test_bool_tensors():
    y = np.array([True, False, True, True])
    x = np.array([True, True, True, True])
    st = compare_arrays(y, x, ElementTolerance())
    assert st.n_diff == 1 and st.max_abs == 1.0
    assert st.cos == pytest.approx(3 / (math.sqrt(3) * 2))


def test_scalar_and_one_element():
    st = compare_arrays(np.array(0.75, np.float32), np.array(0.5, np.float32), TOL)
    assert st.n == 1 and st.max_abs == 0.25 and st.max_abs_index == ()
    assert st.max_abs_ref == 0.75 and st.max_abs_target == 0.5


def test_std_is_exact_for_large_offset():
    """Variance by chunk means (Chan) must not cancel when mean >> std."""
    rng = np.random.default_rng(4)
    y = (1e4 + rng.standard_normal(20000)).astype(np.float64)
    x = y + 1e-3
    st = compare_arrays(y, x, TOL, chunk=999)
    assert st.ref.std == pytest.approx(float(np.std(y)), rel=1e-9)
    assert st.ref.mean == pytest.approx(float(np.mean(y)), rel=1e-14)


def test_tensor_refs_memory_mapped_and_bf16_widening(tmp_path):
    rng = np.random.default_rng(5)
    y = rng.standard_normal((4, 5)).astype(np.float32)
    x = y + np.float32(0.01)
    py = write_npy(tmp_path / "y.npy", y)
    px = write_npy(tmp_path / "x.npy", x)
    st = compare_tensors(TensorRef(py, "output", 0), TensorRef(px, "output", 0), TOL, chunk=3)
    assert_matches(st, reference_metrics(y, x))
    # bfloat16 stored as raw bits: widening is exact (bits << 16)
    bits = (y.view(np.uint32) >> 16).astype(np.uint16)
    raw = tmp_path / "b.bin"
    raw.write_bytes(bits.tobytes())
    tb = TensorRef(
        str(raw),
        "output",
        0,
        dtype="bfloat16",
        shape=(4, 5),
        layout_fn=lambda: Layout(np.dtype(np.uint16), (4, 5), 0, widen_bf16=True),
    )
    widened = (bits.astype(np.uint32) << 16).view(np.float32)
    np.testing.assert_array_equal(tb.array(), widened)
    s = side_stats(tb, chunk=7)
    assert s.mean == pytest.approx(float(widened.astype(np.float64).mean()), rel=1e-12)
    assert s.min == float(widened.min()) and s.max == float(widened.max())


def test_worst_elements_and_histogram(tmp_path):
    y = np.arange(100, dtype=np.float32).reshape(10, 10)
    x = y.copy()
    x[3, 4] += 5
    x[7, 1] += 2
    x[0, 0] = np.nan
    py, px = write_npy(tmp_path / "y.npy", y), write_npy(tmp_path / "x.npy", x)
    ry, rx = TensorRef(py, "output", 0), TensorRef(px, "output", 0)
    worst = worst_elements(ry, rx, k=3, chunk=16)
    assert [w.index for w in worst] == [(0, 0), (3, 4), (7, 1)]
    assert worst[1].diff == 5 and worst[1].ref == 34 and worst[1].target == 39
    counts, e0, zeros = error_histogram(ry, rx, chunk=16)
    assert zeros == 97
    # 2 lands in [2, 4), 5 in [4, 8), the NaN in the last (non-finite) bin
    assert e0 == 1 and counts == [1, 1, 1]


def test_within_rounding_fp16_and_bf16():
    rng = np.random.default_rng(6)
    y = rng.standard_normal(1000).astype(np.float32)

    class Arr:
        def __init__(self, a):
            self.a = a

        def chunks(self, n, reuse=False):
            for s in range(0, self.a.size, n):
                yield self.a[s : s + n]

    assert within_rounding(Arr(y), Arr(y.astype(np.float16).astype(np.float32))) == "float16"
    bf = ((y.view(np.uint32) + 0x8000) & 0xFFFF0000).view(np.float32)  # round to bfloat16
    assert within_rounding(Arr(y), Arr(bf)) == "bfloat16"
    assert within_rounding(Arr(y), Arr(y * np.float32(1.01))) is None


def _trimmed_by_sorting(values: np.ndarray, trim: float = 0.01) -> float:
    """The definition, by a full sort: the mean without the largest int(n * trim) values."""
    v = np.sort(values.astype(np.float64))
    k = int(v.size * trim)
    return float(v[: v.size - k].mean()) if v.size else 0.0


@pytest.mark.parametrize(
    "name",
    [
        "normal",
        "fp16 noise",
        "all zeros",
        "sparse ones",
        "half zeros",
        "ties at the cut",
        "periodic",
        "sorted",
        "reversed",
        "one huge",
        "small",
    ],
)
def test_trimmed_mean_is_exact_on_every_shape_of_data(name):
    from dumptui.core.compare.metrics import trimmed_mean

    rng = np.random.default_rng(7)
    n = 1 << 17
    values = {
        "normal": np.abs(rng.standard_normal(n)),
        "fp16 noise": np.abs(rng.standard_normal(n).astype(np.float16).astype(np.float64) - rng.standard_normal(n)),
        "all zeros": np.zeros(n),
        "sparse ones": np.where(rng.random(n) < 0.005, 1.0, 0.0),  # fewer ones than are cut
        "half zeros": np.where(rng.random(n) < 0.5, rng.random(n), 0.0),
        "ties at the cut": np.repeat(np.arange(64.0), n // 64),  # many equal values straddle the cut
        "periodic": np.tile(np.arange(4096.0), n // 4096),  # period = the sample's stride: a misleading sample
        "sorted": np.sort(rng.random(n)),
        "reversed": np.sort(rng.random(n))[::-1].copy(),
        "one huge": np.concatenate([rng.random(n - 1), [1e300]]),
        "small": rng.random(500),
    }[name]
    assert trimmed_mean(values) == pytest.approx(_trimmed_by_sorting(values), rel=1e-12, abs=1e-300)
    # partitioned in place when the caller's buffer may be reordered: bit for bit what a copy gives
    assert trimmed_mean(values.copy(), scratch=True) == trimmed_mean(values)


def test_trimmed_mean_draws_a_second_sample_when_the_stride_aliases():
    """The |x-y| of a 1x32x256x256 activation strided by TRIM_SAMPLE's stride are one column of every image: when
    that column errs more than the rest (a padded border), the strided sample misleads and a second one, at
    positions drawn with a fixed seed, finds the cut (not a partition of every value). The answer is the
    definition's: exactly, on values whose sums are exact in any order."""
    from dumptui.core.compare import metrics

    rng = np.random.default_rng(11)
    n = 1 << 20
    values = rng.integers(0, 1 << 12, n) * 2.0**-30  # dyadic: every partial sum is exact
    values[:: n // metrics.TRIM_SAMPLE] = 1.0  # the column the stride samples: its border
    k = int(n * metrics.TRIM)
    first, second = metrics._trim_samples(values)
    assert metrics._trimmed_from_sample(values, first, metrics.TRIM, k) is None  # misled
    assert metrics._trimmed_from_sample(values, second, metrics.TRIM, k) is not None
    assert metrics.trimmed_mean(values) == _trimmed_by_sorting(values)
    assert metrics.trimmed_mean(values.copy(), scratch=True) == _trimmed_by_sorting(values)
    assert [s.tobytes() for s in metrics._trim_samples(values)][1] == second.tobytes()  # the same draw each time


def test_equal_pairs_of_one_size_share_their_error():
    from dumptui.core.compare.noise import tensor_error

    a, b = compare_arrays(np.ones(8), np.ones(8)), compare_arrays(np.full(8, 2.0), np.full(8, 2.0))
    error = tensor_error(a)
    assert error is tensor_error(b) and error is not None and (error.rel, error.abs, error.n) == (0.0, 0.0, 8)
    assert tensor_error(compare_arrays(np.ones(9), np.ones(9))).n == 9
