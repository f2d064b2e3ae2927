"""The replay runner of the scan: a replay planned as plain data (ReplayPlan), run here or shipped to worker
processes (as tensor specs), and the proof it gives: each side's dumped output against the recomputation of
the reference op's definition on that side's own inputs (sampled for large outputs)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Generic, TypeVar

import numpy as np

from dumptui.core.compare.metrics import ElementTolerance
from dumptui.core.compare.noise import tensor_error
from dumptui.core.compare.pairstats import PairStats
from dumptui.core.compare.processes import TensorSpec, from_spec, tensor_spec
from dumptui.core.compare.sampling import sample_positions
from dumptui.core.compare.session import Session
from dumptui.core.compare.smallpairs import Deviation, compare_many, deviations_many
from dumptui.core.compare.spread import AlongTask, Job
from dumptui.core.compare.verdict import Thresholds
from dumptui.core.graph.align import OpPair
from dumptui.core.io.executor import MIN_BYTES_FOR_PROCESSES, BatchPolicy, Cancel, Executor, Stream
from dumptui.core.model.dump import Op, Role, Roles, SourceKind, TensorRef
from dumptui.core.model.reason import Said, Why, because
from dumptui.core.search.localerror import (
    TAIL_SHARE,
    ReplayProof,
)
from dumptui.core.search.replay.run import replay, replay_at, supported
from dumptui.core.search.replay.spec import ReplayInputs, ReplayUnsupported
from dumptui.core.search.selection import is_selection
from dumptui.core.search.threshold import is_threshold

REPLAY_MAX_ELEMENTS = 1 << 24  # larger ops are not replayed (float64 copies of every input)
HERE_REPLAYS = 64  # replays run here between looks at the cancel


# ------------------------------------------------------------------------------------------------ replay


_T = TypeVar("_T")  # how a plan names its tensors
_U = TypeVar("_U")


@dataclass
class ReplayPlanOf(Generic[_T]):
    """What one replay reads and computes, as plain data: it runs here or in a worker process alike.
    Its tensors are TensorRefs here (ReplayPlan), TensorSpecs on their way to a worker (ShippedPlan): the spec
    (processes.tensor_spec) when the layout is known."""

    op_type: str
    attrs: dict[str, str]
    constants: dict[int, str]  # slot -> the constant's text (from the graph)
    inputs: tuple[dict[int, _T], dict[int, _T]]  # the reference's, the target's
    from_ref: tuple[int, ...]  # constant slots the target takes from the reference (the op's definition)
    outputs: tuple[_T, _T]  # the output compared, each side
    out_shapes: tuple[dict[int, tuple[int, ...]], dict[int, tuple[int, ...]]]
    tolerances: tuple[ElementTolerance, ElementTolerance]
    floors: tuple[float, float]
    slot: int
    # each side's dumped output at the sampled positions, as the worker that computed the output pair's
    # statistics read them moments before (Session.take_sampled): that file is then not read again
    dumped: tuple[np.ndarray | None, np.ndarray | None] = (None, None)

    def with_tensors(self, convert: Callable[[_T], _U]) -> ReplayPlanOf[_U]:
        """The same plan with each tensor converted (to the spec a worker reads, or back)."""
        ref_in, tgt_in = self.inputs
        return ReplayPlanOf(
            self.op_type,
            self.attrs,
            self.constants,
            ({s: convert(t) for s, t in ref_in.items()}, {s: convert(t) for s, t in tgt_in.items()}),
            self.from_ref,
            (convert(self.outputs[0]), convert(self.outputs[1])),
            self.out_shapes,
            self.tolerances,
            self.floors,
            self.slot,
            self.dumped,
        )


ReplayPlan = ReplayPlanOf[TensorRef]
ShippedPlan = ReplayPlanOf[TensorSpec]
# what a replay computes, from the graph alone: (op type, attributes, constants, slots taken from the reference)
Definition = tuple[str, dict[str, str], dict[int, str], tuple[int, ...]]


def replay_plan(
    session: Session, pair: OpPair, roles: Roles, slot: int, definition: Definition | None = None
) -> tuple[ReplayPlan | None, Said]:
    """The replay of the op's output `slot`, or None and why there is none. `definition`: _definition of the
    pair's reference op and `roles`, when made already."""
    ref, tgt = pair.ref, pair.target
    if ref is None or tgt is None:
        return None, because(Why.ONE_SIDED)
    if ref.backward_call or tgt.backward_call:
        return None, because(Why.NO_REPLAY_BACKWARD, ref.op_type)
    if not supported(ref.op_type):
        return None, because(Why.NO_REPLAY_FOR, ref.op_type)
    if slot not in ref.outputs or slot not in tgt.outputs:
        return None, because(Why.OUTPUT_SLOT_NOT_ON_BOTH, slot)
    every = [*ref.inputs.values(), *tgt.inputs.values(), ref.outputs[slot], tgt.outputs[slot]]
    if not all(t.has_data for t in every):
        return None, because(Why.NO_REPLAY_WITHOUT_DATA)
    return _sized_plan(
        session.thresholds,
        _definition(ref, roles) if definition is None else definition,
        (dict(ref.inputs), dict(tgt.inputs)),
        (ref.outputs[slot], tgt.outputs[slot]),
        (_out_shapes(ref), _out_shapes(tgt)),
        slot,
    )


