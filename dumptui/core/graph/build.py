"""Dataflow between the ops of one dump, as a FlowGraph over op keys (flowgraph.py).

Edges come from a graph file (text IR or protobuf): for each kernel argument we look through virtual nodes
(Load, TupleGetItem, Depend, ...) to the kernel or parameter that really produced the value. Producers that
were not dumped (a filtered dump) stay in the graph as nodes with `dumped=False`, so ancestry is not cut.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

from dumptui.core.io.indexing_progress import Stage, counted
from dumptui.core.model.dump import KERNEL, PARAMETER, Dump, InputSource, SourceKind
from dumptui.core.model.flowgraph import FlowGraph, FlowGraphBuilder
from dumptui.core.model.ir import IRArg, IRGraph, IRNode

if TYPE_CHECKING:  # imported where a graph is built: an index loaded from the cache needs no networkx
    pass

# IR parameter name -> the key of the dumped parameter op, or None
ParamKey = Callable[[str], str | None]


class LazyAttrs(Mapping[str, str]):
    """An op's graph attributes, parsed from the graph file's text only when first looked at.

    It holds the parse call, not the graph node (whose arguments and type lines are of no use once the dataflow
    is known), and ops whose nodes have the same attribute text share one (see `_attrs_for`)."""

    __slots__ = ("_parse", "_attrs")

    def __init__(self, parse: Callable[[], dict[str, str]]):
        self._parse: Callable[[], dict[str, str]] | None = parse
        self._attrs: dict[str, str] | None = None

    def _parsed(self) -> dict[str, str]:
        if self._attrs is None:
            assert self._parse is not None  # dropped only once parsed
            self._attrs = self._parse()
            self._parse = None
        return self._attrs

    def __getitem__(self, k: str) -> str:
        return self._parsed()[k]

    def __iter__(self) -> Iterator[str]:
        return iter(self._parsed())

    def __len__(self) -> int:
        return len(self._parsed())


def _attrs_for(node: IRNode, shared: dict[Hashable, Mapping[str, str]]) -> Mapping[str, str]:
    """The attributes an op keeps of its graph node: one read-only mapping per distinct attribute text (or
    parsed attribute set), shared by all the ops that have it."""
    parse = node.attrs_parser()
    key: Hashable = parse if parse is not None else tuple(node.attrs.items())
    found = shared.get(key)
    if found is None:
        found = shared[key] = LazyAttrs(parse) if parse is not None else dict(node.attrs)
    return found


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
        return InputSource(SourceKind.PARAMETER, arg.ref)
    if arg.kind == "const":
        return InputSource(SourceKind.CONSTANT, arg.ref)
    node = ir.nodes.get(arg.ref)
    if node is None or depth > 64:
        return InputSource(SourceKind.CONSTANT, f"%{arg.ref}")
    if node.virtual:
        if node.op_type in ("TupleGetItem", "tuple_getitem", "RealTupleGetItem", "ListGetItem") and len(node.args) >= 2:
            inner = resolve_source(ir, node.args[0], full_to_key, depth + 1)
            idx = _tuple_index(node.args[1].ref)
            if inner.kind == SourceKind.OP and idx is not None:
                return InputSource(SourceKind.OP, inner.ref, idx)
            return inner
        if node.args:
            return resolve_source(ir, node.args[0], full_to_key, depth + 1)
        return InputSource(SourceKind.CONSTANT, node.op_type)
    key = full_to_key.get(node.full_name, node.full_name or f"%{node.node_id}")
    return InputSource(SourceKind.OP, key, 0)


def attach_ir(dump: Dump, ir: IRGraph, graph_id: str, g: FlowGraphBuilder, param_key: ParamKey) -> None:
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
    shared_attrs: dict[Hashable, Mapping[str, str]] = {}
    shared_code: dict[tuple[str, ...], Sequence[str]] = {}
    # every kernel of the graph, dumped or not: a filtered dump keeps its ancestry through undumped kernels
    for node in counted(Stage.DATAFLOW, ir.nodes.values(), len(ir.nodes)):
        if node.virtual or not node.full_name:
            continue
        key = full_to_key.get(node.full_name, node.full_name)
        op = by_key.get(key)
        if op is not None:
            op.attrs = _attrs_for(node, shared_attrs)
            op.code = shared_code.setdefault(tuple(node.code), node.code)  # the same lines, one list
        for slot, arg in enumerate(node.args):
            src = resolve_source(ir, arg, full_to_key)
            if op is not None:
                op.put_source(slot, src)
            if src.kind == SourceKind.OP:
                if src.ref not in g and src.ref not in new_nodes:
                    new_nodes[src.ref] = dict(dumped=False, kind=KERNEL)
                edges.setdefault((src.ref, key), []).append((src.slot, slot))
            elif src.kind == SourceKind.PARAMETER:
                pk = param_key(src.ref) or f"param:{src.ref}"
                if pk not in g and pk not in new_nodes:
                    new_nodes[pk] = dict(dumped=dump.op(pk) is not None, kind=PARAMETER)
                edges.setdefault((pk, key), []).append((0, slot))
    g.add_nodes_from(new_nodes.items())
    g.add_edges_from((u, v, {"slots": slots}) for (u, v), slots in edges.items())


def dataflow_graph(dump: Dump, irs: Mapping[str, IRGraph], param_key: Callable[[str, str], str | None]) -> FlowGraph:
    """The dump's dataflow from its graph files (graph id -> IR), filling its ops' `sources`, `attrs`, `code`.

    Every op of the dump is a node, graph or not; `param_key(graph_id, name)` maps an IR parameter of that graph
    to the key of the dumped parameter op (or None).
    """
    g = FlowGraphBuilder()
    for op in dump.ops:
        g.add_node(op.key, dumped=True, op_type=op.op_type, kind=op.kind)
    for graph_id, ir in irs.items():
        attach_ir(dump, ir, graph_id, g, partial(param_key, graph_id))
    return g.freeze()


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
