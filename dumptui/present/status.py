"""The main screen's status line, decided from plain facts: the pair, how far opening got, the full
compare's progress, the diverged count, and the failure that is the state (path and reason) when there is one.
The widget (tui/widgets/statusline.py) only styles the roles of these spans."""

from __future__ import annotations

from dataclasses import dataclass

from dumptui.present.columns import elide_left
from dumptui.present.panel import Line, Span
from dumptui.present.progress import FAILED, WAITING, StatisticsState, statistics_words
from dumptui.report.fmt import clean

SEPARATOR: Span = (" │ ", "")
PAIR_ROOM = 46  # what the status keeps for its other parts when it elides the two dump paths


@dataclass(frozen=True)
class StatusFacts:
    ref: str = ""  # the dump paths as shown (shared folders dropped, control characters escaped)
    target: str = ""
    opened: bool = False  # both dumps indexed and aligned
    stage: str = ""  # what opening (or preparing the bisection) is doing now
    opening_seconds: float = 0.0  # since opening started (shown while it lasts)
    preparing_bisection: bool = False  # open, but the bisection order is not built yet and no command runs
    stats_state: StatisticsState = WAITING
    stats_done: int = 0
    stats_total: int = 0
    stats_failure: str = ""  # the path and reason that stopped the statistics
    diverged: int = 0  # ops known diverged so far
    failure_work: str = ""  # the work whose failure is the state ("" when none)
    failure: str = ""  # its line: what failed, the path and the reason
    unit: str = ""  # the rank and step opened from the picker ("rank 1, step 0"), "" for a pair of one


def status_line(f: StatusFacts, width: int) -> Line:
    """One line of at most `width` cells (the paths and the failure elided from the left: the reason stays)."""
    width = max(20, width)
    spans: list[Span] = [("dumptui ", "bold")]
    if f.failure_work:  # the error state: what failed, its path and reason, in place of the dumps
        if f.failure_work == "stats" and f.stats_failure:
            spans.append(("statistics failed: ", "error"))
            spans.append((elide_left(clean(f.stats_failure), max(10, width - _length(spans))), "error"))
            return tuple(spans)
        if f.opened:
            spans.append((statistics_words(f.stats_state, f.stats_done, f.stats_total) + " │ ", ""))
        spans.append((elide_left(clean(f.failure), max(10, width - _length(spans))), "error"))
        return tuple(spans)
    unit: list[Span] = [SEPARATOR, (clean(f.unit), "bold")] if f.unit else []
    room = max(8, (width - PAIR_ROOM - _length(unit)) // 2)
    # paths come from the command line or a session file: escaped, never written raw (an OSC sequence in a
    # hand-edited session's path set the terminal's title)
    ref, target = clean(f.ref), clean(f.target)
    spans += [("ref ", ""), (elide_left(ref, room), "bold"), (" vs ", ""), (elide_left(target, room), "bold")]
    spans += unit
    parts: list[Span] = []
    if not f.opened:
        parts.append((f"{f.stage}… {f.opening_seconds:.1f} s", ""))
    else:
        words = statistics_words(f.stats_state, f.stats_done, f.stats_total, f.stats_failure)
        if words:
            parts.append((words, "error" if f.stats_state == FAILED else ""))
        if f.diverged:
            parts.append((f"{f.diverged} ✗", "verdict:diverged"))
        if f.preparing_bisection:
            parts.append((f"{f.stage}…", ""))
    for part in parts:  # only segments with something in them: never an empty "│  │"
        spans += [SEPARATOR, part]
    return tuple(spans)


def _length(spans: list[Span]) -> int:
    return sum(len(text) for text, _role in spans)
