"""smallpairs.deviations_many (a replay's proof: the relative error and the share of elements off) gives, bit
for bit, what the full statistics give (noise.tensor_error(st).rel, st.n_off / st.compared of compare_many),
on pairs of every kind a replay meets; None only where those are computed one at a time (NaN/Inf, too big,
not a plain dtype)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dumptui.core.compare.metrics import ElementTolerance
from dumptui.core.compare.smallpairs import compare_many, deviations_many
from dumptui.core.search.replays import _error_and_tail


def _pairs(seed: int) -> list:
    rng = np.random.default_rng(seed)
    tight, loose = ElementTolerance(0.0, 1e-5, 1e-5), ElementTolerance(0.0, 1e-2, 1e-2)
    out = []
    for n in (1, 2, 7, 64, 100, 513, 4096):
        x = rng.standard_normal(n) * rng.choice([1e-30, 1e-3, 1.0, 1e4, 1e30])
        out += [
            (x, x.astype(np.float32), tight),  # rounded to float32
            (x, x.astype(np.float16).astype(np.float64) if np.abs(x).max() < 6e4 else x, loose),
            (x, x * (1 + 1e-3 * rng.standard_normal(n)), tight),  # noise everywhere
            (x, np.where(rng.random(n) < 0.05, x + 1.0, x), loose),  # a sparse tail
            (x, x.copy(), tight),  # bitwise equal
            (np.zeros(n), np.zeros(n), tight),  # all zeros
            (np.zeros(n), x, tight),  # the reference all zeros: the target's scale
            (np.zeros(n), -np.zeros(n), tight),  # equal values, not bits
            (x.astype(np.float32), x.astype(np.float32) + np.float32(1e-3), loose),
            (np.arange(n, dtype=np.int32), np.arange(n, dtype=np.int32)[::-1].copy(), tight),
        ]
    return [(a, b, a.shape, tol) for a, b, tol in out]


def _same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == b


@pytest.mark.parametrize("seed", range(4))
def test_the_rows_give_the_full_records_numbers(seed):
    pairs = _pairs(seed)
    devs = deviations_many(pairs)
    full = [_error_and_tail(st) for st in compare_many(pairs, kl=False)]
    assert all(d is not None for d in devs)
    for i, (dev, want) in enumerate(zip(devs, full)):
        assert _same(dev[0], want[0]) and _same(dev[1], want[1]), (i, dev, want)
    assert any(0 < d[0] < math.inf for d in devs) and any(d[1] > 0 for d in devs)  # errors and tails met


def test_nan_inf_and_big_pairs_are_left_to_the_full_record():
    x = np.linspace(-1, 1, 64)
    tol = ElementTolerance(0.0, 1e-5, 1e-5)
    nan, inf = x.copy(), x.copy()
    nan[3], inf[5] = np.nan, np.inf
    big = np.ones(1 << 20)
    pairs = [(x, nan, x.shape, tol), (inf, inf, x.shape, tol), (x, x * 1.01, x.shape, tol), (big, big, big.shape, tol)]
    devs = deviations_many(pairs)
    assert devs[0] is None and devs[1] is None and devs[3] is None
    assert devs[2] == _error_and_tail(compare_many([pairs[2]], kl=False)[0])
