"""The local-error scan: every paired op's inputs and outputs compared, each op's local error judged
(localerror.py), replayed where the op type allows, and every root of divergence found, first one first.

Used when a pair is noisy (one side in fp16/bf16, inserted Casts, rounded inputs), where "inputs close,
output over a threshold" would blame whichever op crosses it first; and by `compare`, which reads everything
anyway. After the scan, tensor verdicts are judged in context: a tensor beyond its dtype's floor with no root
upstream carries precision noise (`close`, and said so); one downstream of a root carries its divergence.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field, replace

from dumptui.core.compare.batch import evaluate_all
from dumptui.core.compare.ledger import Purpose
from dumptui.core.compare.noise import TensorError, fmt_rel, least_precise
from dumptui.core.compare.results import OpResult, TensorResult
from dumptui.core.compare.session import Session, pair_key
from dumptui.core.compare.verdict import (
    CLOSE,
    DIVERGED,
    FLIPPED,
    ONLY_REF,
    ONLY_TARGET,
    SHAPE_MISMATCH,
    UNREADABLE,
    Verdict,
)
from dumptui.core.graph.align import OpPair
from dumptui.core.graph.dataflow import OriginKind, input_source, origins, unjudged_origins, wiring
from dumptui.core.io.executor import Cancel, Executor
from dumptui.core.model.dump import KERNEL, Role, Roles, SourceKind
from dumptui.core.model.reason import Reason, Said, Why, because
from dumptui.core.search.context import NO_CONTEXT, InContext, restated
from dumptui.core.search.localerror import (
    TAIL_SHARE,
    LocalError,
)
from dumptui.core.search.measure import (
    input_roles,
    judged,
    judges_selection,
    measured,
    needs_replay,
    result_error,
)
from dumptui.core.search.replays import (
    ReplayPlan,
    ReplaysAlongside,
    ReplayStream,
    replay_plan,
    replay_proof,
    run_replay,
    run_replays,
)
from dumptui.core.search.selection import (
    FlipReason,
    FlipSite,
    SelectionReason,
    feeding_ops,
    flip_reach,
    flip_sites,
)
from dumptui.core.search.threshold import resized_by_flips


def analyse(session: Session, res: OpResult, with_replay: bool = True) -> LocalError:
    """The local error of one op pair from its compared tensors (reads them again only to replay)."""
    le = measured(session, res)
    roles = input_roles(le.pair)
    if with_replay and not judges_selection(session, le, res, roles) and needs_replay(session, le):
        le.replay, le.replay_note = replay_proof(session, le.pair, roles, le.out_slot or 0)
    return judged(session, le)


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
    progress: Callable[[int, int], None] | None = None,
    cancel: Cancel | None = None,
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

    streamed = _streamed_replays(session.executor)
    # where the workers read and compare the pairs, an op's replay runs in the same task (no file read twice)
    along = ReplaysAlongside(session, input_roles) if streamed is not None else None
    plans: list[tuple[int, ReplayPlan]] = []
    early: dict[int, tuple[LocalError, Roles]] = {}  # position -> (measured op, its input roles)
    position = {p.index: i for i, p in enumerate(order)}

    roles_of = along.roles_of if along is not None else input_roles

    def measure(i: int, res: OpResult, roles: Roles) -> LocalError:
        le = measured(session, res, roles)
        if judges_selection(session, le, res, roles):
            return le
        if needs_replay(session, le):
            _ask_replay(session, i, le, roles, streamed, along, plans)
        return le

    def measure_early(res: OpResult) -> None:
        """An op whose tensors are all known while the workers still compute: measured now, in time that was
        spent waiting for them (docs/speed.md). Not an op with an input that could not be compared: measuring it asks for its producer's
        result, which may not be known yet (read here, it would change what is read and stored, and when)."""
        i = position.get(res.pair.index)
        if i is None or any(r.verdict in (UNREADABLE, ONLY_REF, ONLY_TARGET) for r in res.inputs):
            return
        roles = roles_of(res.pair)
        early[i] = (measure(i, res, roles), roles)

    results = evaluate_all(
        session,
        order,
        progress=counted,
        cancel=cancel,
        purpose=Purpose.SCAN,
        ready=measure_early if streamed is not None else None,
        along=along,
    )
    ops = _Measured()
    for i, res in enumerate(results):
        if i in early:
            ops.add(res, *early[i])
        else:
            op_roles = roles_of(res.pair)
            ops.add(res, measure(i, res, op_roles), op_roles)
    if streamed is not None:
        replays, total = streamed.results(cancel), streamed.count
    else:
        plain = [p for _i, p in plans]
        replays = ((plans[k][0], outcome) for k, outcome in run_replays(plain, session.executor, cancel))
        total = len(plans)
    # the replays continue the count of the compares: one bar that never runs backwards
    for k, (i, (proof, why)) in enumerate(replays, 1):
        le = ops.locals[i]
        le.replay, le.replay_note = proof, why
        if progress is not None:
            progress(compared[0] + k, compared[0] + total)
    locals_ = [judged(session, le) for le in ops.locals]
    roles, resized, out_resized = ops.roles, ops.resized, ops.out_resized
    th = session.thresholds
    resized_by_flips(
        locals_,
        predecessors,
        resized,
        th.gain,
        min(th.max_off, TAIL_SHARE),
        out_resized,
        (lambda le: replay_proof(session, le.pair, input_roles(le.pair), le.out_slot or 0)) if th.replay else None,
    )
    tainted = _tainted(locals_, predecessors, tainted_by_inputs)
    out = ScanResult(order, locals_, tainted, [le for le in locals_ if le.is_root], frozenset(differing))
    flipped = [le.selection is not None and le.selection.flipped for le in locals_]
    out.reach = flip_reach(flipped, tainted, predecessors)
    out.flips = flip_sites(order, locals_, out.reach, lambda p, slot: feeding_ops(session.alignment, p, slot))
    out.unread = [(res.pair.label, r) for res in results for r in res.outputs if r.verdict == UNREADABLE]
    out.in_context = rejudge(session, out, predecessors, roles, before)
    return out


def _ask_replay(
    session: Session,
    i: int,
    le: LocalError,
    roles: Roles,
    streamed: ReplayStream | None,
    along: ReplaysAlongside | None,
    plans: list[tuple[int, ReplayPlan]],
) -> None:
    """The replay of the op at position `i`: run already by the worker that compared it (`along`), else
    planned and sent to the workers as found (`streamed`) or kept for after the measuring (`plans`)."""
    slot = le.out_slot or 0
    done = along.take(le.pair, roles, slot) if along is not None else None
    if done is not None and streamed is not None:
        streamed.known(i, done)
        return
    plan, why = replay_plan(session, le.pair, roles, slot, along.definition(le.pair, roles) if along else None)
    if plan is None:
        le.replay_note = why
    elif streamed is not None:
        # the output's values at the sampled positions, when the worker that compared it kept them
        plan = replace(plan, dumped=session.take_sampled(*plan.outputs))
        streamed.add(i, plan)  # replayed by the workers while the next ops are measured
    else:
        plans.append((i, plan))


def _streamed_replays(ex: Executor) -> ReplayStream | None:
    """Where replays run while the next ops are measured: an executor with more than one worker, or one that
    offloads everything (the app); None: after the measuring, as run_replays runs them."""
    return ReplayStream(ex) if ex.workers > 1 or ex.offload else None


class _Measured:
    """The scan's ops as measured, in order: each op's local error, its input roles (asked for three times per
    op: made once), its data inputs whose shapes differ, and whether its outputs are uncompared only as they
    differ in shape."""

    def __init__(self) -> None:
        self.locals: list[LocalError] = []
        self.roles: list[Roles] = []
        self.resized: list[tuple[tuple[int, str, Said], ...]] = []
        self.out_resized: list[bool] = []

    def add(self, res: OpResult, le: LocalError, roles: Roles) -> None:
        self.roles.append(roles)
        self.locals.append(le)
        self.resized.append(
            tuple(
                (r.slot, str(r.verdict), r.reason)
                for r in res.inputs
                if r.verdict == SHAPE_MISMATCH and roles.get(r.slot) == Role.DATA
            )
        )
        self.out_resized.append(
            any(r.verdict == SHAPE_MISMATCH for r in res.outputs)
            and not any(r.verdict in (UNREADABLE, ONLY_REF, ONLY_TARGET) for r in res.outputs)
        )


def _tainted(
    locals_: list[LocalError], predecessors: Callable[[int], set[int]], tainted_by_inputs: AbstractSet[int]
) -> list[bool]:
    """Per position: whether a root's error (or a differing weight or input's) may reach it."""
    tainted: list[bool] = []
    for pos, le in enumerate(locals_):
        upstream = any(tainted[p] for p in predecessors(pos) if p < len(tainted))
        # error from an op that could not be judged taints as a root does: what it carries is never "noise"
        tainted.append(le.is_root or le.unjudged_flow or pos in tainted_by_inputs or upstream)
    return tainted


def rejudge(
    session: Session,
    sr: ScanResult,
    predecessors: Callable[[int], set[int]],
    roles_of: list[Roles] | None = None,
    before: InContext = NO_CONTEXT,
) -> InContext:
    """Tensor verdicts in context: beyond the floor of its dtypes, but no root upstream -> close (carried
    precision noise, said so in the reason). Returns a new context (`before` and these); the session's cache
    keeps what each pair's own numbers said."""
    ctx = _Restating(session, before)
    for pos, le in enumerate(sr.locals):
        into = any(sr.tainted[p] for p in predecessors(pos))
        ins, outs = session.tensor_results(le.pair, purpose=Purpose.SCAN)
        roles = input_roles(le.pair) if roles_of is None else roles_of[pos]
        # (read only where the op is said to be wired otherwise: most ops are not, and this asked every op's
        # origins again for another list of slots than measuring asked them for)
        swapped = (
            dict(wiring(session.ref, session.target, session.alignment, le.pair, list(roles))) if le.wiring else {}
        )
        for cached in ins:
            _rejudge_input(ctx, sr, pos, le, ctx.now(cached), roles, swapped, into)
        for cached in outs:
            _rejudge_output(ctx, sr, pos, ctx.now(cached))
    return before.merged(ctx.judged.values())


