"""A dump's dataflow graph, frozen into integer arrays once the dump is indexed.

Readers build the graph with networkx (nodes and edges are added as graph files are read), but networkx keeps
three dicts per node and one per edge, for the whole session and in every index cache entry (30 times the
frozen form: docs/speed.md, measurements behind the design). Frozen: the node keys in a list, the adjacency as CSR
arrays of node numbers (successors and predecessors in networkx's insertion order, so every walk visits nodes
in the same order as before), and node and edge attributes as numbers into tables of their distinct values.

`FlowGraph` answers the read-only part of networkx's API that the engine, the app and the tests use (`in`,
`nodes`, `edges`, `successors`, `predecessors`, `has_edge`, the counts); `to_networkx()` makes a mutable
networkx copy for algorithms and for building a new graph from this one. Graph readers build it with a
`FlowGraphBuilder` (networkx's way of adding nodes and edges, in less memory); `FlowGraph.freeze` takes a
networkx graph too. This module never imports networkx at import time: an index loaded from the cache needs none.
"""

from __future__ import annotations

from array import array
from collections.abc import Hashable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from dumptui.core.model.numbers import counting

if TYPE_CHECKING:
    import networkx as nx


def _hashable(value: Any) -> Hashable:
    """A key equal for equal attribute values (lists and dicts included, True apart from 1); unhashable
    values of other types get a key of their own, so they are never shared."""
    if isinstance(value, dict):
        return ("dict", tuple((k, _hashable(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(_hashable(v) for v in value))
    try:
        hash(value)
    except TypeError:
        return ("id", id(value))
    return (type(value).__name__, value)


class _Table:
    """Distinct attribute dicts in first-seen order, each referenced by its number."""

    def __init__(self) -> None:
        self.values: list[dict[str, Any]] = []
        self._index: dict[Hashable, int] = {}

    def ref(self, attrs: dict[str, Any]) -> int:
        key = _hashable(attrs)
        i = self._index.get(key)
        if i is None:
            i = self._index[key] = len(self.values)
            self.values.append(dict(attrs))
        return i


class FlowGraph:
    """A read-only directed graph over op keys (see the module docstring)."""

    __slots__ = ("_keys", "_index", "_succ_ptr", "_succ", "_pred_ptr", "_pred", "_node_attr", "_edge_attr", "_tables")

    def __init__(
        self,
        keys: list[str],
        succ_ptr: array[int],
        succ: array[int],
        pred_ptr: array[int],
        pred: array[int],
        node_attr: array[int],
        edge_attr: array[int],
        tables: tuple[list[dict[str, Any]], list[dict[str, Any]]],
    ):
        self._keys = keys
        self._index = dict(zip(keys, counting(len(keys))))
        self._succ_ptr, self._succ = succ_ptr, succ  # successors of node i: _succ[_succ_ptr[i]:_succ_ptr[i + 1]]
        self._pred_ptr, self._pred = pred_ptr, pred
        self._node_attr = node_attr  # node i's attributes: _tables[0][_node_attr[i]]
        self._edge_attr = edge_attr  # the attributes of the edge at _succ[j]: _tables[1][_edge_attr[j]]
        self._tables = tables

    @classmethod
    def freeze(cls, g: nx.DiGraph | FlowGraph) -> FlowGraph:
        """The frozen copy of a networkx DiGraph (a FlowGraph is returned as it is)."""
        if isinstance(g, FlowGraph):
            return g
        keys = list(g.nodes)
        index = {k: i for i, k in enumerate(keys)}
        node_table, edge_table = _Table(), _Table()
        node_attr = array("i", (node_table.ref(d) for _k, d in g.nodes(data=True)))
        succ_ptr, succ, edge_attr = array("i", [0]), array("i"), array("i")
        pred_ptr, pred = array("i", [0]), array("i")
        adj_succ, adj_pred = g.succ, g.pred
        for k in keys:
            for v, d in adj_succ[k].items():
                succ.append(index[v])
                edge_attr.append(edge_table.ref(d))
            succ_ptr.append(len(succ))
            pred.extend(index[u] for u in adj_pred[k])
            pred_ptr.append(len(pred))
        return cls(keys, succ_ptr, succ, pred_ptr, pred, node_attr, edge_attr, (node_table.values, edge_table.values))

    def share_keys(self, texts: Mapping[str, str]) -> None:
        """Each key that `texts` has as the equal string it maps to (model.dump.share_text)."""
        keys = [texts.get(k, k) for k in self._keys]
        if any(mine is not theirs for mine, theirs in zip(self._keys, keys)):
            self._keys = keys
            self._index = dict(zip(keys, counting(len(keys))))

    def __getstate__(self) -> tuple[Any, ...]:
        # the key -> number index is rebuilt on load: cheaper than storing it
        return (
            self._keys,
            self._succ_ptr,
            self._succ,
            self._pred_ptr,
            self._pred,
            self._node_attr,
            self._edge_attr,
            self._tables,
        )

    def __setstate__(self, state: tuple[Any, ...]) -> None:
        self.__init__(*state)  # type: ignore[misc]  # unpickling rebuilds the graph through its constructor

    def __repr__(self) -> str:
        return f"FlowGraph({self.number_of_nodes()} nodes, {self.number_of_edges()} edges)"

    # ------------------------------------------------------------------ nodes
    def __contains__(self, key: object) -> bool:
        return key in self._index

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)

    def has_node(self, key: str) -> bool:
        return key in self._index

    def number_of_nodes(self) -> int:
        return len(self._keys)

    @property
    def nodes(self) -> _Nodes:
        """Iterable and `in` like networkx's node view; `nodes[k]` and `nodes(data=True)` give attribute dicts."""
        return _Nodes(self)

    def _number(self, key: str) -> int:
        i = self._index.get(key)
        if i is None:
            raise KeyError(f"the node {key!r} is not in the graph")
        return i

    def successors(self, key: str) -> Iterator[str]:
        i = self._number(key)
        keys = self._keys
        return iter([keys[j] for j in self._succ[self._succ_ptr[i] : self._succ_ptr[i + 1]]])

    def predecessors(self, key: str) -> Iterator[str]:
        i = self._number(key)
        keys = self._keys
        return iter([keys[j] for j in self._pred[self._pred_ptr[i] : self._pred_ptr[i + 1]]])

    # ------------------------------------------------------------------ edges
    @property
    def edges(self) -> _Edges:
        """Iterable of (u, v) pairs in networkx's order; `edges(data=True)` adds the attribute dicts."""
        return _Edges(self)

    def number_of_edges(self) -> int:
        return len(self._succ)

    def has_edge(self, u: str, v: str) -> bool:
        i, j = self._index.get(u), self._index.get(v)
        if i is None or j is None:
            return False
        return j in self._succ[self._succ_ptr[i] : self._succ_ptr[i + 1]]

    def _edge_items(self, data: bool) -> Iterator[tuple[Any, ...]]:
        keys, succ, ptr, attr, table = self._keys, self._succ, self._succ_ptr, self._edge_attr, self._tables[1]
        for i, u in enumerate(keys):
            for j in range(ptr[i], ptr[i + 1]):
                yield (u, keys[succ[j]], dict(table[attr[j]])) if data else (u, keys[succ[j]])

    def to_networkx(self) -> nx.DiGraph:
        """A mutable networkx copy, nodes and edges in the same order."""
        import networkx as nx

        g = nx.DiGraph()
        g.add_nodes_from(self.nodes(data=True))
        g.add_edges_from(self._edge_items(True))
        return g


class _Nodes:
    __slots__ = ("_g",)

    def __init__(self, g: FlowGraph):
        self._g = g

    def __iter__(self) -> Iterator[str]:
        return iter(self._g._keys)

    def __len__(self) -> int:
        return len(self._g._keys)

    def __contains__(self, key: object) -> bool:
        return key in self._g._index

    def __getitem__(self, key: str) -> dict[str, Any]:
        g = self._g
        return dict(g._tables[0][g._node_attr[g._number(key)]])

    def __call__(self, data: bool = False) -> list[Any]:
        g = self._g
        if not data:
            return list(g._keys)
        table = g._tables[0]
        return [(k, dict(table[a])) for k, a in zip(g._keys, g._node_attr)]


class _Edges:
    __slots__ = ("_g",)

    def __init__(self, g: FlowGraph):
        self._g = g

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        return self._g._edge_items(False)

    def __len__(self) -> int:
        return self._g.number_of_edges()

    def __contains__(self, edge: object) -> bool:
        return isinstance(edge, tuple) and len(edge) == 2 and self._g.has_edge(*edge)

    def __call__(self, data: bool = False) -> list[tuple[Any, ...]]:
        return list(self._g._edge_items(data))


class FlowGraphBuilder:
    """Builds a FlowGraph with the part of networkx's API that graph readers use (`in`, `add_node(s_from)`,
    `add_edge(s_from)`, with networkx's order and attribute updates), keeping one table number per node and
    per edge instead of networkx's dicts."""

    def __init__(self) -> None:
        self._nodes: dict[Any, int] = {}  # key -> its attributes' number in the node table, in insertion order
        self._edges: dict[tuple[Any, Any], int] = {}  # (u, v) -> its attributes' number, in insertion order
        self._node_table, self._edge_table = _Table(), _Table()

    def __contains__(self, key: object) -> bool:
        return key in self._nodes

    def add_node(self, key: Any, **attrs: Any) -> None:
        known = self._nodes.get(key)
        if known is None:
            self._nodes[key] = self._node_table.ref(attrs)
        elif attrs:
            self._nodes[key] = self._node_table.ref({**self._node_table.values[known], **attrs})

    def add_nodes_from(self, nodes: Iterable[Any]) -> None:
        """Keys, or (key, attribute dict) pairs."""
        for n in nodes:
            if isinstance(n, tuple) and len(n) == 2 and isinstance(n[1], dict):
                self.add_node(n[0], **n[1])
            else:
                self.add_node(n)

    def add_edge(self, u: Any, v: Any, **attrs: Any) -> None:
        for end in (u, v):
            if end not in self._nodes:
                self._nodes[end] = self._node_table.ref({})
        known = self._edges.get((u, v))
        if known is None:
            self._edges[(u, v)] = self._edge_table.ref(attrs)
        elif attrs:
            self._edges[(u, v)] = self._edge_table.ref({**self._edge_table.values[known], **attrs})

    def add_edges_from(self, edges: Iterable[tuple[Any, ...]]) -> None:
        """(u, v) pairs, or (u, v, attribute dict) triples."""
        for e in edges:
            self.add_edge(e[0], e[1], **(e[2] if len(e) == 3 else {}))

    def freeze(self) -> FlowGraph:
        keys = list(self._nodes)
        index = {k: i for i, k in enumerate(keys)}
        succ_of: list[list[tuple[int, int]]] = [[] for _ in keys]
        pred_of: list[list[int]] = [[] for _ in keys]
        for (u, v), attr in self._edges.items():  # insertion order: networkx's order of successors and of predecessors
            i, j = index[u], index[v]
            succ_of[i].append((j, attr))
            pred_of[j].append(i)
        succ_ptr, succ, edge_attr = array("i", [0]), array("i"), array("i")
        pred_ptr, pred = array("i", [0]), array("i")
        for i in range(len(keys)):
            for j, attr in succ_of[i]:
                succ.append(j)
                edge_attr.append(attr)
            succ_ptr.append(len(succ))
            pred.extend(pred_of[i])
            pred_ptr.append(len(pred))
        node_attr = array("i", self._nodes.values())
        return FlowGraph(
            keys,
            succ_ptr,
            succ,
            pred_ptr,
            pred,
            node_attr,
            edge_attr,
            (self._node_table.values, self._edge_table.values),
        )


def as_networkx(g: nx.DiGraph | FlowGraph) -> nx.DiGraph:
    """A networkx graph to run algorithms on or build from (a FlowGraph is copied; a DiGraph is itself)."""
    return g.to_networkx() if isinstance(g, FlowGraph) else g
