"""The local-error scan: every paired op's inputs and outputs compared, each op's local error judged
(localerror.py), replayed where the op type allows, and every root of divergence found, first one first.

Used when a pair is noisy (one side in fp16/bf16, inserted Casts, rounded inputs), where "inputs close,
output over a threshold" would blame whichever op crosses it first; and by `compare`, which reads everything
anyway. After the scan, tensor verdicts are judged in context: a tensor beyond its dtype's floor with no root
upstream carries precision noise (`close`, and said so); one downstream of a root carries its divergence.
"""

from __future__ import annotations

import math
import os
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from typing import AbstractSet, Callable, Iterator

import numpy as np

from dumptui.core.compare.batch import evaluate_all
from dumptui.core.compare.hints import attribute_diff
from dumptui.core.compare.metrics import ElementTolerance
from dumptui.core.compare.noise import TensorError, fmt_rel, least_precise, stats_error, tensor_error
from dumptui.core.compare.pairstats import PairStats
from dumptui.core.compare.processes import (
    MIN_BYTES_FOR_PROCESSES,
    ComparePool,
    current_shared_processes,
    end_now,
    from_spec,
    map_in_processes,
    tensor_spec,
)
from dumptui.core.compare.results import OpResult, TensorResult
from dumptui.core.compare.session import Session, pair_key
from dumptui.core.compare.smallpairs import compare_many
from dumptui.core.compare.verdict import (
    CLOSE,
    DIVERGED,
    EQUAL,
    FLIPPED,
    IGNORED,
    ONLY_REF,
    ONLY_TARGET,
    SHAPE_MISMATCH,
    UNREADABLE,
    Verdict,
)
from dumptui.core.graph.align import OpPair
from dumptui.core.graph.dataflow import input_source, origins, unjudged_origins, wiring
from dumptui.core.model.dump import KERNEL, TensorRef
from dumptui.core.model.reason import Reason, Said, Why, because
from dumptui.core.search import replay
from dumptui.core.search.context import NO_CONTEXT, InContext, restated
from dumptui.core.search.localerror import (
    TAIL_SHARE,
    Difference,
    DiffKind,
    LocalError,
    ReplayProof,
    classify,
    shape_of_error,
)
from dumptui.core.search.selection import (
    FlipReason,
    FlipSite,
    SelectionReason,
    feeding_ops,
    flip_reach,
    flip_sites,
    is_selection,
    selection_proof,
)
from dumptui.core.search.threshold import is_threshold, resized_by_flips, threshold_proof

REPLAY_MAX_ELEMENTS = 1 << 24  # larger ops are not replayed (float64 copies of every input)
# From this many output elements, a replay's outputs are compared at REPLAY_SAMPLE positions drawn with a fixed
# seed instead of everywhere: the full statistics of large replays were most of a large compare's replay time,
# while the proof's rule compares errors a factor `gain` (10) apart and tail shares of 1 % and more, which a
# few thousand positions measure well (ReplayProof.sample_words states how well).
REPLAY_SAMPLED_FROM = 1 << 18
REPLAY_SAMPLE = 4096
REPLAY_SEED = 20
POOL_REPLAYS_PER_TASK = 32  # replays sent to a ComparePool's workers as one task


def input_roles(pair: OpPair) -> dict[int, str]:
    """slot -> "data" (produced by an op, the network input), "weight" (a parameter) or "constant"
    (graph constants: epsilon, axes, flags). Without a graph, 0-d inputs count as constants."""
    slots: set[int] = set()
    for op in (pair.ref, pair.target):
        if op is not None:
            slots |= set(op.inputs) | set(op.sources)
    roles = {}
    for slot in sorted(slots):
        kinds = {s.kind for s in input_source(pair, slot) if s is not None}
        if "constant" in kinds:
            roles[slot] = "constant"
        elif "parameter" in kinds:
            roles[slot] = "weight"
        elif kinds:
            roles[slot] = "data"
        else:
            t = (pair.ref.inputs.get(slot) if pair.ref else None) or (
                pair.target.inputs.get(slot) if pair.target else None
            )
            roles[slot] = "constant" if t is not None and t.shape == () else "data"
    return roles


def result_error(r: TensorResult) -> TensorError | None:
    if r.verdict == IGNORED:
        return None
    if r.statistics_only:
        return stats_error(r.stat_rel)
    if r.stats is None:
        return None
    return tensor_error(r.stats)


def _rounding_seen(session: Session, pair: OpPair, r: TensorResult, err: TensorError) -> TensorError:
    """A statistics-only input's error, at least what rounding to a less precise dtype on one side only does
    to each element (its own dtype, or its producer's output one: an unrecorded cast). Statistics average that
    rounding away (the mean of bf16 rounding errors is near 0), so compared with an output's statistics they
    would make a carried error look grown. Tensors show the rounding themselves: kept as they are."""
    if not r.statistics_only:
        return err
    seen: dict[str, set[str | None]] = {"ref": set(), "target": set()}
    for side, t in (("ref", r.ref), ("target", r.target)):
        if t is not None:
            seen[side].add(t.dtype)
    dump = {"ref": session.ref, "target": session.target}
    for side, src in zip(("ref", "target"), input_source(pair, r.slot)):
        if src is not None and src.kind == "op":
            producer = dump[side].op(src.ref)
            out = producer.outputs.get(src.slot) if producer is not None else None
            if out is not None:
                seen[side].add(out.dtype)
    low_ref, low_target = least_precise(seen["ref"]), least_precise(seen["target"])
    if low_ref == low_target:
        return err
    floor, _ = session.thresholds.floor(low_ref, low_target)
    if floor <= err.rel:
        return err
    return TensorError(floor, err.abs, max(err.rel_l2, floor), err.abs_rms, err.nonfinite, err.n)