def _definition(ref: Op, roles: Roles) -> Definition:
    return (
        ref.op_type,
        dict(ref.attrs),
        {s: src.ref for s, src in ref.sources.items() if src.kind == SourceKind.CONSTANT and s not in ref.inputs},
        tuple(s for s, role in roles.items() if role == Role.CONSTANT and s in ref.inputs),
    )


def _sized_plan(
    th: Thresholds,
    definition: Definition,
    inputs: tuple[dict[int, TensorRef], dict[int, TensorRef]],
    outs: tuple[TensorRef, TensorRef],
    out_shapes: tuple[dict[int, tuple[int, ...]], dict[int, tuple[int, ...]]],
    slot: int,
) -> tuple[ReplayPlan | None, Said]:
    """The plan of `definition` on these tensors, what their sizes and dtypes make of it (here, or in the
    worker that has just read them: ReplaysAlongside)."""
    n = sum(t.size or 0 for t in list(inputs[0].values()) + list(inputs[1].values()))
    if n > REPLAY_MAX_ELEMENTS:
        return None, because(Why.NOT_REPLAYED_SIZE, n, REPLAY_MAX_ELEMENTS)
    op_type, attrs, constants, from_ref = definition
    return ReplayPlanOf(
        op_type=op_type,
        attrs=attrs,
        constants=constants,
        inputs=inputs,
        from_ref=from_ref,
        outputs=outs,
        out_shapes=out_shapes,
        tolerances=(th.tolerance(outs[0].dtype, None), th.tolerance(outs[1].dtype, None)),
        floors=(th.floor(outs[0].dtype)[0], th.floor(outs[1].dtype)[0]),
        slot=slot,
    ), ""


def _out_shapes(op: Op) -> dict[int, tuple[int, ...]]:
    return {s: tuple(t.shape or ()) for s, t in op.outputs.items()}


# ------------------------------------------------------------------------------------------------ alongside

Outcome = tuple["ReplayProof | None", Said]
Where = tuple[int, int]  # a tensor of a chunk: (position of its pair among the chunk's shipped jobs, 0 ref / 1 target)
# an op whose replay its chunk's worker may run: (pair index, definition, output slot, where each input of the
# reference and of the target is, where each side's output is)
Candidate = tuple[int, Definition, int, dict[int, Where], dict[int, Where], Where, Where]
# what the worker's plan made of the tensors' sizes and dtypes, checked against this process's plan
Sized = tuple[
    tuple[dict[int, tuple[int, ...]], dict[int, tuple[int, ...]]],
    tuple[ElementTolerance, ElementTolerance],
    tuple[float, float],
]


