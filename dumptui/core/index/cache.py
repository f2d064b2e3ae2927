"""The persistent index cache: a dump indexed once is opened again from the user's cache folder.

Where: `$XDG_CACHE_HOME/dumptui/index` (default `~/.cache/dumptui/index`), never inside a dump (a cache folder
that lies inside the dump is not written). One file per (dump folder, its identity on disk, format asked for,
rank/graph/iteration chosen, dumptui code), holding:

- what the index depends on, each with its modification time (ns), size and inode: the folders from the
  given path down to the folder indexed (a rank folder, say) and every folder below that one (a file added,
  removed or renamed changes its folder's time), and every small side file the readers read (graphs, csv,
  json): all files of folders of at most SMALL_FOLDER entries, and files with a side-file suffix in larger
  ones. Raw dumps, whose index reads every file's header, depend on every file, and on the folders above
  where GE graph files are looked for;
- the index itself, as columns (codec.py).

An entry is used only when every dependency still has the recorded time, size and inode; otherwise the dump
is indexed again and the entry replaced. A dump whose files changed in the last RACY_SECONDS is not cached:
a folder's time has a resolution of a clock tick, so a file added within the same tick as the listing would
go unnoticed (git calls this the racily clean index), and a dump still being written should not be cached.
(The folders above the dump are not held to this: they change for reasons of their own, and only a GE graph
file dropped beside a raw dump in that very tick would go unnoticed.)

Tensor files are not dependencies one by one: a tensor is found by its name (its folder's time covers that)
and its data and header are read when compared, never from the cache.

An entry is data, never code: a magic number, its header as JSON, then the columns, whose few objects are
rebuilt from an allowed list of dumptui's own classes (restricted.py), so a file planted in the cache folder
runs nothing. An entry that is not the user's own, or that others may write, is not read. The walk that
records dependencies never follows a symbolic link to a folder (a link to `/` inside a dump must not make it
walk the file system).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import pickle
import struct
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dumptui.core.index import codec as indexcodec
from dumptui.core.index import restricted
from dumptui.core.io.fault import Fault, Flaw
from dumptui.core.io.indexing_progress import Stage, report
from dumptui.core.model.dump import Dump, FormatName

SCHEMA = 2  # 2: a magic number and a JSON header before the columns
MAGIC = b"DTUI-IDX"
MAX_HEADER = 1 << 30  # a header lists the dependencies: ~100 bytes each
SMALL_FOLDER = 64  # folders with at most this many entries have every file recorded
SIDE_SUFFIXES = (".ir", ".pb", ".pbtxt", ".csv", ".json", ".dat", ".txt", ".yaml", ".yml")
RACY_SECONDS = 2.0
GRAPH_ANCESTORS = 6  # raw dumps: GE graph files are looked for up to the parent of the ACL dump path
# Formats whose index reads every file's content (CANN raw headers): each file is a dependency of its own.
CONTENT_INDEXED = {FormatName.CANN_RAW}
MAX_ENTRIES = 64  # the oldest entries beyond this are removed when one is written
DISABLE_ENV = "DUMPTUI_NO_INDEX_CACHE"

Dependency = tuple[str, int, int, int]  # path, mtime_ns, size, inode


def cache_folder() -> str:
    """`$XDG_CACHE_HOME/dumptui/index`, or `~/.cache/dumptui/index`."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "dumptui", "index")


def enabled() -> bool:
    return not os.environ.get(DISABLE_ENV)


CORE_FOLDER = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _code_fingerprint() -> str:
    """Modification times of the engine's modules (every folder of core/: the readers that make an index
    live in core/formats, its model in core/model): an index made by other code is not reused."""
    parts = []
    for folder, _dirs, files in os.walk(CORE_FOLDER):
        for name in sorted(files):
            if name.endswith(".py"):
                st = os.stat(os.path.join(folder, name))
                parts.append(f"{name}:{st.st_mtime_ns}:{st.st_size}")
    return hashlib.sha256("\n".join(sorted(parts)).encode()).hexdigest()


def entry_path(path: str, fmt: str | None, selection: tuple[str | None, ...]) -> str:
    """The cache file of this dump as asked; OSError when the path cannot be looked at."""
    abspath = os.path.abspath(path)
    st = os.stat(abspath)
    # The path as given is in the key too: the index holds its files' paths as the reader made them from it
    # (`A/rank_0/...` for `A`), which the same folder given as `/data/A`, or from another folder, cannot use.
    key = repr((SCHEMA, abspath, path, st.st_dev, st.st_ino, fmt, selection, _code_fingerprint()))
    return os.path.join(cache_folder(), hashlib.sha256(key.encode()).hexdigest()[:40] + ".idx")


