"""npy headers read in one unbuffered read: the usual 128-byte header, one longer than the first read,
a truncated one, and a declared length no tensor has (refused without allocating it)."""

from __future__ import annotations

import numpy as np

from dumptui.core.io.npy import HEADER_PEEK, npy_layout
from dumptui.core.model.dump import TensorRef
from dumptui.report.reasons import say


def v2_file(path, a: np.ndarray, header_len: int) -> bytes:
    h = f"{{'descr': '{a.dtype.str}', 'fortran_order': False, 'shape': {a.shape}, }}"
    h = h + " " * (header_len - 1 - len(h)) + "\n"
    data = b"\x93NUMPY\x02\x00" + len(h).to_bytes(4, "little") + h.encode("latin1") + a.tobytes()
    path.write_bytes(data)
    return data


def test_headers_short_long_truncated_and_absurd(tmp_path):
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    np.save(tmp_path / "plain.npy", a)
    lay = npy_layout(str(tmp_path / "plain.npy"))
    assert (lay.shape, lay.offset, lay.problem) == ((3, 4), 128, None)
    data = v2_file(tmp_path / "long.npy", a, 3 * HEADER_PEEK)
    lay = npy_layout(str(tmp_path / "long.npy"))
    assert (lay.shape, lay.offset, lay.problem) == ((3, 4), 12 + 3 * HEADER_PEEK, None)
    assert np.array_equal(TensorRef(str(tmp_path / "long.npy"), "output", 0).read(), a.ravel())
    (tmp_path / "cut.npy").write_bytes(data[: HEADER_PEEK + 40])
    assert say(npy_layout(str(tmp_path / "cut.npy")).problem) == "truncated npy header"
    (tmp_path / "absurd.npy").write_bytes(data[:8] + (2**31 - 1).to_bytes(4, "little") + data[12:])
    assert "header of 2147483647 B (at most 65536 B are read)" in say(npy_layout(str(tmp_path / "absurd.npy")).problem)
    (tmp_path / "folder.npy").mkdir()
    assert say(npy_layout(str(tmp_path / "folder.npy")).problem) == "not a regular file: a folder, not read"
