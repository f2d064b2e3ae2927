"""The bisection's pieces on their own, with a fake oracle (the Oracle protocol invites one): the strategies
narrow to the planted root in O(log n) probes (linear) and through a DAG's ancestry (graph), checked against
networkx; the search state is an immutable value (undo pops it); ComputedOracle reads each op once and
answers from the verdicts in context when given them. No Session, no dumps, no Bisection facade."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

import networkx as nx
import pytest

from dumptui.core.compare.verdict import CLOSE, DIVERGED, EQUAL, UNREADABLE
from dumptui.core.search.bisect.oracle import ComputedOracle, mark_of
from dumptui.core.search.bisect.state import SearchState
from dumptui.core.search.bisect.strategy import GraphStrategy, LinearStrategy, PairDag
from dumptui.core.search.bisect.types import Mark, Source, Step


class FakeOracle:
    """A probe says bad exactly where the planted root's error reaches (the Oracle protocol)."""

    def __init__(self, bad: set[int]):
        self.bad = bad
        self.asked: list[int] = []
        self._set: dict[int, tuple[Mark, str]] = {}

    def verdict(self, pos: int, purpose: str = "probe") -> tuple[Mark, str]:
        if pos in self._set:
            return self._set[pos]
        self.asked.append(pos)
        return (Mark.BAD, "diverged") if pos in self.bad else (Mark.GOOD, "equal")

    def known(self, pos: int) -> Mark | None:
        return self._set[pos][0] if pos in self._set else None

    def set(self, pos: int, mark: Mark, detail: str) -> None:
        self._set[pos] = (mark, detail)

    def forget(self, pos: int) -> None:
        self._set.pop(pos, None)


def narrow(strategy, oracle, sink: int) -> int:
    """The culprit check's narrowing (culprit.py `_auto_root`) from the known bad `sink`: probe, keep the
    ancestors of a bad probe, drop those of a good one, until only the first bad op is left."""
    cands = strategy.ancestors(sink) | {sink}
    hi, lo = sink, -1
    while True:
        left = sorted(cands - {hi})
        if not left:
            return hi
        probe = strategy.choose(left, frozenset(cands), hi, lo)
        mark, _ = oracle.verdict(probe)
        if mark == Mark.BAD:
            hi = probe
            cands = strategy.ancestors(probe, cands) | {probe}
        else:
            cands -= strategy.ancestors(probe, cands) | {probe}
            lo = max(lo, probe)


@pytest.mark.parametrize("n", [1, 2, 3, 7, 16, 33, 100])
def test_linear_strategy_finds_every_planted_root_in_log_probes(n):
    strategy = LinearStrategy(n)
    for root in range(n):
        oracle = FakeOracle(set(range(root, n)))  # in execution order: everything after the root is bad
        assert narrow(strategy, oracle, n - 1) == root
        assert len(oracle.asked) <= math.ceil(math.log2(n)) + 1, (n, root, oracle.asked)
        assert len(set(oracle.asked)) == len(oracle.asked)  # never the same probe twice


def test_linear_strategy_restarts_after_the_last_good_op():
    s = LinearStrategy(10)
    assert s.restart(6, frozenset({1, 3, 8})) == (frozenset({4, 5, 6}), 3)
    assert s.sinks() == [9] and LinearStrategy(0).sinks() == []
    assert s.predecessors(0) == set() and s.predecessors(4) == {3}


def random_dag(n: int, seed: int) -> nx.DiGraph:
    rng = random.Random(seed)
    g = nx.DiGraph()
    g.add_nodes_from(range(n))
    for v in range(1, n):  # each op reads one to three earlier ops: a DAG in execution order
        for u in rng.sample(range(v), k=min(v, rng.randint(1, 3))):
            g.add_edge(u, v)
    return g


@pytest.mark.parametrize("seed", range(6))
def test_graph_strategy_reach_agrees_with_networkx(seed):
    g = random_dag(40, seed)
    s = GraphStrategy(PairDag(40, g.edges))
    for v in range(40):
        assert s.ancestors(v) == nx.ancestors(g, v)
        assert s.descendants(v) == nx.descendants(g, v)
        assert s.predecessors(v) == set(g.predecessors(v))
    within = frozenset(range(0, 40, 2))
    assert s.ancestors(39, within) <= within
    sinks = s.sinks()
    assert set(sinks) == {v for v in g if g.out_degree(v) == 0}
    assert len(s.ancestors(sinks[0])) == max(len(nx.ancestors(g, v)) for v in sinks)  # the network output first


