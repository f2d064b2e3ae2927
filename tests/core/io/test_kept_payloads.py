"""A small tensor's payload read with its header (core/io/npy.py `payloads_kept`): the values read_small gives
are the file's, byte for byte, as without it; each payload is handed out once, the budget bounds what is
kept (oldest dropped first), and nothing is kept outside the context; the files `kept_for_reuse` names are
handed out as often as they are read while it lasts, then dropped."""

from __future__ import annotations

import numpy as np

from dumptui.core.io import npy
from dumptui.core.io.npy import kept_for_reuse, npy_layout, payloads_kept, read_small


def write(tmp_path, name, a):
    path = tmp_path / f"{name}.npy"
    np.save(path, a)
    return str(path)


def test_values_are_the_files_and_each_is_handed_out_once(tmp_path, monkeypatch):
    arrays = {
        "f32": np.arange(100, dtype=np.float32) / 7,
        "f16": np.linspace(-3, 3, 50).astype(np.float16),
        "i8": np.arange(-20, 20, dtype=np.int8),
        "big-endian": np.arange(30, dtype=">f4"),
        "scalar": np.array(2.5, dtype=np.float64),
        "whole": np.arange(5000, dtype=np.float32),  # beyond a page, within KEEP_WHOLE: the file read whole
        "large": np.ones(20000, np.float32),  # beyond KEEP_WHOLE: its header alone read, the payload read later
    }
    paths = {name: write(tmp_path, name, a) for name, a in arrays.items()}
    with payloads_kept():
        layouts = {name: npy_layout(p) for name, p in paths.items()}
        assert {k for k in paths if paths[k] in npy._kept.by_path} == set(arrays) - {"large"}
        for name, p in paths.items():
            got = read_small(p, layouts[name])
            assert got.dtype == np.load(p).dtype and got.tobytes() == np.load(p).reshape(-1).tobytes(), name
            assert p not in npy._kept.by_path  # handed out once
            got[...] = 0  # a copy of its own: writable, and the next read is the file's again
            assert read_small(p, layouts[name]).tobytes() == np.load(p).reshape(-1).tobytes()
    assert not npy._kept.by_path and not npy._kept.budget


def test_the_budget_drops_the_oldest_and_nothing_is_kept_outside(tmp_path):
    paths = [write(tmp_path, f"t{i}", np.full(64, i, np.float32)) for i in range(10)]
    npy_layout(paths[0])
    assert not npy._kept.by_path  # outside the context: nothing kept
    with payloads_kept(budget=3 * 256):
        layouts = [npy_layout(p) for p in paths]
        assert list(npy._kept.by_path) == paths[-3:]
        assert npy._kept.held == 3 * 256
        for p, lay in zip(paths, layouts):
            assert (read_small(p, lay) == np.load(p)).all()
    assert not npy._kept.by_path and npy._kept.held == 0


def test_the_files_kept_for_reuse_are_handed_out_each_time_then_dropped(tmp_path, monkeypatch):
    paths = [write(tmp_path, f"t{i}", np.arange(64, dtype=np.float32) * (i + 1)) for i in range(3)]
    opened: list[str] = []
    real = npy.open_regular_fd
    monkeypatch.setattr(npy, "open_regular_fd", lambda p: (opened.append(p), real(p))[1])
    with payloads_kept():
        with kept_for_reuse(paths[:2]), kept_for_reuse(paths[1:2]):
            layouts = [npy_layout(p) for p in paths]
            assert len(opened) == 3  # one open a file: its header and payload
            for _round in range(3):
                for p, lay in zip(paths[:2], layouts):
                    got = read_small(p, lay)
                    assert got.tobytes() == np.load(p).tobytes()
                    got[...] = 0  # each read a copy of its own
            assert len(opened) == 3  # the reused ones never opened again
            assert (read_small(paths[2], layouts[2]) == np.load(paths[2])).all()  # the others once, as before
            assert paths[2] not in npy._kept.by_path
        assert not npy._kept.reused and not npy._kept.by_path and npy._kept.held == 0  # dropped at its end
        read_small(paths[0], layouts[0])
        assert len(opened) == 4  # read from the file again