def _combine(errors: list[tuple[int, TensorError]]) -> tuple[TensorError | None, int | None]:
    """The worst of several tensors' errors, scale by scale (the slot is the worst on the relative scale)."""
    if not errors:
        return None, None
    slot, worst = max(errors, key=lambda se: se[1].worst_rel)
    return TensorError(
        rel=max(e.rel for _, e in errors),
        abs=max(e.abs for _, e in errors),
        rel_l2=max(e.rel_l2 for _, e in errors),
        abs_rms=max(e.abs_rms for _, e in errors),
        nonfinite=max(e.nonfinite for _, e in errors),
        n=worst.n,
    ), slot


def analyse(session: Session, res: OpResult, with_replay: bool = True) -> LocalError:
    """The local error of one op pair from its compared tensors (reads them again only to replay)."""
    le = measured(session, res)
    roles = input_roles(le.pair)
    if with_replay and not judges_selection(session, le, res, roles) and needs_replay(session, le):
        le.replay, le.replay_note = replay_proof(session, le.pair, roles, le.out_slot or 0)
    return judged(session, le)


def measured(session: Session, res: OpResult, roles: dict[int, str] | None = None) -> LocalError:
    """The op's local error before its verdict: errors in and out, its floor, the shape of its error
    (`roles`: input_roles of its pair, when known)."""
    pair = res.pair
    roles = input_roles(pair) if roles is None else roles
    outs = [(r.slot, e) for r in res.outputs if (e := result_error(r)) is not None]
    ins = [
        (r.slot, _rounding_seen(session, pair, r, e))
        for r in res.inputs
        if roles.get(r.slot) != "constant" and (e := result_error(r)) is not None
    ]
    out, out_slot = _combine(outs)
    data_in, in_slot = _combine(ins)
    names = [t.dtype for op in (pair.ref, pair.target) if op is not None for t in op.tensors()]
    floor, floor_dtype = session.thresholds.floor(*names)
    floor, floor_dtype = max((floor, floor_dtype), session.op_floors.get(pair.key, (0.0, "")), key=lambda f: f[0])
    le = LocalError(pair, out, out_slot, data_in, in_slot, floor, floor_dtype, differs=_differences(res, roles))
    le.statistics_only = any(r.statistics_only for r in res.outputs if r.slot == out_slot)
    data_slots = sorted(s for s, role in roles.items() if role == "data")
    wired = wiring(session.ref, session.target, session.alignment, pair, data_slots)
    le.wiring = because(Why.WIRED, wired) if wired else None
    if in_slot is not None:
        unjudged = unjudged_origins(session.ref, session.target, session.alignment, pair, in_slot)
        le.unjudged = because(Why.INTO_INPUT, in_slot, tuple(unjudged)) if unjudged else None
    le.blind = _blind(session, pair, res, roles)
    counted_in = [r for r in res.inputs if roles.get(r.slot) != "constant" and r.verdict != IGNORED]
    counted_out = [r for r in res.outputs if r.verdict != IGNORED]
    le.out_tail, le.in_tail, le.out_cos, le.in_cos = shape_of_error(counted_out, counted_in)
    return le


def _blind(session: Session, pair: OpPair, res: OpResult, roles: dict[int, str]) -> Reason | None:
    """The data inputs of the op that could not be compared (unreadable, or dumped on one side only) and whose
    value its producer's output does not show on both sides either: what came in there is unknown (damage
    that hides an input never makes an op a root on its other inputs). None when there is none."""
    out = []
    for r in res.inputs:
        damaged = r.verdict == UNREADABLE
        if roles.get(r.slot) != "data" or not (damaged or r.verdict in (ONLY_REF, ONLY_TARGET)):
            continue
        shown = False
        for o in origins(session.ref, session.target, session.alignment, pair, r.slot):
            p = o.pair
            if o.kind == "pair" and p is not None and p.ref is not None and p.target is not None:
                if o.out_slot in p.ref.outputs and o.out_slot in p.target.outputs:
                    produced = session.op_result(p, purpose="culprit check").outputs
                    shown = any(t.slot == o.out_slot and t.verdict != UNREADABLE for t in produced)
        if shown or (
            not damaged and not unjudged_origins(session.ref, session.target, session.alignment, pair, r.slot)
        ):
            continue  # known where it is made; or on one side only by design (a group's own inputs), no damage
        out.append((r.slot, str(r.verdict), r.reason))
    return because(Why.BLIND_INPUTS, out) if out else None


def needs_replay(session: Session, le: LocalError) -> bool:
    """The replay decides where the op's output is beyond its floor (or sparse, or under --cos)."""
    th = session.thresholds
    sparse = le.out_tail > min(th.max_off, TAIL_SHARE)
    alarm = th.cos is not None and le.out_cos is not None and le.out_cos < th.cos
    return th.replay and le.out is not None and (le.out.rel > le.floor or bool(le.out.nonfinite) or sparse or alarm)


def judges_selection(session: Session, le: LocalError, res: OpResult, roles: dict[int, str]) -> bool:
    """A selection op (TopK, Sort, ArgMax, NMS, Unique) whose outputs differ is judged by what each side's own
    inputs give (selection.py: ties within the inputs' rounding), not by a replay of one output: True when it
    was (else the plain replay, if any, decides)."""
    pair = le.pair
    if pair.ref is None or not session.thresholds.replay:
        return False
    threshold = is_threshold(pair.ref.op_type)
    if not (is_selection(pair.ref.op_type) or threshold):
        return False
    if threshold:  # a comparison or a cast to integers: judged where an element differs (threshold.py)
        differs = any(r.bad or (r.stats is not None and (r.stats.max_abs or 0.0) > 0) for r in res.outputs)
        le.selection = threshold_proof(session, pair, roles) if differs else None
        return le.selection is not None
    if not (needs_replay(session, le) or any(r.bad for r in res.outputs)):
        return False
    le.selection, le.replay_note = selection_proof(session, pair, roles)
    return le.selection is not None


