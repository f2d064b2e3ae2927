"""What the terminal app shows and decides, without any UI import (so every decision is unit-tested here).

- `OpTreeModel`: the op tree of scopes (`Default/block-Block/attn-Attention/MatMul-op0` -> folders
  Default, block-Block, attn-Attention), each folder with its worst verdict and how many ops inside
  diverged, updated incrementally as verdicts arrive; the flat execution-order rows; search and
  next/previous diverged op.
- `interval_bar`: the bisection interval drawn over the execution order, one character per column, with
  distinct characters per kind so it reads without colour.
- `BisectDriver` / `BisectState`: the app's handle on a `Bisection` (the probe shown to the user and what the
  engine computed for it, undo that also removes the culprit-check steps a mark triggered) and an immutable
  snapshot of it that the UI thread can render while a worker thread owns the bisection.
- `relations`: an op's producers and consumers from the dataflow graph.
- Paths: where sessions and re-dump configs go by default, and why a path is refused (never inside a dump).
"""
from __future__ import annotations

import bisect as _bisect
import json
import math
import os
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Iterable, Mapping, Sequence

from .metrics import format_cos
from .align import OpPair
from .dataflow import input_source, producer_pair
from .results import OpResult
from .session import Session
from .model import CONSTANT, KERNEL, PARAMETER, Dump
from .redump import inside_any
from .verdict import BAD, PENDING, mark, worst

if TYPE_CHECKING:  # the app imports this module before its first paint: networkx (via bisect) can wait
    from .bisect import Bisection, Root, Step

# ------------------------------------------------------------------------------------------------ marks

def verdict_mark(verdict: str | None) -> str:
    """The mark of a verdict; not computed yet (None) is the neutral `·`."""
    return mark(verdict)


def is_bad(verdict: str | None) -> bool:
    return verdict in BAD


# ------------------------------------------------------------------------------------------------ op tree

PARAMETERS_FOLDER = "(parameters)"
CONSTANTS_FOLDER = "(constants)"


@dataclass(eq=False)
class Folder:
    """A scope of the op tree. Counts are recursive: every op below this folder, at any depth."""

    path: str                      # "Default/block-Block"; synthetic folders: "(parameters)"
    name: str                      # "block-Block"
    parent: "Folder | None"
    synthetic: bool = False        # not a scope from the names (parameters / constants)
    folders: dict[str, "Folder"] = field(default_factory=dict)   # by name, in order of first execution
    ops: list[int] = field(default_factory=list)                 # pair indices directly here, in order
    first: int = -1                # the smallest pair index inside (orders siblings by execution)
    total: int = 0
    counts: dict[str, int] = field(default_factory=dict)          # verdict -> ops inside with it

    def __repr__(self) -> str:
        return f"Folder({self.path!r}, {self.total} ops)"

    @property
    def known(self) -> int:
        return sum(self.counts.values())

    @property
    def pending(self) -> int:
        return self.total - self.known

    @property
    def diverged(self) -> int:
        """Ops inside whose outputs are bad (diverged, shape or dtype mismatch)."""
        return sum(n for v, n in self.counts.items() if v in BAD)

    @property
    def verdict(self) -> str:
        """The worst verdict inside; `pending` ranks between the bad and the good ones, so a folder with
        unknown ops never looks `equal` before they are computed."""
        present = [v for v, n in self.counts.items() if n]
        if self.pending:
            present.append(PENDING)
        return worst(present) or PENDING

    def ancestors(self) -> list["Folder"]:
        """This folder and its parents up to (excluding) the root."""
        out = []
        f: Folder | None = self
        while f is not None and f.parent is not None:
            out.append(f)
            f = f.parent
        return out


def scope_parts(pair: OpPair) -> list[str]:
    """The folders an op sits in: its scope for kernels; parameters and constants get a folder of their own."""
    if pair.kind == PARAMETER:
        return [PARAMETERS_FOLDER]
    if pair.kind == CONSTANT:
        return [CONSTANTS_FOLDER]
    return [p for p in pair.name.split("/")[:-1] if p]


