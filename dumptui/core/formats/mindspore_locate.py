"""Where the tensors of a MindSpore r1.3+ dump are, for the path the user gave and the rank/graph/iteration chosen.

The path may be the dump root (rank_N folders), a rank folder, a net folder, a graph folder, an iteration
folder, or a net/graph folder copied out of its rank folder. The answer names one rank and, per graph, the one
iteration folder to read, or a DumpError that lists the choices.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from dumptui.core.formats.files import (
    CONSTANTS_DIR,
    RANK_DIR,
    find_rank_dir,
    graph_folders,
    list_dir,
    numeric_key,
    rank_folders,
)
from dumptui.core.formats.reader import Selection, choose_one
from dumptui.core.io.errors import DumpError

STAT_FILE = "statistic.csv"
MAPPING_FILE = "mapping.csv"


@dataclass
class Located:
    """Where things are for one rank, and which iteration folder of each graph is read."""

    rank_dir: str | None
    rank: str | None
    data_dirs: dict[str, dict[str, str]] = field(default_factory=dict)  # graph -> iteration -> folder
    constants: dict[str, str] = field(default_factory=dict)  # graph -> constants folder
    fixed_graph: str | None = None  # the graph the path points into, if it does
    fixed_iteration: str | None = None  # the iteration the path points into, if it does
    chosen: dict[str, tuple[str, str]] = field(default_factory=dict)  # graph -> (iteration, folder) to read


def is_data_dir(path: str) -> bool:
    """A folder holding dump tensors (.npy files or a statistic.csv); stops at the first one it sees."""
    try:
        with os.scandir(path) as entries:
            return any(e.name == STAT_FILE or e.name.endswith(".npy") for e in entries)
    except OSError:
        return False


def _scan_rank(rank_dir: str) -> Located:
    m = RANK_DIR.match(os.path.basename(os.path.normpath(rank_dir)))
    loc = Located(rank_dir=rank_dir, rank=m.group(1) if m else None)
    for graph, iteration, folder in graph_folders(rank_dir):
        if iteration == CONSTANTS_DIR:
            loc.constants[graph] = folder
        elif is_data_dir(folder):
            loc.data_dirs.setdefault(graph, {})[iteration] = folder
    return loc


def _scan_without_rank(path: str) -> Located:
    """A net or graph folder with no recognisable rank folder above it: its data folders one or two levels down."""
    loc = Located(rank_dir=None, rank=None)
    for graph in list_dir(path):
        graph_dir = os.path.join(path, graph)
        if not os.path.isdir(graph_dir):
            continue
        if is_data_dir(graph_dir):
            loc.data_dirs.setdefault("", {})[graph] = graph_dir
            continue
        for iteration in list_dir(graph_dir):
            folder = os.path.join(graph_dir, iteration)
            if os.path.isdir(folder) and iteration != CONSTANTS_DIR and is_data_dir(folder):
                loc.data_dirs.setdefault(graph, {})[iteration] = folder
    if not loc.data_dirs:
        raise DumpError(path, "no MindSpore dump files (.npy or statistic.csv) found here")
    return loc


def _resolve(path: str, selection: Selection) -> Located:
    if not os.path.isdir(path):
        raise DumpError(path, "not a folder" if os.path.exists(path) else "no such folder")
    ranks = rank_folders(path)
    if ranks:
        ranks = dict(sorted(ranks.items(), key=lambda item: int(item[0])))
        _rank, chosen_rank_dir = choose_one(path, ranks, selection.rank, "rank", "--rank N")
        return _scan_rank(chosen_rank_dir)
    rank_dir, graph, iteration = find_rank_dir(path)
    if rank_dir is not None:
        loc = _scan_rank(rank_dir)
        loc.fixed_graph, loc.fixed_iteration = graph, iteration
        if graph is None and is_data_dir(path):
            loc.data_dirs = {"0": {"0": path}}
        return loc
    if is_data_dir(path):
        return Located(rank_dir=None, rank=None, data_dirs={"": {"": path}})
    return _scan_without_rank(path)


def _candidates(loc: Located, selection: Selection, path: str) -> dict[str, dict[str, str]]:
    """graph -> iteration -> folder that the path and the selection leave to choose from (not empty)."""
    data = loc.data_dirs
    if loc.fixed_graph is not None:
        data = {g: its for g, its in data.items() if g == loc.fixed_graph}
        if loc.fixed_iteration is not None:
            data = {g: {i: d for i, d in its.items() if i == loc.fixed_iteration} for g, its in data.items()}
    if selection.graph is not None:
        if selection.graph not in data:
            graphs = ", ".join(sorted(data, key=numeric_key)) or "none"
            raise DumpError(path, f"no data for graph {selection.graph}; graphs with data: {graphs}")
        data = {selection.graph: data[selection.graph]}
    if not data or not any(data.values()):
        raise DumpError(path, "no tensor files found (dump folders are empty)")
    return data


def _iterations_listing(data: dict[str, dict[str, str]]) -> str:
    return "; ".join(f"graph {g}: {', '.join(sorted(its, key=numeric_key))}" for g, its in sorted(data.items()))


def _choose_iterations(data: dict[str, dict[str, str]], selection: Selection, path: str) -> dict[str, tuple[str, str]]:
    """graph -> (iteration, folder): the selected iteration, or each graph's only one; else DumpError listing them."""
    wanted = selection.iteration
    if wanted is not None:
        chosen = {g: (wanted, its[wanted]) for g, its in data.items() if wanted in its}
        if not chosen:
            raise DumpError(path, f"no iteration {wanted}; iterations here: {_iterations_listing(data)}")
        return chosen
    several = {g: its for g, its in data.items() if len(its) > 1}
    if several:
        raise DumpError(
            path,
            f"several iterations ({_iterations_listing(several)}): choose one with --step N"
            + (" (and --graph G)" if len(data) > 1 else ""),
        )
    return {g: next(iter(its.items())) for g, its in data.items() if its}


def locate(path: str, selection: Selection) -> Located:
    """The rank, data folders and chosen iteration folders of the dump at `path`; DumpError when ambiguous."""
    loc = _resolve(path, selection)
    loc.chosen = _choose_iterations(_candidates(loc, selection, path), selection, path)
    return loc
