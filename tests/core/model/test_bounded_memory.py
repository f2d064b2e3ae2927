"""Large tensors are compared chunk by chunk with plain reads: values as np.load gives them, and a process
whose resident memory does not grow with the tensor (a memory map's touched pages would count)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from helpers.common import REPO

from dumptui.core.compare.metrics import compare_arrays, compare_tensors
from dumptui.core.model.dump import SMALL_READ, TensorRef


def test_chunks_of_a_large_tensor_are_its_values(tmp_path):
    rng = np.random.default_rng(3)
    for dtype in (np.float32, np.float16, np.int64):
        a = (rng.standard_normal(3 * SMALL_READ // np.dtype(dtype).itemsize + 17) * 100).astype(dtype)
        path = tmp_path / f"a_{np.dtype(dtype).name}.npy"
        np.save(path, a)
        t = TensorRef(str(path), "output", 0)
        assert t.nbytes() > SMALL_READ
        chunks = list(t.chunks(1 << 16))
        assert len(chunks) > 1 and np.array_equal(np.concatenate(chunks), np.load(path))
    b = np.load(tmp_path / "a_float32.npy")
    c = b + np.float32(1e-3) * rng.standard_normal(b.size).astype(np.float32)
    np.save(tmp_path / "c.npy", c)
    st = compare_tensors(
        TensorRef(str(tmp_path / "a_float32.npy"), "output", 0), TensorRef(str(tmp_path / "c.npy"), "output", 0)
    )
    ref = compare_arrays(b, c)
    assert (st.cos, st.max_abs, st.max_abs_index, st.rmse, st.n_diff) == (
        ref.cos,
        ref.max_abs,
        ref.max_abs_index,
        ref.rmse,
        ref.n_diff,
    )


def test_chunks_read_into_one_buffer_when_the_caller_is_done_with_each(tmp_path):
    """chunks(reuse=True): the same values, read into one buffer (each chunk overwrites the one before); a
    file cut short since its header was read is a short read, as without it."""
    a = np.arange(3 * SMALL_READ // 4 + 5, dtype=np.float32)
    path = tmp_path / "a.npy"
    np.save(path, a)
    t = TensorRef(str(path), "output", 0)
    copies, seen = [], []
    for chunk in t.chunks(1 << 16, reuse=True):
        copies.append(chunk.copy())
        seen.append(chunk)
    assert len(copies) > 2 and np.array_equal(np.concatenate(copies), a)
    assert all(np.shares_memory(seen[0], c) for c in seen[1:])  # one buffer, no array a chunk
    whole = path.read_bytes()
    path.write_bytes(whole[: len(whole) - 4 * 1000])
    with pytest.raises(ValueError, match="short read"):
        list(t.chunks(1 << 16, reuse=True))


def test_a_pair_that_needs_two_passes_is_read_once(tmp_path, monkeypatch):
    """With a tolerance relative to rms(y) (or KL's ranges) a pair is read into memory once, not twice a chunk
    at a time, into buffers kept from pair to pair: the same statistics, bit for bit, for two pairs in turn."""
    from dumptui.core.compare import metrics
    from dumptui.core.compare.metrics import ElementTolerance
    from dumptui.core.io import npy

    rng = np.random.default_rng(5)
    n = 3 * SMALL_READ // 8
    pairs = []
    for k in range(2):
        y = rng.standard_normal(n).astype(np.float32)
        x = (y + np.float32(1e-3) * rng.standard_normal(n).astype(np.float32)).astype(np.float32)
        np.save(tmp_path / f"y{k}.npy", y)
        np.save(tmp_path / f"x{k}.npy", x)
        pairs.append((y, x))
    reads = []
    original = npy._read_into
    monkeypatch.setattr(
        npy, "_read_into", lambda fd, buf, offset: reads.append(buf.nbytes) or original(fd, buf, offset)
    )
    tol = ElementTolerance(0.0, 1e-3, 1e-2)
    for kl in (False, True):
        for k, (y, x) in enumerate(pairs):
            reads.clear()
            ref, target = (
                TensorRef(str(tmp_path / f"y{k}.npy"), "output", 0),
                TensorRef(str(tmp_path / f"x{k}.npy"), "output", 0),
            )
            assert ref.nbytes() > SMALL_READ
            got = compare_tensors(ref, target, tol, kl=kl)
            assert got == compare_arrays(y, x, tol, kl=kl)  # every statistic, bit for bit
            assert reads == [4 * n, 4 * n]  # each file once, whole
    # beyond READ_ONCE_UP_TO a side, or with no first pass to make, chunk by chunk as before
    monkeypatch.setattr(metrics, "READ_ONCE_UP_TO", SMALL_READ)
    reads.clear()
    y, x = pairs[0]
    got = compare_tensors(
        TensorRef(str(tmp_path / "y0.npy"), "output", 0), TensorRef(str(tmp_path / "x0.npy"), "output", 0), tol
    )
    assert got == compare_arrays(y, x, tol) and reads == []


CHILD = r"""
import sys
sys.path.insert(0, sys.argv[1])
from dumptui.core.compare.metrics import compare_tensors
from dumptui.core.model.dump import TensorRef

def peak_kb():
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("VmHWM"))

