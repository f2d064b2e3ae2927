"""Where an op pair's inputs come from, across both dumps' graphs: another op pair, a parameter, a constant;
whether the target wires them as the reference does; and the ops on one side only that an input went through."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dumptui.core.graph.align import Alignment, OpPair
from dumptui.core.graph.byflow import MAX_DEPTH, PASS_THROUGH
from dumptui.core.model.dump import KERNEL, Dump, InputSource, Op, SourceKind
from dumptui.core.model.reason import Reason, Why, because
from dumptui.core.model.vocab import Word


def input_source(pair: OpPair, slot: int) -> tuple[InputSource | None, InputSource | None]:
    """The graph's source of input `slot` on each side (None where a side has no graph or no such input)."""
    rs = pair.ref.sources.get(slot) if pair.ref else None
    ts = pair.target.sources.get(slot) if pair.target else None
    return rs, ts


def producer_pair(alignment: Alignment, pair: OpPair, slot: int) -> OpPair | None:
    """The op pair whose output feeds this input (via either side's graph)."""
    rs, ts = input_source(pair, slot)
    if rs is not None and rs.kind == SourceKind.OP:
        p = alignment.for_ref(rs.ref)
        if p is not None:
            return p
    if ts is not None and ts.kind == SourceKind.OP:
        return alignment.for_target(ts.ref)
    return None


def unproduced(pair: OpPair, slot: int) -> SourceKind | None:
    """PARAMETER / CONSTANT / INPUT (from outside the dump) when no op produces this input on either side (per
    the graph); None when an op does, or when no graph says."""
    rs, ts = input_source(pair, slot)
    kinds = {s.kind for s in (rs, ts) if s is not None}
    if not kinds or SourceKind.OP in kinds:
        return None
    for k in (SourceKind.PARAMETER, SourceKind.CONSTANT):
        if k in kinds:
            return k
    return SourceKind.INPUT


def consumers(ref: Dump, target: Dump, alignment: Alignment, pair: OpPair) -> list[OpPair]:
    """The paired ops that consume this pair's outputs on either side, in execution order."""
    out: dict[str, OpPair] = {}
    for dump, op, lookup in ((ref, pair.ref, alignment.for_ref), (target, pair.target, alignment.for_target)):
        graph = dump.graph
        if op is None or graph is None or op.key not in graph:
            continue
        for k in graph.successors(op.key):
            p = lookup(k)
            if p is not None and p.paired:
                out.setdefault(p.key, p)
    return sorted(out.values(), key=lambda p: p.index)


def unpaired_neighbour_types(target: Dump, alignment: Alignment, pair: OpPair) -> set[str]:
    """Op types of the target-only ops next to this pair's target op (an inserted Cast says fp16 on the 310)."""
    t = pair.target
    graph = target.graph
    if t is None or graph is None or t.key not in graph:
        return set()
    out: set[str] = set()
    for k in list(graph.predecessors(t.key)) + list(graph.successors(t.key)):
        o = target.op(k)
        p = alignment.for_target(k)
        if o is not None and p is not None and not p.paired:
            out.add(o.op_type)
    return out


class OriginKind(Word):
    """What an `Origin` is."""

    PAIR = "pair"  # an op pair's output
    ONE_SIDED = "one-sided"  # an op on one side only that computes
    OTHER = "other"  # a parameter, a constant, an op not dumped, no graph


@dataclass(frozen=True, slots=True)  # a scan asks for every input's: no __dict__ each
class Origin:
    """Where an input's value comes from, looking through ops that only move or round data on one side."""

    kind: OriginKind
    pair: OpPair | None = None
    out_slot: int = 0
    op: Op | None = None  # the one-sided op


OTHER_ORIGIN = Origin(OriginKind.OTHER)  # one for every input whose origin is "other" (frozen: shared)


def origin(dump: Dump, lookup: Callable[[str], OpPair | None], op: Op, slot: int) -> Origin:
    """The origin of input `slot` of `op` (one side's op) in that side's graph."""
    src = op.sources.get(slot)
    for _ in range(MAX_DEPTH + 1):
        if src is None or src.kind != SourceKind.OP:
            return OTHER_ORIGIN
        p = lookup(src.ref)
        if p is not None and p.paired:
            return Origin(OriginKind.PAIR, p, src.slot)
        prod = dump.op(src.ref)
        if prod is None:
            return OTHER_ORIGIN
        if prod.op_type not in PASS_THROUGH:
            return Origin(OriginKind.ONE_SIDED, op=prod)
        src = min(((s, v) for s, v in prod.sources.items() if v.kind == SourceKind.OP), default=(0, None))[1]
    return OTHER_ORIGIN


