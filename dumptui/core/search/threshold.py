"""Threshold ops judged as selections: a comparison (Greater, Less, Equal...) or a cast to an integer type
decides each element by which side of a threshold its input lies. An input that nearly ties the threshold
(a score against 0.5, two scores against each other, 2.9996 against the integer 3) crosses it on a float16
target, and the boolean or integer output differs there although no op computes anything wrong: a flip, as
a TopK's near-tied scores swap (selection.py).

Each side's output is replayed from its own inputs (replay/elementwise.py). Where both follow exactly and
their outputs differ, the op is a flip (SelectionCode.FLIP) whose flips (FlipKind.THRESHOLD) name the element,
its value and the threshold on the reference, the margin between them and the error the inputs carry there
(which moved it across). Anything else is left to the rules that judge every op (None): outputs that agree
are compared as they always were, a side that does not follow its own inputs is the replay rule's.
Codes and numbers only: report/selection.py words them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from dumptui.core.model.dump import PairSide, Roles
from dumptui.core.model.reason import Said, Why, because
from dumptui.core.search import replay
from dumptui.core.search.localerror import LocalError, LocalKind, LocalRule, ReplayProof
from dumptui.core.search.replay.args import OpArgs
from dumptui.core.search.replay.selection import TORCH_COMPARE_NAMES, compare_other
from dumptui.core.search.selection import (
    MAX_FLIPS,
    MAX_SELECTION_ELEMENTS,
    Flip,
    FlipKind,
    SelectionCode,
    SelectionProof,
    Side,
    flip_reach,
    read_side,
    tie_tolerance,
)

if TYPE_CHECKING:
    from dumptui.core.compare.session import Session
    from dumptui.core.graph.align import OpPair

COMPARE_TYPES = frozenset({"Equal", "NotEqual", "Greater", "GreaterEqual", "Less", "LessEqual", *TORCH_COMPARE_NAMES})
CAST_TYPES = frozenset({"Cast"})  # judged here only where it casts to an integer type or to bool
MASK_TYPES = frozenset({"MaskedSelect", "masked_select"})  # keeps what a mask says: its size follows the mask
THRESHOLD_TYPES = COMPARE_TYPES | CAST_TYPES | MASK_TYPES
_INTEGER_DTYPES = ("int", "uint", "bool")  # dtype names a cast to which is judged here
NOISE_SPREAD = 64.0  # an element's input error up to this many times the median of the op's is noise


def is_threshold(op_type: str | None) -> bool:
    return op_type in THRESHOLD_TYPES


def _replayed(op_type: str, attrs: dict[str, str], constants: dict[int, str], side: Side) -> np.ndarray:
    return np.asarray(replay.replay(replay.ReplayInputs(op_type, side.inputs, attrs, constants))[0])


def _cast_boundary(x: np.ndarray, up: np.ndarray, to_bool: bool) -> np.ndarray:
    """The value where a cast's result first changes going from x up (or down): truncation toward zero (q)
    changes at the next integer away from zero (q + 1 up from q >= 0) and just past q toward zero (q up from
    q < 0); bool at 0."""
    if to_bool:
        return np.zeros_like(x)
    q = np.trunc(x)
    boundary: np.ndarray = np.where(up, np.where(q >= 0, q + 1, q), np.where(q > 0, q, q - 1))
    return boundary


def _operands(
    op_type: str, attrs: dict[str, str], constants: dict[int, str], side: Side
) -> tuple[np.ndarray, np.ndarray]:
    """A comparison's two operands on one side: input.1, or the number a PyTorch call was given."""
    args = OpArgs(replay.ReplayInputs(op_type, side.inputs, attrs, constants))
    other = compare_other(args) if op_type in TORCH_COMPARE_NAMES else args.raw(1)
    return args.raw(0), other


