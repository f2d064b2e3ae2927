"""Ops that move values without computing new ones: reshapes, transposes, slicing, gathering, joining.

Floating data comes back as float64; integer and boolean data keep their dtype, so indices stay exact.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dumptui.core.search.replay.args import Kernel, OpArgs, normalise_axes
from dumptui.core.search.replay.numeric import as_float64, is_integral
from dumptui.core.search.replay.spec import ReplayUnsupported


def _data(args: OpArgs, slot: int) -> np.ndarray:
    a = args.raw(slot)
    return a.copy() if is_integral(a) else as_float64(a)


def _join_dtype(arrays: list[np.ndarray]) -> list[np.ndarray]:
    """Integer (or boolean) operands stay integer only when all are; otherwise every one goes to float64."""
    if all(is_integral(a) for a in arrays):
        return arrays
    return [as_float64(a) for a in arrays]


def _mask_bits(args: OpArgs, slot: int, name: str, length: int) -> list[bool]:
    mask = args.integer(slot, (name,), 0)
    return [bool(mask >> i & 1) for i in range(length)]


def pass_through(args: OpArgs) -> dict[int, np.ndarray]:
    """Identity, Depend, TensorMove: output.0 is input.0."""
    return {0: _data(args, 0)}


def reshape(args: OpArgs) -> dict[int, np.ndarray]:
    """Reshape(x, shape): shape from input.1, a constant, attribute shape, or else the dumped output shape."""
    x = _data(args, 0)
    target: tuple[int, ...] | None = (
        args.ints(1, ("shape",)) if args.has(1) or args.attr("shape") is not None else args.out_shape(0)
    )
    if target is None:
        raise ReplayUnsupported("Reshape has no target shape: no input.1, no attribute, no dumped output shape")
    try:
        return {0: x.reshape(target)}
    except ValueError as e:
        raise ReplayUnsupported(f"Reshape of {x.shape} to {target}: the sizes disagree") from e


def flatten(args: OpArgs) -> dict[int, np.ndarray]:
    """Flatten: (N, everything else)."""
    x = _data(args, 0)
    if x.ndim == 0:
        raise ReplayUnsupported("Flatten of a 0-d tensor")
    return {0: x.reshape(x.shape[0], -1)}


def transpose(args: OpArgs) -> dict[int, np.ndarray]:
    """Transpose(x, perm), perm from input.1, a constant such as `(I64(1), I64(0))`, or attribute perm.

    A MindSpore CPU dump can write a Reshape's output (and so the next op's input) with the shape from
    before the Reshape. When perm's length disagrees with x's rank, the input shape is recovered from the
    dumped output shape: input axis perm[i] has the size of output axis i.
    """
    x = _data(args, 0)
    perm = args.ints(1, ("perm", "input_perm"))
    if len(perm) != x.ndim:
        out = args.out_shape(0)
        if out is None or len(out) != len(perm) or int(np.prod(out, dtype=np.int64)) != x.size:
            raise ReplayUnsupported(f"Transpose perm {perm} does not fit an input of shape {x.shape}")
        in_shape = [0] * len(perm)
        for i, p in enumerate(normalise_axes(perm, len(perm), "Transpose")):
            in_shape[p] = out[i]
        x = x.reshape(in_shape)
    if sorted(normalise_axes(perm, x.ndim, "Transpose")) != list(range(x.ndim)):
        raise ReplayUnsupported(f"Transpose perm {perm} is not a permutation of {x.ndim} axes")
    return {0: np.transpose(x, perm)}


def expand_dims(args: OpArgs) -> dict[int, np.ndarray]:
    """ExpandDims(x, axis): a new axis of size 1 at `axis` (from -rank-1 to rank)."""
    x = _data(args, 0)
    axis = args.integer(1, ("axis",))
    if not -x.ndim - 1 <= axis <= x.ndim:
        raise ReplayUnsupported(f"ExpandDims axis {axis} is out of range for rank {x.ndim}")
    return {0: np.expand_dims(x, axis)}


def squeeze(args: OpArgs) -> dict[int, np.ndarray]:
    """Squeeze: remove the size-1 axes listed in attribute axis, or all of them when it is empty."""
    x = _data(args, 0)
    axes = normalise_axes(args.ints(None, ("axis",), ()), x.ndim, "Squeeze")
    if any(x.shape[a] != 1 for a in axes):
        raise ReplayUnsupported(f"Squeeze axes {axes} of shape {x.shape} are not all of size 1")
    return {0: np.squeeze(x, axis=axes) if axes else np.squeeze(x)}


def concat(args: OpArgs) -> dict[int, np.ndarray]:
    """Concat(x0, x1, ...) along attribute axis (default 0).

    A 0-d input cannot be a piece (concatenation needs rank >= 1), so a 0-d integer input is taken as the
    axis, which is how graphs that turned the attribute into a trailing input dump it.
    """
    pieces: list[np.ndarray] = []
    axis_inputs: list[int] = []
    for slot in args.slots():
        a = args.raw(slot)
        if a.ndim == 0:
            if not np.issubdtype(a.dtype, np.integer):
                raise ReplayUnsupported(f"Concat input.{slot} is a 0-d {a.dtype}, neither a piece nor an axis")
            axis_inputs.append(int(a))
        else:
            pieces.append(a)
    if not pieces:
        raise ReplayUnsupported("Concat has no tensor to join")
    attr_axis = args.attr("axis")
    if len(axis_inputs) > 1 or (axis_inputs and attr_axis is not None and attr_axis != axis_inputs[0]):
        raise ReplayUnsupported(f"Concat axis is ambiguous: inputs {axis_inputs}, attribute {attr_axis!r}")
    axis = axis_inputs[0] if axis_inputs else args.integer(None, ("axis",), 0)
    (axis,) = normalise_axes((axis,), pieces[0].ndim, "Concat")
    try:
        return {0: np.concatenate(_join_dtype(pieces), axis=axis)}
    except ValueError as e:
        raise ReplayUnsupported(f"Concat of shapes {[p.shape for p in pieces]} along {axis}: {e}") from e


def split(args: OpArgs) -> dict[int, np.ndarray]:
    """Split(x) into output_num equal pieces along axis: outputs 0 .. output_num-1."""
    x = _data(args, 0)
    axis = args.integer(1, ("axis",), 0)
    count = args.integer(2, ("output_num",), len(args.spec.out_shapes) or 1)
    (axis,) = normalise_axes((axis,), x.ndim, "Split")
    if count < 1 or x.shape[axis] % count:
        raise ReplayUnsupported(f"Split of {x.shape[axis]} along axis {axis} into {count} equal pieces")
    return dict(enumerate(np.split(x, count, axis=axis)))


def strided_slice(args: OpArgs) -> dict[int, np.ndarray]:
    """StridedSlice(x, begin, end, strides) with TensorFlow's mask semantics.

    Masks (attributes, or 0-d inputs 4-8 in that order): begin_mask / end_mask ignore begin / end on that
    axis; ellipsis_mask puts `...` there; new_axis_mask inserts an axis; shrink_axis_mask takes the single
    element at begin and drops the axis. Bit i refers to position i of begin.
    """
    x = _data(args, 0)
    begin, end = args.ints(1, ("begin",)), args.ints(2, ("end",))
    strides = args.ints(3, ("strides",), (1,) * len(begin))
    n = len(begin)
    if len(end) != n or len(strides) != n or 0 in strides:
        raise ReplayUnsupported(f"StridedSlice begin {begin}, end {end}, strides {strides} do not fit together")
    begin_m = _mask_bits(args, 4, "begin_mask", n)
    end_m = _mask_bits(args, 5, "end_mask", n)
    ellipsis_m = _mask_bits(args, 6, "ellipsis_mask", n)
    new_axis_m = _mask_bits(args, 7, "new_axis_mask", n)
    shrink_m = _mask_bits(args, 8, "shrink_axis_mask", n)
    if sum(ellipsis_m) > 1:
        raise ReplayUnsupported("StridedSlice with more than one ellipsis")
    index: list[Any] = []  # slices, ints, None (new axis) and Ellipsis, as numpy indexing takes them
    for i in range(n):
        if ellipsis_m[i]:
            index.append(Ellipsis)
        elif new_axis_m[i]:
            index.append(np.newaxis)
        elif shrink_m[i]:
            index.append(begin[i])
        else:
            index.append(slice(None if begin_m[i] else begin[i], None if end_m[i] else end[i], strides[i]))
    try:
        return {0: np.asarray(x[tuple(index)])}
    except IndexError as e:
        raise ReplayUnsupported(f"StridedSlice index out of range for shape {x.shape}: {e}") from e


def gather(args: OpArgs) -> dict[int, np.ndarray]:
    """Gather(params, indices, axis): np.take along axis (input.2, or attribute axis, default 0).

    Indices outside [0, size) are refused: devices answer them differently (zeros, clamping, an error).
    """
    params, indices = _data(args, 0), args.raw(1)
    if not np.issubdtype(indices.dtype, np.integer):
        raise ReplayUnsupported(f"Gather indices are {indices.dtype}, not integers")
    if args.integer(3, ("batch_dims",), 0) != 0:
        raise ReplayUnsupported("Gather with batch_dims is not replayed")
    (axis,) = normalise_axes((args.integer(2, ("axis",), 0),), params.ndim, args.op_type)
    size = params.shape[axis] if params.ndim else 0
    if indices.size and (indices.min() < 0 or indices.max() >= size):
        raise ReplayUnsupported(f"Gather index out of range [0, {size}): device-dependent result")
    return {0: np.take(params, indices.astype(np.int64), axis=axis)}


def tile(args: OpArgs) -> dict[int, np.ndarray]:
    """Tile(x, multiples): x repeated along each axis; a longer multiples prepends axes."""
    x = _data(args, 0)
    multiples = args.ints(1, ("multiples",))
    if len(multiples) < x.ndim or min(multiples, default=1) < 0:
        raise ReplayUnsupported(f"Tile multiples {multiples} do not fit rank {x.ndim}")
    return {0: np.tile(x, multiples)}


def broadcast_to(args: OpArgs) -> dict[int, np.ndarray]:
    """BroadcastTo(x, shape): numpy broadcasting; -1 keeps the input's size on that (right-aligned) axis."""
    x = _data(args, 0)
    shape = list(args.ints(1, ("shape",)))
    offset = len(shape) - x.ndim
    if offset < 0:
        raise ReplayUnsupported(f"BroadcastTo {tuple(shape)} has fewer axes than the input {x.shape}")
    for i, size in enumerate(shape):
        if size == -1:
            if i < offset:
                raise ReplayUnsupported(f"BroadcastTo -1 on axis {i}, which the input does not have")
            shape[i] = x.shape[i - offset]
    try:
        return {0: np.broadcast_to(x, tuple(shape)).copy()}
    except ValueError as e:
        raise ReplayUnsupported(f"BroadcastTo {tuple(shape)} from {x.shape}: {e}") from e


def _fill_like(value: int) -> Kernel:
    def kernel(args: OpArgs) -> dict[int, np.ndarray]:
        """OnesLike / ZerosLike: the input's shape filled with 1 / 0 (in the input's dtype if integral)."""
        x = args.raw(0)
        return {0: np.full(x.shape, value, dtype=x.dtype if is_integral(x) else np.float64)}

    return kernel


def kernels() -> dict[str, Kernel]:
    """Every kernel of this module, by op type."""
    return {
        "Identity": pass_through,
        "Depend": pass_through,
        "TensorMove": pass_through,
        "Reshape": reshape,
        "Flatten": flatten,
        "Transpose": transpose,
        "ExpandDims": expand_dims,
        "Squeeze": squeeze,
        "Concat": concat,
        "Split": split,
        "StridedSlice": strided_slice,
        "Gather": gather,
        "GatherV2": gather,
        "Tile": tile,
        "BroadcastTo": broadcast_to,
        "OnesLike": _fill_like(1),
        "ZerosLike": _fill_like(0),
    }
