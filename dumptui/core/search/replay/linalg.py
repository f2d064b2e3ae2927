"""MatMul, BatchMatMul and Dense, accumulated in float64."""

from __future__ import annotations

import math

import numpy as np

from dumptui.core.search.replay.args import Kernel, OpArgs
from dumptui.core.search.replay.spec import ReplayUnsupported, products_within_budget


def _as_matrix(a: np.ndarray, other: np.ndarray, k_axis_of_a: int, k_axis_of_other: int, what: str) -> np.ndarray:
    """A MatMul operand of rank > 2 reshaped to a matrix.

    MindSpore's Flatten is a no-op view, and a dump may keep the 4-D shape of its input for the flattened
    tensor that feeds a MatMul. The other operand's K (the contracted size) tells how to fold it back.
    """
    if a.ndim == 2:
        return a
    if other.ndim != 2:
        raise ReplayUnsupported(f"MatMul {what} has shape {a.shape} and the other operand is not a matrix")
    k = other.shape[k_axis_of_other]
    if k == 0 or a.size % k:
        raise ReplayUnsupported(f"MatMul {what} of shape {a.shape} cannot be folded to a matrix with K = {k}")
    return a.reshape(-1, k) if k_axis_of_a == 1 else a.reshape(k, -1)


def matmul(args: OpArgs) -> dict[int, np.ndarray]:
    """MatMul(a, b): op(a) @ op(b), op = transpose when the flag is set.

    The flags are 0-d inputs 2 and 3 in MindSpore 2.x dumps, attributes transpose_a/transpose_b (or
    transpose_x1/transpose_x2) in older ones.
    """
    a, b = args.float64(0), args.float64(1)
    ta = args.flag(2, ("transpose_a", "transpose_x1"))
    tb = args.flag(3, ("transpose_b", "transpose_x2"))
    if a.ndim < 2 or b.ndim < 2:
        raise ReplayUnsupported(f"MatMul of shapes {a.shape} and {b.shape}: an operand is not a matrix")
    # K is axis 1 of a (axis 0 when transposed) and axis 0 of b (axis 1 when transposed).
    a = _as_matrix(a, b, 0 if ta else 1, 1 if tb else 0, "input.0")
    b = _as_matrix(b, a, 1 if tb else 0, 0 if ta else 1, "input.1")
    left = a.T if ta else a
    right = b.T if tb else b
    if left.shape[1] != right.shape[0]:
        raise ReplayUnsupported(f"MatMul shapes {a.shape} x {b.shape} (transpose {ta}, {tb}) do not agree")
    (m, k), n = left.shape, right.shape[1]
    products_within_budget("MatMul", m * n, m * n * k)
    return {0: left @ right}


def batch_matmul(args: OpArgs) -> dict[int, np.ndarray]:
    """BatchMatMul(a, b): matrix products over the last two axes, batch axes broadcast as in numpy.

    Flags: inputs 2 and 3, or attributes transpose_a/transpose_b (adj_x/adj_y in TensorFlow-style graphs).
    """
    a, b = args.float64(0), args.float64(1)
    ta = args.flag(2, ("transpose_a", "adj_x", "adj_x1"))
    tb = args.flag(3, ("transpose_b", "adj_y", "adj_x2"))
    if a.ndim < 2 or b.ndim < 2:
        raise ReplayUnsupported(f"BatchMatMul of shapes {a.shape} and {b.shape}: an operand has rank < 2")
    left = np.swapaxes(a, -1, -2) if ta else a
    right = np.swapaxes(b, -1, -2) if tb else b
    if left.shape[-1] != right.shape[-2]:
        raise ReplayUnsupported(f"BatchMatMul shapes {a.shape} x {b.shape} (transpose {ta}, {tb}) do not agree")
    try:
        batch = np.broadcast_shapes(left.shape[:-2], right.shape[:-2])
    except ValueError as e:
        raise ReplayUnsupported(f"BatchMatMul batch axes of {a.shape} and {b.shape} do not broadcast") from e
    out = math.prod(batch) * left.shape[-2] * right.shape[-1]
    products_within_budget("BatchMatMul", out, out * left.shape[-1])
    return {0: np.matmul(left, right)}


def dense(args: OpArgs) -> dict[int, np.ndarray]:
    """Dense(x, w[, b]): x @ w.T + b, the weight stored (out, in) as in nn.Dense."""
    x, w = args.float64(0), args.float64(1)
    if w.ndim != 2 or x.ndim < 1 or x.shape[-1] != w.shape[1]:
        raise ReplayUnsupported(f"Dense of x {x.shape} and w {w.shape}: expected w (out, in) with in = x's last axis")
    out = math.prod(x.shape[:-1]) * w.shape[0]
    products_within_budget("Dense", out, out * w.shape[1])
    y = x @ w.T
    if args.has(2):
        y = y + args.float64(2)
    return {0: y}


def kernels() -> dict[str, Kernel]:
    """Every kernel of this module, by op type."""
    return {"MatMul": matmul, "BatchMatMul": batch_matmul, "Dense": dense}
