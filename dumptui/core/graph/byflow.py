"""Pairing ops by dataflow, for what names leave unpaired in a compiled graph.

An op pairs with the op of the other dump that sits between the same paired producers and consumers: a vendor
kernel renamed (`Custom` for `ReduceSum`), an op run at another place in the execution order (a branch moved),
an op of another definition (`Mod` for `FloorMod`). A group of ops pairs with one op, or with another group,
between the same paired neighbours: a chain fused into one kernel (erf-GeLU's five ops, one tanh-GeLU), a
BatchNorm folded into the convolution before it (the target's BiasAdd stands where the reference's BatchNorm
stood). The group is compared where both graphs carry the same value again: at its inputs and its output.

Ops that only move or round data (`PASS_THROUGH`: the Casts a device inserts around an fp32 kernel) are looked
through when neighbours are compared, and never paired with an op that computes. Two ops are never paired on
scope and shapes alone: when their types differ, both their producers and their consumers must pair.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable

from dumptui.core.graph.fusion import group_op
from dumptui.core.graph.pairedby import PairedBy
from dumptui.core.model.dump import KERNEL, Op

DATAFLOW, DATAFLOW_RETYPED, GROUPED = PairedBy.DATAFLOW, PairedBy.DATAFLOW_RETYPED, PairedBy.GROUPED
PASS_THROUGH = frozenset({"Cast", "TensorMove", "Identity", "Depend", "Load", "Reshape", "ExpandDims", "Squeeze"})
MAX_DEPTH = 8  # pass-through ops looked through in a row
MAX_GROUP = 32  # ops in one group (a fused kernel stands for a handful)

# (paired producers, paired consumers, an unpaired producer that computes, an unpaired consumer that computes)
Signature = tuple[frozenset[int], frozenset[int], bool, bool]


class Flow:
    """One dump's ops and graph, as the pairing walks them."""

    def __init__(self, ops: Iterable[Op], graph: object | None):
        self.by_key = {o.key: o for o in ops if o.kind == KERNEL}
        self.graph = graph

    @property
    def usable(self) -> bool:
        return self.graph is not None

    def producers(self, op: Op) -> list[Op | None]:
        found = [self.by_key.get(s.ref) for _slot, s in sorted(op.sources.items()) if s.kind == "op"]
        if not op.sources and self.graph is not None and op.key in self.graph:  # type: ignore[operator]
            found = [self.by_key.get(k) for k in self.graph.predecessors(op.key)]  # type: ignore[attr-defined]
        return found

    def consumers(self, op: Op) -> list[Op | None]:
        if self.graph is None or op.key not in self.graph:  # type: ignore[operator]
            return []
        return [self.by_key.get(k) for k in self.graph.successors(op.key)]  # type: ignore[attr-defined]

    def neighbours(self, op: Op, upstream: bool) -> list[Op | None]:
        return self.producers(op) if upstream else self.consumers(op)


def images(
    flow: Flow, op: Op, upstream: bool, paired: Callable[[Op], int | None], inside: frozenset[int] = frozenset()
) -> tuple[set[int], bool]:
    """The pairs (by their reference op's id) next to `op` upstream or downstream, looking through unpaired
    pass-through ops; and whether an unpaired op that computes is next to it. Ops in `inside` (a group's own
    members) are neither."""
    found: set[int] = set()
    free = False
    stack = [(n, 0) for n in flow.neighbours(op, upstream)]
    seen: set[int] = set()
    while stack:
        n, depth = stack.pop()
        if n is None or id(n) in seen or id(n) in inside:
            continue
        seen.add(id(n))
        p = paired(n)
        if p is not None:
            found.add(p)
        elif n.op_type in PASS_THROUGH and depth < MAX_DEPTH:
            stack.extend((m, depth + 1) for m in flow.neighbours(n, upstream))
        else:
            free = True
    return found, free


def _signature(flow: Flow, op: Op, paired: Callable[[Op], int | None]) -> Signature | None:
    prods, free_p = images(flow, op, True, paired)
    cons, free_c = images(flow, op, False, paired)
    if not prods and not cons:
        return None
    return frozenset(prods), frozenset(cons), free_p, free_c


def _out_shape(op: Op) -> tuple | None:
    t = op.outputs.get(0)
    return t.shape if t is not None else None


def _compatible(r: Op, t: Op, sig: Signature) -> PairedBy | None:
    """How the two may pair (DATAFLOW or DATAFLOW_RETYPED), or None."""
    if r.op_type in PASS_THROUGH or t.op_type in PASS_THROUGH:
        return None
    rs, ts = _out_shape(r), _out_shape(t)
    if rs is not None and ts is not None and rs != ts:
        return None
    if r.op_type == t.op_type:
        return DATAFLOW
    prods, cons, _fp, _fc = sig
    return DATAFLOW_RETYPED if prods and cons else None  # another type: between the same ops on both sides


