"""What the bisection panel says, line by line, for a width: decided here, drawn by the widget.

Lines are tuples of (text, role) spans; the widget maps a role to a style of the theme (`bold`, `muted`,
`error`, `warning`, `success`, `verdict:<verdict>`, `bar:<kind>`). Every line is wrapped here to the width
with a hanging indent, so the widget never wraps and what is above the fold is known: at convergence the
culprit (its number, both names, the sentence of its cause, its hints) comes first, then the error plot, then
the proof and the rest. Names are elided in the middle, never cut mid-word by a wrap.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from dumptui.present.bars import interval_bar
from dumptui.present.cause import RootView
from dumptui.present.columns import fit_name
from dumptui.present.driver import BisectState
from dumptui.present.errorplot import PLOT_LEGEND, error_plot
from dumptui.present.words import plural
from dumptui.report.looks import mark as verdict_mark
from dumptui.report.names import cut_word

Span = tuple[str, str]
Line = tuple[Span, ...]

PLOT_LABELS = ("err  ", "gain ", "ops  ")  # the plot's rows: output error, local gain, the bisection bar
LABEL_WIDTH = 5
MARK_WORD = {"good": "good", "bad": "bad", "skip": "not comparable (space skips it)"}
_WORD = re.compile(r"\S+\s*|\s+")


def wrap(spans: Line, width: int, indent: int = 2) -> list[Line]:
    """Greedy word wrap over styled spans; continuation lines start with `indent` spaces. A word longer than a
    line (a name: in a reason, or not cut before it got here) is cut in the middle by the one rule of names,
    never folded over lines."""
    width = max(width, indent + 8)
    lines: list[list[Span]] = [[]]
    used = 0

    def new_line() -> None:
        nonlocal used
        lines.append([(" " * indent, "")])
        used = indent

    for text, role in spans:
        for word in _WORD.findall(text):
            if used > indent and used + len(word.rstrip()) > width:
                new_line()
                if not word.strip():
                    continue
            if used + len(word.rstrip()) > width:  # a single word longer than a line
                word = cut_word(word, width - used)
            lines[-1].append((word, role))
            used += len(word)
    return [tuple(_merge(line)) for line in lines]


def _merge(line: list[Span]) -> list[Span]:
    out: list[Span] = []
    for text, role in line:
        if out and out[-1][1] == role:
            out[-1] = (out[-1][0] + text, role)
        else:
            out.append((text, role))
    if out:
        out[-1] = (out[-1][0].rstrip(), out[-1][1])
    return out


def plain(line: Line) -> str:
    return "".join(t for t, _ in line)


def plot_lines(state: BisectState, width: int) -> list[Line]:
    """The error plot: output error, local gain, and the bisection bar, one column per slice of the order."""
    cols = max(8, width - LABEL_WIDTH)
    rows = error_plot(state.points, state.n, cols)
    bar = interval_bar(state, cols)
    out: list[Line] = []
    if state.points or state.search == "scan":
        out.append(((PLOT_LABELS[0], "muted"), (rows.error, "verdict:diverged")))
        out.append(((PLOT_LABELS[1], "muted"), (rows.gain, "accent")))
    cells: list[Span] = [(PLOT_LABELS[2], "muted")]
    for c in bar:
        cells.append((c.char, f"bar:{c.kind}"))
    out.append(tuple(_merge(cells)))
    if state.points or state.search == "scan":
        caption = rows.caption
        out += wrap(((f"{caption}; " if caption else "", "muted"), (PLOT_LEGEND, "muted")), width, LABEL_WIDTH)
    return out


def culprit_lines(c: RootView, width: int) -> list[Line]:
    """The culprit summary: number, op, cause, both names, the sentence of its cause, its hints."""
    leaf = c.label.rsplit("/", 1)[-1] if not c.renamed else c.ref_name.rsplit("/", 1)[-1]
    head: Line = (
        ("CULPRIT ", "error"),
        (f"#{c.index + 1} ", "bold"),
        (leaf, "bold"),
        (f" ({c.op_type})", ""),
    )
    out = wrap(head, width)
    if c.renamed:
        pair = f"{c.ref_name} ↔ {c.target_name}"
        if len(pair) + 4 <= width:
            out.append((("ref ", "muted"), (c.ref_name, ""), (" ↔ ", "muted"), (c.target_name, "")))
        else:
            out.append((("ref    ", "muted"), (fit_name(c.ref_name, width - 7), "")))
            out.append((("target ", "muted"), (fit_name(c.target_name, width - 7), "")))
    else:
        out.append(((fit_name(c.label, width), "muted"),))
    out += wrap((("why: ", "bold"), (c.why, "")), width)
    if c.rank:
        story = (
            "; ".join(
                f"rank {r} by {via.split('/', 1)[-1] if via.startswith('rank_') else via}" for r, via in c.reaches
            )
            if c.reaches
            else "no other rank (no communication op carries it)"
        )
        out += wrap(((f"rank {c.rank} first; reaches: ", "bold"), (story, "")), width)
    for kind, text in c.hints[:1]:  # the first (a known cause when there is one); the rest after the plot
        out += wrap(((f"hint ({kind}): ", "warning"), (text, "")), width)
    return out


def proof_lines(c: RootView, width: int) -> list[Line]:
    out: list[Line] = []
    for kind, text in c.hints[1:]:
        out += wrap(((f"hint ({kind}): ", "warning"), (text, "")), width)
    if c.replay:
        out += wrap((("proof: ", "bold"), (c.replay, "")), width)
    if c.numbers:
        out += wrap((("local error: ", "bold"), (c.numbers, "")), width)
    if c.proof:
        out += wrap((("tensors: ", "bold"), (c.proof, "")), width)
    for cav in c.caveats:
        out += wrap((("caveat: ", "warning"), (cav, "")), width)
    return out


def search_line(state: BisectState, width: int) -> list[Line]:
    if not state.search:
        return []
    if state.search == "scan":
        text = f"local-error scan of {plural(state.n, 'op')}, every op read and judged ({state.search_reason})"
    else:
        text = f"bisection, O(log n) reads ({state.search_reason})" if state.search_reason else "bisection"
    return wrap((("search: ", "bold"), (text, "")), width)


def _probe_line(
    state: BisectState, width: int, number_of: Callable[[int], str], probe_verdict: str | None, word: str = "probe "
) -> list[Line]:
    """`probe #37 ✗ name`: the probe's number, its op's verdict mark and its name (elided in the middle)."""
    assert state.probe is not None
    name_room = max(10, width - 10 - len(word))
    return [
        (
            (word, "bold"),
            (f"{number_of(state.probe)} ", ""),
            (verdict_mark(probe_verdict), f"verdict:{probe_verdict or ''}"),
            (" " + fit_name(state.probe_name, name_room), ""),
        )
    ]


def panel_lines(
    state: BisectState | None,
    width: int,
    busy: str = "",
    number_of: Callable[[int], str] = lambda pos: f"#{pos + 1}",
    probe_verdict: str | None = None,
) -> list[Line]:
    """Every line of the panel, most important first. `number_of(position)`: the op's number as the tree and
    the detail show it (`#37`, its index in the aligned execution order)."""
    if state is None:
        return [((busy or "waiting for the dumps…", "muted"),)]
    if not state.started and state.pending and state.probe is not None:
        # a noisy pair's search judges every op before its first mark: the probe it offers first meanwhile
        first = _probe_line(state, width, number_of, probe_verdict, "first probe ")
        first += wrap((("its outputs: ", "bold"), (state.probe_detail, "")), width)
        first += wrap((("mark: ", "bold"), ("pending, " + state.pending, "muted")), width)
        return first + (wrap(((busy, "muted"),), width) if busy else [])
    if not state.started:
        return [((busy or "press space to start the bisection", "muted"),)]
    out: list[Line] = []
    if state.finished and state.culprit is not None:
        c = state.culprit
        out += culprit_lines(c, width)
        if state.undecided:  # a root is found, yet not everything on the way could be judged: said with it
            out.append((("Incomplete: what could not be read or judged (a root may lie there too)", "error"),))
            for why in state.undecided:
                out += wrap((("  - ", "bold"), (why, "")), width, 4)
        out += plot_lines(state, width)
        out += proof_lines(c, width)
        out += search_line(state, width)
        if state.others:
            out.append((("other roots of divergence, in execution order:", "bold"),))
            for o in state.others:
                out += wrap(
                    ((f"  #{o.index + 1} ", "bold"), (f"{fit_name(o.label, width // 2)} ", ""), (o.why, "")),
                    width,
                    4,
                )
        else:
            out.append((("other roots of divergence: none found", "muted"),))
    elif state.finished and state.undecided:
        out.append((("Undecided: what could not be read or judged hides the answer", "error"),))
        for why in state.undecided:
            out += wrap((("  - ", "bold"), (why, "")), width, 4)
        out += search_line(state, width)
    elif state.finished:
        out += plot_lines(state, width)
        if state.benign:
            out += wrap((("Benign: ", "success"), ("no op creates error beyond what precision explains:", "")), width)
            for line in state.benign:
                out += wrap((("  - ", "muted"), (line, "")), width, 4)
        else:
            agree = " and the weights and inputs agree" if state.checks and not state.check_problems else ""
            out += wrap(
                (("No divergence: ", "success"), (f"the outputs agree within the noise floor{agree}", "")), width
            )
        out += search_line(state, width)
    else:
        out += plot_lines(state, width)
        if state.probe is not None:
            out += _probe_line(state, width, number_of, probe_verdict)
            mark = state.probe_mark or "?"
            role = "verdict:diverged" if mark == "bad" else "verdict:equal" if mark == "good" else "muted"
            out += wrap(
                (("computed: ", "bold"), (MARK_WORD.get(mark, mark), role), (" - " + state.probe_detail, "")), width
            )
        interval = state.interval
        if interval is not None:
            out += wrap(
                (
                    (
                        f"{plural(len(state.candidates), 'suspect')} {number_of(interval[0])}..{number_of(interval[1])}, "
                        f"at most {plural(state.steps_left, 'step')} left",
                        "",
                    ),
                ),
                width,
            )
        out += search_line(state, width)
    if state.checks:
        out += wrap((("preconditions: ", "bold"), (state.checks, "")), width)
        for p in state.check_problems:
            out += wrap((("  " + p, "warning"),), width, 4)
    for n in state.notes:
        out += wrap((("note: ", "bold"), (n, "")), width)
    return out