def leaf_name(pair: OpPair) -> str:
    """The op's label inside its folder: the last name component; both when the pairing renamed it."""
    if pair.kind != KERNEL:
        return pair.label
    leaf = pair.name.rsplit("/", 1)[-1]
    if pair.paired and pair.ref.name != pair.target.name:
        other = pair.target.name
        same_scope = other.rsplit("/", 1)[0] == pair.name.rsplit("/", 1)[0]
        return f"{leaf} ↔ {other.rsplit('/', 1)[-1] if same_scope else other}"
    return leaf


@dataclass(eq=False)
class PreviewPair:
    """An op known only by its name, from the reference's execution-order csv: the tree can be browsed
    while the dumps are still being indexed (a 20,000-op dump takes seconds; the csv milliseconds)."""

    name: str
    index: int
    kind: str = KERNEL
    ref: None = None
    target: None = None
    how: str = "indexing"

    @property
    def paired(self) -> bool:
        return False

    @property
    def label(self) -> str:
        return self.name

    @property
    def key(self) -> str:
        return self.name

    @property
    def op_type(self) -> str:
        return self.name.rsplit("/", 1)[-1].split("-op")[0]


def preview_pairs(path: str, rank: str | None = None) -> list[PreviewPair]:
    """The reference's kernels by name, in execution-order-csv order, read without indexing the dump
    ([] when the dump has no such csv or the rank is ambiguous: the tree then waits for the index)."""
    from .formats.files import RANK_DIR, find_rank_dir as _find_rank_dir, list_dir as _ls, read_execution_order
    ranks = [n for n in _ls(path) if RANK_DIR.match(n)]
    if ranks:
        want = f"rank_{rank}" if rank is not None else (ranks[0] if len(ranks) == 1 else None)
        rank_dir = os.path.join(path, want) if want in ranks else None
    else:
        rank_dir = _find_rank_dir(path)[0]
    if rank_dir is None:
        return []
    eo = os.path.join(rank_dir, "execution_order")
    names: list[str] = []
    for f in sorted(_ls(eo), key=lambda n: (len(n), n)):
        if f.startswith("ms_execution_order_graph_") and f.endswith(".csv"):
            names.extend(read_execution_order(os.path.join(eo, f)))
    return [PreviewPair(n, i) for i, n in enumerate(dict.fromkeys(names))]