def judged(session: Session, le: LocalError) -> LocalError:
    th = session.thresholds
    return classify(le, th.gain, th.max_off, th.cos)


def _differences(res: OpResult, roles: dict[int, str]) -> list[Difference]:
    """What differs in the op's definition: its type, a graph attribute, a constant input."""
    pair = res.pair
    out = []
    if pair.ref is not None and pair.target is not None:
        if pair.ref.op_type != pair.target.op_type:
            out.append(Difference(DiffKind.OP_TYPE, pair.ref.op_type, pair.target.op_type))
        for k, (a, b) in attribute_diff(pair.ref.attrs, pair.target.attrs).items():
            out.append(Difference(DiffKind.ATTRIBUTE, str(a), str(b), name=k))
    for r in res.inputs:
        if (
            roles.get(r.slot) == "constant"
            and r.verdict not in (EQUAL, IGNORED)
            and r.ref is not None
            and r.target is not None
        ):
            out.append(Difference(DiffKind.CONSTANT, _value(r.ref), _value(r.target), r.slot))
    for slot, role in roles.items():
        if role == "constant" and slot not in {r.slot for r in res.inputs}:
            texts = [s.ref if s is not None else None for s in input_source(pair, slot)]
            if texts[0] is not None and texts[1] is not None and texts[0] != texts[1]:
                out.append(Difference(DiffKind.CONSTANT, str(texts[0]), str(texts[1]), slot))
    return out


def _value(t: TensorRef) -> str:
    try:
        a = np.asarray(t.read())
    except (OSError, ValueError):
        return "unreadable"
    if a.size == 1:
        return f"{a.reshape(-1)[0]:.6g}" if a.dtype.kind == "f" else str(a.reshape(-1)[0])
    return f"{a.size} values"


# ------------------------------------------------------------------------------------------------ replay


@dataclass
class ReplayPlan:
    """What one replay reads and computes, as plain data: it runs here or in a worker process alike.
    Tensors are `(TensorRef, TensorSpec | None)`: the spec (processes.tensor_spec) when the layout is known."""

    op_type: str
    attrs: dict
    constants: dict
    inputs: tuple[dict[int, TensorRef], dict[int, TensorRef]]  # the reference's, the target's
    from_ref: tuple[int, ...]  # constant slots the target takes from the reference (the op's definition)
    outputs: tuple[TensorRef, TensorRef]  # the output compared, each side
    out_shapes: tuple[dict[int, tuple[int, ...]], dict[int, tuple[int, ...]]]
    tolerances: tuple[ElementTolerance, ElementTolerance]
    floors: tuple[float, float]
    slot: int


def replay_plan(session: Session, pair: OpPair, roles: dict[int, str], slot: int) -> tuple[ReplayPlan | None, Said]:
    """The replay of the op's output `slot`, or None and why there is none."""
    ref, tgt = pair.ref, pair.target
    if ref is None or tgt is None:
        return None, because(Why.ONE_SIDED)
    if not replay.supported(ref.op_type):
        return None, because(Why.NO_REPLAY_FOR, ref.op_type)
    if slot not in ref.outputs or slot not in tgt.outputs:
        return None, because(Why.OUTPUT_SLOT_NOT_ON_BOTH, slot)
    n = sum(t.size or 0 for t in list(ref.inputs.values()) + list(tgt.inputs.values()))
    if n > REPLAY_MAX_ELEMENTS:
        return None, because(Why.NOT_REPLAYED_SIZE, n, REPLAY_MAX_ELEMENTS)
    outs = (ref.outputs[slot], tgt.outputs[slot])
    return ReplayPlan(
        op_type=ref.op_type,
        attrs=dict(ref.attrs),
        constants={s: src.ref for s, src in ref.sources.items() if src.kind == "constant" and s not in ref.inputs},
        inputs=(dict(ref.inputs), dict(tgt.inputs)),
        from_ref=tuple(s for s, role in roles.items() if role == "constant" and s in ref.inputs),
        outputs=outs,
        out_shapes=tuple({s: tuple(t.shape or ()) for s, t in op.outputs.items()} for op in (ref, tgt)),  # type: ignore[arg-type]
        tolerances=tuple(session.thresholds.tolerance(t.dtype, None) for t in outs),  # type: ignore[arg-type]
        floors=tuple(session.thresholds.floor(t.dtype)[0] for t in outs),  # type: ignore[arg-type]
        slot=slot,
    ), ""


def run_replay(plan: ReplayPlan) -> tuple[ReplayProof | None, Said]:
    """Recompute the reference op's definition on each side's own inputs; (proof, or None and why not)."""
    return run_replays_here([plan])[0]


# want, got (at the positions compared), tolerance, positions (None: every one), the output's elements
_Compared = tuple[np.ndarray, np.ndarray, ElementTolerance, "np.ndarray | None", int]
REPLAYS_AT_ONCE = 1 << 20  # output elements of the replays whose deviations are computed together


