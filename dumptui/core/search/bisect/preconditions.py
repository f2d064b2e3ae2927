"""The field guide's preconditions: the same network input and the same weights on both sides.

Inputs no op produces (weights, the network input, inputs computed outside a filtered dump) are compared
before bisecting. One that differs by more than fp16/bf16 rounding would explain makes its consumers roots,
and is named; one that differs only by such rounding is `benign` (a deliberate conversion gives that). A
weight the target transformed on purpose (BatchNorm folded into it, int8 with scales: transformed.py) is
verified per output channel against the transformation recomputed from the reference's parameters: `benign`
when every channel agrees, and when one does not, that channel is named with its numbers. The parameters a
transformation accounts for (a folded BatchNorm's, an int8 weight's scales, the new bias) are `benign` too.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Mapping

from dumptui.core.compare.batch import evaluate_all
from dumptui.core.compare.ledger import Purpose
from dumptui.core.compare.noise import floor_of, least_precise
from dumptui.core.compare.pairstats import PairStats
from dumptui.core.compare.results import TensorResult
from dumptui.core.compare.session import Session, pair_key
from dumptui.core.compare.spread import AlongTask, Job
from dumptui.core.compare.verdict import (
    CLOSE,
    EQUAL,
    IGNORED,
    NOT_COMPARABLE,
    ONLY_REF,
    ONLY_TARGET,
    UNREADABLE,
    rounding_explains,
    roundings_explain,
)
from dumptui.core.graph.align import OpPair
from dumptui.core.graph.dataflow import consumers, input_source
from dumptui.core.model.dump import INPUT, OUTPUT, PARAMETER, Dump, SourceKind, TensorRef
from dumptui.core.model.reason import Reason, Said, Why, because
from dumptui.core.search.bisect.transformed import TransformCheck, compare_consumer, verify
from dumptui.core.search.bisect.types import CheckKind, CheckStatus, InputCheck, Root, RootKind
from dumptui.core.search.measure import result_error


def check_inputs(session: Session) -> list[InputCheck]:
    """Every parameter / network input dumped as such, then those only seen as their consumers' inputs (all of
    them when one side dumps no parameters at all, as CANN raw dumps do: its ops' inputs hold them)."""
    one_sided = not all(any(op.kind == PARAMETER for op in d.ops) for d in (session.ref, session.target))
    params = [p for p in session.alignment.pairs if p.kind == PARAMETER and (p.paired or not one_sided)]
    # byte-identical files first (no statistics to compute); the others' statistics computed as one batch, in
    # the command's worker processes when there are many (a deep model's thousands of weights), not one by one
    same = [session.identical(p, OUTPUT, 0, Purpose.PRECONDITION) if p.paired else None for p in params]
    rest = [p for p, s in zip(params, same) if p.paired and s is None]
    rounding = _RoundingAlongside()
    if rest:
        evaluate_all(session, rest, purpose=Purpose.PRECONDITION, along=rounding)
    found = [_check_parameter(session, p, s, rounding.found) for p, s in zip(params, same)]
    checks = [c for c in found if c is not None]
    _explained_by_transforms(checks)
    checks += _check_consumed_only(session, {c.name for c in checks})
    session.same_files.save()  # the equal weights are not read again on the next run of this pair
    return checks


class _RoundingAlongside:
    """The rounding check (rounding_explains) of each weight pair of the batch that differs, made by the worker
    that compared it, from the payloads it has just read (spread.Alongside): a 1,000-layer MLP's 4,002
    weight files were read again here, one pair at a time, 50 us a pair."""

    def __init__(self) -> None:
        self.found: dict[int, str | None] = {}  # pair_key -> rounding_explains of the pair

    def task(self, jobs: list[Job]) -> AlongTask | None:
        return (_roundings, None, list(range(len(jobs)))) if jobs else None

    def got(self, jobs: list[Job], result: list[tuple[int, str | None]]) -> None:
        for k, fmt in result:
            _pair, _io, _slot, r, t = jobs[k]
            self.found[pair_key(r, t)] = fmt


