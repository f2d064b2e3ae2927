"""The app's handle on a bisection.

- `BisectDriver`: the probe offered to the user and what the engine computed for it; undo that also removes
  the culprit-check steps a mark triggered. Owned by one worker thread at a time.
- `BisectState`: an immutable snapshot of it, which the UI thread renders while a worker owns the bisection.
- `BisectCommand`: what the app asks of the driver (`BisectDriver.apply`), one word each.
- `redump_kernels` / `redump_plan`: what a re-dump config for the current interval holds, and says.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from dumptui.core.compare.ledger import Purpose
from dumptui.core.compare.session import Session
from dumptui.core.graph.align import OpPair
from dumptui.core.model.dump import KERNEL
from dumptui.core.model.reason import Said
from dumptui.core.model.vocab import Word
from dumptui.core.search.bisect import CheckKind, CheckStatus, Mark, SearchMode, Source, StrategyName
from dumptui.core.search.bisect.oracle import brief
from dumptui.present.cause import RootView, root_view
from dumptui.present.errorplot import PlotPoint, compared_points, known_points
from dumptui.report.data import benign_evidence
from dumptui.report.reasons import say, say_all
from dumptui.report.selection import proof_sentence

if TYPE_CHECKING:  # the app imports this module before its first paint: networkx (via bisect) can wait
    from dumptui.core.search.bisect import Bisection, Root, Step


Progress = Callable[[int, int], None]
FirstLook = Callable[["BisectState"], None]


class BisectCommand(Word):
    """A task of the app's bisection worker; `RUN` steps until converged (the app's `a`)."""

    START = "start"
    REPLAY = "replay"  # a saved session's marks
    ACCEPT = "accept"  # the computed verdict of the probe
    OVERRULE = "overrule"  # the user's own mark of the probe
    UNDO = "undo"
    RESET = "reset"
    POINTS = "points"  # the error plot again, once every op is compared
    RUN = "run"


class RunProgress(Word):
    """Where `a`'s run to the end is when it reports: a step taken (more follow), converged, or stopped (escape)."""

    STEPPED = "stepped"
    CONVERGED = "converged"
    STOPPED = "stopped"


@dataclass(frozen=True)
class HistoryRow:
    number: int
    position: int
    index: int  # pair index
    name: str
    mark: Mark
    source: Source
    detail: str
    candidates_before: int


@dataclass(frozen=True)
class BisectState:
    """An immutable snapshot of a bisection, for the UI thread (the Bisection itself is owned by a worker)."""

    n: int = 0
    mode: StrategyName | None = None  # None before the bisection is made
    started: bool = False
    finished: bool = False
    no_divergence: bool = False
    undecided: tuple[str, ...] = ()  # why damage hides the answer (finished with no culprit, and no verdict)
    candidates: frozenset[int] = frozenset()
    good: frozenset[int] = frozenset()
    bad: frozenset[int] = frozenset()
    hi: int | None = None
    steps_left: int = 0
    probe: int | None = None  # position in the bisection order
    probe_index: int | None = None  # pair index
    probe_name: str = ""
    probe_mark: Mark | None = None  # what the engine computed
    probe_detail: str = ""
    history: tuple[HistoryRow, ...] = ()
    culprit: RootView | None = None
    others: tuple[RootView, ...] = ()
    checks: str = ""
    check_problems: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    can_undo: bool = False
    search: SearchMode | None = None  # None before the search starts
    search_reason: str = ""
    benign: tuple[str, ...] = ()  # why a pair that differs has no root (empty otherwise)
    # a selection op's judgement in words (pair index -> "25 of 32 selections equal; ranks 24 and 25 swapped..."):
    # the op pane says it beside the op's tensors, never an element-wise error alone
    selections: Mapping[int, str] = field(default_factory=dict)
    points: Mapping[int, PlotPoint] = field(default_factory=dict)  # position -> numbers known (errorplot.py)
    # before the search has started: the probe it offers first, shown with its own numbers while every op is
    # judged; what its mark waits for, in words (BisectDriver.look). Empty once the search has started.
    pending: str = ""
    # how many tensor verdicts the search judged in context (grows when its preconditions and scan are done):
    # what the screen showed from before says what each pair's own numbers said, and is shown again
    judged: int = 0

    @property
    def interval(self) -> tuple[int, int] | None:
        if not self.candidates:
            return None
        return min(self.candidates), max(self.candidates)

    @property
    def can_mark(self) -> bool:
        return self.probe is not None and not self.finished