def _stat(path: str) -> Dependency | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (path, st.st_mtime_ns, st.st_size, st.st_ino)


def dependencies(path: str, root: str, fmt: str = "") -> list[Dependency]:
    """What an index of the dump at `path` (indexed from its folder `root`) depends on: the folders from
    `path` down to `root`, everything below `root` (see the module docstring), and for raw dumps (`fmt` in
    CONTENT_INDEXED) every file and the folders above where GE graph files are looked for."""
    found: dict[str, Dependency] = {}
    start, root = os.path.abspath(path), os.path.abspath(root or path)
    cur = root
    while inside(cur, start) and cur != start:  # the folders between the path given and the one indexed
        cur = os.path.dirname(cur)
        dep = _stat(cur)
        if dep is not None:
            found[cur] = dep
    content_indexed = fmt in CONTENT_INDEXED
    if content_indexed:
        cur = root
        for _ in range(GRAPH_ANCESTORS):
            cur = os.path.dirname(cur)
            _record_folder(cur, found, lambda name: name.endswith(".pbtxt"))
    seen: set[tuple[int, int]] = set()
    stack = [root]
    while stack:
        folder = stack.pop()
        if folder in found:
            continue
        try:
            st = os.stat(folder)
        except OSError:
            continue
        if (st.st_dev, st.st_ino) in seen:  # a symlink loop, or the same folder by two paths
            continue
        seen.add((st.st_dev, st.st_ino))
        stack += _record_folder(folder, found, None if content_indexed else _side_file)
    return list(found.values())


def _side_file(name: str) -> bool:
    return name.endswith(SIDE_SUFFIXES)


def _record_folder(folder: str, found: dict[str, Dependency], wanted: Callable[[str], bool] | None) -> list[str]:
    """Record `folder` and its files (all when `wanted` is None or the folder is small, else those it wants);
    returns its subfolders."""
    dep = _stat(folder)
    if dep is None:
        return []
    found[folder] = dep
    try:
        with os.scandir(folder) as it:
            entries = list(it)
    except OSError:
        return []
    every = wanted is None or len(entries) <= SMALL_FOLDER
    subfolders = []
    for e in entries:
        try:
            is_dir = e.is_dir(follow_symlinks=False)  # a link to a folder is not walked (it may lead anywhere)
        except OSError:
            continue
        if is_dir:
            subfolders.append(e.path)
        elif every or (wanted is not None and wanted(e.name)):
            file_dep = _stat(e.path)
            if file_dep is not None:
                found[e.path] = file_dep
    return subfolders


def _unchanged(deps: list[Dependency]) -> bool:
    return all(_stat(dep[0]) == dep for dep in deps)


def inside(child: str, parent: str) -> bool:
    child, parent = os.path.realpath(child), os.path.realpath(parent)
    return child == parent or child.startswith(parent.rstrip(os.sep) + os.sep)


@dataclass
class CacheResult:
    """A dump from the cache or freshly indexed, and what happened to its cache entry (for the bench)."""

    dump: Dump
    hit: bool
    stored: bool = False
    why_not_stored: Fault | None = None


def _read_header(fh: Any) -> dict[str, Any]:
    """The entry's header (ValueError when the file is not a current entry of ours, or not the user's own)."""
    st = os.fstat(fh.fileno())
    if st.st_uid != os.getuid() or st.st_mode & 0o022:
        raise ValueError("a cache entry that is not the user's own, or that others may write, is not read")
    if fh.read(len(MAGIC)) != MAGIC:
        raise ValueError("not an index cache entry")
    (length,) = struct.unpack("<Q", fh.read(8))
    if length > MAX_HEADER:
        raise ValueError("index cache header too large")
    header = json.loads(fh.read(length))
    if not isinstance(header, dict) or header.get("schema") != SCHEMA or not isinstance(header.get("deps"), list):
        raise ValueError("index cache entry of another schema")
    header["deps"] = [_dependency(d) for d in header["deps"]]
    return header


def _dependency(value: Any) -> Dependency:
    if not (
        isinstance(value, list)
        and len(value) == 4
        and isinstance(value[0], str)
        and all(type(v) is int for v in value[1:])
    ):
        raise ValueError("a damaged dependency in an index cache entry")
    return (value[0], value[1], value[2], value[3])


