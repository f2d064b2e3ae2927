"""Statistics-only records judged by what rounding can do to each statistic (issue 19.6)."""

from __future__ import annotations

import numpy as np
from helpers.msprobe_training import to_bf16

from dumptui.core.compare.elements import stats_within_rounding


def stats(a: np.ndarray) -> dict:
    v = a.astype(np.float64)
    return {"max": float(v.max()), "min": float(v.min()), "mean": float(v.mean()), "l2": float(np.sqrt((v * v).sum()))}


def test_statistics_of_a_bf16_rounded_tensor_are_within_bf16_rounding():
    x = np.random.default_rng(0).standard_normal(4096).astype(np.float32) + 0.3
    assert stats_within_rounding(stats(x), stats(to_bf16(x)), x.size) == "bfloat16"
    assert stats_within_rounding(stats(x), stats(x.astype(np.float16).astype(np.float32)), x.size) == "float16"


def test_a_shifted_mean_is_not_rounding_though_max_min_and_l2_agree():
    """A network input whose mean moved 7 %: its max, min and L2 norm are within one bf16 rounding of the
    reference's, but no rounding of 4096 elements moves a mean that far (its deviation is u*RMS/sqrt(3n))."""
    x = np.random.default_rng(1).standard_normal(4096).astype(np.float32) + 0.3
    shifted = stats(x)
    shifted["mean"] *= 1.07
    assert stats_within_rounding(stats(x), shifted, x.size) is None
    # without the element count the mean cannot be judged (left out, as before)
    assert stats_within_rounding(stats(x), shifted, None) == "float16"