class OpTreeModel:
    """Scopes as folders and ops as leaves, over every pair of an alignment; verdicts arrive incrementally.

    `pairs` must be the alignment's pairs (`pairs[i].index == i`). Building it touches names only, so a
    20,000-op dump is indexed in a fraction of a second; the UI asks `children()` only for expanded folders.
    """

    def __init__(self, pairs: Sequence[OpPair]):
        self.pairs = list(pairs)
        self.root = Folder("", "", None)
        self.folder_of: dict[int, Folder] = {}
        self.by_path: dict[str, Folder] = {"": self.root}
        self.verdicts: dict[int, str] = {}
        for p in self.pairs:
            folder = self.root
            parts = scope_parts(p)
            for depth, part in enumerate(parts):
                child = folder.folders.get(part)
                if child is None:
                    path = "/".join(parts[:depth + 1])
                    child = Folder(path, part, folder, synthetic=part in (PARAMETERS_FOLDER, CONSTANTS_FOLDER)
                                   and depth == 0 and p.kind != KERNEL, first=p.index)
                    folder.folders[part] = child
                    self.by_path[path] = child
                folder = child
            folder.ops.append(p.index)
            self.folder_of[p.index] = folder
            f: Folder | None = folder
            while f is not None:
                f.total += 1
                if f.first < 0 or p.index < f.first:
                    f.first = p.index
                f = f.parent

    def __len__(self) -> int:
        return len(self.pairs)

    def verdict(self, index: int) -> str | None:
        return self.verdicts.get(index)

    def set_verdicts(self, updates: Mapping[int, str | None]) -> tuple[set[int], set[Folder]]:
        """Record known verdicts (None = still unknown: ignored). Returns the ops and folders whose mark or
        counts changed, so the UI relabels only those."""
        ops: set[int] = set()
        folders: set[Folder] = set()
        for index, verdict in updates.items():
            if verdict is None:
                continue
            old = self.verdicts.get(index)
            if old == verdict:
                continue
            self.verdicts[index] = verdict
            ops.add(index)
            for f in self.folder_of[index].ancestors() + [self.root]:
                if old is not None:
                    f.counts[old] -= 1
                    if not f.counts[old]:
                        del f.counts[old]
                f.counts[verdict] = f.counts.get(verdict, 0) + 1
                folders.add(f)
        folders.discard(self.root)
        return ops, folders

    def path_to(self, index: int) -> list[Folder]:
        """The folders from the top down to the op's own folder."""
        return list(reversed(self.folder_of[index].ancestors()))

    def children(self, folder: Folder, only_diverged: bool = False) -> list["Folder | int"]:
        """Sub-folders and ops of a folder in execution order (a sub-folder sits where its first op ran)."""
        subs = sorted((f for f in folder.folders.values() if not only_diverged or f.diverged),
                      key=lambda f: f.first)
        ops = [i for i in folder.ops if not only_diverged or is_bad(self.verdicts.get(i))]
        out: list[Folder | int] = []
        si = oi = 0
        while si < len(subs) or oi < len(ops):
            if oi >= len(ops) or (si < len(subs) and subs[si].first < ops[oi]):
                out.append(subs[si])
                si += 1
            else:
                out.append(ops[oi])
                oi += 1
        return out

    def visible(self, index: int, only_diverged: bool) -> bool:
        return not only_diverged or is_bad(self.verdicts.get(index))

    def rows(self, only_diverged: bool = False) -> list[int]:
        """The flat list: every op in aligned execution order (kernels, then parameters and constants)."""
        if not only_diverged:
            return list(range(len(self.pairs)))
        return sorted(i for i, v in self.verdicts.items() if v in BAD)

    @property
    def diverged(self) -> int:
        return self.root.diverged


# ------------------------------------------------------------------------------------------------ navigation

def pair_matches(pair: OpPair, query: str) -> bool:
    """Case-insensitive substring of either side's full name or the op type."""
    q = query.lower()
    names = [op.name for op in (pair.ref, pair.target) if op is not None] + [pair.op_type]
    return any(q in n.lower() for n in names)


def _ordered_after(rows: Sequence[int], current: int | None, forward: bool, inclusive: bool) -> Iterable[int]:
    """`rows` (ascending pair indices) starting next to `current`, wrapping around once."""
    if not rows:
        return []
    if current is None:
        start = 0 if forward else len(rows) - 1
    elif forward:
        start = _bisect.bisect_left(rows, current) if inclusive else _bisect.bisect_right(rows, current)
    else:
        start = (_bisect.bisect_right(rows, current) if inclusive else _bisect.bisect_left(rows, current)) - 1
    n = len(rows)
    if forward:
        return (rows[(start + k) % n] for k in range(n))
    return (rows[(start - k) % n] for k in range(n))


def find_op(pairs: Sequence[OpPair], rows: Sequence[int], query: str, current: int | None,
            forward: bool = True, inclusive: bool = False) -> int | None:
    """The next op (pair index) among `rows` whose name matches, after `current`, wrapping; None if none.
    `inclusive`: `current` itself counts (typing refines the query without leaving a match)."""
    if not query.strip():
        return None
    q = query.strip()
    for i in _ordered_after(rows, current, forward, inclusive):
        if pair_matches(pairs[i], q):
            return i
    return None


def count_matches(pairs: Sequence[OpPair], rows: Sequence[int], query: str) -> int:
    q = query.strip()
    return sum(1 for i in rows if pair_matches(pairs[i], q)) if q else 0


