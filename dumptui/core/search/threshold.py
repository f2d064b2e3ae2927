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

from typing import TYPE_CHECKING

import numpy as np

from dumptui.core.search import replay
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
    read_side,
    tie_tolerance,
)

if TYPE_CHECKING:
    from dumptui.core.compare.session import Session
    from dumptui.core.graph.align import OpPair

COMPARE_TYPES = frozenset({"Equal", "NotEqual", "Greater", "GreaterEqual", "Less", "LessEqual", *TORCH_COMPARE_NAMES})
CAST_TYPES = frozenset({"Cast"})  # judged here only where it casts to an integer type or to bool
THRESHOLD_TYPES = COMPARE_TYPES | CAST_TYPES


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
    return np.where(up, np.where(q >= 0, q + 1, q), np.where(q > 0, q, q - 1))


def _operands(op_type: str, attrs: dict[str, str], constants: dict[int, str], side: Side) -> tuple:
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
    if 0 not in ref.outputs or 0 not in target.outputs or 0 not in ref.inputs or 0 not in target.inputs:
        return None
    got_r, got_t = np.asarray(ref.outputs[0]), np.asarray(target.outputs[0])
    if got_r.size != got_t.size or got_r.size == 0:
        return None
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
        moved = moved_a[differs] + moved_b[differs]
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


def threshold_proof(session: Session, pair: OpPair, roles: dict[int, str]) -> SelectionProof | None:
    """The threshold judgement of one op pair from its dumped tensors (None: not judged here, or nothing
    differs); the scan's hook beside selection.selection_proof."""
    ref, tgt = pair.ref, pair.target
    if ref is None or tgt is None or not is_threshold(ref.op_type) or ref.op_type != tgt.op_type:
        return None
    n = sum(t.size or 0 for op in (ref, tgt) for t in (*op.inputs.values(), *op.outputs.values()))
    if n > MAX_SELECTION_ELEMENTS:
        return None
    try:
        sides, constants = read_side(pair, roles)
        return judge(ref.op_type, dict(ref.attrs), constants, *sides)
    except (replay.ReplayUnsupported, OSError, ValueError, IndexError):
        return None
