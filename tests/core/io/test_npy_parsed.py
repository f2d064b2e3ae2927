"""npy headers parsed once per distinct text (core/io/npy.py `parse_header`): what a remembered header gives
is what numpy reads from the file, on every dtype a dump holds, either byte order, a scalar, an empty tensor,
Fortran order; a header refused is refused again, never remembered; the memory is bounded."""

from __future__ import annotations

import numpy as np
import pytest

from dumptui.core.io import npy
from dumptui.core.io.npy import NpyHeaderError, npy_layout, parse_header
from dumptui.core.model.dump import TensorRef

DTYPES = ["?", "i1", "u1", "<i2", ">i2", "<u2", "<i4", ">i4", "<u4", "<i8", ">i8", "<u8", "<f2", ">f2", "<f4", ">f4"]
DTYPES += ["<f8", ">f8", "<c8", ">c16"]  # "<u2" is also how a bfloat16 dump stores its raw bits


def numpy_header(path: str) -> tuple[np.dtype, tuple[int, ...], bool, int]:
    with open(path, "rb") as fh:
        major, _minor = np.lib.format.read_magic(fh)
        read = np.lib.format.read_array_header_1_0 if major == 1 else np.lib.format.read_array_header_2_0
        shape, fortran, dtype = read(fh)
        return dtype, shape, fortran, fh.tell()


def arrays(dt: str) -> list[np.ndarray]:
    base = np.arange(24).reshape(2, 3, 4) % 5
    return [
        base.astype(dt),
        np.asfortranarray(base.astype(dt)),
        np.array(3, dtype=dt),
        np.zeros((0,), dtype=dt),
        np.zeros((3, 0, 2), dtype=dt),
    ]


@pytest.mark.parametrize("dt", DTYPES)
def test_remembered_headers_read_as_numpy_reads_them(tmp_path, dt, monkeypatch):
    monkeypatch.setattr(npy, "_PARSED", {})
    for k, a in enumerate(arrays(dt)):
        path = str(tmp_path / f"a{k}.npy")
        np.save(path, a)
        want = numpy_header(path)
        for _ in range(2):  # parsed, then remembered
            lay = npy_layout(path)
            assert lay.problem is None
            assert (lay.storage, lay.shape, lay.fortran, lay.offset) == want
            got = TensorRef(path, "output", 0).read()
            assert got.dtype == np.load(path).dtype
            assert got.tobytes() == np.load(path).reshape(-1).tobytes()  # flat in C index order
    assert len(npy._PARSED) == 5


def test_refused_headers_are_refused_every_time(monkeypatch):
    monkeypatch.setattr(npy, "_PARSED", {})
    bad = [
        "{'descr': '<V2', 'fortran_order': False, 'shape': (3,), }",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }",
        "{'descr': 'O', 'fortran_order': False, 'shape': (3,), }",
        "{'descr': '<f4', 'fortran_order': 1, 'shape': (3,), }",
    ]
    for text in bad:
        for _ in range(2):
            with pytest.raises(NpyHeaderError):
                parse_header(text, 128)
    assert npy._PARSED == {}


def test_the_memory_is_bounded(monkeypatch):
    monkeypatch.setattr(npy, "_PARSED", {})
    monkeypatch.setattr(npy, "MAX_PARSED", 3)
    for n in range(10):
        text = f"{{'descr': '<f4', 'fortran_order': False, 'shape': ({n},), }}"
        assert parse_header(text, 128) == (np.dtype("<f4"), (n,), False, 128)
        assert len(npy._PARSED) <= 3
    long = "{'descr': '<f4', 'fortran_order': False, 'shape': (5,), }" + " " * 2000
    assert parse_header(long, 2100) == (np.dtype("<f4"), (5,), False, 2100)
    assert long not in npy._PARSED