def is_mark_step(step: Step) -> bool:
    """A step the user (or `space`/`a`) made, as opposed to the graph-output check of `start()` or the
    culprit check's continuation; the same rule `Bisection.to_json` saves by."""
    return step.source in (Source.USER, Source.COMPUTED)


class BisectDriver:
    """The app's handle on a Bisection: the probe offered to the user and the engine's verdict for it.

    Not thread-safe: the app calls it from one worker at a time and renders `state()` snapshots. Methods
    that compute a verdict read tensors (the probe's outputs, the culprit's inputs).
    """

    def __init__(self, bisection: Bisection):
        self.bi = bisection
        self.probe: int | None = None
        self.probe_verdict: tuple[Mark, Said] | None = None
        self._scan_points: dict[int, PlotPoint] | None = None  # a scan's numbers do not change: built once
        self._compared: dict[int, PlotPoint] = {}  # a clean pair's outputs compared by the statistics

    @property
    def session(self) -> Session:
        return self.bi.session

    def start(self, progress: Progress | None = None, first_look: FirstLook | None = None) -> None:
        """`first_look(state)`: before a scan judges every op (seconds to minutes on a big noisy pair), the
        op the search probes first if the network output diverges, with its own outputs compared (`look`)."""
        self.bi.check_inputs()
        if first_look is not None and not self.bi.started and self.bi.scan_reason() and self.bi.scan_result is None:
            pos = self.bi.first_probe_if_output_diverges()
            if pos is not None:
                first_look(self.look(pos))
        self.bi.prepare(progress)  # a noisy pair's scan judges every op: its count is what the user waits for
        self.bi.start()
        self._advance()

    def look(self, pos: int) -> BisectState:
        """The search before its scan: the op at `pos` offered as the first probe, its outputs compared as they
        are (reads them); its mark waits for the scan (a verdict in context needs every op above it judged)."""
        pair = self.bi.order[pos]
        res = self.session.op_result(pair, inputs=False, purpose=Purpose.PROBE)
        return BisectState(
            n=len(self.bi.order),
            mode=self.bi.mode,
            probe=pos,
            probe_index=pair.index,
            probe_name=pair.label,
            probe_detail=say(brief(res)),
            pending=f"known once every op above it is judged ({say(self.bi.scan_reason())})",
            notes=tuple(say_all(self.bi.notes)),
        )

    def _advance(self) -> None:
        """Choose the next probe and compute its verdict; converge when nothing is left to probe."""
        bi = self.bi
        self.probe, self.probe_verdict = None, None
        if not bi.started or bi.finished:
            return
        pos = bi.next_probe()
        if pos is None:
            # Nothing left that can be probed: `run` forces the culprit check on the first known bad op.
            bi.run(max_steps=1)
            return
        self.probe = pos
        self.probe_verdict = bi.computed_verdict(pos)

    def accept(self) -> None:
        """Apply the engine's verdict for the probe (`space`); starts the bisection if needed."""
        if not self.bi.started:
            self.start()
            return
        if self.probe is None or self.probe_verdict is None:
            self._advance()
            return
        mark, detail = self.probe_verdict
        self.bi.mark(self.probe, mark, Source.COMPUTED, detail)
        self._advance()

    def overrule(self, mark: Mark) -> None:
        """The user's verdict for the probe (`+` / `-`), whatever the engine computed."""
        if self.probe is None:
            return
        computed = self.probe_verdict[0] if self.probe_verdict else None
        detail = "marked by the user" + (f" (computed: {computed})" if computed and computed != mark else "")
        self.bi.mark(self.probe, mark, Source.USER, detail)
        self._advance()

    def step(self) -> bool:
        """One step with the computed verdict (`a` repeats it). False once finished."""
        if self.bi.finished:
            return False
        self.accept()
        return not self.bi.finished

    def undo(self) -> bool:
        """Undo the last mark, with the culprit-check steps it triggered; the start is not undone."""
        if not self.bi.undo():
            return False
        self._advance()
        return True

    def reset(self) -> None:
        self.bi.reset()
        self.start()

    def apply(
        self,
        command: BisectCommand,
        *args: Any,
        progress: Progress | None = None,
        first_look: FirstLook | None = None,
    ) -> str:
        """Carry out one command (not RUN: that is `step` until done); returns a note for the user, or ''.
        `progress(done, total)`: the count of the search's preparation, for the commands that start it;
        `first_look`: see `start`."""
        if command == BisectCommand.START:
            self.start(progress, first_look)
        elif command == BisectCommand.REPLAY:
            missing = self.replay(args[0], progress)
            steps = len([s for s in self.bi.history if is_mark_step(s)])
            return f"resumed: {steps} steps re-applied" + (
                f"; {len(missing)} ops no longer found: {', '.join(missing[:3])}" if missing else ""
            )
        elif command == BisectCommand.ACCEPT:
            self.accept()
        elif command == BisectCommand.OVERRULE:
            self.overrule(args[0])
        elif command == BisectCommand.UNDO:
            if not self.undo():
                return "nothing to undo"
        elif command == BisectCommand.RESET:
            had_marks = bool(self.bi.history)
            self.reset()
            return "reset: u brings the marks back" if had_marks else ""
        elif command == BisectCommand.POINTS:
            self.note_compared()
        else:
            raise ValueError(f"{command} is not one command")
        return ""

    def replay(self, data: dict[str, object], progress: Progress | None = None) -> list[str]:
        """Resume a saved session (its marks re-applied by op key); returns the keys no longer found."""
        self.bi.check_inputs()
        self.bi.prepare(progress)
        missing = self.bi.replay(data)
        self._advance()
        return missing

    def to_json(self) -> dict[str, Any]:
        return self.bi.to_json()

    def state(self) -> BisectState:
        """A snapshot for the UI. At convergence it reads the culprit's inputs if not read yet."""
        bi = self.bi
        order = bi.order
        history = tuple(
            HistoryRow(
                i + 1,
                s.position,
                order[s.position].index,
                order[s.position].name,
                s.mark,
                s.source,
                say(s.detail),
                s.candidates_before,
            )
            for i, s in enumerate(bi.history)
        )
        culprit = others = None
        if bi.finished:
            first = bi.first_root()
            culprit = self._root_view(first) if first is not None else None
            others = tuple(self._root_view(r) for r in bi.roots() if first is None or r.pair.key != first.pair.key)
        checks, problems = _checks_summary(bi)
        probe_pair = order[self.probe] if self.probe is not None else None
        benign = tuple(benign_evidence(bi)) if bi.finished and culprit is None else ()
        return BisectState(
            n=len(order),
            mode=bi.mode,
            judged=len(bi.in_context),
            started=bi.started,
            finished=bi.finished,
            no_divergence=bi.no_divergence,
            undecided=tuple(say_all(bi.undecided)),
            candidates=frozenset(bi.candidates),
            good=frozenset(bi.good),
            bad=frozenset(bi.bad),
            hi=bi.hi,
            steps_left=bi.steps_left,
            probe=self.probe,
            probe_index=probe_pair.index if probe_pair is not None else None,
            probe_name=probe_pair.label if probe_pair is not None else "",
            probe_mark=self.probe_verdict[0] if self.probe_verdict else None,
            probe_detail=say(self.probe_verdict[1]) if self.probe_verdict else "",
            history=history,
            culprit=culprit,
            others=others or (),
            checks=checks,
            check_problems=problems,
            notes=tuple(
                ([self.session.ref.selection_note] if self.session.ref.selection_note else []) + say_all(bi.notes)
            ),
            can_undo=bi.can_undo,
            search=bi.search if bi.started else None,
            search_reason=say(bi.search_reason),
            benign=benign,
            points=self._points(),
            selections=_selections(bi),
        )

    def note_compared(self) -> None:
        """Take the outputs compared so far into the plot (the app calls it when its statistics are done)."""
        if self.bi.scan_result is None:
            self._compared = compared_points(self.bi)

    def _points(self) -> dict[int, PlotPoint]:
        if self.bi.scan_result is None:
            return {**self._compared, **known_points(self.bi)}
        if self._scan_points is None:
            self._scan_points = known_points(self.bi)
        return self._scan_points

    def _root_view(self, r: Root) -> RootView:
        res = r.result
        hints = res.hints if res is not None else self.session.hints(r.pair)
        view = root_view(r, self.bi.position.get(r.pair.index), self.bi.checks or [], hints)
        if r.pair.ref is not None and "," in (self.session.ref.rank or ""):  # ranks merged: say where it goes
            from dumptui.core.ranks.merge import reached_ranks
            from dumptui.core.search.bisect.types import RootKind

            story = reached_ranks(self.session.ref, r.pair.ref.key, at_inputs=r.kind != RootKind.OUTPUTS)
            if story is not None:
                view = replace(view, rank=story[0], reaches=tuple(story[1]))
        return view