def run_replays_here(plans: list[ReplayPlan]) -> list[tuple[ReplayProof | None, Said]]:
    """run_replay of each plan, in this process; the deviations of small outputs computed together
    (smallpairs.py: the same numbers as one at a time), REPLAYS_AT_ONCE output elements at a time."""
    out: list[tuple[ReplayProof | None, Said]] = []
    held: list[tuple[ReplayPlan, list[_Compared]]] = []
    size = 0

    def flush() -> None:
        pairs = [(want, got, want.shape, tol) for _plan, sides in held for want, got, tol, _pos, _n in sides]
        stats = iter(compare_many(pairs, kl=False))
        for plan, sides in held:
            out.append((_proof(plan, sides, [next(stats) for _side in sides]), ""))
        held.clear()

    for plan in plans:
        sides, why = _recomputed(plan)
        if sides is None:
            flush()  # the answers stay in the plans' order
            size = 0
            out.append((None, why))
            continue
        held.append((plan, sides))
        size += sum(want.size for want, *_rest in sides)
        if size >= REPLAYS_AT_ONCE:
            flush()
            size = 0
    flush()
    return out


def _recomputed(plan: ReplayPlan) -> tuple[list[_Compared] | None, Said]:
    """Each side's recomputation (rounded to its output's dtype) beside its dumped output, at the positions
    compared; or None and why there is none."""
    slot = plan.slot
    try:
        ref_in = {s: _read(t) for s, t in plan.inputs[0].items()}
        tgt_in = {s: _read(t) for s, t in plan.inputs[1].items()}
        for s in plan.from_ref:
            tgt_in[s] = ref_in[s]  # the op's definition is the reference's (epsilon, axes, scales)
        sides: list[_Compared] = []
        for side, inputs in enumerate((ref_in, tgt_in)):
            spec = replay.ReplayInputs(
                op_type=plan.op_type,
                inputs=inputs,
                attrs=dict(plan.attrs),
                constants=plan.constants,
                out_shapes=plan.out_shapes[side],
            )
            out_t = plan.outputs[side]
            size = out_t.size or 0
            positions = sample_positions(size)
            # a big product computed at the compared positions only (its whole may be over the replay budget)
            at = replay.replay_at(spec, positions, size) if positions is not None and slot == 0 else None
            if at is None:
                want = replay.replay(spec)
                if slot not in want:
                    return None, because(Why.REPLAY_NO_OUTPUT, plan.op_type, slot)
            got = _read(out_t)
            if at is None:
                positions = sample_positions(got.size)
                want_here, got_here = _compared_values(want[slot], got, out_t.dtype, positions)
            elif got.size != size:
                raise ValueError(f"replay gives {size} elements, the dump holds {got.size}")
            else:
                want_here, got_here = _round_to(at, out_t.dtype), np.asarray(got).reshape(-1)[positions]
            sides.append((want_here, got_here, plan.tolerances[side], positions, got.size))
    except replay.ReplayUnsupported as e:
        return None, f"no replay: {e}"
    except (OSError, ValueError, FloatingPointError) as e:
        return None, f"replay failed: {e}"
    return sides, ""


def _proof(plan: ReplayPlan, sides: list[_Compared], stats: list[PairStats]) -> ReplayProof:
    dev = [_deviation(st, want, got, positions) for st, (want, got, _tol, positions, _n) in zip(stats, sides)]
    positions, elements = sides[-1][3], sides[-1][4]
    floor_ref, floor_target = plan.floors
    return ReplayProof(
        dev[0][0],
        dev[1][0],
        floor_ref,
        floor_target,
        plan.slot,
        tail_ref=dev[0][1],
        tail_target=dev[1][1],
        error_margin=max(dev[0][2], dev[1][2]),
        sample=0 if positions is None else positions.size,
        elements=elements,
    )


def _shipped(plan: ReplayPlan) -> ReplayPlan | None:
    """The plan with its tensors as specs a worker process reads (None when a layout is not known)."""
    try:
        specs = {id(t): tensor_spec(t) for t in (*plan.inputs[0].values(), *plan.inputs[1].values(), *plan.outputs)}
    except (AssertionError, OSError, ValueError):
        return None
    return replace(
        plan,
        inputs=tuple({s: specs[id(t)] for s, t in side.items()} for side in plan.inputs),  # type: ignore[arg-type]
        outputs=tuple(specs[id(t)] for t in plan.outputs),  # type: ignore[arg-type]
    )


def _run_shipped(plan: ReplayPlan) -> tuple[ReplayProof | None, Said]:
    """In a worker process: the tensors back from their specs, then the replay."""
    return run_replay(_unshipped(plan))


def _run_shipped_many(plans: list[ReplayPlan]) -> list[tuple[ReplayProof | None, Said]]:
    """In a worker process: several replays, their small outputs' deviations computed together."""
    return run_replays_here([_unshipped(plan) for plan in plans])


def _unshipped(plan: ReplayPlan) -> ReplayPlan:
    return replace(
        plan,
        inputs=tuple({s: from_spec(spec) for s, spec in side.items()} for side in plan.inputs),  # type: ignore[arg-type]
        outputs=tuple(from_spec(spec) for spec in plan.outputs),  # type: ignore[arg-type]
    )


