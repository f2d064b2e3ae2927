"""Where an op pair's inputs come from, across both dumps' graphs: another op pair, a parameter, a constant."""

from __future__ import annotations

from dumptui.core.graph.align import Alignment, OpPair
from dumptui.core.model.dump import Dump, InputSource


def input_source(pair: OpPair, slot: int) -> tuple[InputSource | None, InputSource | None]:
    """The graph's source of input `slot` on each side (None where a side has no graph or no such input)."""
    rs = pair.ref.sources.get(slot) if pair.ref else None
    ts = pair.target.sources.get(slot) if pair.target else None
    return rs, ts


def producer_pair(alignment: Alignment, pair: OpPair, slot: int) -> OpPair | None:
    """The op pair whose output feeds this input (via either side's graph)."""
    rs, ts = input_source(pair, slot)
    if rs is not None and rs.kind == "op":
        p = alignment.for_ref(rs.ref)
        if p is not None:
            return p
    if ts is not None and ts.kind == "op":
        return alignment.for_target(ts.ref)
    return None


def unproduced(pair: OpPair, slot: int) -> str | None:
    """'parameter' / 'constant' / 'input from outside the dump' when no op produces this input on either
    side (per the graph); None when an op does, or when no graph says."""
    rs, ts = input_source(pair, slot)
    kinds = {s.kind for s in (rs, ts) if s is not None}
    if not kinds or "op" in kinds:
        return None
    for k in ("parameter", "constant"):
        if k in kinds:
            return k
    return "input from outside the dump"


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