class ReplaysAlongside:
    """A scan's replays run by the worker that compares the op's tensor pairs, in the same task
    (spread.Alongside): it reads none of the files again (they are kept from the compare), where a replay
    sent afterwards went to either worker and opened every file a second time (20,848 for the 1,000-layer
    MLP's 2,969 replays). The worker cannot know which ops the scan will want replayed (this process judges
    the op first), so it replays each op of a chunk that has all its tensors there and whose output may be
    beyond its floor: a rule that never says no where the scan's says yes (needs_replay: the output's error,
    its tail share and cosine, its floor at most the op's); an op the scan does not replay keeps no proof.
    `take` gives the scan a proof only for the very plan it would have sent (the same definition, tensors,
    slot, shapes, tolerances and floors); any other replay is planned and sent as before."""

    def __init__(self, session: Session, roles: Callable[[OpPair], Roles]):
        self.session = session
        self._roles_of = roles
        self.roles: dict[int, Roles] = {}  # pair index -> its input roles, made here for the candidates
        # pair index -> (its input roles, definition, output slot) as sent to a worker
        self._sent: dict[int, tuple[Roles, Definition, int]] = {}
        self._done: dict[int, tuple[Sized, Outcome]] = {}

    def task(self, jobs: list[Job]) -> AlongTask | None:
        th = self.session.thresholds
        if not th.replay:
            return None
        where: dict[int, Where] = {}
        for k, job in enumerate(jobs):
            where[id(job[3])] = (k, 0)
            where[id(job[4])] = (k, 1)
        candidates: list[Candidate] = []
        reread: set[int] = set()
        seen: set[int] = set()
        for job in jobs:
            pair = job[0]
            if pair.index in seen:
                continue
            seen.add(pair.index)
            found = self._candidate(pair, where)
            if found is not None:
                candidates.append(found)
                _i, _d, _s, ins_r, ins_t, out_r, out_t = found
                reread.update(k for k, _side in (*ins_r.values(), *ins_t.values(), out_r, out_t))
        return (replays_alongside, (th, candidates), sorted(reread)) if candidates else None

    def _candidate(self, pair: OpPair, where: dict[int, Where]) -> Candidate | None:
        ref, tgt = pair.ref, pair.target
        if ref is None or tgt is None or ref.backward_call or tgt.backward_call:
            return None
        if not supported(ref.op_type) or is_selection(ref.op_type) or is_threshold(ref.op_type):
            return None  # (a selection or a threshold is judged by its own proof first)
        if len(ref.outputs) != 1 or len(tgt.outputs) != 1:
            return None  # the slot replayed is the worst output's: known once the op is judged
        slot = next(iter(ref.outputs))
        if slot not in tgt.outputs:
            return None
        out_r, out_t = where.get(id(ref.outputs[slot])), where.get(id(tgt.outputs[slot]))
        ins_r = {s: w for s, t in ref.inputs.items() if (w := where.get(id(t))) is not None}
        ins_t = {s: w for s, t in tgt.inputs.items() if (w := where.get(id(t))) is not None}
        if out_r is None or out_t is None or len(ins_r) != len(ref.inputs) or len(ins_t) != len(tgt.inputs):
            return None  # a tensor in another chunk, or not read by a worker
        roles = self.roles.get(pair.index)
        if roles is None:
            roles = self.roles[pair.index] = self._roles_of(pair)
        definition = _definition(ref, roles)
        self._sent[pair.index] = (roles, definition, slot)
        return pair.index, definition, slot, ins_r, ins_t, out_r, out_t

    def definition(self, pair: OpPair, roles: Roles) -> Definition | None:
        """The pair's replay definition for `roles`, when it was made for its chunk (replay_plan's argument)."""
        sent = self._sent.get(pair.index)
        return sent[1] if sent is not None and sent[0] is roles else None

    def roles_of(self, pair: OpPair) -> Roles:
        """input_roles of `pair` (made once: for the candidates, when their chunk was sent)."""
        made = self.roles.pop(pair.index, None)
        return made if made is not None else self._roles_of(pair)

    def got(self, jobs: list[Job], result: list[tuple[int, Sized, Outcome]]) -> None:
        for index, sized, outcome in result:
            self._done[index] = (sized, outcome)

    def take(self, pair: OpPair, roles: Roles, slot: int) -> Outcome | None:
        """The worker's proof for the replay the scan asks of `pair` (output `slot`, input `roles`), or None:
        not replayed there (the scan plans and sends it). The worker planned it from the same definition
        (made here, for these very roles), the same tensors (the pair's own: each input and output of both
        sides, read with the layouts this process adopted from the worker) and the same output slot, with the
        sizes, shapes and dtypes of those tensors; the outputs' shapes, tolerances and floors it made are
        checked against the ones made here, so the proof is the one of the plan replay_plan makes here."""
        done, sent = self._done.pop(pair.index, None), self._sent.get(pair.index)
        if done is None or sent is None or sent[0] is not roles or sent[2] != slot:
            return None
        ref, tgt = pair.ref, pair.target
        assert ref is not None and tgt is not None  # a candidate has both sides
        o_r, o_t = ref.outputs[slot], tgt.outputs[slot]
        th = self.session.thresholds
        here = (
            (_out_shapes(ref), _out_shapes(tgt)),
            (th.tolerance(o_r.dtype, None), th.tolerance(o_t.dtype, None)),
            (th.floor(o_r.dtype)[0], th.floor(o_t.dtype)[0]),
        )
        sized, outcome = done
        return outcome if sized == here else None