def next_diverged(rows: Sequence[int], verdict_of: Callable[[int], str | None], current: int | None,
                  forward: bool = True) -> int | None:
    """The next op after `current` in execution order whose known verdict is bad, wrapping; None if none."""
    for i in _ordered_after(rows, current, forward, inclusive=False):
        if is_bad(verdict_of(i)):
            return i
    return None


def elide_left(text: str, width: int) -> str:
    """Keep the end of a long name (the op itself), marking the cut with `…`."""
    if width <= 0:
        return ""
    if len(text) <= width:
        return text
    return "…" + text[len(text) - width + 1:] if width > 1 else "…"


# ------------------------------------------------------------------------------------------------ interval bar

BAR_CHAR = {
    "unknown": "·",    # bisection not started
    "clear": "=",      # not suspect: before the bad op, or cleared by a good probe
    "suspect": "▒",    # still a candidate
    "after": "x",      # after the first known bad op
    "good": "G",       # probed and marked good
    "bad": "B",        # probed and marked bad
    "probe": "P",      # the op to probe now
    "culprit": "!",
}
_BAR_PRIORITY = {k: i for i, k in enumerate(("unknown", "clear", "after", "suspect", "good", "bad", "probe",
                                             "culprit"))}
BAR_LEGEND = "= clear  ▒ suspect  x after bad  G/B marked  P probe  ! culprit"


@dataclass(frozen=True)
class BarCell:
    kind: str
    char: str


def position_kind(p: int, state: "BisectState") -> str:
    if not state.started:
        return "unknown"
    if state.culprit is not None and p == state.culprit.position:
        return "culprit"
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


def interval_bar(state: "BisectState", width: int) -> list[BarCell]:
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
    merged = [sum(counts[i:i + merge]) for i in range(0, len(counts), merge)]
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


# ------------------------------------------------------------------------------------------------ bisection

@dataclass(frozen=True)
class HistoryRow:
    number: int
    position: int
    index: int          # pair index
    name: str
    mark: str
    source: str
    detail: str
    candidates_before: int


@dataclass(frozen=True)
class RootView:
    index: int
    position: int | None
    label: str
    op_type: str
    kind: str
    why: str
    how: str
    caveats: tuple[str, ...] = ()
    hints: tuple[tuple[str, str], ...] = ()     # (kind, text)
    proof: str | None = None


@dataclass(frozen=True)
class BisectState:
    """An immutable snapshot of a bisection, for the UI thread (the Bisection itself is owned by a worker)."""

    n: int = 0
    mode: str = ""
    started: bool = False
    finished: bool = False
    no_divergence: bool = False
    candidates: frozenset[int] = frozenset()
    good: frozenset[int] = frozenset()
    bad: frozenset[int] = frozenset()
    hi: int | None = None
    steps_left: int = 0
    probe: int | None = None            # position in the bisection order
    probe_index: int | None = None      # pair index
    probe_name: str = ""
    probe_mark: str | None = None       # what the engine computed: good | bad | skip
    probe_detail: str = ""
    history: tuple[HistoryRow, ...] = ()
    culprit: RootView | None = None
    others: tuple[RootView, ...] = ()
    checks: str = ""
    check_problems: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    can_undo: bool = False

    @property
    def interval(self) -> tuple[int, int] | None:
        if not self.candidates:
            return None
        return min(self.candidates), max(self.candidates)

    @property
    def can_mark(self) -> bool:
        return self.probe is not None and not self.finished


def is_mark_step(step: "Step") -> bool:
    """A step the user (or `space`/`a`) made, as opposed to the graph-output check of `start()` or the
    culprit check's continuation; the same rule `Bisection.to_json` saves by."""
    return step.source in ("user", "computed")


