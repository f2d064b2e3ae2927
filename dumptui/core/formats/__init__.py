"""One reader per dump format; `detect(path)` names the format, `open_dump(path, ...)` indexes it."""
from __future__ import annotations

import os

from ..model import Dump, DumpError, no_cyclic_gc

FORMATS = ("mindspore-npy", "mindspore-statistic", "mindspore-bin", "msprobe", "msprobe-statistics", "npy-folder")


def detect(path: str) -> str:
    """The format of the dump at `path`, or DumpError saying why none fits."""
    if not os.path.exists(path):
        raise DumpError(path, "no such file or folder")
    if not os.path.isdir(path):
        raise DumpError(path, "not a folder (give the dump folder, not a file; `dumptui inspect FILE` reads one file)")
    from . import mindspore, mindspore_bin, msprobe, npy_folder
    if msprobe.looks_like(path):
        return "msprobe"
    if mindspore_bin.looks_like(path):
        return "mindspore-bin"
    if mindspore.looks_like(path):
        return "mindspore-npy"
    if npy_folder.looks_like(path):
        return "npy-folder"
    raise DumpError(path, "no dump found: expected a MindSpore dump (rank_N/, .npy or statistic.csv files), "
                          "a MindSpore 1.x .bin dump, an msprobe dump (dump.json), or a folder of .npy files")


def open_dump(path: str, rank: str | None = None, graph: str | None = None, iteration: str | None = None,
              fmt: str | None = None) -> Dump:
    with no_cyclic_gc():
        return _open(path, rank, graph, iteration, fmt)


def _open(path, rank, graph, iteration, fmt) -> Dump:
    fmt = fmt or detect(path)
    if fmt in ("mindspore-npy", "mindspore-statistic"):
        from .mindspore import open_mindspore
        return open_mindspore(path, rank=rank, graph=graph, iteration=iteration)
    if fmt == "mindspore-bin":
        from .mindspore_bin import open_mindspore_bin
        return open_mindspore_bin(path, rank=rank, graph=graph, iteration=iteration)
    if fmt in ("msprobe", "msprobe-statistics"):
        from .msprobe import open_msprobe
        return open_msprobe(path, rank=rank, graph=graph, iteration=iteration)
    if fmt == "npy-folder":
        from .npy_folder import open_npy_folder
        return open_npy_folder(path)
    raise DumpError(path, f"unknown format {fmt!r}; known: {', '.join(FORMATS)}")
