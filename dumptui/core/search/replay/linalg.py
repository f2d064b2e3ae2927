"""MatMul, BatchMatMul and Dense, accumulated in float64."""

from __future__ import annotations

import math

import numpy as np

from dumptui.core.search.replay.args import Kernel, OpArgs, SampledKernel
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


def _matmul_operands(args: OpArgs) -> tuple[np.ndarray, np.ndarray]:
    """MatMul's (left, right) in float64, transposes applied: the product is left @ right.

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
    return left, right


def matmul(args: OpArgs) -> dict[int, np.ndarray]:
    """MatMul(a, b): op(a) @ op(b), op = transpose when the flag is set."""
    left, right = _matmul_operands(args)
    (m, k), n = left.shape, right.shape[1]
    products_within_budget("MatMul", m * n, m * n * k)
    return {0: left @ right}


def _batch_operands(args: OpArgs) -> tuple[np.ndarray, np.ndarray, tuple[int, ...]]:
    """BatchMatMul's (left, right, the broadcast batch shape), transposes applied.

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
    return left, right, batch


def batch_matmul(args: OpArgs) -> dict[int, np.ndarray]:
    """BatchMatMul(a, b): matrix products over the last two axes, batch axes broadcast as in numpy."""
    left, right, batch = _batch_operands(args)
    out = math.prod(batch) * left.shape[-2] * right.shape[-1]
    products_within_budget("BatchMatMul", out, out * left.shape[-1])
    return {0: np.matmul(left, right)}


def _dense_operands(args: OpArgs) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Dense's (x, w (out, in), bias or None)."""
    x, w = args.float64(0), args.float64(1)
    if w.ndim != 2 or x.ndim < 1 or x.shape[-1] != w.shape[1]:
        raise ReplayUnsupported(f"Dense of x {x.shape} and w {w.shape}: expected w (out, in) with in = x's last axis")
    return x, w, args.float64(2) if args.has(2) else None


def dense(args: OpArgs) -> dict[int, np.ndarray]:
    """Dense(x, w[, b]): x @ w.T + b, the weight stored (out, in) as in nn.Dense."""
    x, w, bias = _dense_operands(args)
    out = math.prod(x.shape[:-1]) * w.shape[0]
    products_within_budget("Dense", out, out * w.shape[1])
    y = x @ w.T
    if bias is not None:
        y = y + bias
    return {0: y}


# ---------------------------------------------------------------------------------------------- sampled
# A big output's proof compares the replay at a few thousand positions (scan.sample_positions): a product
# computed at those positions only costs (positions x K) multiply-adds whatever its size, so it is proven where
# the whole product would be over the replay budget. Each value is one row-by-column dot product in float64,
# as the whole product computes it (its BLAS may sum in another order: a few ulps apart).


def _check_size(size: int, dumped: int) -> None:
    if size != dumped:
        raise ValueError(f"replay gives {size} elements, the dump holds {dumped}")


def _dots(rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    dots: np.ndarray = np.einsum("sk,sk->s", rows, cols)
    return dots


def matmul_at(args: OpArgs, positions: np.ndarray, dumped: int) -> np.ndarray:
    """MatMul's output at `positions` (flat, C order) only."""
    left, right = _matmul_operands(args)
    (m, _k), n = left.shape, right.shape[1]
    _check_size(m * n, dumped)
    i, j = np.divmod(positions, n)
    return _dots(left[i], right[:, j].T)


def batch_matmul_at(args: OpArgs, positions: np.ndarray, dumped: int) -> np.ndarray:
    """BatchMatMul's output at `positions` (flat, C order over batch + (m, n)) only."""
    left, right, batch = _batch_operands(args)
    m, n = left.shape[-2], right.shape[-1]
    _check_size(math.prod(batch) * m * n, dumped)
    b, ij = np.divmod(positions, m * n)
    i, j = np.divmod(ij, n)
    where = np.unravel_index(b, batch) if batch else ()
    lefts = np.broadcast_to(left, (*batch, *left.shape[-2:]))
    rights = np.broadcast_to(right, (*batch, *right.shape[-2:]))
    rows = lefts[tuple(where) + (i,)]  # (positions, k)
    cols = np.moveaxis(rights, -1, -2)[tuple(where) + (j,)]  # (positions, k): column j of each right
    return _dots(rows, cols)


def dense_at(args: OpArgs, positions: np.ndarray, dumped: int) -> np.ndarray | None:
    """Dense's output at `positions` only; None when its bias does not broadcast along the output features
    alone (the whole product is computed then)."""
    x, w, bias = _dense_operands(args)
    features = w.shape[0]
    _check_size(math.prod(x.shape[:-1]) * features, dumped)
    if bias is not None and not (bias.ndim <= 1 and bias.size in (1, features)):
        return None
    r, c = np.divmod(positions, features)
    values = _dots(x.reshape(-1, x.shape[-1])[r], w[c])
    if bias is not None:
        values = values + np.broadcast_to(bias.reshape(-1), (features,))[c]
    return values


def kernels() -> dict[str, Kernel]:
    """Every kernel of this module, by op type."""
    return {"MatMul": matmul, "BatchMatMul": batch_matmul, "Dense": dense}


def sampled_kernels() -> dict[str, SampledKernel]:
    """The kernels that compute output.0 at given positions only, by op type."""
    return {"MatMul": matmul_at, "BatchMatMul": batch_matmul_at, "Dense": dense_at}
