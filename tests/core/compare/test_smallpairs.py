"""Many small pairs at once (core/compare/smallpairs.py): every field of every record equal to what
compare_arrays gives for that pair alone (bit for bit: the same reductions in the same order), for every edge
case by name, whether the pair is computed in the batch or falls back; a few fields also against numpy
directly; compare_tensor_pairs equal to compare_tensors on files, a failed read said per pair."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dumptui.core.compare import smallpairs
from dumptui.core.compare.metrics import ElementTolerance, compare_arrays, compare_tensors
from dumptui.core.compare.smallpairs import compare_many, compare_tensor_pairs, qualifies
from dumptui.core.model.dump import TensorRef

TOL = ElementTolerance(atol=1e-6, rtol=1e-3, rms_tol=1e-3)


def same(a, b, path=""):
    """Equal records: equal keys, and floats equal bit for bit (NaN equal to NaN)."""
    if isinstance(a, dict):
        assert a.keys() == b.keys() and list(a) == list(b), path  # the reasons keep their order (JSON)
        for k in a:
            same(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), path
        for x, y in zip(a, b):
            same(x, y, path)
    elif isinstance(a, float) and isinstance(b, float):
        assert a == b or (math.isnan(a) and math.isnan(b)), (path, a, b)
    else:
        assert a == b and type(a) is type(b), (path, a, b)


def cases(n: int, rng: np.random.Generator) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """(reference, target) by name, `n` elements each."""
    y = rng.standard_normal(n).astype(np.float32)
    noisy = (y + rng.standard_normal(n) * 1e-3).astype(np.float32)
    ints = rng.integers(-5, 5, n).astype(np.int32)
    nan = y.copy()
    nan[0] = np.nan
    inf = noisy.copy()
    inf[-1] = np.inf
    shifted = ints.copy()
    shifted[0] += 1
    return {
        "noisy": (y, noisy),
        "bitwise equal": (y, y.copy()),
        "fp16 target": (y, y.astype(np.float16)),
        "fp16 both": (y.astype(np.float16), noisy.astype(np.float16)),
        "values equal, dtypes differ": (y, y.astype(np.float64)),
        "reference zeros": (np.zeros(n, np.float32), noisy),
        "target zeros": (y, np.zeros(n, np.float32)),
        "both zeros": (np.zeros(n, np.float32), np.zeros(n, np.float32)),
        "reference constant": (np.full(n, 3.0, np.float32), noisy),
        "target constant": (y, np.full(n, -2.0, np.float32)),
        "NaN on one side": (nan, noisy),
        "NaN on both sides": (nan, nan.copy()),
        "Inf on one side": (y, inf),
        "int32 one off": (ints, shifted),
        "int32 equal": (ints, ints.copy()),
        "int64 (not in the batch)": (ints.astype(np.int64), shifted.astype(np.int64)),
        "uint8": (np.abs(ints).astype(np.uint8), np.abs(shifted).astype(np.uint8)),
        "bool (not in the batch)": (ints > 0, shifted > 0),
        "tiny values": (y * 1e-30, noisy * 1e-30),
        "huge values (squares overflow)": (y.astype(np.float64) * 1e200, noisy.astype(np.float64) * 1e200),
        "mixed signs, few over eps": (np.where(ints > 3, y, 0).astype(np.float32), noisy),
    }


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning", "ignore:invalid value:RuntimeWarning")
@pytest.mark.parametrize("kl", [False, True])
def test_every_record_is_compare_arrays_bit_for_bit(kl, monkeypatch):
    monkeypatch.setattr(smallpairs, "BATCH_ELEMENTS", 700)  # several slices per size
    rng = np.random.default_rng(20)
    pairs, names = [], []
    for n in (1, 2, 7, 64, 100, 256, 1000, 16383, 16384):
        for name, (y, x) in cases(n, rng).items():
            shape = (n,) if n % 2 else (2, n // 2)
            if n == 1:
                shape = ()
            tol = TOL if n % 3 else ElementTolerance(rtol=1e-2, rms_tol=0.0)
            pairs.append((y.reshape(shape), x, shape, tol))
            names.append(f"{name}, n={n}")
    got = compare_many(pairs, kl=kl)
    assert len(got) == len(pairs)
    batched = 0
    for name, (y, x, _shape, tol), st in zip(names, pairs, got):
        want = compare_arrays(y, x, tol, kl=kl)
        same(want.to_dict(), st.to_dict(), name)
        batched += qualifies(y, x) and bool(np.isfinite(y).all() and np.isfinite(x).all())
    assert batched > 100  # most pairs went through the batch, not the fallback


def test_a_few_fields_against_numpy():
    rng = np.random.default_rng(3)
    y = rng.standard_normal((40, 256))
    x = y + rng.standard_normal((40, 256)) * 1e-2
    got = compare_many([(a.reshape(4, 64), b, (4, 64), TOL) for a, b in zip(y, x)], kl=False)
    for a, b, st in zip(y, x, got):
        d = np.abs(b - a)
        assert st.cos == pytest.approx(a @ b / np.linalg.norm(a) / np.linalg.norm(b), rel=1e-12)
        assert st.max_abs == d.max() and st.max_abs_index == tuple(int(v) for v in divmod(int(d.argmax()), 64))
        assert st.mean_abs_trimmed == pytest.approx(np.sort(d)[: 256 - 2].mean(), rel=1e-12)  # 1 % of 256: 2 cut
        assert st.rmse == pytest.approx(math.sqrt(np.mean(d * d)), rel=1e-12)
        assert st.n_off == int(
            np.count_nonzero(d > TOL.atol + TOL.rtol * np.abs(a) + TOL.rms_tol * np.sqrt(np.mean(a * a)))
        )
        assert st.ref.std == pytest.approx(a.std(), rel=1e-12) and st.target.l2 == pytest.approx(np.linalg.norm(b))


def test_tensor_pairs_equal_compare_tensors_and_say_a_failed_read(tmp_path):
    rng = np.random.default_rng(5)
    jobs = []
    for i, n in enumerate((1, 16, 256, 20000, 300)):
        shape = (n,) if n != 1 else ()
        y = rng.standard_normal(n).astype(np.float32).reshape(shape)
        x = (y + rng.standard_normal(shape) * 1e-3).astype(np.float16)
        if i == 4:
            y = y.copy()
            y.reshape(-1)[3] = np.nan
        for side, a in (("ref", y), ("target", x)):
            np.save(tmp_path / f"{side}{i}.npy", a)
        jobs.append(
            (
                TensorRef(str(tmp_path / f"ref{i}.npy"), "output", 0),
                TensorRef(str(tmp_path / f"target{i}.npy"), "output", 0),
                TOL,
            )
        )
    short = tmp_path / "short.npy"
    np.save(short, np.ones(64, np.float32))
    short.write_bytes(short.read_bytes()[:-20])  # the header promises 64 values, the payload holds fewer
    jobs.append((jobs[0][0], TensorRef(str(short), "output", 0), TOL))
    outcomes = compare_tensor_pairs(jobs, kl=True)
    for (ref, target, tol), (st, err) in zip(jobs[:-1], outcomes):
        assert err is None
        same(compare_tensors(ref, target, tol, kl=True).to_dict(), st.to_dict(), ref.path)
    st, err = outcomes[-1]
    assert st is None and err is not None and err.startswith("read failed")


def test_pairs_not_computed_together_equal_compare_tensors_each_record_its_own(tmp_path):
    """Scalars, bool and int64 arguments (not computed as rows): equal pairs made once per value and copied,
    unequal ones computed from the values already read; every record as compare_tensors gives it."""
    values = [
        (np.array(False), np.array(False)),
        (np.array(True), np.array(True)),
        (np.array(0, np.int64), np.array(0, np.int64)),
        (np.array(0, np.int64), np.array(0, np.int64)),
        (np.array(True), np.array(True)),
        (np.array(2**60, np.int64), np.array(2**60 + 1, np.int64)),  # unequal, beyond float64's integers
        (np.array([1, 2, 3], np.int64), np.array([1, 2, 3], np.int32)),  # equal values, another dtype
        (np.array(-0.0), np.array(0.0)),  # equal values, not bitwise equal
        (np.array(np.nan), np.array(np.nan)),
        (np.zeros(0, np.float32), np.zeros(0, np.float32)),
        (np.arange(100, dtype=np.int64), np.arange(100, dtype=np.int64)),  # bigger than what is remembered
    ]
    jobs = []
    for i, (y, x) in enumerate(values):
        for side, a in (("ref", y), ("target", x)):
            np.save(tmp_path / f"{side}{i}.npy", a)
        jobs.append(
            (
                TensorRef(str(tmp_path / f"ref{i}.npy"), "input", 2),
                TensorRef(str(tmp_path / f"target{i}.npy"), "input", 2),
                TOL,
            )
        )
    outcomes = compare_tensor_pairs(jobs, kl=True)
    for (ref, target, tol), (st, err) in zip(jobs, outcomes):
        assert err is None
        same(compare_tensors(ref, target, tol, kl=True).to_dict(), st.to_dict(), ref.path)
    records = [st for st, _err in outcomes]
    assert len({id(st) for st in records}) == len(records)  # no record shared: each one's own
    first, again = records[1], records[4]  # both True == True
    first.max_abs = 7.0
    assert again.max_abs == 0.0


def test_equal_pairs_remembered_are_bounded(tmp_path, monkeypatch):
    monkeypatch.setattr(smallpairs._EqualPairs, "MAX_KEPT", 2)
    jobs = []
    for i in range(5):
        np.save(tmp_path / f"v{i}.npy", np.array(i, np.int64))
        ref = TensorRef(str(tmp_path / f"v{i}.npy"), "input", 2)
        jobs += [(ref, TensorRef(str(tmp_path / f"v{i}.npy"), "input", 2), TOL)] * 2
    equal = smallpairs._EqualPairs()
    for ref, target, tol in jobs:
        st = equal.stats(ref, target, ref.read(), target.read(), tol, True)
        same(compare_tensors(ref, target, tol).to_dict(), st.to_dict())
    assert len(equal.kept) == 2
