"""Pairing the ops of two dumps.

In order of trust: a mapping file (`--map`, CSV `ref_name,target_name`); a fused target op with the group of
ref ops it replaced (fusion.py, from a GE graph's names); the exact full name; a normalised name (case and
`/ _ . \\` spellings ignored); the same scope and op type with a different `-opN` counter, matched in execution
order; then, where both dumps have a graph, the dataflow (byflow.py): an op between the same paired producers
and consumers (a renamed vendor kernel, a branch run elsewhere, FloorMod-op0 ↔ Mod-op0), and groups of ops
between the same paired neighbours (a fused chain, a folded BatchNorm); inside each gap between pairs already
made, the position in execution order with the same op type and tensor shapes, and the dataflow again. Without
graphs, last, an op renamed at the same position and scope with the same shapes, only when its input values
agree: two ops of different kinds are never paired on shape and scope alone. What is left stays unpaired
(inserted Casts): it is listed, and it does not disturb the pairing of the rest. Every pairing says how it was
made.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

import numpy as np

from dumptui.core.graph.byflow import GROUPED, Flow, as_one, pair_groups, pair_ops
from dumptui.core.graph.fusion import FUSED, fused_groups
from dumptui.core.graph.pairedby import PairedBy
from dumptui.core.io.limits import MAX_OPTION_FILE
from dumptui.core.io.safeio import text_lines
from dumptui.core.model.dump import KERNEL, Dump, Op, no_cyclic_gc
from dumptui.core.model.numbers import counting
from dumptui.core.model.reason import Said, Why, because

if TYPE_CHECKING:  # dataflow reads the alignment; the alignment only keeps dataflow's answers
    from dumptui.core.graph.dataflow import Origin

EXACT, NORMALISED, COUNTER = PairedBy.EXACT, PairedBy.NORMALISED, PairedBy.COUNTER
POSITION, RENAMED = PairedBy.POSITION, PairedBy.RENAMED
RENAMED_AGREE = 0.05  # inputs of a rename "agree" within 5 % (relative L2): noise, not another value
MAPPED, ONLY_REF, ONLY_TARGET = PairedBy.MAPPED, PairedBy.ONLY_REF, PairedBy.ONLY_TARGET


@dataclass(eq=False, slots=True)  # one per aligned op, kept for the session: no __dict__ each
class OpPair:
    ref: Op | None
    target: Op | None
    how: PairedBy
    index: int = -1  # position in the aligned order

    def __repr__(self) -> str:
        return f"OpPair({self.name!r}, {self.how})"

    @property
    def paired(self) -> bool:
        return self.ref is not None and self.target is not None

    @property
    def op(self) -> Op:
        """The op that names the pair: the reference's, or the target's for a target-only op."""
        op = self.ref or self.target
        assert op is not None, "an OpPair holds at least one op"
        return op

    @property
    def name(self) -> str:
        return self.op.name

    @property
    def key(self) -> str:
        return self.ref.key if self.ref is not None else "target:" + self.op.key

    @property
    def kind(self) -> str:
        return self.op.kind

    @property
    def op_type(self) -> str:
        if self.ref is not None and self.target is not None and self.ref.op_type != self.target.op_type:
            return f"{self.ref.op_type}/{self.target.op_type}"
        return self.op.op_type

    @property
    def label(self) -> str:
        """The name to show: both names when they differ."""
        if self.ref is not None and self.target is not None and self.ref.name != self.target.name:
            return f"{self.ref.name} ↔ {self.target.name}"  # as the app, the report and the text say it
        return self.name


@dataclass
class Alignment:
    pairs: list[OpPair] = field(default_factory=list)  # kernels in aligned execution order, then the rest
    warnings: list[Said] = field(default_factory=list)  # report/reasons.py words them
    # at most this many inputs' origins (and ops' wirings) remembered, the oldest forgotten all at once past
    # it (None: all). The app's session keeps its alignment for as long as it runs: a scan asks for an input's
    # origins several times in a row, and once more long after (verdicts in context), when one is cheap to find
    # again (~3 us), where remembering every input of the 20,000-op demo pair took 10 MB.
    remember_at_most: int | None = None

    def __post_init__(self) -> None:
        self.reindex()

    def reindex(self) -> None:
        for i, p in zip(counting(len(self.pairs)), self.pairs):
            p.index = i
        self._by_ref = {p.ref.key: p for p in self.pairs if p.ref is not None}
        self._by_target = {p.target.key: p for p in self.pairs if p.target is not None}
        # id(pair) << 32 | slot -> (pair, where that input comes from on each side): dataflow.origins, asked
        # for several times per input by a scan (its local error, wiring, verdicts in context)
        self.origins_known: dict[int, tuple[OpPair, Origin, Origin]] = {}
        # (id(pair), slots) -> (pair, its inputs' wiring): dataflow.wiring, alike
        self.wiring_known: dict[tuple[int, tuple[int, ...]], tuple[OpPair, tuple[tuple[int, int], ...]]] = {}

    def for_ref(self, key: str) -> OpPair | None:
        return self._by_ref.get(key)

    def for_target(self, key: str) -> OpPair | None:
        return self._by_target.get(key)

    @property
    def kernels(self) -> list[OpPair]:
        return [p for p in self.pairs if p.kind == KERNEL]

    def unpaired(self) -> list[OpPair]:
        return [p for p in self.pairs if not p.paired]

    def counts(self) -> dict[PairedBy, int]:
        out: dict[PairedBy, int] = {}
        for p in self.pairs:
            out[p.how] = out.get(p.how, 0) + 1
        return out


def normalise(name: str) -> str:
    return re.sub(r"[/\\. _]+", "_", name).lower()


_OPN = re.compile(r"-op\d+$")
_H = TypeVar("_H", bound=Hashable)  # what _lcs compares


def _counterless(op: Op) -> str:
    return normalise(_OPN.sub("", op.name))  # spelling-insensitive: raw dumps write `/` as `_`


# (slot, shape) of each input, then of each output: an op's signature when names differ
_SlotShapes = tuple[tuple[int, tuple[int, ...] | None], ...]


def _shapes(op: Op) -> tuple[_SlotShapes, _SlotShapes]:
    return (
        tuple((s, t.shape) for s, t in sorted(op.inputs.items())),
        tuple((s, t.shape) for s, t in sorted(op.outputs.items())),
    )


def read_map_file(path: str) -> list[tuple[str, str]]:
    """(ref name, target name) rows of a CSV map file; ValueError naming the line the csv module cannot split
    (a field beyond its size limit, a NUL byte)."""
    pairs = []
    # a regular file within its limit (safeio): a FIFO or /dev/zero named as a map file is refused, not read
    with text_lines(path, MAX_OPTION_FILE) as fh:
        reader = csv.reader(fh)
        try:
            for row in reader:
                if not row or row[0].strip().startswith("#") or len(row) < 2:
                    continue
                a, b = row[0].strip(), row[1].strip()
                if (a, b) == ("ref_name", "target_name"):
                    continue
                pairs.append((a, b))
        except csv.Error as e:
            raise ValueError(f"line {reader.line_num}: not a CSV line of two names ({e})") from None
    return pairs


def align(ref: Dump, target: Dump, forced: list[tuple[str, str]] | None = None) -> Alignment:
    with no_cyclic_gc():
        return _align(ref, target, forced)


class _Pairing:
    """The pairs made so far, by the ops' ids (an Op hashes by value), shared by the passes of `_align`: each
    pass pairs what the earlier ones left free."""

    def __init__(self, ref_flow: Flow, tgt_flow: Flow):
        self.r_of: dict[int, Op] = {}  # id(ref op) -> target op
        self.how: dict[int, PairedBy] = {}
        self.t_used: set[int] = set()
        self.r_of_t: dict[int, Op] = {}  # id(target op) -> ref op
        self.ref_flow, self.tgt_flow = ref_flow, tgt_flow
        self.graphs = ref_flow.usable and tgt_flow.usable

    def pair(self, r: Op, t: Op, h: PairedBy) -> None:
        self.r_of[id(r)] = t
        self.how[id(r)] = h
        self.t_used.add(id(t))
        self.r_of_t[id(t)] = r

    def free_ref(self, ops: list[Op]) -> list[Op]:
        return [o for o in ops if id(o) not in self.r_of]

    def free_tgt(self, ops: list[Op]) -> list[Op]:
        return [o for o in ops if id(o) not in self.t_used]

    def forced(self, ref_ops: list[Op], tgt_ops: list[Op], forced: list[tuple[str, str]]) -> list[Said]:
        """The map file's pairs (by key or name), first; what could not be paired, said."""
        warnings: list[Said] = []
        rk: dict[str, Op] = {}
        for o in ref_ops:
            rk.setdefault(o.key, o)
            rk.setdefault(o.name, o)
        tk: dict[str, Op] = {}
        for o in tgt_ops:
            tk.setdefault(o.key, o)
            tk.setdefault(o.name, o)
        for a, b in forced:
            r, t = rk.get(a), tk.get(b)
            if r is None or t is None:
                warnings.append(because(Why.MAP_OP_NOT_FOUND, "ref" if r is None else "target", a if r is None else b))
                continue
            if id(r) in self.r_of or id(t) in self.t_used:
                warnings.append(because(Why.MAP_ALREADY_PAIRED, a, b))
                continue
            self.pair(r, t, MAPPED)
        return warnings

    def by_exact_name(self, R: list[Op], T: list[Op]) -> None:
        """1. exact name (key first: it separates graphs and repeated calls)"""
        keys: tuple[Callable[[Op], str], ...] = (lambda o: o.key, lambda o: o.name)
        for keyf in keys:
            idx: dict[str, list[Op]] = {}
            for t in self.free_tgt(T):
                idx.setdefault(keyf(t), []).append(t)
            for r in self.free_ref(R):
                c = [t for t in idx.get(keyf(r), ()) if id(t) not in self.t_used]
                if c:
                    same_graph = [t for t in c if t.graph == r.graph]
                    self.pair(r, (same_graph or c)[0], EXACT)

    def by_counter(self, R: list[Op], T: list[Op]) -> None:
        """3. same scope and type, counters differ: k-th with k-th in execution order"""
        groups_r: dict[str, list[Op]] = {}
        groups_t: dict[str, list[Op]] = {}
        for r in self.free_ref(R):
            groups_r.setdefault(_counterless(r), []).append(r)
        for t in self.free_tgt(T):
            groups_t.setdefault(_counterless(t), []).append(t)
        for g, rs in groups_r.items():
            ts = groups_t.get(g)
            if ts and len(ts) == len(rs):
                for r, t in zip(sorted(rs, key=lambda o: o.order), sorted(ts, key=lambda o: o.order)):
                    self.pair(r, t, COUNTER)

    def by_flow(self, R: list[Op], T: list[Op]) -> None:
        """4. the dataflow: same paired producers and consumers"""
        if self.graphs:
            r_of, r_of_t, t_used = self.r_of, self.r_of_t, self.t_used
            pair_ops(
                R,
                T,
                self.ref_flow,
                self.tgt_flow,
                lambda o: id(o) if id(o) in r_of else None,
                lambda o: id(r_of_t[id(o)]) if id(o) in r_of_t else None,
                lambda o: id(o) not in r_of,
                lambda o: id(o) not in t_used,
                self.pair,
            )


