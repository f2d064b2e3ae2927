"""Where the raw dump files of a CANN / ACL dump (or a MindSpore async dump on Ascend) are, for the path given.

    ACL:       {dump_path}/{time}/{device_id}/{model_name}/{model_id}/{step}/<raw files>
    MindSpore: {path}/rank_{R}/{net}/{graph_id}/{iteration}/<raw files>      (graphs/, execution_order/ beside)

The path may be any folder of either tree, or a folder of raw files copied out of one. Every folder below it
that holds raw files is a step folder; the levels above it say which device, model and step it is. Exactly
one must remain after --rank/--graph/--iteration, else a DumpError lists them.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from itertools import islice

from dumptui.core.formats.cann_file import RAW_NAME
from dumptui.core.formats.files import RANK_DIR, is_dir
from dumptui.core.formats.reader import Selection
from dumptui.core.io.errors import DumpError

_TIME_DIR = re.compile(r"^\d{14}$")  # YYYYMMDDhhmmss
_DIGITS = re.compile(r"^\d+$")
_MAX_DEPTH = 7
_PEEK = 200


@dataclass(frozen=True)
class StepFolder:
    """One folder of raw files and what the tree above it says."""

    path: str
    tree: str  # "acl", "mindspore" or "folder" (no known tree above)
    device: str | None = None  # device id (ACL) or rank (MindSpore)
    model: str | None = None  # model name (ACL) or net name (MindSpore)
    graph: str | None = None  # model id (ACL) or graph id (MindSpore)
    step: str | None = None  # step (ACL) or iteration (MindSpore)
    root: str | None = None  # the rank folder (MindSpore: graphs/ and execution_order/), the time folder (ACL)

    def label(self, base: str) -> str:
        return os.path.relpath(self.path, base)


def holds_raw_files(path: str, peek: int = _PEEK) -> bool:
    """Whether a folder holds files named like raw dumps, or named by a bare number as CANN names a file whose
    name is too long (mapping.csv spells it out); a peek at the first names only."""
    try:
        with os.scandir(path) as it:
            return any((RAW_NAME.match(e.name) or e.name.isdigit()) and e.is_file() for e in islice(it, peek))
    except OSError:
        return False


def _describe(path: str) -> StepFolder:
    parts = os.path.normpath(path).split(os.sep)
    if len(parts) >= 6 and _TIME_DIR.match(parts[-5]) and _DIGITS.match(parts[-4]) and _DIGITS.match(parts[-2]):
        return StepFolder(
            path,
            "acl",
            device=parts[-4],
            model=parts[-3],
            graph=parts[-2],
            step=parts[-1],
            root=os.sep.join(parts[:-4]),
        )
    if len(parts) >= 5 and RANK_DIR.match(parts[-4]) and _DIGITS.match(parts[-2]):
        rank = RANK_DIR.match(parts[-4])
        return StepFolder(
            path,
            "mindspore",
            device=rank.group(1) if rank else None,
            model=parts[-3],
            graph=parts[-2],
            step=parts[-1],
            root=os.sep.join(parts[:-3]),
        )
    return StepFolder(path, "folder")


def find_step_folders(path: str, depth: int = _MAX_DEPTH) -> list[StepFolder]:
    """Every folder at or below `path` (to `depth` levels) that holds raw dump files, in name order."""
    found: list[StepFolder] = []
    stack = [(os.path.normpath(os.path.abspath(path)), 0)]
    seen: set[tuple[int, int]] = set()  # folders visited, by identity: links that loop are walked once
    while stack:
        folder, level = stack.pop()
        try:
            st = os.stat(folder)
        except OSError:
            continue
        if (st.st_dev, st.st_ino) in seen:
            continue
        seen.add((st.st_dev, st.st_ino))
        if holds_raw_files(folder):
            found.append(_describe(folder))
        if level >= depth:
            continue
        try:
            with os.scandir(folder) as it:
                subdirs = sorted(e.path for e in it if is_dir(e))
        except OSError:
            continue
        stack.extend((d, level + 1) for d in reversed(subdirs))
    return sorted(found, key=lambda s: s.path)


def looks_like(path: str) -> bool:
    """Cheap test used by format detection: raw dump files at or a few levels below `path`."""
    stack, seen = [(path, 0)], 0
    while stack and seen < 64:
        folder, level = stack.pop()
        seen += 1
        if holds_raw_files(folder, 50):
            return True
        if level < _MAX_DEPTH:
            try:
                with os.scandir(folder) as it:
                    stack.extend((e.path, level + 1) for e in islice(it, 16) if is_dir(e))
            except OSError:
                continue
    return False


def _matches(step: StepFolder, selection: Selection) -> bool:
    if selection.rank is not None and step.device is not None and step.device != selection.rank:
        return False
    if selection.graph is not None and selection.graph not in (step.model, step.graph):
        return False
    return not (selection.iteration is not None and step.step is not None and step.step != selection.iteration)


def locate(path: str, selection: Selection) -> StepFolder:
    """The one step folder to read; DumpError listing the choices when there are several (or none)."""
    if not os.path.isdir(path):
        raise DumpError(path, "not a folder" if os.path.exists(path) else "no such folder")
    steps = find_step_folders(path)
    if not steps:
        raise DumpError(path, "no raw dump files ({op_type}.{op_name}.{task}.{stream}.{timestamp}) found")
    chosen = [s for s in steps if _matches(s, selection)]
    if not chosen:
        raise DumpError(
            path,
            f"none of the {len(steps)} dump folders matches the selection; folders: "
            + ", ".join(s.label(path) for s in steps[:8]),
        )
    if len(chosen) > 1:
        shown = ", ".join(s.label(path) for s in chosen[:8]) + (" ..." if len(chosen) > 8 else "")
        raise DumpError(
            path,
            f"{len(chosen)} dump folders ({shown}): choose with --rank (device), --graph (model "
            "name or id) and --step (iteration), or give the folder of one",
        )
    return chosen[0]