def replays_alongside(
    arg: tuple[Thresholds, list[Candidate]], refs: list[tuple[TensorRef, TensorRef]], stats: list[PairStats | None]
) -> list[tuple[int, Sized, Outcome]]:
    """In the worker that has just compared a chunk: the replays of its candidates whose output may be beyond
    the floor, planned as replay_plan plans them and run as a shipped plan runs (the same specs, the same
    arithmetic), the files' payloads kept from the compare."""
    try:
        made, plans = _alongside_plans(*arg, refs, stats)
        outcomes = run_replays_here(plans)
    except Exception:
        # a replay this worker cannot plan or run (a kernel's own error, not a replay's "failed"): none of the
        # chunk's is kept, and the scan plans and sends each one it asks for, which fails as it failed before
        # (an op the scan never asks for must not fail the compare)
        return []
    return [(index, sized, outcome) for (index, sized), outcome in zip(made, outcomes)]


def _alongside_plans(
    th: Thresholds, candidates: list[Candidate], refs: list[tuple[TensorRef, TensorRef]], stats: list[PairStats | None]
) -> tuple[list[tuple[int, Sized]], list[ReplayPlan]]:
    plans: list[ReplayPlan] = []
    made: list[tuple[int, Sized]] = []
    for index, definition, slot, ins_r, ins_t, out_r, out_t in candidates:
        o_r, o_t = refs[out_r[0]][out_r[1]], refs[out_t[0]][out_t[1]]
        st = stats[out_r[0]]
        if (out_r[0], out_r[1], out_t[1]) != (out_t[0], 0, 1) or st is None:
            continue  # (each side's output in the same pair: its statistics are the output's)
        if not _may_need_replay(th, st, o_r.dtype, o_t.dtype):
            continue
        inputs = (
            {s: refs[k][side] for s, (k, side) in ins_r.items()},
            {s: refs[k][side] for s, (k, side) in ins_t.items()},
        )
        out_shapes = ({slot: tuple(o_r.shape or ())}, {slot: tuple(o_t.shape or ())})
        plan, _why = _sized_plan(th, definition, inputs, (o_r, o_t), out_shapes, slot)
        received = _as_received(plan) if plan is not None else None
        if plan is None or received is None:
            continue  # not replayed (too large), or a layout a worker cannot be sent: the scan says why
        plans.append(received)
        made.append((index, (plan.out_shapes, plan.tolerances, plan.floors)))
    return made, plans


def _may_need_replay(th: Thresholds, st: PairStats, dtype_ref: str | None, dtype_target: str | None) -> bool:
    """Whether the scan may replay an op whose one output pair has these statistics: its error beyond the
    floor of the output's dtypes (the op's own floor is at least that), non-finite differences, a tail share or
    a cosine past the scan's limits (needs_replay's rule, on the output's statistics alone: never False where
    that says True)."""
    err = tensor_error(st)
    if err is None:
        return False
    tail = st.n_off / st.compared if st.compared else 0.0
    alarm = th.cos is not None and st.cos is not None and st.cos < th.cos
    return (
        err.rel > th.floor(dtype_ref, dtype_target)[0]
        or bool(err.nonfinite)
        or tail > min(th.max_off, TAIL_SHARE)
        or alarm
    )


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
        devs = _deviations(pairs)
        for plan, sides in held:
            out.append((_proof(plan, sides, [next(devs) for _side in sides]), ""))
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
        # the op's definition is the reference's (epsilon, axes, scales): the target's own values of those
        # slots are not read (a MindSpore 2.x MatMul's two transpose flags, a BiasAdd's data format)
        tgt_in = {s: ref_in[s] if s in plan.from_ref else _read(t) for s, t in plan.inputs[1].items()}
        for s in plan.from_ref:
            tgt_in[s] = ref_in[s]
        sides: list[_Compared] = []
        for side, inputs in enumerate((ref_in, tgt_in)):
            spec = ReplayInputs(
                op_type=plan.op_type,
                inputs=inputs,
                attrs=dict(plan.attrs),
                constants=plan.constants,
                out_shapes=plan.out_shapes[side],
                out_dtypes={slot: plan.outputs[side].dtype},
            )
            out_t = plan.outputs[side]
            size = out_t.size or 0
            positions = sample_positions(size)
            # a big product computed at the compared positions only (its whole may be over the replay budget)
            at = replay_at(spec, positions, size) if positions is not None and slot == 0 else None
            kept = plan.dumped[side]
            if at is not None and positions is not None and kept is not None and kept.size == positions.size:
                sides.append((_round_to(at, out_t.dtype), kept, plan.tolerances[side], positions, size))
                continue
            if at is None:
                want = replay(spec)
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
    except ReplayUnsupported as e:
        return None, f"no replay: {e}"
    except (OSError, ValueError, FloatingPointError) as e:
        return None, f"replay failed: {e}"
    return sides, ""