def _align(ref: Dump, target: Dump, forced: list[tuple[str, str]] | None) -> Alignment:
    tgt_ops = target.ops
    ref_ops, fused = fused_groups(ref.ops, tgt_ops)  # a fused target op's ref ops become one group op
    p = _Pairing(Flow(ref_ops, ref.graph), Flow(tgt_ops, target.graph))
    warnings = p.forced(ref_ops, tgt_ops, forced) if forced else []
    for r, t in fused:
        if id(r) not in p.r_of and id(t) not in p.t_used:
            p.pair(r, t, FUSED)

    for kernels in (True, False):
        R = [o for o in ref_ops if (o.kind == KERNEL) is kernels]
        T = [o for o in tgt_ops if (o.kind == KERNEL) is kernels]
        p.by_exact_name(R, T)
        # 2. normalised name, only where it is unambiguous on both sides
        _unique_pairing(
            p.free_ref(R), p.free_tgt(T), lambda o: normalise(o.name), lambda r, t: p.pair(r, t, NORMALISED)
        )
        if R and R[0].kind != KERNEL:
            continue
        p.by_counter(R, T)
        p.by_flow(R, T)
        # 5./6. inside the gaps between pairs: position + type + shapes, then (no graphs) renamed in the same
        # scope with the same input values; then the dataflow again from the pairs made
        _pair_gaps(R, T, p.r_of, p.t_used, p.pair, renames=not p.graphs)
        p.by_flow(R, T)
    if p.graphs:  # 7. groups between the same paired neighbours: each group one op
        ref_ops, tgt_ops = _pair_groups(ref_ops, tgt_ops, p.ref_flow, p.tgt_flow, p.r_of, p.r_of_t, p.t_used, p.pair)

    return Alignment(pairs=_merge_order(ref_ops, tgt_ops, p.r_of, p.how), warnings=warnings)