def current(entry: str) -> bool:
    """Whether the entry exists and its dependencies are unchanged (its header only is read)."""
    try:
        with open(entry, "rb") as fh:
            return _unchanged(_read_header(fh)["deps"])
    except Exception:  # missing, damaged or foreign: not current (`load` removes a damaged one)
        return False


def load(entry: str, texts: dict[str, str] | None = None) -> Dump | None:
    """The dump of a cache entry whose dependencies are unchanged, else None (a damaged entry is removed).
    `texts`: names shared with another dump (codec.decode)."""
    try:
        with open(entry, "rb") as fh:
            if not _unchanged(_read_header(fh)["deps"]):
                return None
            cols = restricted.load(fh)
        return indexcodec.decode(cols, texts)
    except FileNotFoundError:
        return None
    except Exception:  # a damaged or foreign entry is a miss, never an error: the dump is indexed again
        with contextlib.suppress(OSError):
            os.unlink(entry)
        return None


# every dump folder of this run: a cache folder inside any of them (XDG_CACHE_HOME set inside the target)
# is never written, whichever dump's entry it would hold
_PROTECTED: set[str] = set()


def protect(*paths: str) -> None:
    """The dump folders this run opens: nothing is written inside them (see store)."""
    _PROTECTED.update(os.path.abspath(p) for p in paths if p)


def protected(folder: str) -> bool:
    """Whether `folder` lies inside a dump folder this run opens."""
    return any(inside(folder, p) for p in _PROTECTED)


def store(entry: str, dump: Dump, path: str) -> Fault | None:
    """Write the entry; returns None when written, else why not (it never raises: a cache is optional)."""
    folder = os.path.dirname(entry)
    for dumped in (path, dump.root, *sorted(_PROTECTED)):
        if dumped and inside(folder, dumped):
            return Fault(Flaw.CACHE_INSIDE_DUMP, (folder,))
    try:
        deps = dependencies(path, dump.root, dump.format)
        own = [d for d in deps if any(inside(d[0], top) for top in (path, dump.root) if top)]
        newest = max((d[1] for d in own), default=0)  # folders above the dump change for other reasons
        if newest >= time.time_ns() - int(RACY_SECONDS * 1e9):
            return Fault(Flaw.DUMP_TOO_RECENT, (RACY_SECONDS,))
        header: dict[str, Any] = {"schema": SCHEMA, "path": os.path.abspath(path), "deps": deps}
        cols = indexcodec.encode(dump)
        os.makedirs(folder, mode=0o700, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")  # mode 0600: the user's own
        try:
            with os.fdopen(fd, "wb") as fh:
                text = json.dumps(header, separators=(",", ":")).encode()
                fh.write(MAGIC + struct.pack("<Q", len(text)) + text)
                pickle.dump(cols, fh, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, entry)
        except BaseException:
            os.unlink(tmp)
            raise
        _prune(folder)
        return None
    except Exception as e:  # unpicklable reader state, a full disk, a read-only home: index without caching
        return Fault(Flaw.NOT_CACHED, (e.__class__.__name__, str(e)))


def _prune(folder: str) -> None:
    try:
        entries = [os.path.join(folder, n) for n in os.listdir(folder) if n.endswith(".idx")]
        if len(entries) <= MAX_ENTRIES:
            return
        entries.sort(key=lambda p: os.stat(p).st_mtime_ns)
        for old in entries[: len(entries) - MAX_ENTRIES]:
            os.unlink(old)
    except OSError:
        pass


def cached_index(
    path: str,
    fmt: str | None,
    selection: tuple[str | None, ...],
    index: Callable[[], Dump],
    texts: dict[str, str] | None = None,
) -> CacheResult:
    """The dump at `path` from the cache when its entry is current, else `index()` (then cached). `texts`:
    names shared with another dump loaded from the cache (codec.decode)."""
    try:
        entry = entry_path(path, fmt, selection)
    except OSError:
        return CacheResult(index(), hit=False, why_not_stored=Fault(Flaw.DUMP_NOT_LOOKED_AT))
    report(Stage.CACHE, 0)  # the entry's columns read before its ops are counted
    dump = load(entry, texts)
    if dump is not None:
        with contextlib.suppress(OSError):
            os.utime(entry)  # recently used entries survive pruning
        return CacheResult(dump, hit=True)
    dump = index()
    why = store(entry, dump, path)
    return CacheResult(dump, hit=False, stored=why is None, why_not_stored=why)
