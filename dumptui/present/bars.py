"""Pictures made of characters: the bisection interval over the execution order (one character per
column, a distinct character per kind so it reads without colour) and the error histogram."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from dumptui.present.driver import BisectState

BAR_CHAR = {
    "unknown": "·",  # bisection not started
    "clear": "=",  # not suspect: before the bad op, or cleared by a good probe
    "suspect": "▒",  # still a candidate
    "after": "x",  # after the first known bad op
    "good": "G",  # probed and marked good
    "bad": "B",  # probed and marked bad
    "probe": "P",  # the op to probe now
    "root": "^",  # another root of divergence (a parallel branch)
    "culprit": "!",
}
_BAR_PRIORITY = {
    k: i for i, k in enumerate(("unknown", "clear", "after", "suspect", "good", "bad", "probe", "root", "culprit"))
}
BAR_LEGEND = "= clear  ▒ suspect  x after bad  G/B marked  P probe  ! culprit  ^ other root"


@dataclass(frozen=True)
class BarCell:
    kind: str
    char: str


def position_kind(p: int, state: BisectState) -> str:
    if not state.started:
        return "unknown"
    if state.culprit is not None and p == state.culprit.position:
        return "culprit"
    if any(o.position == p for o in state.others):
        return "root"
    if p == state.probe:
        return "probe"
    if p in state.bad:
        return "bad"
    if p in state.good:
        return "good"
    if p in state.candidates and not state.finished:
        return "suspect"
    if state.hi is not None and p > state.hi:
        return "after"
    return "clear"


def interval_bar(state: BisectState, width: int) -> list[BarCell]:
    """One cell per column over the execution order of the probe-able ops. A column covering several
    positions shows the most telling of them (culprit > probe > marks > suspects > after > clear), so a
    narrow interval stays visible on a 20,000-op bar 60 columns wide."""
    n = state.n
    if n <= 0 or width <= 0:
        return []
    cells = []
    for c in range(width):
        lo = c * n // width
        hi = max(lo + 1, (c + 1) * n // width)
        best = "unknown"
        for p in range(lo, min(hi, n)):
            k = position_kind(p, state)
            if _BAR_PRIORITY[k] > _BAR_PRIORITY[best]:
                best = k
        cells.append(BarCell(best, BAR_CHAR[best]))
    return cells


def histogram_bar(counts: Sequence[int], width: int) -> tuple[str, int]:
    """The error histogram as block characters (log-scaled heights), merging adjacent power-of-two bins
    until it fits `width`. Returns (bar, bins per character)."""
    if not counts or width <= 0:
        return "", 1
    merge = 1
    while math.ceil(len(counts) / merge) > width:
        merge *= 2
    merged = [sum(counts[i : i + merge]) for i in range(0, len(counts), merge)]
    top = max(merged)
    blocks = " ▁▂▃▄▅▆▇█"
    out = []
    for v in merged:
        if v <= 0:
            out.append(" ")
        else:
            level = 1 + int(round(7 * math.log1p(v) / math.log1p(top))) if top > 0 else 1
            out.append(blocks[min(level, 8)])
    return "".join(out), merge