class _Restating:
    """The verdicts restated in context so far, by tensor pair: two ops may read one file, and the later sees
    the earlier's verdict."""

    def __init__(self, session: Session, before: InContext):
        self.session, self.before = session, before
        self.cos = session.thresholds.cos
        self.judged: dict[int, TensorResult] = {}

    def now(self, r: TensorResult) -> TensorResult:
        return self.judged.get(pair_key(r.ref, r.target)) or self.before.tensor(r)

    def restate(self, r: TensorResult, verdict: Verdict, reason: Said) -> None:
        if not self.session.is_final(r):  # a result computed against a transformed reference keeps its own
            self.judged[pair_key(r.ref, r.target)] = restated(r, verdict, reason)


def _rejudge_input(
    ctx: _Restating,
    sr: ScanResult,
    pos: int,
    le: LocalError,
    r: TensorResult,
    roles: Roles,
    swapped: dict[int, int],
    into: bool,
) -> None:
    session = ctx.session
    if r.slot in swapped and le.wiring and r.verdict == DIVERGED:
        ctx.restate(r, DIVERGED, because(Why.CARRIES_REF_INPUT, swapped[r.slot]))
    elif roles.get(r.slot) != Role.CONSTANT:  # a constant that differs is the op's definition, not noise
        # only a diverged input is restated as unjudged or carried: the graph is asked for nothing else (most
        # inputs agree within their floor, and their origins were walked for nothing)
        if r.verdict == DIVERGED:
            through = None if r.statistics_only else _one_sided(session, le.pair, r.slot)
            if through:
                ctx.restate(r, DIVERGED, because(Why.COMES_UNJUDGED, _error_numbers(result_error(r)), through))
            elif why := _carried(r, _tainted_into(session, sr, position_of(sr), le.pair, r.slot, into), ctx.cos):
                ctx.restate(r, *_flipped_or(sr, _reach_into(session, sr, le.pair, r.slot, pos), r, why))
        elif (
            r.verdict == SHAPE_MISMATCH
            and not into
            and (flip := _flip_reason(sr, _reach_into(session, sr, le.pair, r.slot, pos), r))
        ):
            ctx.restate(r, FLIPPED, flip)  # as many as a flipped selection kept on each side


def _rejudge_output(ctx: _Restating, sr: ScanResult, pos: int, r: TensorResult) -> None:
    if why := _carried(r, sr.tainted[pos], ctx.cos):
        ctx.restate(r, *_flipped_or(sr, sr.reach[pos] if sr.reach else None, r, why))
    elif _flip_within_floor(sr, pos, r):  # a comparison's output: a flip, however few elements
        ctx.restate(r, FLIPPED, _flip_reason(sr, pos, r) or r.reason)
    elif (
        r.verdict == SHAPE_MISMATCH
        and sr.reach
        and not sr.tainted[pos]
        and (flip := _flip_reason(sr, sr.reach[pos], r))
    ):
        ctx.restate(r, FLIPPED, flip)


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
    if any(
        src is not None and src.kind != SourceKind.OP and src.ref in sr.differing for src in input_source(pair, slot)
    ):
        return True  # a weight or input the preconditions found differing: not noise where it is read either
    found = [
        position[o.pair.index]
        for o in origins(session.ref, session.target, session.alignment, pair, slot)
        if o.kind == OriginKind.PAIR and o.pair is not None and o.pair.index in position
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
        if o.kind == OriginKind.PAIR and o.pair is not None and o.pair.index in position
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