def _checks_summary(bi: Bisection) -> tuple[str, tuple[str, ...]]:
    """`network input equal, 22 weights equal` and one line per input or weight that is not equal."""
    if bi.checks is None:
        return "", ()
    if not bi.checks:
        return "no parameters or network inputs dumped on both sides (not checked)", ()
    parts, problems = [], []
    for kind, label in ((CheckKind.NETWORK_INPUT, "network input"), (CheckKind.PARAMETER, "weights")):
        cs = [c for c in bi.checks if c.kind == kind]
        if not cs:
            continue
        counts: dict[str, int] = {}
        for c in cs:
            counts[c.status] = counts.get(c.status, 0) + 1
        parts.append(f"{label}: " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())))
        problems += [f"{c.status}: {c.name}: {say(c.detail)}" for c in cs if c.status != CheckStatus.EQUAL]
    return "; ".join(parts), tuple(problems)


def redump_kernels(order: Sequence[OpPair], pairs: Sequence[OpPair], candidates: Iterable[int]) -> list[str]:
    """Kernel names (both sides' spellings) for a re-dump of the interval: the suspects, plus the kernels
    dumped on one side only that ran inside the interval (an inserted Cast cannot be probed, yet may be the
    cause). In execution order."""
    cands = sorted(candidates)
    if not cands:
        return []
    suspects = {order[c].index for c in cands}
    lo, hi = min(suspects), max(suspects)
    names: list[str] = []
    for p in pairs:
        if p.kind != KERNEL:
            continue
        if p.index in suspects or (not p.paired and lo <= p.index <= hi):
            names += [op.name for op in (p.ref, p.target) if op is not None]
    return list(dict.fromkeys(names))


@dataclass(frozen=True)
class RedumpPlan:
    """What `e` exports: the kernel names for the next run to dump, and one line that says what they are."""

    kernels: tuple[str, ...]
    summary: str


def redump_plan(order: Sequence[OpPair], pairs: Sequence[OpPair], state: BisectState) -> RedumpPlan:
    """The re-dump of the current interval (`state.candidates` must not be empty)."""
    kernels = tuple(redump_kernels(order, pairs, state.candidates))
    lo, hi = min(state.candidates), max(state.candidates)
    span = f"#{order[lo].index + 1}" + (f"..#{order[hi].index + 1}" if hi != lo else "")
    n, k = len(kernels), len(state.candidates)
    return RedumpPlan(
        kernels,
        f"{n} kernel name{'s' if n != 1 else ''} (both sides' spellings): the {k} "
        f"suspect{'s' if k != 1 else ''} {span} and the kernels dumped on one side only "
        "between them",
    )


def _selections(bi: Bisection) -> Mapping[int, str]:
    """Each selection op the search judged by its own inputs (selection.py), its judgement in words."""
    if bi.scan_result is None:
        return {}
    return {le.pair.index: proof_sentence(le.selection) for le in bi.scan_result.locals if le.selection is not None}
