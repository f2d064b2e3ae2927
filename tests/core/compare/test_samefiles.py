"""Byte-identity of dump file pairs: sampled, streamed, and remembered only for equal, settled files."""

from __future__ import annotations

import os
import time

import pytest

from dumptui.core.compare import samefiles
from dumptui.core.compare.samefiles import SameFiles


def write(path, data: bytes, age: float = 60.0) -> str:
    with open(path, "wb") as fh:
        fh.write(data)
    past = time.time() - age
    os.utime(path, (past, past))
    return str(path)


@pytest.fixture
def cache_home(tmp_path_factory, monkeypatch):
    home = tmp_path_factory.mktemp("cache")
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    return home


def test_equal_differing_and_unreadable(tmp_path):
    big = os.urandom(5 * samefiles.BLOCK + 123)  # sampled, then streamed in several blocks
    a = write(tmp_path / "a", big)
    b = write(tmp_path / "b", big)
    middle = bytearray(big)
    middle[len(big) // 2 + 7] ^= 1
    c = write(tmp_path / "c", bytes(middle))
    past_samples = bytearray(big)
    past_samples[samefiles.SAMPLE + 5] ^= 1  # not in any sampled block: found by the stream
    d = write(tmp_path / "d", bytes(past_samples))
    same = SameFiles(str(tmp_path), str(tmp_path))
    assert same.identical(a, b) is True
    assert same.identical(a, c) is False
    assert same.identical(a, d) is False
    assert same.identical(a, write(tmp_path / "short", big[:-1])) is False
    assert same.identical(a, str(tmp_path / "missing")) is None
    small = write(tmp_path / "s1", b"\x93NUMPY" + b"x" * 100)
    assert same.identical(small, write(tmp_path / "s2", b"\x93NUMPY" + b"x" * 100)) is True


def test_same_bytes_of_two_files_of_one_dump(tmp_path):
    """samefiles.same_bytes (a consumer's input against its producer's output): True only for the same bytes,
    False for anything else, a file that cannot be read, or one that is no regular file (never blocking)."""
    big = os.urandom(5 * samefiles.BLOCK + 123)
    a, b = write(tmp_path / "a", big), write(tmp_path / "b", big)
    flipped = bytearray(big)
    flipped[samefiles.SAMPLE + 5] ^= 1  # outside the sampled blocks: found by the stream
    assert samefiles.same_bytes(a, b) is True
    assert samefiles.same_bytes(a, write(tmp_path / "c", bytes(flipped))) is False
    assert samefiles.same_bytes(a, write(tmp_path / "short", big[:-1])) is False
    assert samefiles.same_bytes(a, str(tmp_path / "missing")) is False
    if hasattr(os, "mkfifo"):
        os.mkfifo(tmp_path / "fifo")
        assert samefiles.same_bytes(str(tmp_path / "fifo"), str(tmp_path / "fifo")) is False


def test_equal_pairs_are_remembered_until_a_file_changes(tmp_path, cache_home, monkeypatch):
    data = os.urandom(1000)
    a, b = write(tmp_path / "a", data), write(tmp_path / "b", data)
    first = SameFiles(str(tmp_path / "ref"), str(tmp_path / "target"), remember=True)
    assert first.identical(a, b) is True
    first.save()

    def no_reading(*args):
        raise AssertionError("a remembered pair was read again")

    monkeypatch.setattr(samefiles, "_blocks_equal", no_reading)
    again = SameFiles(str(tmp_path / "ref"), str(tmp_path / "target"), remember=True)
    assert again.identical(a, b) is True
    write(b, data, age=30.0)  # rewritten: same bytes, another time
    with pytest.raises(AssertionError, match="read again"):
        again.identical(a, b)
    # another pair of dumps remembers nothing of this one
    with pytest.raises(AssertionError, match="read again"):
        SameFiles(str(tmp_path / "ref"), str(tmp_path / "other"), remember=True).identical(a, b)


def test_not_remembered_when_just_written_or_switched_off(tmp_path, cache_home, monkeypatch):
    data = os.urandom(100)
    a, b = write(tmp_path / "a", data, age=0.0), write(tmp_path / "b", data)
    fresh = SameFiles(str(tmp_path), str(tmp_path / "t"), remember=True)
    assert fresh.identical(a, b) is True
    fresh.save()
    assert not os.path.exists(fresh.path)
    monkeypatch.setenv("DUMPTUI_NO_INDEX_CACHE", "1")
    off = SameFiles(str(tmp_path), str(tmp_path / "t"), remember=True)
    assert off.identical(write(tmp_path / "c", data), b) is True
    off.save()
    assert not os.path.exists(off.path)


def test_session_preconditions_remember_equal_weights(tmp_path, cache_home, clean_demo_pair):
    from helpers.indexing import age

    from dumptui.core.compare.session import Session
    from dumptui.core.formats import open_dump
    from dumptui.core.search.bisect import Bisection

    age(clean_demo_pair.root)
    runs = []
    for _ in range(2):
        s = Session(open_dump(clean_demo_pair.ref), open_dump(clean_demo_pair.target), remember_same_files=True)
        bi = Bisection(s)
        checks = bi.check_inputs()
        bi.run()
        runs.append(([(c.name, c.status, c.detail) for c in checks], bi.first_root().pair.name, s.tensors_read))
        assert os.path.exists(s.same_files.path)  # written after the first run's preconditions
    assert runs[0] == runs[1]
    assert runs[0][1] == clean_demo_pair.planted
    assert all(status == "equal" for _name, status, _detail in runs[0][0])