def proof_line(res: OpResult) -> str:
    """Inputs vs outputs in one line: `input.0 close, input.1 equal -> output.0 diverged (cos 0.466451)`."""
    def one(r) -> str:
        s = f"{r.label} {r.verdict}"
        if r.stats is not None and r.verdict in BAD:
            cos = format_cos(r.stats.cos)
            s += f" (cos {cos})"
        return s
    ins = ", ".join(one(r) for r in res.inputs) or "no inputs dumped"
    outs = ", ".join(one(r) for r in res.outputs) or "no outputs dumped"
    return f"{ins} → {outs}"


class BisectDriver:
    """The app's handle on a Bisection: the probe offered to the user and the engine's verdict for it.

    Not thread-safe: the app calls it from one worker at a time and renders `state()` snapshots. Methods
    that compute a verdict read tensors (the probe's outputs, the culprit's inputs).
    """

    def __init__(self, bisection: "Bisection"):
        self.bi = bisection
        self.probe: int | None = None
        self.probe_verdict: tuple[str, str] | None = None

    @property
    def session(self) -> Session:
        return self.bi.session

    def start(self) -> None:
        self.bi.check_inputs()
        self.bi.start()
        self._advance()

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
        self.bi.mark(self.probe, mark, "computed", detail)
        self._advance()

    def overrule(self, mark: str) -> None:
        """The user's verdict for the probe (`g` / `b`), whatever the engine computed."""
        if self.probe is None:
            return
        computed = self.probe_verdict[0] if self.probe_verdict else None
        detail = "marked by the user" + (f" (computed: {computed})" if computed and computed != mark else "")
        self.bi.mark(self.probe, mark, "user", detail)
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

    def replay(self, data: dict) -> list[str]:
        """Resume a saved session (its marks re-applied by op key); returns the keys no longer found."""
        self.bi.check_inputs()
        missing = self.bi.replay(data)
        self._advance()
        return missing

    def to_json(self) -> dict:
        return self.bi.to_json()

    def state(self) -> BisectState:
        """A snapshot for the UI. At convergence it reads the culprit's inputs if not read yet."""
        bi = self.bi
        order = bi.order
        history = tuple(HistoryRow(i + 1, s.position, order[s.position].index, order[s.position].name, s.mark,
                                   s.source, s.detail, s.candidates_before)
                        for i, s in enumerate(bi.history))
        culprit = others = None
        if bi.finished:
            first = bi.first_root()
            culprit = self._root_view(first) if first is not None else None
            others = tuple(self._root_view(r) for r in bi.roots() if first is None or r.pair.key != first.pair.key)
        checks, problems = _checks_summary(bi)
        probe_pair = order[self.probe] if self.probe is not None else None
        return BisectState(
            n=len(order), mode=bi.mode, started=bi.started, finished=bi.finished, no_divergence=bi.no_divergence,
            candidates=frozenset(bi.candidates), good=frozenset(bi.good), bad=frozenset(bi.bad), hi=bi.hi,
            steps_left=bi.steps_left, probe=self.probe,
            probe_index=probe_pair.index if probe_pair is not None else None,
            probe_name=probe_pair.label if probe_pair is not None else "",
            probe_mark=self.probe_verdict[0] if self.probe_verdict else None,
            probe_detail=self.probe_verdict[1] if self.probe_verdict else "",
            history=history, culprit=culprit, others=others or (), checks=checks, check_problems=problems,
            notes=tuple(bi.notes), can_undo=any(is_mark_step(s) for s in bi.history))

    def _root_view(self, r: "Root") -> RootView:
        p = r.pair
        pos = self.bi.position.get(p.index)
        res = r.result
        return RootView(index=p.index, position=pos, label=p.label, op_type=p.op_type, kind=r.kind, why=r.why,
                        how=p.how, caveats=tuple(r.caveats),
                        hints=tuple((h.kind, h.text) for h in (res.hints if res is not None else self.session.hints(p))),
                        proof=proof_line(res) if res is not None else None)


