"""The error along the execution order: for each paired op, its output error and its local gain, each on a
log scale, one character per column, above the bisection bar (bars.py) that marks the interval and the roots.

Where the numbers come from: after a local-error scan (a noisy pair) every op has them; on a clean pair the
bisection reads few tensors, so only the probed ops (outputs: an error, no gain), the ops whose inputs the
culprit check read (both) and those the app's statistics have compared by then (both) have numbers, and the
plot says how many. Characters are distinct without colour:
`·` not read, a blank column exactly equal (error row) or no growth (gain at most 1), `▁`..`█` the log-scaled
level, `∞` NaN/Inf or an infinite gain (error from nothing). The gain's scale starts at 1 (no growth) and
spans at least three decades, so the rule's x10 sits low and a root's x1000 at the top.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from dumptui.core.compare.ledger import Purpose
from dumptui.core.compare.noise import fmt_rel
from dumptui.core.model.dump import OUTPUT
from dumptui.core.search.measure import result_error
from dumptui.core.search.scan import analyse

if TYPE_CHECKING:
    from dumptui.core.graph.align import OpPair
    from dumptui.core.search.bisect import Bisection
    from dumptui.core.search.localerror import LocalError

LEVELS = "▁▂▃▄▅▆▇█"
NOT_READ = "·"
ZERO = " "
INFINITE = "∞"
PLOT_LEGEND = f"{LEVELS[0]}..{LEVELS[-1]} log scale  {NOT_READ} not read  {INFINITE} NaN/Inf or from nothing"


@dataclass(frozen=True, slots=True)  # one per op of the bisection order: no __dict__ each
class PlotPoint:
    """What is known of one op in the bisection order."""

    out_rel: float | None  # output error (of its RMS; inf: NaN/Inf differ); None: outputs not compared
    gain: float | None  # local gain (relative scale); None: inputs not read
    kind: str  # root | carries | clean | unknown (localerror.py), or "probed" / "compared" (outputs only)


def point_of(le: LocalError) -> PlotPoint:
    # inputs a flip resized were never compared: no gain (not an infinite one, "error from nothing")
    return PlotPoint(le.out_rel, None if le.resized else le.gain_rel, le.kind)


def known_points(bi: Bisection) -> dict[int, PlotPoint]:
    """Every position of `bi.order` with numbers: all of them after a scan, else the probed ones (their
    outputs, from the cache: nothing is read here) and those the culprit check judged."""
    if bi.scan_result is not None:
        return {pos: point_of(le) for pos, le in enumerate(bi.scan_result.locals)}
    out: dict[int, PlotPoint] = {}
    for step in bi.history:
        err = _output_error(bi, bi.order[step.position])
        if err is not None:
            out[step.position] = PlotPoint(err, None, "probed")
    for pos, le in bi.culprit_check.locals.items():
        out[pos] = point_of(le)
    return out


def compared_points(bi: Bisection) -> dict[int, PlotPoint]:
    """Every op of a clean pair's order whose tensors are all compared already (the app's statistics: once
    they are done, no op is left "not read"): its output error and local gain, as a scan would judge them
    but without replay; from the cache, one pass over the order."""
    session = bi.session
    out: dict[int, PlotPoint] = {}
    for pos, pair in enumerate(bi.order):
        if all(session.cached(r, t) is not None for _io, _slot, r, t in session.tensor_pairs(pair)):
            le = analyse(session, session.op_result(pair, purpose=Purpose.VIEW), with_replay=False)
            out[pos] = PlotPoint(le.out_rel, le.gain_rel, "compared")
    return out


def _output_error(bi: Bisection, pair: OpPair) -> float | None:
    """The op's largest output error from the cache (inf: NaN/Inf differ), None when none is compared."""
    session = bi.session
    errors = []
    for _io, _slot, r, t in session.tensor_pairs(pair, OUTPUT):
        cached = session.cached(r, t)
        err = result_error(cached) if cached is not None else None
        if err is not None:
            errors.append(math.inf if err.nonfinite else err.rel)
    return max(errors) if errors else None


@dataclass(frozen=True)
class PlotRows:
    error: str  # one character per column
    gain: str
    error_range: str  # "1.2e-07..8.0e+02" ("" when nothing is known)
    gain_range: str
    known: int  # ops with an output error
    n: int

    @property
    def caption(self) -> str:
        parts = []
        if self.error_range:
            parts.append(f"error {self.error_range}")
        if self.gain_range:
            parts.append(f"gain {self.gain_range}")
        if self.known < self.n:
            unread = self.n - self.known
            parts.append(f"{unread} of {self.n} ops not read ({NOT_READ})")
        return "; ".join(parts)


def _columns(n: int, width: int) -> list[range]:
    return [range(c * n // width, max(c * n // width + 1, (c + 1) * n // width)) for c in range(width)]


def _levels(values: list[float | None], lo: float | None = None, decades: float = 3.0) -> tuple[str, str]:
    """One character per value on a log scale (values at or below `lo` draw blank: exactly equal, or no
    growth). The scale spans at least `decades` decades from its low end, so values that all agree within a
    factor of a few draw low, not as a wall of full blocks. Returns (characters, range of the values)."""
    finite = [v for v in values if v is not None and (lo or 0.0) < v < math.inf]
    bottom = lo if lo is not None else (min(finite) if finite else 1.0)
    top = max([bottom * 10**decades] + finite)
    span = math.log(top) - math.log(bottom)
    out = []
    for v in values:
        if v is None:
            out.append(NOT_READ)
        elif math.isinf(v) or math.isnan(v):
            out.append(INFINITE)
        elif v <= (lo or 0.0):
            out.append(ZERO)
        else:
            k = int((math.log(max(v, bottom)) - math.log(bottom)) / span * (len(LEVELS) - 1) + 0.5)
            out.append(LEVELS[min(len(LEVELS) - 1, max(0, k))])
    words = ""
    if finite:
        a, b = min(finite), max(finite)
        words = fmt_rel(a) if a == b else f"{fmt_rel(a)}..{fmt_rel(b)}"
    return "".join(out), words


def _worst(values: list[float]) -> float:
    """The column's value: an infinite one wins, else the largest (NaN counts as infinite)."""
    return max(math.inf if math.isnan(v) else v for v in values)


def error_plot(points: Mapping[int, PlotPoint], n: int, width: int) -> PlotRows:
    """The two rows for `width` columns over `n` positions; a column covering several ops shows the largest
    value among those with numbers (a narrow spike stays visible on a 20,000-op order)."""
    if n <= 0 or width <= 0:
        return PlotRows("", "", "", "", 0, max(n, 0))
    errors: list[float | None] = []
    gains: list[float | None] = []
    for cols in _columns(n, width):
        errs = [p.out_rel for q in cols if (p := points.get(q)) is not None and p.out_rel is not None]
        gs = [p.gain for q in cols if (p := points.get(q)) is not None and p.gain is not None]
        errors.append(_worst(errs) if errs else None)
        gains.append(_worst(gs) if gs else None)
    err_row, err_range = _levels(errors)
    gain_row, gain_range = _levels(gains, lo=1.0)
    known = sum(1 for p in points.values() if p.out_rel is not None)
    return PlotRows(err_row, gain_row, err_range, gain_range, known, n)


def column_of(position: int, n: int, width: int) -> int:
    """The last column whose cut starts at or before `position` (the cut of `error_plot` and
    bars.interval_bar: column c covers positions c*n//width up to (c+1)*n//width)."""
    if n <= 0 or width <= 0:
        return 0
    return min(width - 1, ((position + 1) * width - 1) // n)
