"""The registry of dump readers: `detect(path)` names the format, `open_dump(path, ...)` indexes it (the
package's face re-exports both; members import them from here, never through the face)."""

from __future__ import annotations

import os

from dumptui.core.formats.cann import CannRawReader
from dumptui.core.formats.filecheck import check_tensor_files
from dumptui.core.formats.mindspore import MindSporeNpyReader
from dumptui.core.formats.mindspore_bin import MindSporeBinReader
from dumptui.core.formats.msprobe import MsprobeReader
from dumptui.core.formats.npy_folder import NpyFolderReader
from dumptui.core.formats.reader import Reader, Selection
from dumptui.core.index import cache as indexcache
from dumptui.core.io import indexing_progress
from dumptui.core.io.errors import DumpError
from dumptui.core.io.fault import Fault, Flaw, worded
from dumptui.core.io.safeio import listed_regular
from dumptui.core.model.dump import Dump, FormatName, no_cyclic_gc

READERS: tuple[Reader, ...] = (
    MindSporeNpyReader(),
    MindSporeBinReader(),
    MsprobeReader(),
    CannRawReader(),
    NpyFolderReader(),
)
FORMATS = tuple(fmt for reader in READERS for fmt in reader.formats)
# detection asks the most specific readers first (see each reader's priority)
_BY_PRIORITY = sorted(READERS, key=lambda reader: -reader.priority)
_BY_FORMAT: dict[str, Reader] = {fmt: reader for reader in READERS for fmt in reader.formats}  # by text too: --format


def detect(path: str) -> FormatName:
    """The format of the dump at `path`, or DumpError saying why none fits."""
    if not os.path.exists(path):
        raise DumpError(path, "no such file or folder")
    if not os.path.isdir(path):
        raise DumpError(path, "not a folder (give the dump folder, not a file; `dumptui inspect FILE` reads one file)")
    claims = [reader for reader in _BY_PRIORITY if reader.looks_like(path)]
    if claims:
        if len(claims) > 1 and {claims[0].name, claims[1].name} == {CannRawReader.name, MindSporeNpyReader.name}:
            return _format_of_most_files(path)
        return claims[0].name
    raise DumpError(path, worded(Fault(Flaw.NO_DUMP_FOUND, tuple(reader.name for reader in READERS))))


def _format_of_most_files(path: str, most: int = 20_000) -> FormatName:
    """MindSpore .npy files and CANN raw files in one dump (a raw file copied into an npy dump, or the other
    way round): the format most of its tensor files have (the first `most` files seen), so that one stray
    file never decides how every other file is read. The reader lists the other format's files as not read,
    with the reason (two formats in one dump)."""
    from dumptui.core.formats.cann_file import RAW_NAME
    from dumptui.core.formats.mindspore import NPY_NAME

    npy = raw = seen = 0
    for _folder, _dirs, files in os.walk(path):
        for name in files:
            npy += bool(NPY_NAME.match(name))
            raw += bool(RAW_NAME.match(name))
            seen += 1
        if seen >= most:
            break
    return MindSporeNpyReader.name if npy >= raw else CannRawReader.name


def open_dump(
    path: str,
    rank: str | None = None,
    graph: str | None = None,
    iteration: str | None = None,
    fmt: str | None = None,
    cache: bool = False,
    texts: dict[str, str] | None = None,
) -> Dump:
    """The index of the dump at `path` (format detected unless `fmt` names one), as selected. `cache`: use
    the persistent index cache (core/index/cache.py) unless DUMPTUI_NO_INDEX_CACHE is set. `texts`: loaded
    from the cache, its names shared with another dump's (index/codec.py `decode`)."""
    selection = Selection(rank, graph, iteration)

    def index() -> Dump:
        indexing_progress.report(indexing_progress.Stage.FORMAT, 0)
        chosen = fmt or detect(path)
        reader = _BY_FORMAT.get(chosen)
        if reader is None:
            raise DumpError(path, f"unknown format {chosen!r}; known: {', '.join(FORMATS)}")
        dump = reader.open(path, selection)
        # FIFOs, devices, links: refused or reported before anything reads them. Cached with the index (the
        # codec keeps refusals): swapping a file for a FIFO changes its folder, so the entry is not reused,
        # and every read goes through safeio anyway.
        check_tensor_files(dump)
        dump.freeze()  # kept for the session (and cached): in compact form
        return dump

    with no_cyclic_gc():
        if cache and indexcache.enabled() and os.path.isdir(path):
            dump = indexcache.cached_index(path, fmt, (rank, graph, iteration), index, texts).dump
        else:
            dump = index()
    listed_regular(dump.plain_folders)  # what check_tensor_files found, for every read of this process
    return dump


__all__ = ["FORMATS", "READERS", "Reader", "Selection", "detect", "open_dump"]