def _checks_summary(bi: "Bisection") -> tuple[str, tuple[str, ...]]:
    """`network input equal, 22 weights equal` and one line per input or weight that is not equal."""
    if bi.checks is None:
        return "", ()
    if not bi.checks:
        return "no parameters or network inputs dumped on both sides (not checked)", ()
    parts, problems = [], []
    for kind, label in (("network input", "network input"), ("parameter", "weights")):
        cs = [c for c in bi.checks if c.kind == kind]
        if not cs:
            continue
        counts: dict[str, int] = {}
        for c in cs:
            counts[c.status] = counts.get(c.status, 0) + 1
        parts.append(f"{label}: " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())))
        problems += [f"{c.status}: {c.name}: {c.detail}" for c in cs if c.status != "equal"]
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


# ------------------------------------------------------------------------------------------------ graph

@dataclass(frozen=True)
class Relation:
    direction: str          # "producer" | "consumer"
    slot: int | None        # the input slot a producer feeds
    index: int | None       # pair index to jump to, None when nothing to jump to
    name: str               # op name, or what feeds the input ("parameter conv1.weight", "constant 0.7")


def relations(session: Session, pair: OpPair, max_hops: int = 6) -> list[Relation]:
    """Producers (one per input slot) and consumers of an op, from either dump's dataflow graph. Graph
    nodes that were not dumped (Load, Depend...) are looked through, so the neighbours are dumped ops."""
    al = session.alignment
    out: list[Relation] = []
    slots = sorted(set(pair.ref.inputs if pair.ref else ()) | set(pair.target.inputs if pair.target else ()))
    for slot in slots:
        prod = producer_pair(session.alignment, pair, slot)
        if prod is not None:
            out.append(Relation("producer", slot, prod.index, prod.label))
            continue
        rs, ts = input_source(pair, slot)
        src = rs or ts
        if src is None:
            out.append(Relation("producer", slot, None, "no producer known (no graph)"))
        elif src.kind == "parameter":
            p = al.for_ref(src.ref) or al.for_target(src.ref)
            out.append(Relation("producer", slot, p.index if p is not None else None, f"parameter {src.ref}"))
        elif src.kind == "constant":
            out.append(Relation("producer", slot, None, f"constant {src.ref}"))
        else:
            out.append(Relation("producer", slot, None, f"op {src.ref} (not dumped)"))
    seen: dict[int, OpPair] = {}
    for dump, op, lookup in ((session.ref, pair.ref, al.for_ref), (session.target, pair.target, al.for_target)):
        g = dump.graph
        if op is None or g is None or op.key not in g:
            continue
        frontier, visited = [op.key], {op.key}
        for _hop in range(max_hops):
            nxt = []
            for node in frontier:
                for s in g.successors(node):
                    if s in visited:
                        continue
                    visited.add(s)
                    p = lookup(s)
                    if p is not None:
                        if p.index != pair.index:
                            seen.setdefault(p.index, p)
                    else:
                        nxt.append(s)
            frontier = nxt
            if not frontier:
                break
    out += [Relation("consumer", None, p.index, p.label) for _i, p in sorted(seen.items())]
    return out


# ------------------------------------------------------------------------------------------------ paths

def cache_dir(env: Mapping[str, str] | None = None) -> str:
    """`$XDG_CACHE_HOME/dumptui` or `~/.cache/dumptui`: where sessions go (never beside a dump)."""
    env = os.environ if env is None else env
    base = env.get("XDG_CACHE_HOME") or os.path.join(env.get("HOME") or os.path.expanduser("~"), ".cache")
    return os.path.join(base, "dumptui")


def default_session_path(dumps: Sequence[Dump], now: float | None = None, env: Mapping[str, str] | None = None,
                         cwd: str | None = None) -> str:
    name = time.strftime("session-%Y%m%d-%H%M%S.json", time.localtime(time.time() if now is None else now))
    path = os.path.join(cache_dir(env), name)
    if inside_any(path, list(dumps)) is not None:
        path = os.path.join(cwd or os.getcwd(), name)
    return path