def _pair_groups(
    ref_ops: list[Op],
    tgt_ops: list[Op],
    ref_flow: Flow,
    tgt_flow: Flow,
    r_of: dict[int, Op],
    r_of_t: dict[int, Op],
    t_used: set[int],
    pair: Callable[[Op, Op, PairedBy], None],
) -> tuple[list[Op], list[Op]]:
    """Groups of unpaired ops between the same paired neighbours, each side's group one op (fusion.group_op);
    the op lists with each group standing where its last member ran."""
    found = pair_groups(
        ref_ops,
        tgt_ops,
        ref_flow,
        tgt_flow,
        lambda o: id(o) if id(o) in r_of else None,
        lambda o: id(r_of_t[id(o)]) if id(o) in r_of_t else None,
        lambda o: id(o) not in r_of,
        lambda o: id(o) not in t_used,
    )
    if not found:
        return ref_ops, tgt_ops
    replace: dict[int, Op | None] = {}
    for rg, tg in found:
        r, t = as_one(rg), as_one(tg)
        for members, one in ((rg, r), (tg, t)):
            for m in members[:-1]:
                replace[id(m)] = None
            replace[id(members[-1])] = one
        pair(r, t, GROUPED)

    def rebuilt(ops: list[Op]) -> list[Op]:
        return [kept for o in ops if (kept := replace.get(id(o), o)) is not None]

    return rebuilt(ref_ops), rebuilt(tgt_ops)