def _roundings(
    _arg: None, refs: list[tuple[TensorRef, TensorRef]], stats: list[PairStats | None]
) -> list[tuple[int, str | None]]:
    """In a worker: rounding_explains of each pair that is not bitwise equal (judge_input never asks those)."""
    asked = [k for k, st in enumerate(stats) if st is None or not st.bitwise_equal]
    return list(zip(asked, roundings_explain([refs[k] for k in asked])))


def _check_parameter(
    session: Session, p: OpPair, same: TensorResult | None, rounding: Mapping[int, str | None]
) -> InputCheck | None:
    """`same`: the parameter's result when its two files are byte-identical (Session.identical); `rounding`:
    rounding_explains of the pairs computed so (by pair_key)."""
    op = p.ref or p.target
    assert op is not None
    kind = CheckKind.NETWORK_INPUT if op.attrs.get("is_weight") == "false" else CheckKind.PARAMETER
    users = consumers(session.ref, session.target, session.alignment, p)
    r: TensorResult | None
    if not p.paired:
        r = TensorResult(
            OUTPUT,
            0,
            p.ref.outputs.get(0) if p.ref else None,
            p.target.outputs.get(0) if p.target else None,
            ONLY_REF if p.target is None else ONLY_TARGET,
            because(Why.ONE_SIDED),
        )
        return InputCheck(op.name, kind, r, CheckStatus.UNPAIRED, p.how, users)
    r = same
    if r is None:
        res = session.op_result(p, inputs=False, purpose=Purpose.PRECONDITION)
        r = res.outputs[0] if res.outputs else None
    if r is None:
        return None
    check = judge_input(op.name, kind, r, users, rounding)
    if check.status == CheckStatus.DIFFERS and kind == CheckKind.PARAMETER:
        updater = _written_after_update(session, p)
        if updater is not None:
            check.status = CheckStatus.UPDATED
            check.detail = because(Why.WRITTEN_AFTER_UPDATE, updater.name, numbers(r))
            return check
        found = verify(session, p)
        if found is not None:
            compare_consumer(session, found)
            return transformed_input(check, found)
        _carried_from_step(session, check)
    if check.status == CheckStatus.DIFFERS and not check.consumers:
        check.consumers = _readers_by_value(session, p)
    return check


def _readers_by_value(session: Session, p: OpPair) -> list[OpPair]:
    """The kernels that read this parameter, found by value where no graph says it: an input whose file is byte
    for byte the parameter's on both sides (a learning-rate list read by a Gather in a dump without graph
    files). Without them a parameter that differs names no root, and the scan calls what it feeds carried
    noise: compare said "no root" where bisect named the reader."""
    mine = [t for t in (p.ref.outputs.get(0) if p.ref else None, p.target.outputs.get(0) if p.target else None)]
    if any(t is None or not t.has_data for t in mine):
        return []
    ref_t, tgt_t = mine
    assert ref_t is not None and tgt_t is not None
    out = []
    for q in session.alignment.kernels:
        if not (q.paired and q.ref is not None and q.target is not None):
            continue
        for slot, qr in q.ref.inputs.items():
            qt = q.target.inputs.get(slot)
            if qt is None or not qr.has_data or not qt.has_data:
                continue
            if (qr.size, qr.dtype, qt.size, qt.dtype) != (ref_t.size, ref_t.dtype, tgt_t.size, tgt_t.dtype):
                continue
            if not (_same(session, ref_t, qr) and _same(session, tgt_t, qt)):
                continue
            if not _made_by_a_kernel(session, q, qr, qt):
                out.append(q)
                break
    return out


def _same(session: Session, a: TensorRef, b: TensorRef) -> bool:
    return bool(session.same_files.identical(a.path, b.path))


def _made_by_a_kernel(session: Session, reader: OpPair, ref_in: TensorRef, tgt_in: TensorRef) -> bool:
    """Whether an op that ran before `reader` wrote this very value on both sides: then that op feeds it (the
    learning rate a Gather picked, read by each ApplyMomentum), not the parameter that happens to hold it."""
    for k in session.alignment.kernels:
        if k.index >= reader.index or not (k.paired and k.ref is not None and k.target is not None):
            continue
        for slot, kr in k.ref.outputs.items():
            kt = k.target.outputs.get(slot)
            if kt is None or not kr.has_data or not kt.has_data or (kr.size, kt.size) != (ref_in.size, tgt_in.size):
                continue
            if _same(session, kr, ref_in) and _same(session, kt, tgt_in):
                return True
    return False


