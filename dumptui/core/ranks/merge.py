"""Several ranks of a dump as one: every op named `rank_R/...`, so a tree of scopes has the ranks at its top,
and one dataflow graph in which the communication ops join the ranks (the terminal app's `--rank all`).

The ranks' graphs are kept as they are (each rank's nodes prefixed) and joined where data crosses ranks: the
producers of a collective's inputs on every rank feed that collective on every other rank (the k-th of its
group on each), and a Send's producers feed the matching Receive (commorder.py). A bisection over the merged
graph therefore looks for where error is born across ranks, the way a cross-rank report orders them.
The execution order interleaves the ranks by communication epochs: every rank's ops before its k-th
communication op come before any rank's ops after it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from dumptui.core.model.dump import KERNEL, Dump, InputSource, Op, SourceKind
from dumptui.core.model.flowgraph import as_networkx
from dumptui.core.model.reason import Why, because
from dumptui.core.ranks.commorder import CommEvent, RankEvents, comm_events, rank_events, reach

if TYPE_CHECKING:  # imported where ranks are merged: a module that only needs PREFIX does not load networkx
    import networkx as nx

PREFIX = "rank_{rank}/"


def _renamed(op: Op, prefix: str) -> Op:
    sources = {
        slot: InputSource(src.kind, prefix + src.ref, src.slot) if src.kind != SourceKind.CONSTANT else src
        for slot, src in op.sources.items()
    }
    return replace(
        op,
        name=prefix + op.name,
        key=prefix + op.key,
        file_name=prefix + op.file_name,
        sources=sources,
        inputs=dict(op.inputs),
        outputs=dict(op.outputs),
    )


def merge_ranks(dumps: Mapping[str, Dump], path: str) -> Dump:
    """One dump of the ranks `dumps` (rank id -> its dump, in rank order) found at `path`."""
    ranks = list(dumps)
    first = dumps[ranks[0]]
    merged = Dump(
        path=path,
        root=path,
        format=first.format,
        variant=first.variant,
        version=first.version,
        device=first.device,
        rank=",".join(ranks),
        graphs=list(first.graphs),
        iterations=dict(first.iterations),
        order_source=because(Why.RANKS_INTERLEAVED, first.order_source),
        statistics_only=all(d.statistics_only for d in dumps.values()),
        graph_source=first.graph_source,
        flow_inferred=first.flow_inferred,
    )
    kernels_of: dict[int, list[Op]] = {}  # by rank number (communication ops name their peers by number)
    others: list[Op] = []
    import networkx as nx

    graph = nx.DiGraph()
    for index, (rank, dump) in enumerate(dumps.items()):
        prefix = PREFIX.format(rank=rank)
        ops = [_renamed(op, prefix) for op in dump.ops]
        kernels_of[int(rank) if rank.isdigit() else index] = sorted(
            (op for op in ops if op.kind == KERNEL), key=lambda op: op.order
        )
        others += [op for op in ops if op.kind != KERNEL]
        merged.problems += dump.problems
        merged.notes += [because(Why.RANK_NOTE, rank, note) for note in dump.notes]
        merged.parameters.update({prefix + name: weight for name, weight in dump.parameters.items()})
        if dump.graph is not None:
            source = as_networkx(dump.graph)
            graph.update(nx.relabel_nodes(source, {n: prefix + n for n in source.nodes}, copy=True))
        else:
            graph.add_nodes_from((op.key, {"dumped": True, "op_type": op.op_type, "kind": op.kind}) for op in ops)
    events = comm_events(kernels_of)
    _join_ranks(graph, events, kernels_of)
    kernels = _interleaved(kernels_of, {r: [e.position for e in evs] for r, evs in events.events.items()})
    for i, op in enumerate(kernels):
        op.order = i
    merged.ops = kernels + others
    merged.graph = graph if any(d.graph is not None for d in dumps.values()) else None
    merged.freeze()
    merged.notes += events.notes
    return merged


def _join_ranks(graph: nx.DiGraph, events: RankEvents, kernels: Mapping[int, list[Op]]) -> None:
    """Edges from the producers of each communication op's inputs to its counterparts on the other ranks."""
    groups: dict[tuple[object, ...], list[CommEvent]] = {}
    for evs in events.events.values():
        for e in evs:
            groups.setdefault(e.key, []).append(e)
    for members in groups.values():
        for src in members:
            if src.kind == "receive":
                continue
            op = kernels[src.rank][src.position]
            feeders = list(graph.predecessors(op.key)) if op.key in graph else []
            for dst in members:
                if dst.rank == src.rank or (src.kind == "send" and dst.kind != "receive"):
                    continue
                target = kernels[dst.rank][dst.position].key
                graph.add_edges_from((f, target) for f in feeders + ([op.key] if src.kind == "send" else []))


def _interleaved(kernels: Mapping[int, list[Op]], comm_positions: Mapping[int, list[int]]) -> list[Op]:
    """Every rank's kernels in one order: by communication epoch, the communication ops closing each epoch
    after its other ops, then by rank and position."""
    keyed = []
    for rank, ops in kernels.items():
        comms = set(comm_positions.get(rank, ()))
        epoch = 0
        for pos, op in enumerate(ops):
            is_comm = pos in comms
            keyed.append(((epoch, is_comm, rank, pos), op))
            if is_comm:
                epoch += 1
    return [op for _key, op in sorted(keyed, key=lambda item: item[0])]


_RANK_OF = re.compile(r"^rank_([^/]+)/")


def reached_ranks(merged: Dump, op_key: str, at_inputs: bool) -> tuple[str, list[tuple[str, str]]] | None:
    """Where a divergence born at `op_key` of a merged dump goes: (its rank, [(another rank, the
    communication op of that rank it arrives by)]), in rank order; None when the op is of no rank. The same
    order of ranks by their communication ops as the headless every-rank report (commorder.reach)."""
    m = _RANK_OF.match(op_key)
    if m is None:
        return None
    per_rank: dict[str, list[Op]] = {}
    for op in sorted(merged.kernels, key=lambda o: o.order):
        found = _RANK_OF.match(op.key)
        if found is not None:
            per_rank.setdefault(found.group(1), []).append(op)
    ids = {r: int(r) if r.isdigit() else i for i, r in enumerate(per_rank)}
    names = {i: r for r, i in ids.items()}
    events = RankEvents()
    for r, ops in per_rank.items():
        evs, unmatched = rank_events(ids[r], ops)
        events.add(ids[r], evs, unmatched)
    rank = m.group(1)
    position = next((i for i, op in enumerate(per_rank.get(rank, [])) if op.key == op_key), None)
    if position is None:
        return None
    got = reach(events, ids[rank], position - (0.5 if at_inputs else 0))
    return rank, [(names[r], got[r].via) for r in sorted(got) if r != ids[rank]]