@pytest.mark.parametrize("seed", range(6))
def test_graph_strategy_finds_a_planted_root_through_the_dag(seed):
    g = random_dag(60, seed)
    s = GraphStrategy(PairDag(60, g.edges))
    rng = random.Random(seed)
    for root in rng.sample(range(60), 10):
        reached = nx.descendants(g, root) | {root}  # what the root's error reaches
        sink = next(v for v in s.sinks() if v in reached) if any(v in reached for v in s.sinks()) else None
        if sink is None:
            continue
        oracle = FakeOracle(reached)
        assert narrow(s, oracle, sink) == root
        suspects = len(nx.ancestors(g, sink)) + 1
        assert len(oracle.asked) <= 2 * math.ceil(math.log2(suspects)) + 4, (root, sink, oracle.asked)


def test_a_good_output_hiding_a_bad_input_keeps_its_ancestors_suspect():
    s = GraphStrategy(PairDag(4, [(0, 1), (1, 2), (2, 3)]))
    assert s.restart(2, frozenset({1})) == (frozenset({0, 2}), -1)


@pytest.mark.parametrize("seed", range(8))
def test_pairdag_acyclic_agrees_with_networkx(seed):
    rng = random.Random(seed)
    edges = [(rng.randrange(12), rng.randrange(12)) for _ in range(14)]
    edges = [(u, v) for u, v in edges if u != v]
    dag = PairDag(12, edges)
    g = nx.DiGraph(edges)
    g.add_nodes_from(range(12))
    assert dag.acyclic() == nx.is_directed_acyclic_graph(g)
    assert dag.number_of_edges() == g.number_of_edges() and set(dag.edges) == set(g.edges)


def test_search_state_is_a_value_undo_pops_it():
    s0 = SearchState.initial(5)
    step = Step("k3", 3, Mark.BAD, Source.USER, "marked by the user", 5)
    s1 = s0.with_step(step).evolve(bad=frozenset({3}), hi=3, candidates=frozenset({0, 1, 2, 3}))
    assert s0 == SearchState(candidates=frozenset(range(5))) and s0.history == ()  # untouched
    assert s1.history == (step,) and s1.hi == 3 and s1.candidates == frozenset({0, 1, 2, 3})
    with pytest.raises(AttributeError):
        s1.hi = 4  # type: ignore[misc]
    history = [s0, s1]
    history.pop()
    assert history[-1] is s0


@dataclass
class _Res:
    verdict: str
    outputs: list = field(default_factory=list)


class _FakeSession:
    """What ComputedOracle asks of a session: an op's result, counted."""

    def __init__(self, verdicts: dict[int, str]):
        self.verdicts, self.reads = verdicts, []

    def op_result(self, pair, inputs=False, purpose="probe"):
        self.reads.append((pair, purpose))
        return _Res(self.verdicts[pair])


def test_computed_oracle_reads_each_op_once_and_answers_in_context():
    session = _FakeSession({0: EQUAL, 1: DIVERGED, 2: UNREADABLE})
    oracle = ComputedOracle(session, order=[0, 1, 2])  # type: ignore[arg-type]
    assert [oracle.verdict(p)[0] for p in (0, 1, 2, 1)] == [Mark.GOOD, Mark.BAD, Mark.SKIP, Mark.BAD]
    assert [p for p, _ in session.reads] == [0, 1, 2]
    assert oracle.known(1) == Mark.BAD and oracle.known(5) is None
    oracle.set(1, Mark.GOOD, "marked by the user")
    assert oracle.verdict(1) == (Mark.GOOD, "marked by the user") and len(session.reads) == 3
    oracle.forget(1)
    assert oracle.known(1) is None and oracle.verdict(1)[0] == Mark.BAD and len(session.reads) == 4
    # judged in context: noise carried from upstream reads as close, so the probe says good
    in_context = ComputedOracle(_FakeSession({0: DIVERGED}), [0], judged=lambda r: _Res(CLOSE))  # type: ignore[arg-type]
    assert in_context.verdict(0)[0] == Mark.GOOD


def test_marks_follow_the_verdicts():
    assert (mark_of(DIVERGED), mark_of(EQUAL), mark_of(CLOSE), mark_of(UNREADABLE)) == (
        Mark.BAD,
        Mark.GOOD,
        Mark.GOOD,
        Mark.SKIP,
    )