def _is_update(op_type: str) -> bool:
    """An optimizer kernel that writes a parameter in place (ApplyMomentum, ApplyAdam, SparseApplyFtrl, ...)."""
    return op_type.startswith(("Apply", "SparseApply"))


def _has_update_kernels(session: Session) -> bool:
    return any(q.ref is not None and _is_update(q.ref.op_type) for q in session.alignment.kernels)


def _written_after_update(session: Session, p: OpPair) -> OpPair | None:
    """The optimizer kernel whose output 0 this parameter's file holds on both sides, byte for byte: MindSpore
    writes Parameter files at the end of the step, after the update, so such a file is that kernel's output
    (judged with it), not the value the step's kernels read. None when no update kernel wrote it."""
    if p.ref is None or p.target is None:
        return None
    mine = [t for t in (p.ref.outputs.get(0), p.target.outputs.get(0)) if t is not None and t.has_data]
    if len(mine) != 2:
        return None
    for q in session.alignment.kernels:
        if not (q.paired and q.ref is not None and q.target is not None and _is_update(q.ref.op_type)):
            continue
        theirs = [t for t in (q.ref.outputs.get(0), q.target.outputs.get(0)) if t is not None and t.has_data]
        if len(theirs) != 2 or any(t.shape != m.shape for t, m in zip(theirs, mine, strict=True)):
            continue
        if all(session.same_files.identical(m.path, t.path) for m, t in zip(mine, theirs, strict=True)):
            return q
    return None


CARRIED_WEIGHT = 2.0  # a weight updated with an earlier step's error: at most this many times that error


def _carried_from_step(session: Session, check: InputCheck) -> None:
    """A weight of a training step that differs when this rank already differed one step before: the
    optimizer updated it with that step's error (a weight moves by lr x its gradient, an update smaller than
    the weight, so its error relative to itself stays below the largest error that step saw; CARRIED_WEIGHT
    times that allows for the statistics' own rounding). Beyond that level it is a root of its own. Where the
    optimizer's kernels are dumped, a weight they updated is UPDATED (its file written after them) and one they
    did not update is not carried: it differed before the step as it does now."""
    if session.carried_from_step is None or _has_update_kernels(session):
        return  # with the optimizer's kernels dumped, the weights they update are told apart (UPDATED)
    step, level = session.carried_from_step
    err = result_error(check.result)
    if err is None or err.nonfinite or err.rel > CARRIED_WEIGHT * level:
        return
    check.status = CheckStatus.BENIGN
    check.detail = because(Why.CARRIED_FROM_STEP, step, level, err.rel, numbers(check.result))


def transformed_input(check: InputCheck, found: TransformCheck) -> InputCheck:
    """A weight that differs, seen through the transformation that explains it (or names what does not)."""
    check.transform = found.transform
    check.channels = list(found.bad_channels)
    if found.ok:
        check.status = CheckStatus.BENIGN
        check.detail = because(Why.TRANSFORM_VERIFIED, found.detail, numbers(check.result))
    else:
        check.detail = because(Why.TRANSFORM_WRONG, found.detail, found.transform)
    check.explains = dict(found.explains)
    return check


def _explained_by_transforms(checks: list[InputCheck]) -> None:
    """Parameters on one side only that a verified transformation accounts for: benign, and said why."""
    explains: dict[str, Said] = {}
    for c in checks:
        if c.transform:
            for name, why in c.explains.items():
                explains.setdefault(name, why if c.status == CheckStatus.BENIGN else "")
    for c in checks:
        if c.status == CheckStatus.UNPAIRED and explains.get(c.name):
            c.status, c.detail = CheckStatus.BENIGN, explains[c.name]