def run_replays(
    plans: list[ReplayPlan], workers: int | ComparePool | None = None, cancelled: Callable[[], bool] | None = None
) -> Iterator[tuple[int, tuple[ReplayProof | None, Said]]]:
    """(index, (proof or None, why not)) for each plan, in any order: on the pool's processes, or on processes
    started for them when there are enough bytes to read (both cores: the replays were half a noisy scan),
    else here. A plan whose tensors cannot be described to a worker runs here. (Within a command's
    shared_processes, a scan sends its replays as it finds them: `StreamedReplays`.)"""
    shipped = [_shipped(p) for p in plans]
    remote = [i for i, sp in enumerate(shipped) if sp is not None]
    nbytes = sum(t.nbytes() for p in plans for t in (*p.inputs[0].values(), *p.inputs[1].values(), *p.outputs))
    count = workers.workers if isinstance(workers, ComparePool) else (workers or os.cpu_count() or 1)
    local = set(range(len(plans)))
    if remote and count > 1 and (isinstance(workers, ComparePool) or nbytes >= MIN_BYTES_FOR_PROCESSES):
        jobs = [shipped[i] for i in remote]
        if isinstance(workers, ComparePool):
            # POOL_REPLAYS_PER_TASK a task: one a task cost the app's UI process more (pickling, waiting) than
            # a small replay itself (the 20,000-op demo: 9,777 replays)
            done = workers.map_chunks(_run_shipped_many, jobs, POOL_REPLAYS_PER_TASK, cancelled)
        else:
            done = map_in_processes(_run_shipped, jobs, count, cancelled)
        for k, outcome in done:
            local.discard(remote[k])
            yield remote[k], outcome
    todo = sorted(local)
    for start in range(0, len(todo), 64):  # a look at `cancelled` between batches
        if cancelled and cancelled():
            return
        part = todo[start : start + 64]
        yield from zip(part, run_replays_here([plans[i] for i in part]))