def _deviations(pairs: list[tuple[np.ndarray, np.ndarray, tuple[int, ...], ElementTolerance]]) -> Iterator[Deviation]:
    """(relative error, share off) of each (recomputed, dumped) pair, in order: from the rows computed
    together (smallpairs.deviations_many), or from its full statistics where those are computed alone."""
    devs = deviations_many(pairs)
    alone = [i for i, dev in enumerate(devs) if dev is None]
    for i, st in zip(alone, compare_many([pairs[i] for i in alone], kl=False)):
        devs[i] = _error_and_tail(st)
    for dev in devs:
        assert dev is not None
        yield dev


def _proof(plan: ReplayPlan, sides: list[_Compared], devs: list[Deviation]) -> ReplayProof:
    dev = [
        (rel, tail, _error_margin(want, got) if positions is not None else 0.0)
        for (rel, tail), (want, got, _tol, positions, _n) in zip(devs, sides)
    ]
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


def _shipped(plan: ReplayPlan, where: Callable[[str], str] | None = None) -> ShippedPlan | None:
    """The plan with its tensors as specs a worker process reads (None when a layout is not known); `where`:
    the path a worker opens for a file here."""
    try:
        specs = {
            id(t): tensor_spec(t, where) for t in (*plan.inputs[0].values(), *plan.inputs[1].values(), *plan.outputs)
        }
    except (AssertionError, OSError, ValueError):
        return None
    return plan.with_tensors(lambda t: specs[id(t)])


def _as_received(plan: ReplayPlan) -> ReplayPlan | None:
    """The plan as a worker would receive it shipped (each tensor made again from its spec: _unshipped of
    _shipped); None when a layout is not known. A tensor whose shape is its layout's, as a spec makes it, is
    kept as it is: it reads the same bytes through the same layout (a tensor made from a spec again cost a
    tenth of the MLP's replays alongside)."""
    try:
        made = {id(t): _received(t) for t in (*plan.inputs[0].values(), *plan.inputs[1].values(), *plan.outputs)}
    except (AssertionError, OSError, ValueError):
        return None
    return plan.with_tensors(lambda t: made[id(t)])


def _received(t: TensorRef) -> TensorRef:
    """`t` as from_spec(tensor_spec(t)) makes it, for reading: `t` itself when its shape is its layout's."""
    lay = t.layout()
    assert lay.storage is not None  # as tensor_spec: a readable tensor
    shape = t.shape
    return t if shape is not None and shape == tuple(lay.shape or ()) else from_spec(tensor_spec(t))


def _shipped_bytes(plan: ShippedPlan) -> int:
    """The bytes a shipped replay reads (the batch policy's measure)."""
    specs = (*plan.inputs[0].values(), *plan.inputs[1].values(), *plan.outputs)
    return sum(math.prod(spec[4]) * np.dtype(spec[5]).itemsize for spec in specs)


def _run_shipped_many(plans: list[ShippedPlan]) -> list[tuple[ReplayProof | None, Said]]:
    """In a worker process: several replays, their small outputs' deviations computed together."""
    return run_replays_here([_unshipped(plan) for plan in plans])


