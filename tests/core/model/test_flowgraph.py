"""The frozen dataflow graph answers like the networkx graph it was made from: same nodes, edges, attributes,
neighbours, in the same order, also after a trip through pickle (the index cache)."""

from __future__ import annotations

import pickle
import random

import networkx as nx
import pytest

from dumptui.core.model.flowgraph import FlowGraph, FlowGraphBuilder, as_networkx


def _random_graph(seed: int) -> nx.DiGraph:
    rnd = random.Random(seed)
    g = nx.DiGraph()
    keys = [f"Default/net/Op{i}-op{i}" for i in range(300)]
    for k in keys:
        kind = rnd.choice(["kernel", "parameter"])
        attrs = {"dumped": rnd.random() < 0.8, "kind": kind}
        if rnd.random() < 0.7:
            attrs["op_type"] = rnd.choice(["Conv2D", "Add", "MatMul"])
        g.add_node(k, **attrs)
    for _ in range(700):
        u, v = rnd.sample(keys, 2)
        g.add_edge(u, v, slots=[(rnd.randrange(3), rnd.randrange(3)) for _ in range(rnd.randrange(1, 3))])
    g.add_node("lonely")  # no attributes, no edges
    g.add_edge(keys[0], keys[1], weight=1)  # True and 1 stay apart in the shared tables
    g.add_edge(keys[2], keys[3], weight=True)
    return g


@pytest.mark.parametrize("seed", [0, 1])
def test_frozen_graph_answers_like_networkx(seed):
    g = _random_graph(seed)
    for f in (FlowGraph.freeze(g), pickle.loads(pickle.dumps(FlowGraph.freeze(g)))):
        assert list(f.nodes) == list(g.nodes) and list(f) == list(g) and len(f) == len(g)
        assert f.nodes(data=True) == list(g.nodes(data=True))
        assert f.edges(data=True) == list(g.edges(data=True))
        assert list(f.edges) == list(g.edges) and f.number_of_edges() == g.number_of_edges()
        for n in g.nodes:
            assert n in f and f.has_node(n) and f.nodes[n] == g.nodes[n]
            assert list(f.successors(n)) == list(g.successors(n))
            assert list(f.predecessors(n)) == list(g.predecessors(n))
        keys = list(g.nodes)
        for u in keys[:40]:
            for v in keys[:40]:
                assert f.has_edge(u, v) == g.has_edge(u, v)
        assert type(f.edges(data=True)[0][2]) is dict
        back = f.to_networkx()
        assert list(back.nodes(data=True)) == list(g.nodes(data=True))
        assert list(back.edges(data=True)) == list(g.edges(data=True))
        edge = next(iter(g.edges))
        assert edge in f.edges and ("nowhere", "lonely") not in f.edges
    f = FlowGraph.freeze(g)
    assert f.edges(data=True)[0][2] is not f.edges(data=True)[0][2]  # a copy: the frozen table is not changed
    assert "nowhere" not in f and not f.has_edge("nowhere", "lonely")
    with pytest.raises(KeyError, match="nowhere"):
        f.successors("nowhere")


def test_attribute_values_are_stored_once_each():
    g = _random_graph(2)
    f = FlowGraph.freeze(g)
    node_table, edge_table = f._tables
    distinct_nodes = {repr(sorted(d.items())) for _n, d in g.nodes(data=True)}
    distinct_edges = {repr(sorted(d.items())) for _u, _v, d in g.edges(data=True)}
    assert len(node_table) == len(distinct_nodes) < g.number_of_nodes() // 10
    assert len(edge_table) == len(distinct_edges) < g.number_of_edges() // 4


def test_freeze_and_as_networkx_leave_their_own_kind_alone():
    g = nx.DiGraph([("a", "b")])
    f = FlowGraph.freeze(g)
    assert FlowGraph.freeze(f) is f and as_networkx(g) is g
    assert list(as_networkx(f).edges) == [("a", "b")]
    assert repr(f) == "FlowGraph(2 nodes, 1 edges)"


@pytest.mark.parametrize("seed", [3, 4])
def test_the_builder_makes_what_networkx_makes(seed):
    """The same calls on a builder and on networkx, attribute updates and edges to new nodes included."""
    rnd = random.Random(seed)
    g, b = nx.DiGraph(), FlowGraphBuilder()
    keys = [f"n{i}" for i in range(120)]
    for _ in range(900):
        what = rnd.random()
        if what < 0.25:
            k, attrs = rnd.choice(keys), {rnd.choice("abc"): rnd.choice([1, True, "x", [1, 2]])}
            g.add_node(k, **attrs)
            b.add_node(k, **attrs)
        elif what < 0.35:
            batch = [rnd.choice(keys) for _ in range(3)] + [(rnd.choice(keys), {"dumped": rnd.random() < 0.5})]
            g.add_nodes_from(batch)
            b.add_nodes_from(batch)
        elif what < 0.8:
            u, v, attrs = rnd.choice(keys), rnd.choice(keys), {"slots": [(0, rnd.randrange(3))]}
            g.add_edge(u, v, **attrs)
            b.add_edge(u, v, **attrs)
        else:
            batch = [(rnd.choice(keys), rnd.choice(keys))] + [(rnd.choice(keys), rnd.choice(keys), {"w": rnd.random()})]
            g.add_edges_from(batch)
            b.add_edges_from(batch)
        probe = rnd.choice(keys)
        assert (probe in b) == (probe in g)
    built, frozen = b.freeze(), FlowGraph.freeze(g)
    assert built.nodes(data=True) == frozen.nodes(data=True) == list(g.nodes(data=True))
    assert built.edges(data=True) == list(g.edges(data=True))
    for n in g.nodes:
        assert list(built.successors(n)) == list(g.successors(n))
        assert list(built.predecessors(n)) == list(g.predecessors(n))