def _inputs_agree(r: Op, t: Op) -> bool:
    """Whether the two ops read the same values (within RENAMED_AGREE) on every input slot both have with one
    shape: what justifies a rename where no graph says where the inputs come from. Unreadable: no."""
    compared = 0
    for slot, a in r.inputs.items():
        b = t.inputs.get(slot)
        if b is None or a.shape is None or a.shape != b.shape or not a.has_data or not b.has_data:
            continue
        try:
            x = np.asarray(a.read(), dtype=np.float64).reshape(-1)
            y = np.asarray(b.read(), dtype=np.float64).reshape(-1)
        except (OSError, ValueError, TypeError):
            return False
        if x.size != y.size:
            return False
        with np.errstate(invalid="ignore", over="ignore"):
            scale = float(np.linalg.norm(x))
            off = float(np.linalg.norm(np.nan_to_num(x - y, nan=np.inf)))
        if not off <= RENAMED_AGREE * max(scale, 1e-30):
            return False
        compared += 1
    return compared > 0


def _unique_pairing(R: list[Op], T: list[Op], keyf: Callable[[Op], str], pair: Callable[[Op, Op], None]) -> None:
    rk: dict[str, list[Op]] = {}
    tk: dict[str, list[Op]] = {}
    for r in R:
        rk.setdefault(keyf(r), []).append(r)
    for t in T:
        tk.setdefault(keyf(t), []).append(t)
    for k, rs in rk.items():
        ts = tk.get(k)
        if ts and len(rs) == 1 and len(ts) == 1:
            pair(rs[0], ts[0])


def _anchors(R: list[Op], r_of: dict[int, Op]) -> list[tuple[Op, Op]]:
    """Pairs that keep execution order on both sides (longest increasing run of target positions)."""
    seq = [(r, r_of[id(r)]) for r in sorted(R, key=lambda o: o.order) if id(r) in r_of]
    if not seq:
        return []
    import bisect as _b

    tails: list[int] = []
    tails_idx: list[int] = []
    prev = [-1] * len(seq)
    for i, (_r, t) in enumerate(seq):
        j = _b.bisect_left(tails, t.order)
        if j == len(tails):
            tails.append(t.order)
            tails_idx.append(i)
        else:
            tails[j] = t.order
            tails_idx[j] = i
        prev[i] = tails_idx[j - 1] if j else -1
    out = []
    k = tails_idx[-1] if tails_idx else -1
    while k >= 0:
        out.append(seq[k])
        k = prev[k]
    return out[::-1]