def default_export_path(dumps: Sequence[Dump], cwd: str | None = None, env: Mapping[str, str] | None = None) -> str:
    """`./data_dump.json`, unless the working directory is inside a dump: then the cache folder."""
    path = os.path.join(cwd or os.getcwd(), "data_dump.json")
    if inside_any(path, list(dumps)) is not None:
        path = os.path.join(cache_dir(env), "data_dump.json")
    return path


def default_redump_dir(dumps: Sequence[Dump], cwd: str | None = None, env: Mapping[str, str] | None = None) -> str:
    """Where the next MindSpore run should dump (absolute, as MindSpore requires), not inside a dump."""
    path = os.path.join(os.path.abspath(cwd or os.getcwd()), "dump_interval")
    if inside_any(path, list(dumps)) is not None:
        env = os.environ if env is None else env
        path = os.path.join(env.get("HOME") or os.path.expanduser("~"), "dump_interval")
    return path


def refuse_output(path: str, dumps: Sequence[Dump]) -> str | None:
    """Why a file cannot be written at `path`, or None. Dumps are evidence: never written inside."""
    if not path.strip():
        return "give a file path"
    full = os.path.abspath(os.path.expanduser(path.strip()))
    if os.path.isdir(full):
        return f"{full} is a folder: give a file name"
    root = inside_any(full, list(dumps))
    if root is not None:
        return f"{full} is inside the dump folder {root}: dumps are evidence, choose a path outside"
    return None


def refuse_dump_dir(path: str) -> str | None:
    """Why `path` cannot be the `path` of a MindSpore data_dump.json, or None."""
    if not path.strip():
        return "give the folder MindSpore should dump into"
    if not os.path.isabs(os.path.expanduser(path.strip())):
        return f"{path.strip()}: MindSpore needs an absolute dump path"
    return None


SESSION_OPTIONS = ("rank", "graph", "iteration", "ref_rank", "ref_graph", "ref_iteration", "target_rank",
                   "target_graph", "target_iteration", "cos", "atol", "rtol", "rms_tol", "max_off", "ignore",
                   "ignore_file", "map")


def session_payload(bisection_json: dict, ref_path: str, target_path: str, options: Mapping[str, object]) -> dict:
    """What `S` saves: the bisection's steps plus the dumps and options it was made with."""
    data = dict(bisection_json)
    data["dumptui_session"] = 1
    data["dumps"] = {"ref": os.path.abspath(ref_path), "target": os.path.abspath(target_path)}
    data["options"] = {k: options.get(k) for k in SESSION_OPTIONS if options.get(k) not in (None, [], "")}
    data["saved_at"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    return data


def read_session(path: str) -> dict:
    """A saved session file, or ValueError with the reason."""
    try:
        with open(path, "r", encoding="utf-8") as fh:
            data = json.load(fh)
    except OSError as e:
        raise ValueError(f"{path}: {e.strerror or e}") from None
    except ValueError as e:
        raise ValueError(f"{path}: not a JSON file ({e})") from None
    if not isinstance(data, dict) or not isinstance(data.get("steps"), list):
        raise ValueError(f"{path}: not a dumptui session (no list of steps)")
    return data


def session_mismatch(data: dict, ref_path: str, target_path: str) -> str | None:
    """A note when a session was saved for other dumps (its marks are still re-applied by op name)."""
    dumps = data.get("dumps")
    if not isinstance(dumps, dict):
        return None
    saved = (dumps.get("ref"), dumps.get("target"))
    now = (os.path.abspath(ref_path), os.path.abspath(target_path))
    if saved != now:
        return f"the session was saved for {saved[0]} vs {saved[1]}; re-applied here by op name"
    return None


def format_columns(rows: Sequence[Sequence[str]], right: Sequence[bool], gap: int = 2) -> list[str]:
    """Rows of cells as aligned lines (a table without a table renderer: cheap enough to redraw on every
    cursor move). `right[i]`: right-align column i."""
    if not rows:
        return []
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    out = []
    for r in rows:
        cells = [c.rjust(w) if right[i] else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))]
        out.append((" " * gap).join(cells).rstrip())
    return out
