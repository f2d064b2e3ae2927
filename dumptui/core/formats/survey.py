"""What a MindSpore dump folder holds before anything is chosen: ranks, graphs, iterations, file counts."""

from __future__ import annotations

import os

from dumptui.core.formats.files import CONSTANTS_DIR, RANK_DIR, find_rank_dir, graph_folders, list_dir, rank_folders


def survey(path: str) -> dict[str, dict[str, dict[str, int]]]:
    """{rank: {graph: {iteration: number of files}}} ('-' where the level is absent)."""
    rank_dirs = rank_folders(path)
    if not rank_dirs:
        rank_dir = find_rank_dir(path)[0]
        if rank_dir is None:
            return {}
        m = RANK_DIR.match(os.path.basename(rank_dir))
        rank_dirs = {m.group(1) if m else "-": rank_dir}
    out: dict[str, dict[str, dict[str, int]]] = {}
    for rank, rank_dir in rank_dirs.items():
        graphs: dict[str, dict[str, int]] = {}
        for graph, iteration, folder in graph_folders(rank_dir):
            if iteration != CONSTANTS_DIR:
                graphs.setdefault(graph, {})[iteration] = len(list_dir(folder))
        out[rank] = graphs
    return out
