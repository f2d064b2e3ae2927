"""What a MindSpore dump folder holds before anything is chosen: ranks, graphs, iterations, file counts."""
from __future__ import annotations

import os

from .formats.mindspore import RANK_DIR, SPECIAL_DIRS, _find_rank_dir, _ls


def survey(path: str) -> dict[str, dict[str, dict[str, int]]]:
    """{rank: {graph: {iteration: number of files}}} ('-' where the level is absent)."""
    ranks = [n for n in _ls(path) if RANK_DIR.match(n) and os.path.isdir(os.path.join(path, n))]
    if ranks:
        rank_dirs = {r[5:]: os.path.join(path, r) for r in ranks}
    else:
        rd, _g, _i = _find_rank_dir(path)
        if rd is None:
            return {}
        m = RANK_DIR.match(os.path.basename(rd))
        rank_dirs = {m.group(1) if m else "-": rd}
    out: dict[str, dict[str, dict[str, int]]] = {}
    for rank, rd in rank_dirs.items():
        graphs: dict[str, dict[str, int]] = {}
        for net in _ls(rd):
            nd = os.path.join(rd, net)
            if net in SPECIAL_DIRS or not os.path.isdir(nd):
                continue
            for g in _ls(nd):
                gd = os.path.join(nd, g)
                if not os.path.isdir(gd):
                    continue
                for it in _ls(gd):
                    idir = os.path.join(gd, it)
                    if os.path.isdir(idir) and it != "constants":
                        graphs.setdefault(g, {})[it] = len(_ls(idir))
        out[rank] = graphs
    return out
