"""msprobe's PyTorch element-wise calls: add, sub, mul, div and clamp, as torch functions (`Torch.mul`), Tensor
methods (`Tensor.mul`), operators (`x * y` as `Tensor.__mul__`, `2 - x` as `Tensor.__rsub__`) and in place
(`Tensor.mul_`, `x *= y` as `Tensor.__imul__`).

An in-place call replays as its function does: msprobe records an in-place call's input before the call and
its output after it, so the output is the function of the recorded input. What the call modified is then
judged as any op after a flip is, against its own inputs (a selection flipped upstream changes those inputs,
not what the call computes from them).

The second operand is input.1 when a tensor, else the number msprobe records (`scalar input 1`, or the
keyword). Integer tensors with integer operands compute exactly (as int64); anything else in float64, which the
replay's comparison rounds to the dumped output's dtype.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from dumptui.core.search.replay.args import Kernel, OpArgs
from dumptui.core.search.replay.numeric import as_float64, is_integral
from dumptui.core.search.replay.selection import scalar_arg
from dumptui.core.search.replay.spec import ReplayUnsupported


def _operand(args: OpArgs, position: int, name: str, default: object = ...) -> np.ndarray | None:
    """Argument `position` of the call: the tensor dumped there, else the number recorded (None: absent and
    `default` None)."""
    if args.has(position):
        return args.raw(position)
    value = scalar_arg(args, position, name, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ReplayUnsupported(f"{args.op_type} argument {name} = {value!r} is not a number")
    return np.asarray(value)


def _exact(*arrays: np.ndarray) -> bool:
    return all(is_integral(a) for a in arrays)


def _broadcast(args: OpArgs, fn: Callable[..., np.ndarray], *arrays: np.ndarray) -> np.ndarray:
    try:
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return np.asarray(fn(*arrays))
    except ValueError as e:
        raise ReplayUnsupported(f"{args.op_type} of {[np.shape(a) for a in arrays]}: {e}") from e


def _add_sub(sign: int) -> Kernel:
    def kernel(args: OpArgs) -> dict[int, np.ndarray]:
        """torch.add / sub(input, other, alpha=1): input + alpha * other (sub: minus)."""
        x, y = args.raw(0), _operand(args, 1, "other")
        alpha = _operand(args, 2, "alpha", 1)
        assert y is not None and alpha is not None
        if _exact(x, y, alpha):
            return {0: _broadcast(args, lambda a, b: a + sign * int(alpha) * b, x.astype(np.int64), y.astype(np.int64))}
        a = as_float64(alpha)
        return {0: _broadcast(args, lambda p, q: p + sign * (a * q), as_float64(x), as_float64(y))}

    return kernel


def _mul(args: OpArgs) -> dict[int, np.ndarray]:
    """torch.mul(input, other)."""
    x, y = args.raw(0), _operand(args, 1, "other")
    assert y is not None
    if _exact(x, y):
        return {0: _broadcast(args, np.multiply, x.astype(np.int64), y.astype(np.int64))}
    return {0: _broadcast(args, np.multiply, as_float64(x), as_float64(y))}


def _div(args: OpArgs) -> dict[int, np.ndarray]:
    """torch.div(input, other, rounding_mode=None): true division (integers too); "trunc" and "floor" round
    the quotient; an integer division by zero is refused (PyTorch raises it)."""
    x, y = args.raw(0), _operand(args, 1, "other")
    assert y is not None
    mode = scalar_arg(args, 2, "rounding_mode", None)
    if mode not in (None, "trunc", "floor"):
        raise ReplayUnsupported(f"{args.op_type} rounding_mode {mode!r} is not replayed")
    if mode is not None and _exact(x, y):
        if (np.asarray(y) == 0).any():
            raise ReplayUnsupported(f"{args.op_type}: integer division by zero")
        q = _broadcast(args, np.true_divide, as_float64(x), as_float64(y))
        return {0: (np.trunc(q) if mode == "trunc" else np.floor(q)).astype(np.int64)}
    q = _broadcast(args, np.true_divide, as_float64(x), as_float64(y))
    return {0: q if mode is None else (np.trunc(q) if mode == "trunc" else np.floor(q))}


def _clamp(args: OpArgs) -> dict[int, np.ndarray]:
    """torch.clamp(input, min=None, max=None): max(input, min), then min(that, max) (min > max gives max, as
    PyTorch does); NaN stays NaN."""
    x = args.raw(0)
    lo, hi = _operand(args, 1, "min", None), _operand(args, 2, "max", None)
    if lo is None and hi is None:
        raise ReplayUnsupported(f"{args.op_type} without min and max (PyTorch refuses it)")
    bounds = [b for b in (lo, hi) if b is not None]
    if _exact(x, *bounds):
        out = x.astype(np.int64)
        lo_v, hi_v = (None if b is None else b.astype(np.int64) for b in (lo, hi))
    else:
        out = as_float64(x)
        lo_v, hi_v = (None if b is None else as_float64(b) for b in (lo, hi))
    if lo_v is not None:
        out = _broadcast(args, np.maximum, out, lo_v)
    if hi_v is not None:
        out = _broadcast(args, np.minimum, out, hi_v)
    return {0: out}


_FUNCTIONS: dict[str, Kernel] = {
    "add": _add_sub(1),
    "sub": _add_sub(-1),
    "subtract": _add_sub(-1),
    "mul": _mul,
    "multiply": _mul,
    "div": _div,
    "divide": _div,
    "true_divide": _div,
    "clamp": _clamp,
    "clip": _clamp,
}
# x + y, x += y and the like: the operators as msprobe names them (Tensor.__mul__)
_OPERATORS = {
    "__add__": "add",
    "__sub__": "sub",
    "__mul__": "mul",
    "__truediv__": "div",
    "__iadd__": "add",
    "__isub__": "sub",
    "__imul__": "mul",
    "__itruediv__": "div",
    "__radd__": "add",  # y + x with x the tensor: addition and multiplication commute
    "__rmul__": "mul",
}


def _rsub(args: OpArgs) -> dict[int, np.ndarray]:
    """y - x with x the tensor (input.0) and y the other operand: `2 - x` records Tensor.__rsub__(x, 2)."""
    return {0: -_FUNCTIONS["sub"](args)[0]}


def _rtruediv(args: OpArgs) -> dict[int, np.ndarray]:
    """y / x with x the tensor (input.0): `1 / x` records Tensor.__rtruediv__(x, 1)."""
    x, y = args.raw(0), _operand(args, 1, "other")
    assert y is not None
    return {0: _broadcast(args, np.true_divide, as_float64(y), as_float64(x))}


def kernels() -> dict[str, Kernel]:
    """Every kernel of this module, by the API name msprobe records (function, method, operator and in-place
    forms)."""
    table = dict(_FUNCTIONS)
    table.update({f"{name}_": kernel for name, kernel in _FUNCTIONS.items()})  # in place: mul_, clamp_...
    table.update({op: _FUNCTIONS[name] for op, name in _OPERATORS.items()})
    table.update({"__rsub__": _rsub, "__rtruediv__": _rtruediv})
    return table
