"""Bisection to the first operator whose inputs agree and whose outputs do not.

The candidates are the paired kernels that can be probed (both sides dumped, outputs comparable), in the
aligned execution order. With a dataflow graph (either dump's, mapped through the alignment) the search is
over the ancestors of the first known bad op, which is tighter than an interval: a good probe clears its
ancestors, a bad probe keeps only its own ancestors. Without a graph it is the classic interval
[last known good, first known bad] over the execution order.

Each probe reads one op's outputs. When the candidates shrink to one op, the culprit check reads its inputs:
if an input produced by another op diverges, the search continues from that producer (a good output can hide
a bad input); otherwise the op is a root of divergence. Inputs no op produces (weights, the network input,
constants) are checked before bisecting: one that differs by more than fp16/bf16 rounding would explain
makes its consumers roots, and is named.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

import networkx as nx

from .metrics import format_cos
from .align import OpPair
from .compare import OpResult, Session, TensorResult
from .model import KERNEL, PARAMETER
from .verdict import BAD, GOOD, IGNORED

GOOD_MARK, BAD_MARK = "good", "bad"
MAX_SINKS = 4            # graph outputs checked for divergence before giving up
MAX_FRONTIER = 8         # side inputs checked for other roots of divergence


@dataclass
class Step:
    key: str                  # pair key of the probed op (stable across runs: used by save/load)
    position: int             # position in the candidate order
    mark: str                 # good | bad | skip
    source: str               # start (graph outputs) | computed | user | check (culprit check)
    detail: str = ""
    candidates_before: int = 0


@dataclass
class InputCheck:
    name: str                 # parameter / input name
    kind: str                 # "network input" | "parameter"
    result: TensorResult
    status: str               # "equal" | "benign" | "differs" | "unpaired" | "unreadable"
    detail: str = ""
    consumers: list[OpPair] = field(default_factory=list)


@dataclass
class Root:
    pair: OpPair
    kind: str                 # "outputs" (inputs agree, outputs diverge) | "parameter" | "input"
    why: str
    result: OpResult | None = None
    caveats: list[str] = field(default_factory=list)


class Bisection:
    def __init__(self, session: Session, use_graph: bool = True):
        self.session = session
        self.order: list[OpPair] = [p for p in session.alignment.pairs
                                    if p.kind == KERNEL and p.paired and p.ref.outputs and p.target.outputs]
        self.position = {p.index: i for i, p in enumerate(self.order)}
        self.key_position = {p.key: i for i, p in enumerate(self.order)}
        self.dag = self._pair_graph() if use_graph else None
        self.mode = "graph" if self.dag is not None and self.dag.number_of_edges() else "linear"
        self.checks: list[InputCheck] | None = None
        self.parameter_roots: list[Root] = []
        self.other_roots: list[Root] = []
        self.notes: list[str] = []
        self._verdicts: dict[int, tuple[str, str]] = {}
        self.reset()

    # ---------------------------------------------------------------------------- graph over pairs
    def _pair_graph(self) -> nx.DiGraph | None:
        """Edges between probe-able pairs from both dumps' graphs, bridging ops that cannot be probed."""
        dag = nx.DiGraph()
        dag.add_nodes_from(range(len(self.order)))
        used = False
        for dump, lookup in ((self.session.ref, self.session.alignment.for_ref),
                             (self.session.target, self.session.alignment.for_target)):
            g = dump.graph
            if g is None:
                continue
            used = True
            pos_of = {}
            for k in g.nodes:
                p = lookup(k)
                if p is not None and p.index in self.position:
                    pos_of[k] = self.position[p.index]
            for u, vs in _bridged_successors(g, pos_of).items():
                for v in vs:
                    if u != v:
                        dag.add_edge(u, v)
        if not used:
            return None
        if not nx.is_directed_acyclic_graph(dag):
            self_loops = list(nx.simple_cycles(dag))[:1]
            self.notes = [f"the graphs disagree on the order of some ops (cycle {self_loops}): bisecting linearly"]
            return None
        return dag

    def ancestors(self, pos: int, within: set[int] | None = None) -> set[int]:
        if self.dag is None or self.mode != "graph":
            return set(range(pos))
        seen: set[int] = set()
        stack = [pos]
        while stack:
            n = stack.pop()
            for p in self.dag.predecessors(n):
                if p not in seen and (within is None or p in within):
                    seen.add(p)
                    stack.append(p)
        return seen

    def descendants(self, pos: int) -> set[int]:
        if self.dag is None or self.mode != "graph":
            return set(range(pos + 1, len(self.order)))
        return nx.descendants(self.dag, pos)

    # ---------------------------------------------------------------------------- state
    def reset(self) -> None:
        self.history: list[Step] = []
        self._undo: list[tuple] = []
        self.candidates: set[int] = set(range(len(self.order)))
        self.lo = -1                          # linear mode: last known good position
        self.hi: int | None = None            # first known bad position
        self.good: set[int] = set()
        self.bad: set[int] = set()
        self.started = False
        self.culprit: Root | None = None
        self.finished = False
        self.no_divergence = False
        self.other_roots = []

    def _snapshot(self) -> tuple:
        return (set(self.candidates), self.lo, self.hi, set(self.good), set(self.bad), self.started,
                self.culprit, self.finished, self.no_divergence, list(self.other_roots), len(self.history))

    def _restore(self, snap: tuple) -> None:
        (self.candidates, self.lo, self.hi, self.good, self.bad, self.started, self.culprit, self.finished,
         self.no_divergence, self.other_roots, n_history) = snap
        # a mark may have added culprit-check steps after its own: all of them go
        del self.history[n_history:]

    @property
    def steps_left(self) -> int:
        if self.finished:
            return 0
        n = len(self.candidates) if self.started else len(self.order)
        return max(0, math.ceil(math.log2(n))) if n > 1 else 0

    @property
    def interval(self) -> tuple[int, int] | None:
        """(first, last) candidate position, for drawing."""
        if not self.candidates:
            return None
        return min(self.candidates), max(self.candidates)

    # ---------------------------------------------------------------------------- verdicts
    def computed_verdict(self, pos: int, purpose: str = "probe") -> tuple[str, str]:
        """(good | bad | skip, detail) for the op at `pos`, from its outputs (reads them unless cached)."""
        if pos in self._verdicts:
            return self._verdicts[pos]
        pair = self.order[pos]
        res = self.session.op_result(pair, inputs=False, purpose=purpose)
        detail = _brief(res)
        if res.verdict in BAD:
            out = (BAD_MARK, detail)
        elif res.verdict in GOOD:
            out = (GOOD_MARK, detail)
        else:
            out = ("skip", detail)
        self._verdicts[pos] = out
        return out

    def cached_mark(self, pos: int) -> str | None:
        return self._verdicts.get(pos, (None,))[0]

    # ---------------------------------------------------------------------------- the search
    def start(self) -> None:
        """Find the first known bad op (the network output, or the last op) and set the candidates."""
        if self.started:
            return
        self.started = True          # not undoable: undo takes back marks, `reset` starts over
        if not self.order:
            self.finished = True
            self.no_divergence = True
            self.notes.append("no op is dumped on both sides: nothing to bisect")
            return
        sinks = self._sinks()
        for s in sinks[:MAX_SINKS]:
            mark, detail = self.computed_verdict(s, "graph output")
            self.history.append(Step(self.order[s].key, s, mark, "start", "graph output: " + detail,
                                     len(self.candidates)))
            if mark == BAD_MARK:
                self._set_bad(s)
                break
            if mark == GOOD_MARK:
                self.good.add(s)
        else:
            self.finished = True
            self.no_divergence = True
            self.candidates = set()
            if len(sinks) > MAX_SINKS:
                self.notes.append(f"{len(sinks) - MAX_SINKS} other graph outputs not checked (use `compare`)")
        self._maybe_converged()

    def _sinks(self) -> list[int]:
        """Graph outputs, the network output first (most ancestors); linear: the last op."""
        if self.mode != "graph":
            return [len(self.order) - 1]
        sinks = [n for n in self.dag.nodes if self.dag.out_degree(n) == 0]
        sinks.sort(key=lambda n: (-len(nx.ancestors(self.dag, n)), -n))
        return sinks

    def _set_bad(self, pos: int) -> None:
        self.bad.add(pos)
        self.hi = pos
        if self.mode == "graph":
            self.candidates = (self.ancestors(pos, self.candidates) | {pos}) - self.good
        else:
            self.candidates = {p for p in self.candidates if self.lo < p <= pos}

    def _set_good(self, pos: int) -> None:
        self.good.add(pos)
        if self.mode == "graph":
            self.candidates -= self.ancestors(pos, self.candidates) | {pos}
        else:
            self.lo = max(self.lo, pos)
            self.candidates = {p for p in self.candidates if pos < p}

    def next_probe(self) -> int | None:
        """The position to probe next, or None when converged/finished."""
        if not self.started or self.finished:
            return None
        return self._choose_probe(self.candidates, self.hi, self.lo)

    def _choose_probe(self, candidates: set[int], hi: int | None, lo: int = -1) -> int | None:
        cands = sorted(c for c in candidates - {hi} if self._verdicts.get(c, ("",))[0] != "skip")
        if not cands:
            return None
        if self.mode != "graph":
            mid = (lo + hi) // 2
            return min(cands, key=lambda c: (abs(c - mid), c))   # nearest probe-able to the midpoint
        # the candidate whose ancestors are closest to half the candidates (a few around the median)
        total = len(candidates)
        mid = len(cands) // 2
        best, best_score = None, None
        for c in cands[max(0, mid - 4): mid + 4]:
            below = len(self.ancestors(c, candidates)) + 1   # removed if good / kept if bad
            score = abs(2 * below - total)
            if best_score is None or score < best_score:
                best, best_score = c, score
        return best

    def mark(self, pos: int, mark: str, source: str = "user", detail: str = "") -> None:
        """Record a verdict for the op at `pos` (good/bad/skip) and narrow the candidates."""
        if not self.started:
            self.start()
        if self.finished:
            return
        self._undo.append(self._snapshot())
        before = len(self.candidates)
        if mark == BAD_MARK:
            self._set_bad(pos)
        elif mark == GOOD_MARK:
            self._set_good(pos)
        else:
            self._verdicts[pos] = ("skip", detail or "not comparable")
            self.candidates.discard(pos)
        if source == "user":
            self._verdicts.pop(pos, None) if mark != "skip" else None
        self.history.append(Step(self.order[pos].key, pos, mark, source, detail, before))
        self._maybe_converged()

    def step(self) -> Step | None:
        """Probe once with the computed verdict. Returns the step made, or None when finished."""
        if not self.started:
            self.start()
            return self.history[-1] if self.history else None
        pos = self.next_probe()
        if pos is None:
            self._maybe_converged()
            return None
        mark, detail = self.computed_verdict(pos)
        self.mark(pos, mark, "computed", detail)
        return self.history[-1]

    def run(self, max_steps: int = 100000) -> Root | None:
        self.start()
        for _ in range(max_steps):
            if self.finished:
                break
            if self.step() is None and not self.finished:
                self._maybe_converged(force=True)
                break
        return self.culprit

    def undo(self) -> bool:
        """Take back the last mark (computed or the user's), with the steps it triggered."""
        if not self._undo:
            return False
        self._restore(self._undo.pop())
        return True

    # ---------------------------------------------------------------------------- convergence
    def _maybe_converged(self, force: bool = False) -> None:
        if self.finished or self.hi is None:
            return
        rest = [c for c in self.candidates - {self.hi} if self._verdicts.get(c, ("",))[0] != "skip"]
        if rest and not force:
            return
        self._culprit_check(self.hi)

    def _inputs_of(self, pos: int) -> tuple[OpResult, int | None, str, list[str]]:
        """The culprit check of the op at `pos`: (its result, the producer to continue from if one of its
        inputs diverges, why it is a root, caveats)."""
        pair = self.order[pos]
        res = self.session.op_result(pair, inputs=True, purpose="culprit check")
        bad_produced, differing_unproduced, caveats = [], [], []
        for r in res.inputs:
            if r.verdict == IGNORED:
                continue
            origin = self.session.unproduced(pair, r.slot)
            if r.bad or r.verdict in ("only in ref", "only in target"):
                (bad_produced if origin is None else differing_unproduced).append((r, origin))
            elif r.verdict not in GOOD:
                caveats.append(f"input.{r.slot}: {r.verdict} ({r.reason})")
        for r, _ in bad_produced:
            prod = self.session.producer_pair(pair, r.slot)
            if prod is not None and prod.index in self.position:
                ppos = self.position[prod.index]
                if ppos != pos and ppos not in self.good:
                    return res, ppos, f"input.{r.slot} of {pair.name} diverges ({r.reason})", []
            if prod is not None and prod.index in self.position and self.position[prod.index] in self.good:
                caveats.append(f"input.{r.slot} diverges, yet its producer {prod.name} was marked good: "
                               "check that mark (u undoes it)")
            elif prod is not None and prod.index not in self.position:
                side = "target-only" if prod.ref is None else ("reference-only" if prod.target is None else "unprobed")
                caveats.append(f"input.{r.slot} diverges; it is produced by {side} op {prod.name}: "
                               "that op is the likely cause")
            else:
                caveats.append(f"input.{r.slot} diverges ({r.reason}) and its producer is unknown"
                               + (" (no graph)" if self.mode != "graph" else ""))
        why = ("its outputs diverge, and so do inputs it does not produce (see caveats)" if bad_produced
               else "inputs agree, outputs diverge")
        for r, origin in differing_unproduced:
            why += f"; {origin} input.{r.slot} differs ({r.reason})"
        return res, None, why, caveats

    def _culprit_check(self, pos: int) -> None:
        res, producer, why, caveats = self._inputs_of(pos)
        if producer is not None:
            # A bad input: the source is upstream (a good output can hide a bad input). Continue there.
            self.history.append(Step(self.order[producer].key, producer, BAD_MARK, "check",
                                     why + ": continuing from its producer", len(self.candidates)))
            self._restart_from(producer)
            return
        self.culprit = Root(self.order[pos], "outputs", why, res, caveats)
        self.finished = True
        self.candidates = {pos}
        self._find_other_roots(pos)

    def _restart_from(self, ppos: int) -> None:
        self.bad.add(ppos)
        self.hi = ppos
        if self.mode == "graph":
            self.candidates = (self.ancestors(ppos) | {ppos}) - self.good
        else:
            self.lo = max([g for g in self.good if g < ppos], default=-1)
            self.candidates = set(range(self.lo + 1, ppos + 1))
        self._maybe_converged()

    def _auto_root(self, bad: int, allowed: set[int]) -> Root | None:
        """Bisect automatically, within `allowed`, to the root below the bad op `bad` (no other-roots search)."""
        cands = (self.ancestors(bad, allowed) | {bad}) - self.good
        hi = bad
        for _ in range(4 * len(self.order) + 8):
            probe = self._choose_probe(cands, hi)
            if probe is None:
                res, producer, why, caveats = self._inputs_of(hi)
                if producer is None or producer not in allowed:
                    return Root(self.order[hi], "outputs", why, res, caveats)
                hi = producer
                cands = (self.ancestors(hi, allowed) | {hi}) - self.good
                continue
            mark, _ = self.computed_verdict(probe, "other roots")
            if mark == BAD_MARK:
                hi = probe
                cands = (self.ancestors(probe, cands) | {probe})
            elif mark == GOOD_MARK:
                cands -= self.ancestors(probe, cands) | {probe}
            else:
                cands.discard(probe)
        return None

    def _find_other_roots(self, root: int) -> None:
        """Other roots: side inputs feeding the diverged region from outside the culprit's ancestry."""
        if self.mode != "graph":
            return
        explained = self.descendants(root) | {root} | self.ancestors(root)
        frontier = {p for b in self.descendants(root) for p in self.dag.predecessors(b) if p not in explained}
        for checked, f in enumerate(sorted(frontier, reverse=True)):
            if checked >= MAX_FRONTIER:
                self.notes.append(f"{len(frontier) - checked} more side inputs of the diverged region not checked")
                break
            if f in explained or self.computed_verdict(f, "other roots")[0] != BAD_MARK:
                continue
            allowed = set(range(len(self.order))) - explained
            other = self._auto_root(f, allowed | {f})
            if other is not None and other.pair.key != self.order[root].key:
                self.other_roots.append(other)
                pos = self.position[other.pair.index]
                explained |= self.descendants(pos) | {pos} | self.ancestors(pos)

    # ---------------------------------------------------------------------------- preconditions
    def check_inputs(self) -> list[InputCheck]:
        """The field guide's preconditions: same network input, same weights (where both dumps hold them)."""
        if self.checks is not None:
            return self.checks
        s = self.session
        checks = []
        for p in s.alignment.pairs:
            if p.kind != PARAMETER:
                continue
            op = p.ref or p.target
            kind = "network input" if op.attrs.get("is_weight") == "false" else "parameter"
            consumers = self._consumers(p)
            if not p.paired:
                checks.append(InputCheck(op.name, kind, TensorResult("output", 0, p.ref and p.ref.outputs.get(0),
                                                                     p.target and p.target.outputs.get(0),
                                                                     p.how, "dumped on one side only"),
                                         "unpaired", p.how, consumers))
                continue
            r = s.identical(p, "output", 0, "precondition")
            if r is None:
                res = s.op_result(p, inputs=False, purpose="precondition")
                r = res.outputs[0] if res.outputs else None
            if r is not None:
                checks.append(self._judge_input(op.name, kind, r, consumers))
        # Parameters not dumped as such (a kernel-filtered dump): their consumers' input files hold them.
        checked = {c.name for c in checks}
        by_param: dict[str, list[tuple[OpPair, int]]] = {}
        for p in s.alignment.kernels:
            if not p.paired:
                continue
            for slot in sorted(set(p.ref.inputs) & set(p.target.inputs)):
                name = next((src.ref for src in s.input_source(p, slot)
                             if src is not None and src.kind in ("parameter", "input")), None)
                if name is not None and name not in checked:
                    by_param.setdefault(name, []).append((p, slot))
        for name, uses in by_param.items():
            p, slot = uses[0]
            r = s.identical(p, "input", slot, "precondition")
            if r is None:
                r = s.tensor_result(p, "input", slot, p.ref.inputs[slot], p.target.inputs[slot], "precondition")
            kind = {False: "network input", True: "parameter"}.get(s.ref.parameters.get(name), "unproduced input")
            checks.append(self._judge_input(name, kind, r, list(dict.fromkeys(q for q, _ in uses))))
        self.checks = checks
        self.parameter_roots = []
        seen = set()
        for c in checks:
            if c.status != "differs":
                continue
            for cons in c.consumers:
                if cons.key in seen:
                    continue
                seen.add(cons.key)
                why = {"network input": f"the network input {c.name} differs: check the preprocessing",
                       "parameter": f"parameter {c.name} differs: check the checkpoint and its conversion"}.get(
                    c.kind, f"input {c.name}, which no dumped op produces, differs (a weight, or computed outside "
                            "the dump)")
                self.parameter_roots.append(Root(cons, "parameter" if c.kind == "parameter" else "input", why,
                                                 None, [c.detail]))
        return checks

    def _judge_input(self, name: str, kind: str, r: TensorResult, consumers: list[OpPair]) -> InputCheck:
        """equal / benign (within fp16 or bf16 rounding) / differs / unreadable, for an unproduced input."""
        if r.verdict == "equal":
            return InputCheck(name, kind, r, "equal", r.reason, consumers)
        if r.verdict in ("unreadable", "not comparable", "ignored"):
            return InputCheck(name, kind, r, "unreadable" if r.verdict != "ignored" else "ignored", r.reason, consumers)
        fmt = self.session.rounding_explains(r)
        low = {"float16", "bfloat16"} & {t.dtype for t in (r.ref, r.target) if t is not None}
        if fmt is None and kind == "unproduced input" and low and r.verdict == "close" and r.ref.dtype != r.target.dtype:
            # computed (not stored) upstream in a lower precision: more than one rounding, and still close
            return InputCheck(name, kind, r, "benign", f"close; computed in {'/'.join(sorted(low))} on one side "
                                                       f"(a precision change upstream); {_numbers(r)}", consumers)
        if fmt is not None:
            return InputCheck(name, kind, r, "benign", f"differs only by {fmt} rounding (as a deliberate {fmt} "
                                                       f"conversion would give); {_numbers(r)}", consumers)
        advice = {"network input": "check the preprocessing (the field guide's first precondition)",
                  "parameter": "check the checkpoint and its conversion"}.get(
            kind, "no dumped op produces it: a weight (check the checkpoint) or an input from outside the dump")
        return InputCheck(name, kind, r, "differs",
                          f"differs by more than fp16/bf16 rounding would explain; {_numbers(r)}: {advice}", consumers)

    def _consumers(self, ppair: OpPair) -> list[OpPair]:
        out: dict[str, OpPair] = {}
        for dump, op, lookup in ((self.session.ref, ppair.ref, self.session.alignment.for_ref),
                                 (self.session.target, ppair.target, self.session.alignment.for_target)):
            if op is None or dump.graph is None or op.key not in dump.graph:
                continue
            for k in dump.graph.successors(op.key):
                p = lookup(k)
                if p is not None and p.paired:
                    out.setdefault(p.key, p)
        return sorted(out.values(), key=lambda p: p.index)

    # ---------------------------------------------------------------------------- result
    def roots(self) -> list[Root]:
        """Every root found, first in execution order first."""
        found: dict[str, Root] = {}
        for r in ([self.culprit] if self.culprit else []) + self.other_roots + self.parameter_roots:
            if r.pair.key not in found:
                found[r.pair.key] = r
            elif r.kind != "outputs":
                found[r.pair.key].caveats.append(r.why)
        return sorted(found.values(), key=lambda r: r.pair.index)

    def first_root(self) -> Root | None:
        rs = self.roots()
        if not rs:
            return None
        r = rs[0]
        if r.result is None:
            r.result = self.session.op_result(r.pair, inputs=True, purpose="culprit check")
        return r

    # ---------------------------------------------------------------------------- save / resume
    def to_json(self) -> dict:
        return {"version": 1, "mode": self.mode,
                "steps": [{"key": s.key, "mark": s.mark, "source": s.source, "detail": s.detail}
                          for s in self.history if s.source in ("user", "computed")]}

    def replay(self, data: dict) -> list[str]:
        """Re-apply saved marks by op key; returns the keys that no longer exist."""
        self.reset()
        self.start()
        missing = []
        for s in data.get("steps", []):
            pos = self.key_position.get(s.get("key"))
            if pos is None:
                missing.append(str(s.get("key")))
                continue
            if self.finished:
                break
            if s.get("source") == "computed":
                mark, detail = self.computed_verdict(pos)
                self.mark(pos, mark, "computed", detail)
            else:
                self.mark(pos, s.get("mark", GOOD_MARK), "user", s.get("detail", "marked by the user"))
        return missing

    def save(self, path: str, extra: dict | None = None) -> None:
        data = self.to_json()
        data.update(extra or {})
        with open(path, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=1)


def _bridged_successors(g, pos_of: dict[str, int]) -> dict[int, frozenset[int]]:
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


def _numbers(r: TensorResult) -> str:
    st = r.stats
    if st is None:
        return r.reason
    cos = format_cos(st.cos)
    return f"cos {cos}, max abs {st.max_abs:.3g}" if st.max_abs is not None else f"cos {cos}"


def _brief(res: OpResult) -> str:
    parts = []
    for r in res.outputs:
        if r.verdict == IGNORED:
            continue
        st = r.stats
        if st is not None and st.cos is not None and r.verdict not in ("equal",):
            parts.append(f"{r.label} {r.verdict} (cos {format_cos(st.cos)}, max abs {st.max_abs:.3g})")
        else:
            parts.append(f"{r.label} {r.verdict}" + (f" ({r.reason})" if r.verdict not in ("equal", "close") else ""))
    return "; ".join(parts) or res.verdict