def _check_consumed_only(session: Session, checked: set[str]) -> list[InputCheck]:
    """Parameters not dumped as such (a kernel-filtered dump): their consumers' input files hold them."""
    by_param: dict[str, list[tuple[OpPair, int]]] = {}
    for p in session.alignment.kernels:
        if not p.paired:
            continue
        assert p.ref is not None and p.target is not None
        for slot in sorted(set(p.ref.inputs) & set(p.target.inputs)):
            name = next(
                (
                    src.ref
                    for src in input_source(p, slot)
                    if src is not None and src.kind in (SourceKind.PARAMETER, SourceKind.INPUT)
                ),
                None,
            )
            if name is not None and name not in checked:
                by_param.setdefault(name, []).append((p, slot))
    out = []
    flowing: _FlowingError | None = None
    for name, uses in by_param.items():
        p, slot = uses[0]
        assert p.ref is not None and p.target is not None
        r = session.identical(p, INPUT, slot, Purpose.PRECONDITION)
        if r is None:
            r = session.tensor_result(p, INPUT, slot, p.ref.inputs[slot], p.target.inputs[slot], Purpose.PRECONDITION)
        is_weight = session.ref.parameters.get(name)
        kind = (
            CheckKind.UNPRODUCED
            if is_weight is None
            else {False: CheckKind.NETWORK_INPUT, True: CheckKind.PARAMETER}[is_weight]
        )
        check = judge_input(name, kind, r, list(dict.fromkeys(q for q, _ in uses)))
        if check.status == CheckStatus.DIFFERS and kind == CheckKind.UNPRODUCED and _inferred(session):
            if flowing is None:
                flowing = _FlowingError(session)  # read once, for every such input
            _carried_if_flowing(session, check, flowing)
        out.append(check)
    return out


def is_inferred(dump: Dump) -> bool:
    """A dataflow rebuilt from the records (msprobe: matching statistics), not read from a graph file."""
    return dump.flow_inferred


def _inferred(session: Session) -> bool:
    """Whether a dump's dataflow was rebuilt from its records (msprobe: no graph): there, an input no dumped op
    produces is most often a view or split of an earlier output; with a graph it is a weight or an input."""
    return any(is_inferred(d) for d in (session.ref, session.target))


class _FlowingError:
    """The largest error out of the paired kernels that ran before a given position: each kernel's outputs
    compared once, then a running maximum in aligned order (not one pass over the kernels per input)."""

    def __init__(self, session: Session):
        self._running: list[tuple[int, float, str]] = []  # (index, largest so far, where it is)
        level, source = 0.0, ""
        for p in sorted((p for p in session.alignment.kernels if p.paired), key=lambda p: p.index):
            for r in session.op_result(p, inputs=False, purpose=Purpose.PRECONDITION).outputs:
                e = result_error(r)
                if e is not None and not e.nonfinite and e.rel > level:
                    level, source = e.rel, f"{p.name} {r.label}"
            self._running.append((p.index, level, source))

    def before(self, index: int) -> tuple[float, str]:
        at = bisect_left(self._running, index, key=lambda t: t[0])
        return self._running[at - 1][1:] if at else (0.0, "")


def _carried_if_flowing(session: Session, check: InputCheck, flowing: _FlowingError) -> None:
    """An input no dumped op produces, computed outside the dump from what the network already carries (a
    view, a split, an unrecorded cast of an earlier output), is carried error when its error is at the level of
    the error already flowing out of the ops that ran before it: not a root. The same rule as the local error:
    it is a root only when it exceeds that level by the gain threshold."""
    err = result_error(check.result)
    if err is None or err.nonfinite or not check.consumers:
        return
    level, source = flowing.before(min(c.index for c in check.consumers))
    gain = session.thresholds.gain
    if level > 0 and err.rel <= gain * level:
        check.status = CheckStatus.BENIGN
        check.detail = because(Why.CARRIED_FLOWING, err.rel, level, source, gain, numbers(check.result))


def _statistics_agree(r: TensorResult) -> Reason | None:
    """Why a statistics-only pair shows no difference, or None. Statistics recorded by the dumping tool and
    statistics computed from a tensor differ by their own rounding (msprobe sums in float32): within the
    dtype's noise floor they cannot tell a difference, and "the input differs" would be an answer made by a
    record that lacks its data file."""
    if not r.statistics_only or not r.stat_rel or r.verdict == EQUAL:
        return None
    rel = [v for v in r.stat_rel.values() if v is not None]
    dtype = least_precise(t.dtype for t in (r.ref, r.target) if t is not None)
    floor = floor_of(dtype)
    if not rel or max(rel) > floor:
        return None
    return because(Why.STATISTICS_AGREE, dtype or "float32", max(rel), floor)


