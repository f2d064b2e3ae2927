"""Search strategies: how a good or bad probe narrows the candidates, and which op to probe next.

- `LinearStrategy`: the classic interval [last known good, first known bad] over the aligned execution order.
- `GraphStrategy`: over the dataflow graph of the probe-able pairs (both dumps' graphs mapped through the
  alignment): a bad probe keeps only its own ancestors, a good probe clears its ancestors. Tighter than an
  interval where parallel branches exist (Polygraphy's `reduce` markers work the same way).
Both answer the same questions, so the bisection never asks which one it has.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from dumptui.core.compare.session import Session
from dumptui.core.graph.align import OpPair
from dumptui.core.model.reason import Reason, Why, because
from dumptui.core.search.bisect.types import StrategyName

if TYPE_CHECKING:
    import networkx as nx

    from dumptui.core.model.flowgraph import FlowGraph

N_MIDDLE = 4  # graph probes: this many candidates either side of the median are scored


class PairDag:
    """Edges between probe positions 0..n-1, each node's successors and predecessors as plain tuples: each probe
    walks thousands of edges (networkx's views cost a call per node), and tuples take a fraction of a networkx
    DiGraph's memory."""

    def __init__(self, n: int, edges: Iterable[tuple[int, int]]):
        succ: list[dict[int, None]] = [{} for _ in range(n)]  # dicts: an edge given twice is one edge
        pred: list[dict[int, None]] = [{} for _ in range(n)]
        for u, v in edges:
            succ[u][v] = None
            pred[v][u] = None
        self.succ: list[tuple[int, ...]] = [tuple(d) for d in succ]
        self.pred: list[tuple[int, ...]] = [tuple(d) for d in pred]

    def __len__(self) -> int:
        return len(self.succ)

    @property
    def edges(self) -> Iterator[tuple[int, int]]:
        return ((u, v) for u, vs in enumerate(self.succ) for v in vs)

    def number_of_edges(self) -> int:
        return sum(len(vs) for vs in self.succ)

    def acyclic(self) -> bool:
        indegree = [len(ps) for ps in self.pred]
        ready = [u for u, d in enumerate(indegree) if d == 0]
        seen = 0
        while ready:
            u = ready.pop()
            seen += 1
            for v in self.succ[u]:
                indegree[v] -= 1
                if indegree[v] == 0:
                    ready.append(v)
        return seen == len(self.succ)


class LinearStrategy:
    name = StrategyName.LINEAR
    finds_other_roots = False

    def __init__(self, n: int):
        self.n = n

    def ancestors(self, pos: int, within: set[int] | frozenset[int] | None = None) -> set[int]:
        if within is None:
            return set(range(pos))
        return {p for p in within if p < pos}

    def descendants(self, pos: int) -> set[int]:
        return set(range(pos + 1, self.n))

    def predecessors(self, pos: int) -> set[int]:
        return {pos - 1} if pos > 0 else set()

    def sinks(self) -> list[int]:
        """Where divergence is looked for first: the last op."""
        return [self.n - 1] if self.n else []

    def restart(self, pos: int, good: frozenset[int]) -> tuple[frozenset[int], int]:
        """Candidates (and lo) when the search continues from the producer at `pos`: after the last good op."""
        lo = max([g for g in good if g < pos], default=-1)
        return frozenset(range(lo + 1, pos + 1)), lo

    def choose(self, candidates: list[int], within: frozenset[int], hi: int, lo: int) -> int:
        mid = (lo + hi) // 2
        return min(candidates, key=lambda c: (abs(c - mid), c))  # nearest probe-able to the midpoint


class GraphStrategy:
    name = StrategyName.GRAPH
    finds_other_roots = True

    def __init__(self, dag: PairDag):
        self.dag = dag
        self._preds = dag.pred

    def ancestors(self, pos: int, within: set[int] | frozenset[int] | None = None) -> set[int]:
        return _reach(self._preds, pos, within)

    def descendants(self, pos: int) -> set[int]:
        return _reach(self.dag.succ, pos, None)

    def predecessors(self, pos: int) -> set[int]:
        return set(self._preds[pos])

    def sinks(self) -> list[int]:
        """Graph outputs, the network output (most ancestors) first."""
        sinks = [n for n, vs in enumerate(self.dag.succ) if not vs]
        sinks.sort(key=lambda n: (-len(self.ancestors(n)), -n))
        return sinks

    def restart(self, pos: int, good: frozenset[int]) -> tuple[frozenset[int], int]:
        """Every ancestor of the producer except the probes marked good: a good output can hide a bad input,
        so the ancestors of good probes stay suspects here."""
        return frozenset((self.ancestors(pos) | {pos}) - good), -1

    def choose(self, candidates: list[int], within: frozenset[int], hi: int, lo: int) -> int:
        """The candidate whose ancestors are closest to half the candidates (a few around the median)."""
        total = len(within)
        mid = len(candidates) // 2
        best, best_score = candidates[mid], None
        for c in candidates[max(0, mid - N_MIDDLE) : mid + N_MIDDLE]:
            below = len(self.ancestors(c, within)) + 1  # removed if good / kept if bad
            score = abs(2 * below - total)
            if best_score is None or score < best_score:
                best, best_score = c, score
        return best


def _reach(adjacent: list[tuple[int, ...]], pos: int, within: set[int] | frozenset[int] | None) -> set[int]:
    """Every node reached from `pos` (itself excluded unless on a cycle) through `adjacent`, inside `within`."""
    seen: set[int] = set()
    stack = [pos]
    while stack:
        for p in adjacent[stack.pop()]:
            if p not in seen and (within is None or p in within):
                seen.add(p)
                stack.append(p)
    return seen


Strategy = LinearStrategy | GraphStrategy


def choose_strategy(session: Session, order: list[OpPair], use_graph: bool) -> tuple[Strategy, list[Reason]]:
    """The graph strategy where a graph gives edges between probe-able ops, else linear; notes say why."""
    if use_graph:
        dag, notes = pair_graph(session, order)
        if dag is not None and dag.number_of_edges():
            return GraphStrategy(dag), notes
        return LinearStrategy(len(order)), notes
    return LinearStrategy(len(order)), []


def pair_graph(session: Session, order: list[OpPair]) -> tuple[PairDag | None, list[Reason]]:
    """Edges between probe-able pairs from both dumps' graphs, bridging ops that cannot be probed."""
    position = {p.index: i for i, p in enumerate(order)}
    edges: list[tuple[int, int]] = []
    used = False
    for dump, lookup in ((session.ref, session.alignment.for_ref), (session.target, session.alignment.for_target)):
        g = dump.graph
        if g is None:
            continue
        used = True
        pos_of = {}
        for k in g.nodes:
            p = lookup(k)
            if p is not None and p.index in position:
                pos_of[k] = position[p.index]
        edges += ((u, v) for u, vs in bridged_successors(g, pos_of).items() for v in vs if u != v)
    if not used:
        return None, []
    dag = PairDag(len(order), edges)
    if not dag.acyclic():
        import networkx as nx  # only to name a cycle, which the graphs of a consistent pair never have

        g = nx.DiGraph()
        g.add_nodes_from(range(len(order)))
        g.add_edges_from(edges)
        cycle = list(nx.simple_cycles(g))[:1]
        return None, [because(Why.GRAPH_ORDER_CYCLE, tuple(tuple(c) for c in cycle))]
    return dag, []


def bridged_successors(g: FlowGraph | nx.DiGraph, pos_of: dict[str, int]) -> dict[int, frozenset[int]]:
    """For each probe-able node: the probe-able nodes it reaches directly or through nodes that cannot be
    probed (unpaired, not dumped). Iterative with memo: chains of thousands of undumped ops are common in
    filtered dumps and would overflow a recursion."""
    memo: dict[str, frozenset[int]] = {}

    def reach(start: str) -> frozenset[int]:
        acc: dict[str, set[int]] = {start: set()}
        stack = [(start, iter(g.successors(start)))]
        on_stack = {start}
        while stack:
            node, it = stack[-1]
            for s in it:
                if s in pos_of:
                    acc[node].add(pos_of[s])
                elif s in memo:
                    acc[node] |= memo[s]
                elif s not in on_stack:
                    acc[s] = set()
                    on_stack.add(s)
                    stack.append((s, iter(g.successors(s))))
                    break
            else:
                stack.pop()
                on_stack.discard(node)
                done = frozenset(acc.pop(node))
                if node not in pos_of:
                    memo[node] = done
                if stack:
                    acc[stack[-1][0]] |= done
                else:
                    return done
        return frozenset()

    return {pos: reach(k) for k, pos in pos_of.items()}
