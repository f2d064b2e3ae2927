"""The user's cache folder holds data, never code: a pickle planted in an index entry or in the remembered
same-files pairs runs nothing (a marker file proves it), an entry others may write is not read, a file
rewritten in place with its size, time and inode kept is not taken for the same bytes, and the walk that
records an index's dependencies never follows a link out of the dump."""

from __future__ import annotations

import os
import pickle
import struct
import time

import numpy as np
import pytest

from dumptui.core.compare import samefiles
from dumptui.core.demo.residual import write_demo
from dumptui.core.formats import open_dump
from dumptui.core.index import cache, restricted
from dumptui.core.io.devicelayout import DeviceLayout, DevicePayload
from dumptui.core.io.npy import Layout


class Planted:
    """Unpickled, it creates the marker file: what an attacker's pickle would do with os.system."""

    def __init__(self, marker: str):
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


def _aged(root: str) -> None:
    past = time.time() - 60
    for folder, _dirs, files in os.walk(root):
        for name in files + [""]:
            os.utime(os.path.join(folder, name) if name else folder, (past, past))


@pytest.fixture
def cached_demo(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv(cache.DISABLE_ENV, raising=False)
    info = write_demo(str(tmp_path / "demo"), n_ops=12, size=16)
    _aged(str(tmp_path / "demo"))
    dump = open_dump(info.ref, cache=True)  # indexes and stores the entry
    entry = next(os.path.join(cache.cache_folder(), n) for n in os.listdir(cache.cache_folder()))
    assert cache.load(entry) is not None  # a genuine entry loads
    return info, dump, entry


def _rewrite_columns(entry: str, payload: bytes) -> None:
    """The entry with its genuine header and `payload` in place of its columns."""
    with open(entry, "rb") as fh:
        head = fh.read(len(cache.MAGIC) + 8)
        (length,) = struct.unpack("<Q", head[len(cache.MAGIC) :])
        header = fh.read(length)
    with open(entry, "wb") as fh:
        fh.write(head + header + payload)
    os.chmod(entry, 0o600)


def test_a_pickle_planted_in_an_index_entry_runs_nothing(cached_demo, tmp_path):
    info, _dump, entry = cached_demo
    marker = tmp_path / "marker"
    _rewrite_columns(entry, pickle.dumps(Planted(str(marker))))
    assert cache.load(entry) is None
    assert not marker.exists()
    assert not os.path.exists(entry)  # a damaged entry is removed; the dump is indexed again
    again = open_dump(info.ref, cache=True)
    assert len(again.ops) == len(_dump.ops) and not marker.exists()


def test_an_entry_of_the_old_pickled_form_is_never_unpickled(cached_demo, tmp_path):
    _info, _dump, entry = cached_demo
    marker = tmp_path / "marker"
    with open(entry, "wb") as fh:  # what an attacker prepares for the former format: a pickle first
        pickle.dump(Planted(str(marker)), fh)
    assert cache.load(entry) is None and not cache.current(entry)
    assert not marker.exists()


def test_an_entry_others_may_write_is_not_read(cached_demo):
    _info, _dump, entry = cached_demo
    os.chmod(entry, 0o666)
    assert cache.load(entry) is None


def test_the_restricted_loader_refuses_getattr_and_takes_the_layouts_it_needs():
    with pytest.raises(restricted.RefusedClass):
        restricted.loads(pickle.dumps(getattr))
    with pytest.raises(restricted.RefusedClass):
        restricted.loads(pickle.dumps(os.system))
    device = DeviceLayout("NC1HWC0", (1, 1, 2, 2, 16), (1, 3, 2, 2), "NCHW")
    lay = Layout(np.dtype(np.float16), (1, 3, 2, 2), 128, decoder=DevicePayload(device))
    assert restricted.loads(pickle.dumps(lay)) == lay


def test_a_pickle_planted_in_the_remembered_pairs_runs_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    marker = tmp_path / "marker"
    sf = samefiles.SameFiles(str(tmp_path / "a"), str(tmp_path / "b"), remember=True)
    os.makedirs(os.path.dirname(sf.path), exist_ok=True)
    with open(sf.path, "wb") as fh:
        pickle.dump(Planted(str(marker)), fh)
    a, b = tmp_path / "x.bin", tmp_path / "y.bin"
    a.write_bytes(b"same" * 1000)
    b.write_bytes(b"same" * 1000)
    assert sf.identical(str(a), str(b)) is True
    assert not marker.exists()


def test_a_file_rewritten_in_place_with_its_stats_kept_is_read_again(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    a, b = tmp_path / "a.npy", tmp_path / "b.npy"
    data = np.arange(100_000, dtype=np.float32)
    np.save(a, data)
    np.save(b, data)
    past = time.time() - 60
    for f in (a, b):
        os.utime(f, (past, past))
    roots = (str(tmp_path / "r"), str(tmp_path / "t"))
    first = samefiles.SameFiles(*roots, remember=True)
    assert first.identical(str(a), str(b)) is True
    first.save()
    st = os.stat(b)
    with open(b, "r+b") as fh:  # the same size, the same inode, and the time set back: other bytes
        fh.seek(200)
        fh.write(b"\xff\xff\xff\xff")
    os.utime(b, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (os.stat(b).st_size, os.stat(b).st_mtime_ns, os.stat(b).st_ino) == (st.st_size, st.st_mtime_ns, st.st_ino)
    again = samefiles.SameFiles(*roots, remember=True)
    assert again._load()  # it remembers the pair...
    assert again.identical(str(a), str(b)) is False  # ...and still reads the files, whose samples changed


def test_the_dependency_walk_never_follows_a_link_out_of_the_dump(tmp_path):
    info = write_demo(str(tmp_path / "demo"), n_ops=12, size=16)
    os.symlink("/", os.path.join(info.ref, "rank_0", "root-link"))
    deps = cache.dependencies(info.ref, info.ref)  # it walks the dump, not the file system
    assert all(cache.inside(os.path.dirname(d[0]) or d[0], info.ref) or d[0] == info.ref for d in deps)