def judge_input(
    name: str, kind: CheckKind, r: TensorResult, users: list[OpPair], rounding: Mapping[int, str | None] | None = None
) -> InputCheck:
    """equal / benign (within fp16 or bf16 rounding) / differs / unreadable, for an unproduced input.
    `rounding`: rounding_explains of pairs by pair_key, where a worker found it (else it is found here)."""
    if r.verdict == EQUAL:
        return InputCheck(name, kind, r, CheckStatus.EQUAL, r.reason, users)
    if r.verdict in (UNREADABLE, NOT_COMPARABLE, IGNORED):
        return InputCheck(
            name, kind, r, CheckStatus.IGNORED if r.verdict == IGNORED else CheckStatus.UNREADABLE, r.reason, users
        )
    agreeing = _statistics_agree(r)
    if agreeing is not None:
        return InputCheck(name, kind, r, CheckStatus.BENIGN, agreeing, users)
    key = pair_key(r.ref, r.target)
    fmt = rounding[key] if rounding is not None and key in rounding else rounding_explains(r.ref, r.target)
    low = {"float16", "bfloat16"} & {t.dtype for t in (r.ref, r.target) if t is not None}
    if (
        fmt is None
        and kind == CheckKind.UNPRODUCED
        and low
        and r.verdict == CLOSE
        and r.ref is not None
        and r.target is not None
        and r.ref.dtype != r.target.dtype
    ):
        # computed (not stored) upstream in a lower precision: more than one rounding, and still close
        return InputCheck(
            name,
            kind,
            r,
            CheckStatus.BENIGN,
            because(Why.CLOSE_LOWER_PRECISION, sorted(low), numbers(r)),
            users,
        )
    if fmt is not None:
        return InputCheck(
            name,
            kind,
            r,
            CheckStatus.BENIGN,
            because(Why.ROUNDING_ONLY, fmt, numbers(r)),
            users,
        )
    return InputCheck(name, kind, r, CheckStatus.DIFFERS, because(Why.BEYOND_ROUNDING, numbers(r), kind), users)


def parameter_roots(checks: list[InputCheck], session: Session | None = None) -> list[Root]:
    """The consumers of every input that differs, as roots (each consumer once). A consumer whose every
    output is bitwise equal (a broadcast that overwrites a rank's own copy, a weight the op does not read) is
    none: the difference goes no further; it is said in the check's detail."""
    roots: list[Root] = []
    seen: set[str] = set()
    for c in checks:
        if c.status != CheckStatus.DIFFERS:
            continue
        for cons in c.consumers:
            if cons.key in seen:
                continue
            seen.add(cons.key)
            if session is not None and _outputs_equal(session, cons):
                c.detail = because(Why.GOES_NO_FURTHER, c.detail, cons.name)
                continue
            why = (
                because(Why.NETWORK_INPUT_DIFFERS, c.name)
                if c.kind == CheckKind.NETWORK_INPUT
                else because(Why.TRANSFORMED_PARAMETER, c.name, c.detail)
                if c.kind == CheckKind.PARAMETER and c.transform
                else because(Why.PARAMETER_DIFFERS, c.name)
                if c.kind == CheckKind.PARAMETER
                else because(Why.UNPRODUCED_INPUT_DIFFERS, c.name)
            )
            roots.append(
                Root(
                    cons, RootKind.PARAMETER if c.kind == CheckKind.PARAMETER else RootKind.INPUT, why, None, [c.detail]
                )
            )
    return roots


def _outputs_equal(session: Session, pair: OpPair) -> bool:
    if not pair.paired:
        return False
    outs = session.op_result(pair, purpose=Purpose.PRECONDITION).outputs
    return bool(outs) and all(r.verdict == EQUAL for r in outs)


def numbers(r: TensorResult) -> Said:
    """The numbers a check's words quote: the cosine and the largest difference (the reason without them)."""
    st = r.stats
    if st is None:
        return r.reason
    return because(Why.NUMBERS, st.cos, st.max_abs)