def _pair_gaps(
    R: list[Op],
    T: list[Op],
    r_of: dict[int, Op],
    t_used: set[int],
    pair: Callable[[Op, Op, PairedBy], None],
    renames: bool = True,
) -> None:
    # Only the unpaired ops matter, and they are few: gaps are found by bisecting their positions.
    import bisect as _b

    free_r = sorted((r for r in R if id(r) not in r_of), key=lambda o: o.order)
    free_t = sorted((t for t in T if id(t) not in t_used), key=lambda o: o.order)
    if not free_r or not free_t:
        return
    r_orders = [r.order for r in free_r]
    t_orders = [t.order for t in free_t]
    anchors = _anchors(R, r_of)
    bounds = [(-1, -1)] + [(r.order, t.order) for r, t in anchors] + [(1 << 60, 1 << 60)]
    for (r_lo, t_lo), (r_hi, t_hi) in zip(bounds, bounds[1:]):
        gr = free_r[_b.bisect_right(r_orders, r_lo) : _b.bisect_left(r_orders, r_hi)]
        gt = free_t[_b.bisect_right(t_orders, t_lo) : _b.bisect_left(t_orders, t_hi)]
        gr = [r for r in gr if id(r) not in r_of]
        gt = [t for t in gt if id(t) not in t_used]
        if not gr or not gt:
            continue
        # position + type + shapes: longest common subsequence on that signature
        sig_r = [(r.op_type, _shapes(r)) for r in gr]
        sig_t = [(t.op_type, _shapes(t)) for t in gt]
        for i, j in _lcs(sig_r, sig_t):
            pair(gr[i], gt[j], POSITION)
        gr = [r for r in gr if id(r) not in r_of]
        gt = [t for t in gt if id(t) not in t_used]
        if not renames or not gr or not gt:
            continue
        # renamed: same scope and shapes, any type, in order, and the same input values
        sig_r = [(r.scope, _shapes(r)) for r in gr]
        sig_t = [(t.scope, _shapes(t)) for t in gt]
        for i, j in _lcs(sig_r, sig_t):
            if _inputs_agree(gr[i], gt[j]):
                pair(gr[i], gt[j], RENAMED)


def _lcs(a: Sequence[_H], b: Sequence[_H]) -> list[tuple[int, int]]:
    """Index pairs of a longest common subsequence (dynamic programming; gaps are short)."""
    n, m = len(a), len(b)
    if n * m > 4_000_000:
        # Very long gap: fall back to greedy in-order matching, linear in practice.
        out: list[tuple[int, int]] = []
        j = 0
        pos: dict[_H, list[int]] = {}
        for jj, v in enumerate(b):
            pos.setdefault(v, []).append(jj)
        for i, v in enumerate(a):
            for jj in pos.get(v, ()):
                if jj >= j:
                    out.append((i, jj))
                    j = jj + 1
                    break
        return out
    dp = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        row, nxt = dp[i], dp[i + 1]
        ai = a[i]
        for j in range(m - 1, -1, -1):
            row[j] = nxt[j + 1] + 1 if ai == b[j] else max(nxt[j], row[j + 1])
    out = []
    i = j = 0
    while i < n and j < m:
        if a[i] == b[j]:
            out.append((i, j))
            i += 1
            j += 1
        elif dp[i + 1][j] >= dp[i][j + 1]:
            i += 1
        else:
            j += 1
    return out


def _merge_order(ref_ops: list[Op], tgt_ops: list[Op], r_of: dict[int, Op], how: dict[int, PairedBy]) -> list[OpPair]:
    """Kernels in the reference's execution order, target-only kernels inserted where the target ran them."""
    rk = [o for o in ref_ops if o.kind == KERNEL]
    tk = sorted((o for o in tgt_ops if o.kind == KERNEL), key=lambda o: o.order)
    paired_t = {id(t) for t in r_of.values()}
    t_only = [t for t in tk if id(t) not in paired_t]
    out: list[OpPair] = []
    ti = 0
    for r in rk:
        t = r_of.get(id(r))
        if t is not None:
            while ti < len(t_only) and t_only[ti].order < t.order:
                out.append(OpPair(None, t_only[ti], ONLY_TARGET))
                ti += 1
            out.append(OpPair(r, t, how[id(r)]))
        else:
            out.append(OpPair(r, None, ONLY_REF))
    out.extend(OpPair(None, t, ONLY_TARGET) for t in t_only[ti:])
    for r in (o for o in ref_ops if o.kind != KERNEL):
        t = r_of.get(id(r))
        out.append(OpPair(r, t, how[id(r)]) if t is not None else OpPair(r, None, ONLY_REF))
    out.extend(OpPair(None, t, ONLY_TARGET) for t in tgt_ops if t.kind != KERNEL and id(t) not in paired_t)
    return out
