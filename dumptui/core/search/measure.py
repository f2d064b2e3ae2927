"""Measuring one op for the scan: its errors in and out (the worst of each side's tensors), its floor, what
differs in its definition, the shape of its error, and whether a replay or a selection proof must decide;
localerror.py's rule then judges it. Used by the scan (scan.py), the culprit check and the app's panel."""

from __future__ import annotations

import numpy as np

from dumptui.core.compare.hints import attribute_diff
from dumptui.core.compare.ledger import Purpose
from dumptui.core.compare.noise import TensorError, least_precise, stats_error, tensor_error
from dumptui.core.compare.results import OpResult, TensorResult
from dumptui.core.compare.session import Session
from dumptui.core.compare.verdict import (
    EQUAL,
    IGNORED,
    ONLY_REF,
    ONLY_TARGET,
    UNREADABLE,
)
from dumptui.core.graph.align import OpPair
from dumptui.core.graph.dataflow import OriginKind, input_source, origins, unjudged_origins, wiring
from dumptui.core.model.dump import Role, Roles, SourceKind, TensorRef
from dumptui.core.model.reason import Reason, Why, because
from dumptui.core.search.localerror import (
    TAIL_SHARE,
    Difference,
    DiffKind,
    LocalError,
    classify,
    shape_of_error,
)
from dumptui.core.search.selection import (
    is_selection,
    selection_proof,
)
from dumptui.core.search.threshold import is_threshold, threshold_proof


def input_roles(pair: OpPair) -> Roles:
    """slot -> DATA (produced by an op, the network input), WEIGHT (a parameter) or CONSTANT (graph
    constants: epsilon, axes, flags). Without a graph, 0-d inputs count as constants."""
    slots: set[int] = set()
    for op in (pair.ref, pair.target):
        if op is not None:
            slots |= set(op.inputs) | set(op.sources)
    roles: Roles = {}
    for slot in sorted(slots):
        kinds = {s.kind for s in input_source(pair, slot) if s is not None}
        if SourceKind.CONSTANT in kinds:
            roles[slot] = Role.CONSTANT
        elif SourceKind.PARAMETER in kinds:
            roles[slot] = Role.WEIGHT
        elif kinds:
            roles[slot] = Role.DATA
        else:
            t = (pair.ref.inputs.get(slot) if pair.ref else None) or (
                pair.target.inputs.get(slot) if pair.target else None
            )
            roles[slot] = Role.CONSTANT if t is not None and t.shape == () else Role.DATA
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
        if src is not None and src.kind == SourceKind.OP:
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


def measured(session: Session, res: OpResult, roles: Roles | None = None) -> LocalError:
    """The op's local error before its verdict: errors in and out, its floor, the shape of its error
    (`roles`: input_roles of its pair, when known)."""
    pair = res.pair
    roles = input_roles(pair) if roles is None else roles
    outs = [(r.slot, e) for r in res.outputs if (e := result_error(r)) is not None]
    ins = [
        (r.slot, _rounding_seen(session, pair, r, e))
        for r in res.inputs
        if roles.get(r.slot) != Role.CONSTANT and (e := result_error(r)) is not None
    ]
    out, out_slot = _combine(outs)
    data_in, in_slot = _combine(ins)
    names = [t.dtype for op in (pair.ref, pair.target) if op is not None for t in op.tensors()]
    floor, floor_dtype = session.thresholds.floor(*names)
    floor, floor_dtype = max((floor, floor_dtype), session.op_floors.get(pair.key, (0.0, "")), key=lambda f: f[0])
    le = LocalError(pair, out, out_slot, data_in, in_slot, floor, floor_dtype, differs=tuple(_differences(res, roles)))
    le.statistics_only = any(r.statistics_only for r in res.outputs if r.slot == out_slot)
    data_slots = sorted(s for s, role in roles.items() if role == Role.DATA)
    wired = wiring(session.ref, session.target, session.alignment, pair, data_slots)
    le.wiring = because(Why.WIRED, wired) if wired else None
    if in_slot is not None:
        unjudged = unjudged_origins(session.ref, session.target, session.alignment, pair, in_slot)
        le.unjudged = because(Why.INTO_INPUT, in_slot, tuple(unjudged)) if unjudged else None
    le.blind = _blind(session, pair, res, roles)
    counted_in = [r for r in res.inputs if roles.get(r.slot) != Role.CONSTANT and r.verdict != IGNORED]
    counted_out = [r for r in res.outputs if r.verdict != IGNORED]
    le.out_tail, le.in_tail, le.out_cos, le.in_cos = shape_of_error(counted_out, counted_in, le.floor)
    return le


def _blind(session: Session, pair: OpPair, res: OpResult, roles: Roles) -> Reason | None:
    """The data inputs of the op that could not be compared (unreadable, or dumped on one side only) and whose
    value its producer's output does not show on both sides either: what came in there is unknown (damage
    that hides an input never makes an op a root on its other inputs). None when there is none."""
    out = []
    for r in res.inputs:
        damaged = r.verdict == UNREADABLE
        if roles.get(r.slot) != Role.DATA or not (damaged or r.verdict in (ONLY_REF, ONLY_TARGET)):
            continue
        shown = False
        for o in origins(session.ref, session.target, session.alignment, pair, r.slot):
            p = o.pair
            if (
                o.kind == OriginKind.PAIR
                and p is not None
                and p.ref is not None
                and p.target is not None
                and o.out_slot in p.ref.outputs
                and o.out_slot in p.target.outputs
            ):
                produced = session.op_result(p, purpose=Purpose.CULPRIT_CHECK).outputs
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


def judges_selection(session: Session, le: LocalError, res: OpResult, roles: Roles) -> bool:
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


def _differences(res: OpResult, roles: Roles) -> list[Difference]:
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
            roles.get(r.slot) == Role.CONSTANT
            and r.verdict not in (EQUAL, IGNORED)
            and r.ref is not None
            and r.target is not None
        ):
            out.append(Difference(DiffKind.CONSTANT, _value(r.ref), _value(r.target), r.slot))
    for slot, role in roles.items():
        if role == Role.CONSTANT and slot not in {r.slot for r in res.inputs}:
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