def pair_ops(
    ref_ops: list[Op],
    tgt_ops: list[Op],
    ref_flow: Flow,
    tgt_flow: Flow,
    ref_paired: Callable[[Op], int | None],
    tgt_paired: Callable[[Op], int | None],
    is_free_ref: Callable[[Op], bool],
    is_free_tgt: Callable[[Op], bool],
    pair: Callable[[Op, Op, PairedBy], None],
) -> int:
    """One-to-one pairs between the same paired neighbours, repeated until no more are found (each pair made
    can place its neighbours). Returns how many were made."""
    made = 0
    while True:
        by_sig_r: dict[Signature, list[Op]] = defaultdict(list)
        by_sig_t: dict[Signature, list[Op]] = defaultdict(list)
        for r in ref_ops:
            if r.kind == KERNEL and is_free_ref(r) and r.op_type not in PASS_THROUGH:
                s = _signature(ref_flow, r, ref_paired)
                if s is not None:
                    by_sig_r[s].append(r)
        for t in tgt_ops:
            if t.kind == KERNEL and is_free_tgt(t) and t.op_type not in PASS_THROUGH:
                s = _signature(tgt_flow, t, tgt_paired)
                if s is not None:
                    by_sig_t[s].append(t)
        new = 0
        for sig, rs in by_sig_r.items():
            ts = by_sig_t.get(sig)
            if not ts:
                continue
            if len(rs) == 1 and len(ts) == 1:
                candidates = [(rs[0], ts[0])]
            else:  # several between the same neighbours (parallel ops): only those of a type found once each
                kinds_r = defaultdict(list)
                kinds_t = defaultdict(list)
                for r in rs:
                    kinds_r[(r.op_type, _out_shape(r))].append(r)
                for t in ts:
                    kinds_t[(t.op_type, _out_shape(t))].append(t)
                candidates = [
                    (kinds_r[k][0], kinds_t[k][0])
                    for k in kinds_r
                    if len(kinds_r[k]) == 1 and len(kinds_t.get(k, ())) == 1
                ]
            for r, t in candidates:
                how = _compatible(r, t, sig)
                if how is not None:
                    pair(r, t, how)
                    new += 1
        made += new
        if not new:
            return made


def _components(ops: list[Op], flow: Flow, is_free: Callable[[Op], bool]) -> list[list[Op]]:
    """Connected groups of unpaired ops that compute (joined directly or through unpaired pass-through ops)."""
    free = [o for o in ops if o.kind == KERNEL and is_free(o) and o.op_type not in PASS_THROUGH]
    members = {id(o): o for o in free}
    parent = {id(o): id(o) for o in free}

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for o in free:
        stack = [(n, 0) for n in flow.consumers(o)]
        seen: set[int] = set()
        while stack:
            n, depth = stack.pop()
            if n is None or id(n) in seen:
                continue
            seen.add(id(n))
            if id(n) in members:
                parent[find(id(n))] = find(id(o))
            elif is_free(n) and n.op_type in PASS_THROUGH and depth < MAX_DEPTH:
                stack.extend((m, depth + 1) for m in flow.consumers(n))
    groups: dict[int, list[Op]] = defaultdict(list)
    for o in free:
        groups[find(id(o))].append(o)
    return [sorted(g, key=lambda o: o.order) for g in groups.values() if len(g) <= MAX_GROUP]


def _group_signature(flow: Flow, group: list[Op], paired: Callable[[Op], int | None]) -> Signature | None:
    inside = frozenset(id(o) for o in group)
    prods: set[int] = set()
    cons: set[int] = set()
    for o in group:
        p, free_p = images(flow, o, True, paired, inside)
        c, free_c = images(flow, o, False, paired, inside)
        if free_p or free_c:
            return None  # an unpaired op that computes next to the group: its boundary is not known
        prods |= p
        cons |= c
    if not prods or not cons:
        return None
    return frozenset(prods), frozenset(cons), False, False


def pair_groups(
    ref_ops: list[Op],
    tgt_ops: list[Op],
    ref_flow: Flow,
    tgt_flow: Flow,
    ref_paired: Callable[[Op], int | None],
    tgt_paired: Callable[[Op], int | None],
    is_free_ref: Callable[[Op], bool],
    is_free_tgt: Callable[[Op], bool],
) -> list[tuple[list[Op], list[Op]]]:
    """Groups of unpaired ops (at least one side several) between the same paired producers and consumers,
    each group found once on each side: (reference members, target members), in execution order."""
    by_sig_r: dict[Signature, list[list[Op]]] = defaultdict(list)
    by_sig_t: dict[Signature, list[list[Op]]] = defaultdict(list)
    for g in _components(ref_ops, ref_flow, is_free_ref):
        s = _group_signature(ref_flow, g, ref_paired)
        if s is not None:
            by_sig_r[s].append(g)
    for g in _components(tgt_ops, tgt_flow, is_free_tgt):
        s = _group_signature(tgt_flow, g, tgt_paired)
        if s is not None:
            by_sig_t[s].append(g)
    out = []
    for sig, rgs in by_sig_r.items():
        tgs = by_sig_t.get(sig, [])
        if len(rgs) == 1 and len(tgs) == 1 and (len(rgs[0]) > 1 or len(tgs[0]) > 1):
            out.append((rgs[0], tgs[0]))
    return out


def as_one(members: list[Op]) -> Op:
    """One op for a group's members (itself when alone)."""
    return members[0] if len(members) == 1 else group_op(members)
