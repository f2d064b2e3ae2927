"""Dataflow between the ops of one dump, as a networkx DiGraph over op keys.

Edges come from a graph file (text IR or protobuf): for each kernel argument we look through virtual nodes
(Load, TupleGetItem, Depend, ...) to the kernel or parameter that really produced the value. Producers that
were not dumped (a filtered dump) stay in the graph as nodes with `dumped=False`, so ancestry is not cut.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from functools import partial
from typing import Any

import networkx as nx

from .ir import IRArg, IRGraph, IRNode
from .model import KERNEL, PARAMETER, Dump, InputSource

# IR parameter name -> the key of the dumped parameter op, or None
ParamKey = Callable[[str], str | None]


class LazyAttrs(Mapping[str, str]):
    """An op's graph attributes, parsed from the graph node only when first looked at."""

    def __init__(self, node: IRNode):
        self._node = node

    def __getitem__(self, k: str) -> str:
        return self._node.attrs[k]

    def __iter__(self) -> Iterator[str]:
        return iter(self._node.attrs)

    def __len__(self) -> int:
        return len(self._node.attrs)


def _tuple_index(text: str) -> int | None:
    # I64(1), 1, Int64(1)
    t = text.strip()
    if "(" in t:
        t = t[t.find("(") + 1 : t.rfind(")")]
    try:
        return int(t)
    except ValueError:
        return None


def resolve_source(ir: IRGraph, arg: IRArg, full_to_key: dict[str, str], depth: int = 0) -> InputSource:
    """Follow an IR argument to the op output or parameter that produces it."""
    if arg.kind == "param":
        return InputSource("parameter", arg.ref)
    if arg.kind == "const":
        return InputSource("constant", arg.ref)
    node = ir.nodes.get(arg.ref)
    if node is None or depth > 64:
        return InputSource("constant", f"%{arg.ref}")
    if node.virtual:
        if node.op_type in ("TupleGetItem", "tuple_getitem", "RealTupleGetItem", "ListGetItem") and len(node.args) >= 2:
            inner = resolve_source(ir, node.args[0], full_to_key, depth + 1)
            idx = _tuple_index(node.args[1].ref)
            if inner.kind == "op" and idx is not None:
                return InputSource("op", inner.ref, idx)
            return inner
        if node.args:
            return resolve_source(ir, node.args[0], full_to_key, depth + 1)
        return InputSource("constant", node.op_type)
    key = full_to_key.get(node.full_name, node.full_name or f"%{node.node_id}")
    return InputSource("op", key, 0)


def attach_ir(dump: Dump, ir: IRGraph, graph_id: str, g: nx.DiGraph, param_key: ParamKey) -> None:
    """Fill `sources`, `attrs`, `code` of the dump's ops of graph `graph_id` from `ir`, and add edges to `g`.

    Each edge remembers which output slot feeds which input slot (`slots`). `param_key(name)` maps an IR
    parameter name to the key of the dumped parameter op (or None).
    """
    kernels = [op for op in dump.ops if op.kind == KERNEL and op.graph == graph_id]
    full_to_key = {op.name: op.key for op in kernels}
    new_nodes: dict[str, dict[str, Any]] = {}
    for node in ir.nodes.values():
        if node.virtual or not node.full_name:
            continue
        key = full_to_key.get(node.full_name, node.full_name)
        if key not in g and key not in new_nodes:
            new_nodes[key] = dict(dumped=key in full_to_key, op_type=node.op_type, kind=KERNEL)
    edges: dict[tuple[str, str], list[tuple[int, int]]] = {}
    by_key = {op.key: op for op in kernels}
    # every kernel of the graph, dumped or not: a filtered dump keeps its ancestry through undumped kernels
    for node in ir.nodes.values():
        if node.virtual or not node.full_name:
            continue
        key = full_to_key.get(node.full_name, node.full_name)
        op = by_key.get(key)
        if op is not None:
            op.attrs = LazyAttrs(node)
            op.code = node.code
        for slot, arg in enumerate(node.args):
            src = resolve_source(ir, arg, full_to_key)
            if op is not None:
                op.sources[slot] = src
            if src.kind == "op":
                if src.ref not in g and src.ref not in new_nodes:
                    new_nodes[src.ref] = dict(dumped=False, kind=KERNEL)
                edges.setdefault((src.ref, key), []).append((src.slot, slot))
            elif src.kind == "parameter":
                pk = param_key(src.ref) or f"param:{src.ref}"
                if pk not in g and pk not in new_nodes:
                    new_nodes[pk] = dict(dumped=dump.op(pk) is not None, kind=PARAMETER)
                edges.setdefault((pk, key), []).append((0, slot))
    # networkx adds in bulk much faster than edge by edge
    g.add_nodes_from(new_nodes.items())
    g.add_edges_from((u, v, {"slots": slots}) for (u, v), slots in edges.items())


def dataflow_graph(dump: Dump, irs: Mapping[str, IRGraph], param_key: Callable[[str, str], str | None]) -> nx.DiGraph:
    """The dump's dataflow from its graph files (graph id -> IR), filling its ops' `sources`, `attrs`, `code`.

    Every op of the dump is a node, graph or not; `param_key(graph_id, name)` maps an IR parameter of that graph
    to the key of the dumped parameter op (or None).
    """
    g = nx.DiGraph()
    for op in dump.ops:
        g.add_node(op.key, dumped=True, op_type=op.op_type, kind=op.kind)
    for graph_id, ir in irs.items():
        attach_ir(dump, ir, graph_id, g, partial(param_key, graph_id))
    return g


def topological_order(g: nx.DiGraph) -> list[str]:
    try:
        return list(nx.lexicographical_topological_sort(g))
    except nx.NetworkXUnfeasible:
        return list(g.nodes)


def consumers(dump: Dump, key: str) -> list[str]:
    g = dump.graph
    if g is None or key not in g:
        return []
    return list(g.successors(key))


def producers(dump: Dump, key: str) -> list[str]:
    g = dump.graph
    if g is None or key not in g:
        return []
    return list(g.predecessors(key))
