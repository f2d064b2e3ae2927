"""Every rank and step of a dump: `--rank all` / `--step all`.

A training dump is several ranks (MindSpore's `rank_N/`, msprobe's `step{S}/rank{R}/`) and several steps
(MindSpore's iteration folders, msprobe's `step{S}/`). Each (rank, step) is one `Unit`, opened like a dump of
its own with `--rank R --step S`. Here: listing them without indexing anything (folder names only), and
pairing the two dumps' units.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from dumptui.core.formats.files import list_dir, numeric_key
from dumptui.core.formats.survey import survey
from dumptui.core.io.errors import DumpError

ALL = "all"
_MSPROBE_STEP = re.compile(r"^step(\d+)$")
_MSPROBE_RANK = re.compile(r"^(?:rank|proc)(\d*)$")


@dataclass(frozen=True)
class Unit:
    """One rank at one step (None: the dump has no such level, or it was not asked to vary)."""

    rank: str | None
    step: str | None

    @property
    def label(self) -> str:
        parts = [f"rank {self.rank}" if self.rank is not None else "", f"step {self.step}" if self.step else ""]
        return ", ".join(p for p in parts if p) or "the dump"

    def sort_key(self) -> tuple[tuple[int, int, str], tuple[int, int, str]]:
        return numeric_key(self.step or ""), numeric_key(self.rank or "")


def _msprobe_layout(path: str) -> dict[str, dict[str, int]]:
    """{rank: {step: 1}} of an msprobe dump root (step{S}/rank{R}/dump.json), or of one step's folder
    (rank{R}/dump.json: the form msprobe's own compare takes; its steps are ""); {} when it is neither."""
    out: dict[str, dict[str, int]] = {}
    for step in list_dir(path):
        m = _MSPROBE_STEP.match(step)
        if not m:
            continue
        for rank in list_dir(os.path.join(path, step)):
            r = _MSPROBE_RANK.match(rank)
            if r and os.path.isfile(os.path.join(path, step, rank, "dump.json")):
                out.setdefault(r.group(1) or "0", {})[m.group(1)] = 1
    if not out:
        for rank in list_dir(path):
            r = _MSPROBE_RANK.match(rank)
            if r and os.path.isfile(os.path.join(path, rank, "dump.json")):
                out.setdefault(r.group(1) or "0", {})[""] = 1
    return out


def layout(path: str) -> dict[str, list[str]]:
    """{rank: [steps]} of the dump at `path`, from folder names ({} when it has no rank or step levels)."""
    found: dict[str, list[str]] = {}
    for rank, graphs in survey(path).items():
        steps = sorted({it for its in graphs.values() for it in its}, key=numeric_key)
        found[rank] = steps
    if not found:
        found = {rank: sorted(steps, key=numeric_key) for rank, steps in _msprobe_layout(path).items()}
    return dict(sorted(found.items(), key=lambda item: numeric_key(item[0])))


def units(path: str, rank: str | None, step: str | None) -> list[Unit]:
    """The units `--rank` / `--step` ask for: `all` for every one found, a value for that one, None for the
    only one (the reader asks to choose when there are several)."""
    found = layout(path)
    if rank == ALL and not found:
        raise DumpError(path, "--rank all: no rank folders found (rank_N/, step*/rank*/ or rank*/)")
    # one level `all` and the other not given: every one of the other too, when there are several (the only
    # other answer would be "choose one" for each unit)
    if rank == ALL and step is None and any(len(steps) > 1 for steps in found.values()):
        step = ALL
    if step == ALL and rank is None and len(found) > 1:
        rank = ALL
    ranks = list(found) if rank == ALL else [rank]
    out = []
    for r in ranks:
        if step == ALL:
            steps = found.get(r if r is not None else next(iter(found), ""), [])
            if not steps:
                raise DumpError(path, f"--step all: no steps (iteration folders) found for rank {r or '-'}")
            out += [Unit(r, s or None) for s in steps]
        else:
            out.append(Unit(r, step))
    return out


def pair_units(ref: list[Unit], target: list[Unit]) -> tuple[list[Unit], list[Unit], list[Unit]]:
    """(units in both, only in the reference, only in the target), each in step then rank order."""
    common = set(ref) & set(target)

    def ordered(us: set[Unit]) -> list[Unit]:
        return sorted(us, key=Unit.sort_key)

    return ordered(common), ordered(set(ref) - common), ordered(set(target) - common)