class StreamedReplays:
    """A scan's replays sent to the command's worker processes (shared_processes) as the scan finds them,
    REPLAYS_PER_TASK at a time: they run while this process measures the ops after them (a noisy 3,000-kernel
    scan: 1,467 replays, a third of its CPU time). A plan whose tensors cannot be described to a worker runs
    here, after the others."""

    # one task per replay cost this process more in pickling than the replay itself, and each task a few ms of
    # waiting (the pool's threads take the interpreter lock to send it)
    REPLAYS_PER_TASK = 128

    def __init__(self, ex: ProcessPoolExecutor, workers: int = 1):
        self.ex = ex
        self.workers = max(1, workers)
        self.count = 0
        self._pending: list[tuple[int, ReplayPlan]] = []
        self._sent: list[tuple[list[int], Future[list[tuple[ReplayProof | None, Said]]]]] = []
        self._here: list[tuple[int, ReplayPlan]] = []

    def add(self, key: int, plan: ReplayPlan) -> None:
        self.count += 1
        shipped = _shipped(plan)
        if shipped is None:
            self._here.append((key, plan))
            return
        self._pending.append((key, shipped))
        if len(self._pending) >= self.REPLAYS_PER_TASK:
            self._send()

    def _send(self, parts: int = 1) -> None:
        """The pending plans sent as `parts` tasks (fewer when there are fewer plans)."""
        pending, self._pending = self._pending, []
        size = -(-len(pending) // parts) if pending else 0
        for start in range(0, len(pending), max(1, size)):
            part = pending[start : start + size]
            self._sent.append(([k for k, _plan in part], self.ex.submit(_run_shipped_many, [p for _k, p in part])))

    def results(
        self, cancelled: Callable[[], bool] | None = None
    ) -> Iterator[tuple[int, tuple[ReplayProof | None, Said]]]:
        """(key, (proof or None, why not)) of every plan added."""
        # the last plans split among the workers: nothing else is left for them, and this process waits for
        # these (as one task, one worker ran them all while the other idled)
        self._send(parts=self.workers)
        try:
            for keys, future in self._sent:
                if cancelled and cancelled():
                    return
                yield from zip(keys, future.result())
            for start in range(0, len(self._here), 64):
                if cancelled and cancelled():
                    return
                part = self._here[start : start + 64]
                yield from zip([k for k, _plan in part], run_replays_here([plan for _k, plan in part]))
        except KeyboardInterrupt:
            end_now(self.ex)  # ctrl+c: the workers leave SIGINT to us; end them now
            raise
        finally:
            for _keys, future in self._sent:
                future.cancel()


def replay_proof(session: Session, pair: OpPair, roles: dict[int, str], slot: int) -> tuple[ReplayProof | None, Said]:
    """The replay of one op here and now (the bisection's probes, the culprit checks)."""
    plan, why = replay_plan(session, pair, roles, slot)
    return run_replay(plan) if plan is not None else (None, why)


def _read(t: TensorRef) -> np.ndarray:
    a = np.asarray(t.read())
    return a.reshape(t.shape) if t.shape is not None and a.size == int(np.prod(t.shape)) else a


def sample_positions(size: int) -> np.ndarray | None:
    """The output positions a replay compares: None (every one) below REPLAY_SAMPLED_FROM elements, else
    REPLAY_SAMPLE positions drawn uniformly (with replacement: independent draws) with a fixed seed."""
    if size < REPLAY_SAMPLED_FROM:
        return None
    return np.random.default_rng(REPLAY_SEED).integers(0, size, REPLAY_SAMPLE)


def _compared_values(
    expected: np.ndarray, got: np.ndarray, dtype: str | None, positions: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """(the recomputation rounded to the output's own dtype, the dumped output), flat, at `positions` only
    when given."""
    expected = np.asarray(expected)
    if expected.size != got.size:
        raise ValueError(f"replay gives {expected.size} elements, the dump holds {got.size}")
    flat_expected, flat_got = expected.reshape(-1), np.asarray(got).reshape(-1)
    if positions is not None:
        flat_expected, flat_got = flat_expected[positions], flat_got[positions]
    want = _round_to(flat_expected.astype(np.float64) if flat_expected.dtype.kind == "f" else flat_expected, dtype)
    return want, flat_got


def _deviation(
    st: PairStats, want: np.ndarray, got: np.ndarray, positions: np.ndarray | None
) -> tuple[float, float, float]:
    """From the statistics of a dumped output against its recomputation: the relative error, the share of
    elements off by more than the tolerance (the tail rule's count) and, for a sample, that error's relative
    margin (_error_margin; 0 when every position is compared)."""
    err = tensor_error(st)
    tail = st.n_off / st.compared if st.compared else 0.0
    margin = _error_margin(want, got) if positions is not None else 0.0
    if err is None:
        return math.inf, tail, margin
    return (math.inf if err.nonfinite else err.rel), tail, margin


def _error_margin(want: np.ndarray, got: np.ndarray) -> float:
    """Three standard errors of the sampled mean |difference|, relative to it: how far the whole output's
    error may be from the sample's (99.7 % for a normal mean; the trimmed mean varies less)."""
    with np.errstate(invalid="ignore", over="ignore"):
        d = np.abs(want.astype(np.float64) - got.astype(np.float64))
    d = d[np.isfinite(d)]
    mean = float(d.mean()) if d.size else 0.0
    return 3 * float(d.std()) / math.sqrt(d.size) / mean if mean > 0 else 0.0


def _round_to(a: np.ndarray, dtype: str | None) -> np.ndarray:
    """float64 values as the device would store them in `dtype` (overflow to Inf included)."""
    if a.dtype.kind != "f":
        return a
    with np.errstate(over="ignore", invalid="ignore"):
        if dtype == "float16":
            return a.astype(np.float16).astype(np.float64)
        if dtype == "float32":
            return a.astype(np.float32).astype(np.float64)
        if dtype == "bfloat16":
            bits = a.astype(np.float32).view(np.uint32).astype(np.uint64)
            rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16  # round to nearest even
            return rounded.astype(np.uint32).view(np.float32).astype(np.float64)
    return a


# ------------------------------------------------------------------------------------------------ the scan


@dataclass
class ScanResult:
    order: list[OpPair]
    locals: list[LocalError]  # one per op of `order`
    tainted: list[bool]  # a root at or above the op (its error may be carried here)
    roots: list[LocalError] = field(default_factory=list)
    differing: AbstractSet[str] = frozenset()  # weights and inputs the preconditions found differing
    unread: list[tuple[str, TensorResult]] = field(default_factory=list)  # (op label, output) not readable
    # every tensor verdict judged in context (the preconditions' and the scan's), never written into the cache
    in_context: InContext = NO_CONTEXT
    position: dict[int, int] | None = None  # pair index -> position in `order`, made when first asked for
    # selections that flipped on near-ties (selection.py): for each position the flip that reaches it, and the flips
    reach: list[int | None] = field(default_factory=list)
    flips: tuple[FlipSite, ...] = ()


def scan(
    session: Session,
    order: list[OpPair],
    predecessors: Callable[[int], set[int]],
    tainted_by_inputs: AbstractSet[int] = frozenset(),
    workers: int | ComparePool | None = None,
    progress: Callable[[int, int], None] | None = None,
    cancelled: Callable[[], bool] | None = None,
    differing: AbstractSet[str] = frozenset(),
    before: InContext = NO_CONTEXT,
) -> ScanResult:
    """Every op of `order` compared and judged. `predecessors(pos)`: positions feeding `pos` (the graph, or
    the previous op); `tainted_by_inputs`: positions fed by a weight or input that differs (preconditions),
    `differing` their names (where an op reads them, they are never called carried noise); `before` the
    verdicts the preconditions judged in context (the result's `in_context` holds them and the scan's)."""
    compared = [0]

    def counted(done: int, total: int) -> None:
        compared[0] = total
        if progress is not None:
            progress(done, total)

    shared = current_shared_processes()
    count = workers if isinstance(workers, int) else os.cpu_count() or 1
    streamed: StreamedReplays | None = None
    if isinstance(workers, ComparePool):  # the app's pool: its processes replay while the next ops are measured
        streamed = StreamedReplays(workers.executor(), workers.workers)
    elif shared is not None and count > 1:
        streamed = StreamedReplays(shared.executor(count), count)
    locals_: list[LocalError] = []
    plans: list[tuple[int, ReplayPlan]] = []
    early: dict[int, tuple[LocalError, dict[int, str]]] = {}  # position -> (measured op, its input roles)
    position = {p.index: i for i, p in enumerate(order)}

    def measure(i: int, res: OpResult, roles: dict[int, str]) -> LocalError:
        le = measured(session, res, roles)
        if judges_selection(session, le, res, roles):
            return le
        if needs_replay(session, le):
            plan, why = replay_plan(session, le.pair, roles, le.out_slot or 0)
            if plan is None:
                le.replay_note = why
            elif streamed is not None:
                streamed.add(i, plan)  # replayed by the workers while the next ops are measured
            else:
                plans.append((i, plan))
        return le

    def measure_early(res: OpResult) -> None:
        """An op whose tensors are all known while the workers still compute: measured now, in time that was
        spent waiting for them (measuring after the compares was a third of a noisy bisect's time). Not an op with an input that could not be compared: measuring it asks for its producer's
        result, which may not be known yet (read here, it would change what is read and stored, and when)."""
        i = position.get(res.pair.index)
        if i is None or any(r.verdict in (UNREADABLE, ONLY_REF, ONLY_TARGET) for r in res.inputs):
            return
        roles = input_roles(res.pair)
        early[i] = (measure(i, res, roles), roles)

    results = evaluate_all(
        session,
        order,
        workers=workers,
        progress=counted,
        cancelled=cancelled,
        purpose="scan",
        ready=measure_early if streamed is not None else None,
    )
    roles = []  # asked for three times per op: made once
    resized: list[tuple[tuple[int, str, Said], ...]] = []  # per op: its data inputs whose shapes differ
    for i, res in enumerate(results):
        if i in early:
            le, op_roles = early[i]
        else:
            op_roles = input_roles(res.pair)
            le = measure(i, res, op_roles)
        roles.append(op_roles)
        locals_.append(le)
        resized.append(
            tuple(
                (r.slot, str(r.verdict), r.reason)
                for r in res.inputs
                if r.verdict == SHAPE_MISMATCH and op_roles.get(r.slot) == "data"
            )
        )
    if streamed is not None:
        replays, total = streamed.results(cancelled), streamed.count
    else:
        replays = ((plans[k][0], outcome) for k, outcome in run_replays([p for _i, p in plans], workers, cancelled))
        total = len(plans)
    # the replays continue the count of the compares: one bar that never runs backwards
    for k, (i, (proof, why)) in enumerate(replays, 1):
        le = locals_[i]
        le.replay, le.replay_note = proof, why
        if progress is not None:
            progress(compared[0] + k, compared[0] + total)
    locals_ = [judged(session, le) for le in locals_]
    th = session.thresholds
    resized_by_flips(locals_, predecessors, resized, th.gain, min(th.max_off, TAIL_SHARE))
    tainted: list[bool] = []
    for pos, le in enumerate(locals_):
        upstream = any(tainted[p] for p in predecessors(pos) if p < len(tainted))
        # error from an op that could not be judged taints as a root does: what it carries is never "noise"
        tainted.append(le.is_root or le.unjudged_flow or pos in tainted_by_inputs or upstream)
    out = ScanResult(order, locals_, tainted, [le for le in locals_ if le.is_root], frozenset(differing))
    flipped = [le.selection is not None and le.selection.flipped for le in locals_]
    out.reach = flip_reach(flipped, tainted, predecessors)
    out.flips = flip_sites(order, locals_, out.reach, lambda p, slot: feeding_ops(session.alignment, p, slot))
    out.unread = [(res.pair.label, r) for res in results for r in res.outputs if r.verdict == UNREADABLE]
    out.in_context = rejudge(session, out, predecessors, roles, before)
    return out


def rejudge(
    session: Session,
    sr: ScanResult,
    predecessors: Callable[[int], set[int]],
    roles_of: list[dict[int, str]] | None = None,
    before: InContext = NO_CONTEXT,
) -> InContext:
    """Tensor verdicts in context: beyond the floor of its dtypes, but no root upstream -> close (carried
    precision noise, said so in the reason). Returns a new context (`before` and these); the session's cache
    keeps what each pair's own numbers said."""
    judged: dict[int, TensorResult] = {}
    cos = session.thresholds.cos

    def now(r: TensorResult) -> TensorResult:  # two ops may read one file: the later sees the earlier's verdict
        return judged.get(pair_key(r.ref, r.target)) or before.tensor(r)

    def restate(r: TensorResult, verdict: str, reason: Said) -> None:
        if not session.is_final(r):  # a result computed against a transformed reference keeps its own
            judged[pair_key(r.ref, r.target)] = restated(r, verdict, reason)

    for pos, le in enumerate(sr.locals):
        into = any(sr.tainted[p] for p in predecessors(pos))
        res = session.op_result(le.pair, purpose="scan")
        roles = input_roles(le.pair) if roles_of is None else roles_of[pos]
        # (read only where the op is said to be wired otherwise: most ops are not, and this asked every op's
        # origins again for another list of slots than measuring asked them for)
        swapped = (
            dict(wiring(session.ref, session.target, session.alignment, le.pair, list(roles))) if le.wiring else {}
        )
        for cached in res.inputs:
            r = now(cached)
            if r.slot in swapped and le.wiring and r.verdict == DIVERGED:
                restate(r, DIVERGED, because(Why.CARRIES_REF_INPUT, swapped[r.slot]))
            elif roles.get(r.slot) != "constant":  # a constant that differs is the op's definition, not noise
                through = _one_sided(session, le.pair, r.slot)
                if through and r.verdict == DIVERGED and not r.statistics_only:
                    restate(r, DIVERGED, because(Why.COMES_UNJUDGED, _error_numbers(result_error(r)), through))
                elif why := _carried(r, _tainted_into(session, sr, position_of(sr), le.pair, r.slot, into), cos):
                    restate(r, *_flipped_or(sr, _reach_into(session, sr, le.pair, r.slot, pos), r, why))
                elif (
                    r.verdict == SHAPE_MISMATCH
                    and not into
                    and (flip := _flip_reason(sr, _reach_into(session, sr, le.pair, r.slot, pos), r))
                ):
                    restate(r, FLIPPED, flip)  # as many as a flipped selection kept on each side
        for cached in res.outputs:
            r = now(cached)
            if why := _carried(r, sr.tainted[pos], cos):
                restate(r, *_flipped_or(sr, sr.reach[pos] if sr.reach else None, r, why))
            elif _flip_within_floor(sr, pos, r):  # a comparison's output: a flip, however few elements
                restate(r, FLIPPED, _flip_reason(sr, pos, r) or r.reason)
            elif r.verdict == SHAPE_MISMATCH and sr.reach and not sr.tainted[pos]:
                if flip := _flip_reason(sr, sr.reach[pos], r):
                    restate(r, FLIPPED, flip)
    return before.merged(judged.values())


def _flip_within_floor(sr: ScanResult, pos: int, r: TensorResult) -> bool:
    """An output of a flip op that differs but was judged close (a bool or integer output: its floor is its
    own), which the flip decides."""
    if not sr.reach or sr.reach[pos] != pos or r.verdict != CLOSE or sr.tainted[pos]:
        return False
    return r.stats is not None and (r.stats.max_abs or 0.0) > 0


def position_of(sr: ScanResult) -> dict[int, int]:
    """Each op's position in the scan's order, by pair index (made once per scan result)."""
    if sr.position is None:
        sr.position = {p.index: i for i, p in enumerate(sr.order)}
    return sr.position


def _tainted_into(
    session: Session, sr: ScanResult, position: dict[int, int], pair: OpPair, slot: int, into: bool
) -> bool:
    """Whether input `slot` may carry a root's divergence: its own producer's taint (the same value is then
    judged alike where it is made and where it is read), else whether any predecessor is tainted (no graph)."""
    if any(src is not None and src.kind != "op" and src.ref in sr.differing for src in input_source(pair, slot)):
        return True  # a weight or input the preconditions found differing: not noise where it is read either
    found = [
        position[o.pair.index]
        for o in origins(session.ref, session.target, session.alignment, pair, slot)
        if o.kind == "pair" and o.pair is not None and o.pair.index in position
    ]
    return any(sr.tainted[p] for p in found) if found else into


def _reach_into(session: Session, sr: ScanResult, pair: OpPair, slot: int, pos: int) -> int | None:
    """The flip whose changed selection reaches input `slot` (selection.py): its own producer's; with no graph,
    the op's own (a flip op's own inputs are not reached by its flip)."""
    if not sr.reach:
        return None
    position = position_of(sr)
    found = [
        position[o.pair.index]
        for o in origins(session.ref, session.target, session.alignment, pair, slot)
        if o.kind == "pair" and o.pair is not None and o.pair.index in position
    ]
    if not found:
        return sr.reach[pos] if sr.reach[pos] != pos else None
    reached = [f for p in found if (f := sr.reach[p]) is not None]
    return min(reached) if reached else None


def _flipped_or(sr: ScanResult, flip: int | None, r: TensorResult, why: Reason) -> tuple[Verdict, Said]:
    """A tensor carried without a root: flipped (with its reason code) where a flipped selection reaches it,
    else close, carried precision noise (`why`)."""
    reason = _flip_reason(sr, flip, r)
    return (FLIPPED, reason) if reason is not None else (CLOSE, why)


def _flip_reason(sr: ScanResult, flip: int | None, r: TensorResult) -> FlipReason | None:
    """The reason code of a tensor a flipped selection reaches (None when none does): an output of the flip op
    itself, or a tensor downstream of it."""
    if flip is None:
        return None
    pair = sr.locals[flip].pair
    err = result_error(r)
    own = pair.ref is not None and any(t is r.ref for t in pair.ref.outputs.values())
    code = SelectionReason.FLIP if own else SelectionReason.AFTER_FLIP
    return FlipReason(code, pair.name, err.rel if err is not None and not err.nonfinite else math.nan)


def _one_sided(session: Session, pair: OpPair, slot: int) -> Reason | None:
    """Where the input comes from without being judged (what it carries is not known to be noise)."""
    origins = unjudged_origins(session.ref, session.target, session.alignment, pair, slot)
    return because(Why.UNJUDGED_ORIGINS, tuple(origins)) if origins else None


def _carried(r: TensorResult, tainted: bool, cos: float | None) -> Reason | None:
    """Why `r` is carried precision noise (None when it is not: it agrees, a root may feed it, NaN/Inf, or its
    cosine is below the user's `--cos`, which calls it diverged whatever its context)."""
    if r.verdict != DIVERGED or tainted:
        return None
    if cos is not None and r.stats is not None and r.stats.cos is not None and r.stats.cos < cos:
        return None
    err = result_error(r)
    if err is not None and err.nonfinite:
        return None  # NaN/Inf differences are never noise
    return because(Why.CARRIED_NOISE, _error_numbers(err))


def _error_numbers(err: TensorError | None) -> tuple[int, float] | None:
    """A tensor's error as its reasons quote it: (positions where NaN/Inf differ, relative error)."""
    return None if err is None else (err.nonfinite, err.rel)


def kernel_order(session: Session) -> list[OpPair]:
    return [
        p
        for p in session.alignment.pairs
        if p.kind == KERNEL
        and p.paired
        and p.ref is not None
        and p.target is not None
        and p.ref.outputs
        and p.target.outputs
    ]


def describe_noise(session: Session) -> Reason | None:
    """Why a pair counts as noisy (None when it is clean): ops on one side only (the op types of the side
    present), outputs in another dtype on the target, a target that computes in float16/bfloat16."""
    casts = [p for p in session.alignment.unpaired() if p.kind == KERNEL]
    types = sorted({p.op_type for p in casts})
    mixed = 0
    for p in kernel_order(session):
        assert p.ref is not None and p.target is not None  # kernel_order keeps paired ops only
        for s, t in p.target.outputs.items():
            r = p.ref.outputs.get(s)
            if r is not None and r.dtype != t.dtype:
                mixed += 1
    low = least_precise(
        [
            t.dtype
            for p in kernel_order(session)
            if p.target is not None  # always: paired ops
            for t in p.target.outputs.values()
        ]
    )
    low = low if low in ("float16", "bfloat16") and not mixed else None
    if not casts and not mixed and low is None:
        return None
    return because(Why.NOISE, len(casts), types[:4], mixed, low)


__all__ = [
    "scan",
    "analyse",
    "input_roles",
    "replay_proof",
    "replay_plan",
    "run_replay",
    "ScanResult",
    "describe_noise",
    "fmt_rel",
]
