"""processes.run_units: a pair's statistics, then its copies (a consumer's input holding its producer's output,
each side) compared byte for byte with the payloads just read, still in memory: only the copies' files are
read; a copy that differs, is read otherwise, or whose pair could not be read is computed as itself."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from dumptui.core.compare import metrics, processes, samefiles
from dumptui.core.compare.metrics import ElementTolerance, compare_arrays
from dumptui.core.compare.sampling import sample_positions
from dumptui.core.model.dump import TensorRef

N = 1 << 18  # a pair compare_tensors reads whole (1 MB a side), above the rows of small pairs
TOL = ElementTolerance(0.0, 1e-3, 1e-2)


@pytest.fixture
def files(tmp_path):
    rng = np.random.default_rng(2)
    y = rng.standard_normal(N).astype(np.float32)
    x = (y + np.float32(1e-3) * rng.standard_normal(N).astype(np.float32)).astype(np.float32)
    for name, values in (("ref_out", y), ("tgt_out", x)):
        np.save(tmp_path / f"{name}.npy", values)
    for name, source in (("ref_in", "ref_out"), ("tgt_in", "tgt_out")):
        shutil.copy(tmp_path / f"{source}.npy", tmp_path / f"{name}.npy")
    return tmp_path, y, x


def _job(index, ref_path, tgt_path):
    ref, tgt = TensorRef(str(ref_path), "output", 0), TensorRef(str(tgt_path), "output", 0)
    return processes.pair_job(index, ref, tgt, TOL)


def _unit(d, copies):
    return (_job(0, d / "ref_out.npy", d / "tgt_out.npy"), False, copies)


def test_a_copy_is_compared_with_the_payloads_in_memory(files, monkeypatch):
    d, y, x = files
    monkeypatch.setattr(samefiles, "same_bytes", lambda a, b: pytest.fail("a file read again"))
    monkeypatch.setattr(processes, "same_bytes", lambda a, b: pytest.fail("a file read again"))
    [outcomes] = processes.run_units([_unit(d, [_job(1, d / "ref_in.npy", d / "tgt_in.npy")])])
    (index, st, err, same, sampled), copy = outcomes
    assert (index, err, same) == (0, None, False) and st == compare_arrays(y, x, TOL, kl=False)
    assert copy == (1, None, None, True, None)
    # a big output: its values at a replay's sampled positions come back for the replay (which reads no file)
    positions = sample_positions(N)
    assert sampled is not None and positions is not None
    assert np.array_equal(sampled[0], y[positions]) and np.array_equal(sampled[1], x[positions])
    assert sampled[0].dtype == y.dtype


@pytest.mark.parametrize("where", ["first byte", "last byte"])
def test_a_copy_that_differs_is_computed_as_itself(files, where):
    d, y, x = files
    changed = x.copy()
    changed[0 if where == "first byte" else -1] += np.float32(1.0)
    np.save(d / "tgt_in.npy", changed)
    [outcomes] = processes.run_units([_unit(d, [_job(1, d / "ref_in.npy", d / "tgt_in.npy")])])
    assert outcomes[1] == (1, compare_arrays(y, changed, TOL, kl=False), None, False, None)


def test_a_copy_read_as_another_shape_or_a_pair_that_failed_is_computed(files):
    d, y, x = files
    np.save(d / "ref_in.npy", y.reshape(2, -1))  # the same payload bytes, read as another shape
    np.save(d / "tgt_in.npy", x.reshape(2, -1))
    [outcomes] = processes.run_units([_unit(d, [_job(1, d / "ref_in.npy", d / "tgt_in.npy")])])
    assert outcomes[1] == (1, compare_arrays(y.reshape(2, -1), x.reshape(2, -1), TOL, kl=False), None, False, None)
    np.save(d / "ref_in.npy", y)
    copy = _job(1, d / "ref_in.npy", d / "tgt_in.npy")  # described while the pair's files were there
    unit = _unit(d, [copy])
    (d / "ref_out.npy").unlink()
    [outcomes] = processes.run_units([unit])
    assert outcomes[0][1] is None and outcomes[0][2]  # the pair could not be read: said why
    assert outcomes[1][0] == 1 and outcomes[1][1] is not None and outcomes[1][3] is False


def test_a_pair_read_in_chunks_compares_its_copies_file_against_file(files, monkeypatch):
    d, _y, _x = files
    monkeypatch.setattr(metrics, "SMALL_READ", 1 << 16)  # the pair is read chunk by chunk: nothing held
    monkeypatch.setattr(metrics, "READ_ONCE_UP_TO", 1 << 16)
    compared = []
    real = processes.same_bytes
    monkeypatch.setattr(processes, "same_bytes", lambda a, b: compared.append((a, b)) or real(a, b))
    [outcomes] = processes.run_units([_unit(d, [_job(1, d / "ref_in.npy", d / "tgt_in.npy")])])
    assert outcomes[1] == (1, None, None, True, None)
    assert outcomes[0][4] is None  # read in chunks: no values kept for a replay
    assert compared == [
        (str(d / "ref_in.npy"), str(d / "ref_out.npy")),
        (str(d / "tgt_in.npy"), str(d / "tgt_out.npy")),
    ]


def test_same_payload(tmp_path):
    payload = np.frombuffer(bytes(range(256)) * 9000, np.uint8)  # more than a block
    path = tmp_path / "f"
    path.write_bytes(b"header" + payload.tobytes())
    assert samefiles.same_payload(str(path), 6, payload) is True
    assert samefiles.same_payload(str(path), 5, payload) is False  # another offset: another size
    changed = payload.copy()
    changed[-1] ^= 1
    assert samefiles.same_payload(str(path), 6, changed) is False
    assert samefiles.same_payload(str(tmp_path / "missing"), 6, payload) is False