def _unshipped(plan: ShippedPlan) -> ReplayPlan:
    return plan.with_tensors(from_spec)


def run_replays(
    plans: list[ReplayPlan], ex: Executor, cancel: Cancel | None = None
) -> Iterator[tuple[int, tuple[ReplayProof | None, Said]]]:
    """(index, (proof or None, why not)) for each plan, in any order: on the executor's workers when it has
    more than one and there are enough bytes to read (or it offloads everything: the app), else here. A plan
    whose tensors cannot be described to a worker runs here. (A scan sends its replays as it finds them:
    `ReplayStream`.)"""
    shipped = [_shipped(p, ex.where) for p in plans]
    remote = [i for i, sp in enumerate(shipped) if sp is not None]
    nbytes = sum(t.nbytes() for p in plans for t in (*p.inputs[0].values(), *p.inputs[1].values(), *p.outputs))
    local = set(range(len(plans)))
    if remote and (not ex.local or (ex.workers > 1 and (ex.offload or nbytes >= MIN_BYTES_FOR_PROCESSES))):
        jobs = [sp for sp in shipped if sp is not None]
        for k, outcome in ex.map_batched(_run_shipped_many, jobs, nbytes=_shipped_bytes, cancel=cancel):
            local.discard(remote[k])
            yield remote[k], outcome
    if cancel is not None and cancel.is_set():
        return
    todo = sorted(local)
    for start in range(0, len(todo), HERE_REPLAYS):  # a look at the cancel between batches
        if cancel is not None and cancel.is_set():
            return
        part = todo[start : start + HERE_REPLAYS]
        yield from zip(part, run_replays_here([plans[i] for i in part]))


class ReplayStream:
    """A scan's replays sent to the executor's workers as the scan finds them (the batch policy's count or
    bytes a task): they run while this process measures the ops after them (docs/speed.md). A plan whose
    tensors cannot be described to a worker runs here, after the others. A replay a worker has run already
    (ReplaysAlongside) is `known`, given first."""

    def __init__(self, ex: Executor, batch: BatchPolicy | None = None):
        self.ex = ex
        self.sent: Stream[int, ShippedPlan, tuple[ReplayProof | None, Said]] = ex.stream(_run_shipped_many, batch)
        self._here: list[tuple[int, ReplayPlan]] = []
        self._known: list[tuple[int, Outcome]] = []

    @property
    def count(self) -> int:
        return self.sent.count + len(self._here) + len(self._known)

    def known(self, key: int, outcome: Outcome) -> None:
        self._known.append((key, outcome))

    def add(self, key: int, plan: ReplayPlan) -> None:
        shipped = _shipped(plan, self.ex.where)
        if shipped is None:
            self._here.append((key, plan))
        else:
            self.sent.add(key, shipped, _shipped_bytes(shipped))

    def results(self, cancel: Cancel | None = None) -> Iterator[tuple[int, tuple[ReplayProof | None, Said]]]:
        """(key, (proof or None, why not)) of every plan added."""
        yield from self._known
        yield from self.sent.results(cancel)
        for start in range(0, len(self._here), HERE_REPLAYS):
            if cancel is not None and cancel.is_set():
                return
            part = self._here[start : start + HERE_REPLAYS]
            yield from zip([k for k, _plan in part], run_replays_here([plan for _k, plan in part]))


def replay_proof(session: Session, pair: OpPair, roles: Roles, slot: int) -> tuple[ReplayProof | None, Said]:
    """The replay of one op here and now (the bisection's probes, the culprit checks)."""
    plan, why = replay_plan(session, pair, roles, slot)
    return run_replay(plan) if plan is not None else (None, why)


def _read(t: TensorRef) -> np.ndarray:
    a = np.asarray(t.read())
    shape = t.shape
    # (math.prod: exact, and np.prod's call was a tenth of a worker's replay time for the MLP's small tensors)
    return a.reshape(shape) if shape is not None and a.size == math.prod(shape) else a


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


def _error_and_tail(st: PairStats) -> Deviation:
    """From the statistics of a dumped output against its recomputation: the relative error and the share of
    elements off by more than the tolerance (the tail rule's count)."""
    err = tensor_error(st)
    tail = st.n_off / st.compared if st.compared else 0.0
    if err is None:
        return math.inf, tail
    return (math.inf if err.nonfinite else err.rel), tail


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