def _flat(v: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    return np.broadcast_to(np.asarray(v, dtype=np.float64), shape).reshape(-1)


def judge(
    op_type: str, attrs: dict[str, str], constants: dict[int, str], ref: Side, target: Side
) -> SelectionProof | None:
    """The flips of a threshold op from both sides' tensors (the reference's definition for both), or None
    when the op is not judged here (see the module). Raises ReplayUnsupported as the replay does."""
    if op_type in MASK_TYPES:
        return _judge_masked(op_type, attrs, constants, ref, target)
    if 0 not in ref.outputs or 0 not in target.outputs or 0 not in ref.inputs or 0 not in target.inputs:
        return None
    got_r, got_t = np.asarray(ref.outputs[0]), np.asarray(target.outputs[0])
    if got_r.size != got_t.size or got_r.size == 0:
        return None
    slots = (0,) if op_type in CAST_TYPES else (0, 1)
    operands = [np.asarray(ref.inputs[s]) for s in slots if s in ref.inputs]
    if all(a.dtype.kind in "biu" for a in operands):
        return None  # integers or booleans: no near-tie, what differs came in (an upstream flip's, carried)
    want_r, want_t = _replayed(op_type, attrs, constants, ref), _replayed(op_type, attrs, constants, target)
    if want_r.dtype.kind not in "biu" or want_r.size != got_r.size or want_t.size != got_t.size:
        return None  # a cast to a float type: a rounding, not a threshold
    out_r, out_t = got_r.reshape(-1), got_t.reshape(-1)
    if not (np.array_equal(want_r.reshape(-1), out_r) and np.array_equal(want_t.reshape(-1), out_t)):
        return None  # a side that does not follow its own inputs: the replay rule's
    differs = np.flatnonzero(out_r != out_t)
    if differs.size == 0:
        return None
    shape = got_r.shape
    if op_type in COMPARE_TYPES:
        try:
            a_r, b_r = (_flat(v, shape) for v in _operands(op_type, attrs, constants, ref))
            a_t, b_t = (_flat(v, shape) for v in _operands(op_type, attrs, constants, target))
        except ValueError:
            return None
        moved_a, moved_b = np.abs(a_t - a_r), np.abs(b_t - b_r)
        value, threshold = a_r[differs], b_r[differs]
        moved, moved_all = moved_a[differs] + moved_b[differs], moved_a + moved_b
        slot = 0 if float(np.nanmax(moved_a, initial=0.0)) >= float(np.nanmax(moved_b, initial=0.0)) else 1
        input_error = float(np.nanmax(np.maximum(moved_a, moved_b), initial=0.0))
    else:
        try:
            x_r = np.broadcast_to(np.asarray(ref.inputs[0], dtype=np.float64), shape).reshape(-1)
            x_t = np.broadcast_to(np.asarray(target.inputs[0], dtype=np.float64), shape).reshape(-1)
        except ValueError:
            return None
        value, moved_all = x_r[differs], np.abs(x_t - x_r)
        threshold = _cast_boundary(value, x_t[differs] > value, want_r.dtype == np.bool_)
        moved, slot, input_error = moved_all[differs], 0, float(np.nanmax(moved_all, initial=0.0))
    margin = np.abs(value - threshold)
    # a near-tie is crossed by noise: the error that moved it no larger than the op's inputs carry (their
    # median, NOISE_SPREAD times) or than their rounding; larger, it came in (an upstream flip's): carried
    noise = float(np.nanmedian(moved_all)) if moved_all.size else 0.0
    tol = tie_tolerance(target.dtypes.get(slot)) * np.maximum(np.abs(value), np.abs(threshold))
    if not np.all(moved <= np.maximum(NOISE_SPREAD * noise, tol)):
        return None
    flips = tuple(
        Flip(
            kind=FlipKind.THRESHOLD,
            row=int(i),
            rank=-1,
            index=int(i),
            other=-1,
            value=float(value[j]),
            other_value=float(threshold[j]),
            margin=float(margin[j]),
            input_error=float(moved[j]),
        )
        for j, i in enumerate(differs[:MAX_FLIPS])
    )
    n = int(out_r.size)
    return SelectionProof(
        code=SelectionCode.FLIP,
        op_type=op_type,
        selected=n,
        equal=n - int(differs.size),
        common=n - int(differs.size),
        differing=int(differs.size),
        flips=flips,
        input_error=input_error,
        input_slot=slot,
        tolerance=tie_tolerance(target.dtypes.get(slot)),
    )


def _judge_masked(
    op_type: str, attrs: dict[str, str], constants: dict[int, str], ref: Side, target: Side
) -> SelectionProof | None:
    """MaskedSelect whose mask differs (a comparison upstream flipped): each side keeps what its own mask says,
    so the outputs differ in size; the elements kept on one side only are named (FlipKind.KEPT), by source
    index. None unless both sides follow their own inputs and the masks differ."""
    if not all(0 in s.outputs and 0 in s.inputs and 1 in s.inputs for s in (ref, target)):
        return None
    for side in (ref, target):
        want = _replayed(op_type, attrs, constants, side).astype(np.float64).reshape(-1)
        if not np.array_equal(want, np.asarray(side.outputs[0], dtype=np.float64).reshape(-1), equal_nan=True):
            return None
    try:
        x_r, m_r = np.broadcast_arrays(np.asarray(ref.inputs[0], dtype=np.float64), np.asarray(ref.inputs[1]))
        x_t, m_t = np.broadcast_arrays(np.asarray(target.inputs[0], dtype=np.float64), np.asarray(target.inputs[1]))
    except ValueError:
        return None
    if x_r.shape != x_t.shape:
        return None
    m_r, m_t, x_r, x_t = (a.reshape(-1) for a in (m_r, m_t, x_r, x_t))
    differs = np.flatnonzero(m_r != m_t)
    if differs.size == 0:
        return None
    moved = np.abs(x_t - x_r)
    flips = tuple(
        Flip(
            kind=FlipKind.KEPT,
            row=int(i),
            rank=-1,
            index=int(i),
            other=-1,
            value=float(x_r[i]),
            other_value=float("nan"),
            margin=float("nan"),
            input_error=float(moved[i]),
            kept_by=PairSide.REF if m_r[i] else PairSide.TARGET,
        )
        for i in differs[:MAX_FLIPS]
    )
    both = int((m_r & m_t).sum())
    return SelectionProof(
        code=SelectionCode.FLIP,
        op_type=op_type,
        selected=int((m_r | m_t).sum()),
        equal=both,
        common=both,
        differing=int(differs.size),
        flips=flips,
        input_error=float(np.nanmax(moved, initial=0.0)),
        input_slot=1,  # the mask: what feeds it is what flipped
    )


def resized_by_flips(
    locals_: Sequence[LocalError],
    predecessors: Callable[[int], set[int]],
    resized: Sequence[tuple[tuple[int, str, Said], ...]],
    gain: float,
    tail_limit: float,
    out_resized: Sequence[bool] = (),
    replay_for: Callable[[LocalError], tuple[ReplayProof | None, Said]] | None = None,
) -> None:
    """Ops of a scan with a data input that differs in shape (`resized[p]`: (slot, verdict, reason) of each)
    where a flipped selection reaches them (MaskedSelect, NMS, Unique keep as many as their inputs say): what
    came in there was never compared, so neither the gain rule ("its inputs agree") nor noise decides; they
    are re-judged in place by their replay on each side's own inputs: it matches, carried, not born
    (LocalRule.RESIZED_BY_FLIP); it does not, a root (a bug after a flip is still one); no conclusive replay,
    carried as following the flip's change of size (LocalRule.FOLLOWS_RESIZING_FLIP, naming why no replay).
    An op whose outputs differ in shape too (`out_resized[p]`: uncompared for that alone) was never measured
    nor replayed by the scan: `replay_for` replays it here (those few ops only). `gain`, `tail_limit` are the
    replay rule's."""
    flipped = [le.selection is not None and le.selection.flipped for le in locals_]
    if not any(flipped) or not any(resized):
        return  # (most runs: no walk of the graph)
    # roots block a flip's reach, except those the gain rule made of a resized input (judged again here)
    roots = [le.is_root and not resized[p] for p, le in enumerate(locals_)]
    reach = flip_reach(flipped, roots, predecessors)
    for pos, le in enumerate(locals_):
        site, entries = reach[pos], resized[pos]
        if site is None or site == pos or not entries or le.rule == LocalRule.WIRING:
            continue
        uncompared = le.out is None
        if uncompared and not (pos < len(out_resized) and out_resized[pos]):
            continue  # an output unreadable or on one side only: not the flip's to explain
        le.resized = tuple(slot for slot, _v, _w in entries)
        if uncompared and le.replay is None and replay_for is not None:
            le.replay, le.replay_note = replay_for(le)
        if le.replay is not None and le.replay.conclusive(gain):
            le.unjudged_flow = False
            if le.replay.broken(gain, tail_limit):
                le.kind, le.rule = LocalKind.ROOT, LocalRule.REPLAY_BROKEN
                le.why = because(Why.REPLAY_BROKEN, le.replay, tuple(le.differs))
            else:
                le.kind, le.rule = LocalKind.CARRIES, LocalRule.RESIZED_BY_FLIP
                le.why = because(Why.RESIZED_BY_FLIP, le.resized, locals_[site].pair.name)
        elif uncompared or (le.out_rel is not None and le.out_rel > le.floor):
            # no replay decides (none for its type, or none conclusive) and its elements cannot be paired with
            # the reference's: the flip upstream explains its change of size, and nothing here says more. As an
            # experienced user reads it: carried, the flip named, the missing replay said (not "undecided",
            # which would leave a pair whose only difference is a flip without an answer)
            le.unjudged_flow = False
            le.kind, le.rule = LocalKind.CARRIES, LocalRule.FOLLOWS_RESIZING_FLIP
            le.why = because(Why.FOLLOWS_RESIZING_FLIP, le.resized, locals_[site].pair.name, le.replay_note)


def threshold_proof(session: Session, pair: OpPair, roles: Roles) -> SelectionProof | None:
    """The threshold judgement of one op pair from its dumped tensors (None: not judged here, or nothing
    differs); the scan's hook beside selection.selection_proof."""
    ref, tgt = pair.ref, pair.target
    if ref is None or tgt is None or not is_threshold(ref.op_type) or ref.op_type != tgt.op_type:
        return None
    if ref.backward_call or tgt.backward_call:  # gradients, not the comparison its op type names
        return None
    if ref.op_type in CAST_TYPES:  # most casts are to float16 and back: known from the index, nothing read
        out = ref.outputs.get(0)
        if out is None or not (out.dtype or "").startswith(_INTEGER_DTYPES):
            return None
    n = sum(t.size or 0 for op in (ref, tgt) for t in (*op.inputs.values(), *op.outputs.values()))
    if n > MAX_SELECTION_ELEMENTS:
        return None
    try:
        sides, constants = read_side(pair, roles)
        return judge(ref.op_type, dict(ref.attrs), constants, *sides)
    except (replay.ReplayUnsupported, OSError, ValueError, IndexError):
        return None