def origins(ref: Dump, target: Dump, alignment: Alignment, pair: OpPair, slot: int) -> tuple[Origin, Origin]:
    """Where input `slot` of the pair comes from on each side (remembered by the alignment: its dumps are
    indexed and frozen, so the answer never changes)."""
    key = id(pair) << 32 | slot  # one int, not a tuple of two: the app keeps one entry per input for good
    known = alignment.origins_known.get(key)
    if known is not None and known[0] is pair:
        return known[1], known[2]
    r = origin(ref, alignment.for_ref, pair.ref, slot) if pair.ref is not None else OTHER_ORIGIN
    t = origin(target, alignment.for_target, pair.target, slot) if pair.target is not None else OTHER_ORIGIN
    _remember(alignment, alignment.origins_known, key, (pair, r, t))
    return r, t


def _remember(alignment: Alignment, known: dict[Any, Any], key: Any, value: Any) -> None:
    """`known[key] = value`, all forgotten first when the alignment remembers at most so many."""
    most = alignment.remember_at_most
    if most is not None and len(known) >= most:
        known.clear()
    known[key] = value


def wiring(ref: Dump, target: Dump, alignment: Alignment, pair: OpPair, slots: list[int]) -> list[tuple[int, int]]:
    """(k, j) for each data input k of the target that carries what the reference's input j != k carries (their
    producers pair): the op gets its inputs in another order, or another value in place of one."""
    if pair.ref is None or pair.target is None:
        return []
    key = (id(pair), tuple(slots))
    known = alignment.wiring_known.get(key)
    if known is not None and known[0] is pair:
        return list(known[1])  # remembered: the dumps are frozen, the answer never changes
    out = _wiring(ref, target, alignment, pair, slots)
    _remember(alignment, alignment.wiring_known, key, (pair, tuple(out)))
    return out


def _wiring(ref: Dump, target: Dump, alignment: Alignment, pair: OpPair, slots: list[int]) -> list[tuple[int, int]]:
    found = {s: origins(ref, target, alignment, pair, s) for s in slots}
    by_value = {
        (r.pair.index, r.out_slot): s
        for s, (r, _t) in found.items()
        if r.kind == OriginKind.PAIR and r.pair is not None
    }
    out = []
    for k, (r, t) in found.items():
        if t.kind != OriginKind.PAIR or t.pair is None or r.kind != OriginKind.PAIR or r.pair is None:
            continue
        mine, theirs = (t.pair.index, t.out_slot), (r.pair.index, r.out_slot)
        j = by_value.get(mine)
        if mine != theirs and j is not None and j != k:
            out.append((k, j))
    return out


def one_sided_origins(ref: Dump, target: Dump, alignment: Alignment, pair: OpPair, slot: int) -> list[tuple[str, Op]]:
    """The ops on one side only that compute input `slot` ("reference"/"target", op): what an error carried in
    there went through without being judged."""
    r, t = origins(ref, target, alignment, pair, slot)
    return [
        (side, o.op)
        for side, o in (("reference", r), ("target", t))
        if o.kind == OriginKind.ONE_SIDED and o.op is not None
    ]


def unjudged_origins(ref: Dump, target: Dump, alignment: Alignment, pair: OpPair, slot: int) -> list[Reason]:
    """Where input `slot` comes from without having been judged (reasons to word): an op on one side only that
    computes it, or an op pair whose output it is, that output missing on one side (not dumped, or a file
    that could not be read or placed). What such an input carries is never known to be noise."""
    out = [
        because(Why.THROUGH_ONE_SIDED_OP, side, op.name)
        for side, op in one_sided_origins(ref, target, alignment, pair, slot)
    ]
    seen: set[tuple[int, int]] = set()
    for o in origins(ref, target, alignment, pair, slot):
        p = o.pair
        if o.kind != OriginKind.PAIR or p is None or (p.index, o.out_slot) in seen:
            continue
        seen.add((p.index, o.out_slot))
        missing = [
            side
            for side, op in (("reference", p.ref), ("target", p.target))
            if op is None or o.out_slot not in op.outputs
        ]
        if missing:
            out.append(because(Why.OUTPUT_NOT_HELD, p.name, o.out_slot, tuple(missing)))
    return out


def unjudged_sinks(ref: Dump, alignment: Alignment, judged: set[int]) -> list[Reason]:
    """Ops of the reference that compute and end its graph (nothing consumes them: the network's outputs) but
    could not be judged: dumped in the reference only (the target's files lost) or without outputs on both
    sides. Whether the network diverges there is not known, so no answer may be "no divergence" for them.
    (An op the target alone has whose output nothing reads, such as an adapter left unused, is not one: the
    reference defines the network's outputs.) `judged`: the indices of the op pairs compared."""
    out: list[Reason] = []
    graph = ref.graph
    if graph is None:
        return out
    for p in alignment.pairs:
        op = p.ref
        if p.kind != KERNEL or p.index in judged or op is None or op.op_type in PASS_THROUGH or op.key not in graph:
            continue
        if next(iter(graph.successors(op.key)), None) is None:  # nothing reads it: a network output
            out.append(because(Why.SINK_UNJUDGED, op.name, p.paired))
    return out
