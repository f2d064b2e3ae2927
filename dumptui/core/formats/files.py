"""Finding things in dump folders, for every reader and for whoever looks at a dump before reading it (the
survey, the op-tree preview, the redump config): listing folders, MindSpore's rank/net/graph/iteration levels,
and the small side files (JSON objects, the execution-order and mapping csv).

Nothing here raises for a missing or unreadable file or folder: a dump is evidence, often incomplete, and
each reader says in its own words what it missed.
"""

from __future__ import annotations

import csv
import os
import re
from collections.abc import Iterator
from typing import Any

from dumptui.core.io.safeio import read_json, read_text, text_lines

RANK_DIR = re.compile(r"^rank_(\d+)$")
# Folders beside the nets in a MindSpore rank folder (r1.3 and later).
SPECIAL_DIRS = {"graphs", "execution_order", ".dump_metadata"}
CONSTANTS_DIR = "constants"


def list_dir(path: str) -> list[str]:
    """The names in a folder, sorted; [] when it is missing or unreadable."""
    try:
        return sorted(os.listdir(path))
    except OSError:
        return []


def is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False


def numeric_key(name: str) -> tuple[int, int, str]:
    """Sort key for ids: numbers by value, then the other names in text order."""
    return (0, int(name), "") if name.isdigit() else (1, 0, name)


def numbered_subdirs(path: str, pattern: re.Pattern[str]) -> dict[str, str]:
    """{N: folder} for the subfolders of `path` whose name `pattern` matches, N its first group; listing order."""
    found = {}
    for name in list_dir(path):
        m = pattern.match(name)
        if m and os.path.isdir(os.path.join(path, name)):
            found[m.group(1)] = os.path.join(path, name)
    return found


def is_rank_dir(path: str) -> bool:
    """A MindSpore rank folder: named rank_N, or holding the folders that stand beside the nets."""
    return bool(RANK_DIR.match(os.path.basename(path))) or bool(set(list_dir(path)) & SPECIAL_DIRS)


def find_rank_dir(path: str) -> tuple[str | None, str | None, str | None]:
    """For a path at or below a MindSpore rank folder: (rank folder, graph, iteration), the graph and iteration
    being those the path fixes by pointing inside them; (None, None, None) when no rank folder is found."""
    below: list[str] = []  # the folders walked up through, innermost first: [iteration, graph, net]
    cur = os.path.normpath(os.path.abspath(path))
    for _ in range(4):
        if is_rank_dir(cur):
            if len(below) >= 3:
                return cur, below[1], below[0]
            return cur, below[0] if len(below) == 2 else None, None
        below.append(os.path.basename(cur))
        parent = os.path.dirname(cur)
        if parent == cur:
            break
        cur = parent
    return None, None, None


def rank_folders(path: str) -> dict[str, str]:
    """{rank id: folder} of a MindSpore dump root's rank_N folders, in listing order."""
    return numbered_subdirs(path, RANK_DIR)


def graph_folders(rank_dir: str) -> Iterator[tuple[str, str, str]]:
    """(graph id, iteration or "constants", folder) for each folder {rank}/{net}/{graph}/{iteration}."""
    for net in list_dir(rank_dir):
        net_dir = os.path.join(rank_dir, net)
        if net in SPECIAL_DIRS or not os.path.isdir(net_dir):
            continue
        for graph in list_dir(net_dir):
            graph_dir = os.path.join(net_dir, graph)
            if not os.path.isdir(graph_dir):
                continue
            for iteration in list_dir(graph_dir):
                folder = os.path.join(graph_dir, iteration)
                if os.path.isdir(folder):
                    yield graph, iteration, folder


def read_json_object(path: str) -> dict[str, Any]:
    """A JSON object from a small file, or {} when it is missing, unreadable, too deep or not an object."""
    try:
        d = read_json(path)
    except (OSError, ValueError):
        return {}
    return d if isinstance(d, dict) else {}


def execution_order_csv(folder: str, graph: str) -> str:
    """Where the execution-order csv of `graph` is, below a rank (or 1.x device) folder."""
    return os.path.join(folder, "execution_order", f"ms_execution_order_graph_{graph}.csv")


def read_execution_order(path: str) -> list[str]:
    """The kernels' full names from an execution-order csv, in execution order; [] when unreadable."""
    out: list[str] = []
    try:
        text = read_text(path)
    except OSError:
        return out
    for i, line in enumerate(text.splitlines()):
        s = line.strip().strip(",")
        if not s or (i == 0 and ("FullName" in s or "NodeExecutionOrder" in s)):
            continue
        out.append(s.split(",")[-1].strip() if "," in s and "/" in s.split(",")[-1] else s)
    return out


def read_mapping_csv(path: str) -> dict[str, str]:
    """{number: original file name} from the mapping.csv MindSpore writes when names are too long for a file."""
    out = {}
    try:
        for row in csv.reader(text_lines(path)):
            if len(row) >= 2 and row[0].strip().isdigit():
                out[row[0].strip()] = row[1].strip()
    except (OSError, csv.Error):  # csv.Error: a field beyond the csv module's size limit, a NUL byte
        pass
    return out
