"""An op's neighbours in the dataflow graph: its producers (one per input slot) and its consumers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dumptui.core.compare.session import Session
from dumptui.core.graph.align import OpPair
from dumptui.core.graph.dataflow import input_source, producer_pair
from dumptui.core.model.dump import SourceKind


@dataclass(frozen=True)
class Relation:
    direction: str  # "producer" | "consumer"
    slot: int | None  # the input slot a producer feeds
    index: int | None  # pair index to jump to, None when nothing to jump to
    name: str  # op name, or what feeds the input ("parameter conv1.weight", "constant 0.7")


def relations_of(session: Session, pair: OpPair, max_hops: int = 6) -> list[Relation]:
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
        elif src.kind == SourceKind.PARAMETER:
            p = al.for_ref(src.ref) or al.for_target(src.ref)
            out.append(Relation("producer", slot, p.index if p is not None else None, f"parameter {src.ref}"))
        elif src.kind == SourceKind.CONSTANT:
            out.append(Relation("producer", slot, None, f"constant {src.ref}"))
        else:
            out.append(Relation("producer", slot, None, f"op {src.ref} (not dumped)"))
    seen: dict[int, OpPair] = {}
    for dump, op, lookup in ((session.ref, pair.ref, al.for_ref), (session.target, pair.target, al.for_target)):
        g: Any = dump.graph  # a networkx.DiGraph (typed `object` by the engine, which imports networkx lazily)
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