with open("/proc/self/clear_refs", "w") as fh:
    fh.write("5")  # the peak so far is forgotten: what follows is measured alone
before = peak_kb()
st = compare_tensors(TensorRef(sys.argv[2], "output", 0), TensorRef(sys.argv[3], "output", 0), kl=True)
print(st.n_diff, (peak_kb() - before) // 1024)
"""


@pytest.mark.skipif(not os.path.exists("/proc/self/clear_refs"), reason="needs Linux /proc to measure peak memory")
def test_comparing_two_large_tensors_keeps_memory_flat(tmp_path):
    # 32 MB of float32 per side: read chunk by chunk the peak grows by ~15 MB whatever the size; memory-mapped
    # it grew by both sides whole (64 MB here, 128 MB at the 64 MB per side this test used before)
    n = 8 << 20
    a = np.lib.format.open_memmap(tmp_path / "a.npy", mode="w+", dtype=np.float32, shape=(n,))
    a[:] = np.arange(n, dtype=np.float32)
    a.flush()
    b = np.lib.format.open_memmap(tmp_path / "b.npy", mode="w+", dtype=np.float32, shape=(n,))
    b[:] = a
    b[n // 2] += 1
    b.flush()
    del a, b
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(REPO), str(tmp_path / "a.npy"), str(tmp_path / "b.npy")],
        capture_output=True,
        text=True,
        check=True,
    )
    n_diff, grown_mb = map(int, out.stdout.split())
    assert n_diff == 1
    assert grown_mb < 32, f"resident memory grew by {grown_mb} MB comparing 2 x 32 MB"


APP_ENGINE = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
from dumptui.options import pair as pairing
from dumptui.core.compare.batch import evaluate_all
from dumptui.core.search.bisect import Bisection
from dumptui.present.tree import OpTreeModel

def peak_kb():
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("VmHWM"))

with open("/proc/self/clear_refs", "w") as fh:
    fh.write("5")  # from here: what the app's engine keeps, and its peaks on the way
before = peak_kb()
options = pairing.PairOptions(sys.argv[2], sys.argv[3])
ref, target = pairing.open_pair(options)
session = pairing.make_session(options, ref, target)
model = OpTreeModel(session.alignment.pairs)
bisection = Bisection(session)
evaluate_all(session)
files = ref.tensor_count() + target.tensor_count()
print(json.dumps({"files": files, "records": len(session.results()), "grown_kb": peak_kb() - before}))
"""
# What the app may take per dump file (its tensor, name and share of its op in the index, with the transient
# structures of indexing a side while the other is kept) and per statistics record (the numbers, the result,
# its verdict's reason, its cache and ledger entries), and once (modules imported on the way, allocator
# slack). Measured here: 20,000-op demo pair, ~0.7 KB a file kept, ~0.9 KB a record; before the compact
# index and records it was ~2 KB each: this 2,000-op pair grew by 56 MB against a bound of 35 (now 28).
FILE_BUDGET_KB = 1.2
RECORD_BUDGET_KB = 1.2
FIXED_KB = 10 << 10


@pytest.mark.skipif(not os.path.exists("/proc/self/clear_refs"), reason="needs Linux /proc to measure peak memory")
def test_the_apps_engine_keeps_records_not_tensors_within_a_budget(tmp_path):
    """Open a 2,000-op demo pair without the index cache (the higher peak), build the tree model and the
    bisection, compute every statistic: the peak grows by no more than the per-file and per-record budgets."""
    from dumptui.core.demo.residual import write_demo

    demo = write_demo(str(tmp_path), n_ops=2000, size=16)
    out = subprocess.run(
        [sys.executable, "-c", APP_ENGINE, str(REPO), demo.ref, demo.target],
        capture_output=True,
        text=True,
        check=True,
        env=dict(os.environ, DUMPTUI_NO_INDEX_CACHE="1"),
    )
    got = json.loads(out.stdout)
    assert got["files"] > 13_000 and got["records"] > 7_000  # the pair is as large as the budgets assume
    bound = got["files"] * FILE_BUDGET_KB + got["records"] * RECORD_BUDGET_KB + FIXED_KB
    assert got["grown_kb"] < bound, (
        f"peak grew by {got['grown_kb'] / 1024:.1f} MB for {got['files']} files and {got['records']} records "
        f"(budget {bound / 1024:.1f} MB)"
    )
