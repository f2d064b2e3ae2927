"""Statistics-only records judged by what rounding can do to each statistic (issue 19.6); many small pairs'
rounding judged together as one at a time."""

from __future__ import annotations

import numpy as np
from helpers.msprobe_training import to_bf16

from dumptui.core.compare.elements import stats_within_rounding, within_rounding, within_rounding_rows
from dumptui.core.compare.verdict import rounding_explains, roundings_explain
from dumptui.core.model.dump import TensorRef


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


def _pairs(rng: np.random.Generator) -> list[tuple[np.ndarray, np.ndarray]]:
    """Reference/target pairs that within_rounding judges every way: float16 or bfloat16 rounding, more
    than either, equal, NaN/Inf (matched or not), subnormals, values beyond float16's range, integers."""
    out = []
    for n in (1, 3, 64, 4096):
        for _ in range(12):
            ref = (rng.standard_normal(n) * 10.0 ** rng.integers(-6, 6)).astype(np.float32)
            kind = rng.integers(0, 6)
            if kind == 0:
                target = ref.astype(np.float16).astype(np.float32)
            elif kind == 1:
                target = to_bf16(ref)
            elif kind == 2:
                target = ref * np.float32(1 + 10.0 ** -rng.integers(1, 5))
            elif kind == 3:
                target = ref.copy()
            elif kind == 4:
                ref = ref * np.float32(1e5)  # beyond float16's range: bfloat16 at best
                target = to_bf16(ref)
            else:
                ref = (ref * np.float32(1e-40)).astype(np.float32)  # subnormal
                target = ref.astype(np.float16).astype(np.float32)
            if n > 1 and rng.integers(0, 3) == 0:
                ref[0], target[0] = np.nan, np.nan if rng.integers(0, 2) else 1.0
                ref[-1] = target[-1] = np.inf
            out.append((ref, target))
    out.append((np.arange(50, dtype=np.int32), np.arange(50, dtype=np.int32) + 1))
    out.append((np.full(7, np.nan, np.float32), np.full(7, np.nan, np.float32)))
    out.append((np.array([70000.0], np.float32), np.array([70000.0], np.float32)))
    return out


def _saved(folder, name: str, y: np.ndarray, x: np.ndarray) -> tuple[TensorRef, TensorRef]:
    """The pair written to `folder` as NAMEr.npy and NAMEt.npy, as tensors to read."""
    sides = []
    for side, a in (("r", y), ("t", x)):
        path = str(folder / f"{name}{side}.npy")
        np.save(path, a)
        sides.append(TensorRef(path, "output", 0))
    return sides[0], sides[1]


def test_rounding_rows_answer_as_one_pair_at_a_time(tmp_path):
    """within_rounding_rows (many small pairs judged as rows of one array) gives within_rounding's answer for
    every pair, and roundings_explain rounding_explains' for tensors in files, beside pairs it leaves to it."""
    with np.errstate(over="ignore"):  # float16 rounding of values beyond its range: Inf, as intended
        pairs = _pairs(np.random.default_rng(7))
    refs = [_saved(tmp_path, str(i), y, x) for i, (y, x) in enumerate(pairs)]
    one_by_one = [within_rounding(r, t) for r, t in refs]
    assert {None, "float16", "bfloat16"} <= set(one_by_one)
    assert within_rounding_rows(pairs) == one_by_one
    # beside them, pairs of other shapes: sizes that differ, empty, complex, Fortran order
    odd = [
        (np.ones(3, np.float32), np.ones(4, np.float32)),
        (np.zeros(0, np.float32), np.zeros(0, np.float32)),
        (np.ones(5, np.complex64), np.ones(5, np.complex64) * (1 + 1e-4j)),
        (
            np.asfortranarray(np.arange(12, dtype=np.float32).reshape(3, 4)),
            np.arange(12, dtype=np.float16).reshape(3, 4),
        ),
    ]
    for i, (y, x) in enumerate(odd):
        refs.insert(3 * i, _saved(tmp_path, f"odd{i}", y, x))
    assert roundings_explain(refs) == [rounding_explains(r, t) for r, t in refs]
