"""The folders whose every tensor file indexing found a regular file (no link, no FIFO, inside the dump) are
kept with the index (Dump.plain_folders) and their files opened without a `stat` first (io/safeio.py
`listed_regular`); anything else keeps the stat; what is swapped in after indexing is still refused before it
is read, without blocking; a worker process learns the folders from the tensors it is sent."""

from __future__ import annotations

import os
import shutil
import signal
import time
from pathlib import Path

import pytest
from helpers.damage import data_dir, same_pair, tensor_file

from dumptui.core.formats import open_dump
from dumptui.core.index import cache as indexcache
from dumptui.core.io import safeio
from dumptui.core.io.safeio import RefusedFile, open_regular_fd
from dumptui.core.model.dump import TensorRef


def _folder(dump: str) -> str:
    return str(data_dir(dump)) + os.sep


@pytest.fixture
def stats(monkeypatch):
    """The paths safeio looked at with a `stat` before opening them."""
    seen: list[str] = []
    real = safeio.check_regular

    def counted(path: str) -> os.stat_result:
        seen.append(path)
        return real(path)

    monkeypatch.setattr(safeio, "check_regular", counted)
    return seen


@pytest.fixture
def fresh_registry(monkeypatch):
    """A process that has listed no folder yet (the registry lasts for the process otherwise)."""
    monkeypatch.setattr(safeio, "_LISTED_FOLDERS", set())


def test_a_folder_of_regular_files_is_listed_and_read_without_a_stat(tmp_path, stats, fresh_registry):
    ref, _target = same_pair(tmp_path)
    dump = open_dump(ref)
    assert dump.plain_folders == frozenset({_folder(ref)})
    assert safeio.is_listed(_folder(ref))
    t = next(t for op in dump.ops for t in op.tensors() if t.has_data)
    stats.clear()  # (indexing read side files: the config, the graph)
    assert t.array().size > 0  # read (header and payload) without a stat
    assert stats == []
    elsewhere = tmp_path / "elsewhere.npy"
    shutil.copy(tensor_file(ref, "Sigmoid"), elsewhere)
    fd, _size = open_regular_fd(str(elsewhere))  # a folder no index listed: the stat first, as always
    os.close(fd)
    assert stats == [str(elsewhere)]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_link_or_a_fifo_keeps_the_stat_for_the_folder(tmp_path, stats, fresh_registry):
    ref, target = same_pair(tmp_path)
    linked = tensor_file(ref, "Sigmoid")
    kept = tmp_path / "kept.npy"
    shutil.move(linked, kept)
    linked.symlink_to(kept)  # a link to a regular file: read, but its folder is not one of regular files only
    fifo = tensor_file(target, "Sigmoid")
    fifo.unlink()
    os.mkfifo(fifo)  # refused by the index; the folder's other files keep the stat too
    dumps = [open_dump(side) for side in (ref, target)]
    assert [d.plain_folders for d in dumps] == [frozenset(), frozenset()]
    assert not safeio.is_listed(_folder(ref)) and not safeio.is_listed(_folder(target))
    t = next(t for op in dumps[0].ops for t in op.tensors() if t.path == str(linked))
    stats.clear()
    assert t.array().size > 0
    assert str(linked) in stats


@pytest.mark.skipif(not hasattr(os, "mkfifo") or not os.path.exists("/dev/zero"), reason="needs FIFOs, /dev/zero")
def test_a_file_swapped_after_indexing_is_refused_without_blocking(tmp_path, fresh_registry):
    ref, _target = same_pair(tmp_path)
    dump = open_dump(ref)
    assert safeio.is_listed(_folder(ref))
    victims = [tensor_file(ref, "Sigmoid"), tensor_file(ref, "Sigmoid", "input")]
    victims[0].unlink()
    os.mkfifo(victims[0])
    victims[1].unlink()
    victims[1].symlink_to("/dev/zero")

    def expired(_signum, _frame):
        raise AssertionError("a read that blocks")

    old = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, 10)
    try:
        for victim, kind in zip(victims, ("FIFO", "character device")):
            with pytest.raises(RefusedFile, match=kind):
                open_regular_fd(str(victim))
            t = next(t for op in dump.ops for t in op.tensors() if t.path == str(victim))
            with pytest.raises((OSError, ValueError), match=kind):  # the refusal, worded, never a read
                t.array()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def test_the_index_cache_keeps_the_folders(tmp_path, monkeypatch, fresh_registry):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv(indexcache.DISABLE_ENV, raising=False)
    ref, _target = same_pair(tmp_path)
    past = time.time() - 60  # a dump the cache may keep (not one still written)
    for folder, dirs, files in sorted(os.walk(ref), key=lambda w: -len(w[0])):
        for name in files + dirs:
            os.utime(os.path.join(folder, name), (past, past))
    os.utime(ref, (past, past))
    fresh = open_dump(ref, cache=True)
    cached = indexcache.load(indexcache.entry_path(ref, None, (None, None, None)))
    assert cached is not None, "the index was not cached"
    assert cached.plain_folders == fresh.plain_folders == frozenset({_folder(ref)})
    safeio._LISTED_FOLDERS.clear()
    open_dump(ref, cache=True)  # from the cache: listed again for this process
    assert safeio.is_listed(_folder(ref))


def test_a_worker_learns_the_folders_from_the_tensors_it_is_sent(tmp_path, monkeypatch, fresh_registry):
    ref, _target = same_pair(tmp_path)
    dump = open_dump(ref)
    t = next(t for op in dump.ops for t in op.tensors() if t.has_data)
    spec = t.worker_spec()
    assert spec is not None and spec[-1] == _folder(ref)
    monkeypatch.setattr(safeio, "_LISTED_FOLDERS", set())  # as a worker forked before the index was read
    made, _layout = TensorRef.from_worker_spec(spec)
    assert safeio.is_listed(_folder(ref))
    assert made.array().tolist() == t.array().tolist()
    monkeypatch.setattr(safeio, "_LISTED_FOLDERS", set())
    unlisted = t.worker_spec()
    assert unlisted is not None and unlisted[-1] is None  # this process never listed it: nor will the worker
    TensorRef.from_worker_spec(unlisted)
    assert not safeio.is_listed(_folder(ref))


def test_a_folder_outside_the_dump_is_not_listed(tmp_path, fresh_registry):
    ref, _target = same_pair(tmp_path)
    outside = tmp_path / "outside"
    shutil.move(str(data_dir(ref)), outside)
    Path(data_dir(ref)).symlink_to(outside, target_is_directory=True)  # the tensor folder leads outside
    dump = open_dump(ref)
    assert dump.plain_folders == frozenset()
