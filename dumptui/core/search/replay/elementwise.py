"""Element-wise arithmetic, comparisons, rounding, Select, BiasAdd and Cast (numpy broadcasting throughout).

Floating inputs are computed in float64. When every operand is an integer, the ops that have an exact
integer meaning (Add, Mul, FloorMod...) are computed in int64, which does not reproduce the wrap-around of
a narrower integer type; integer Div/RealDiv and integer division by zero are refused.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from dumptui.core.search.replay.args import Kernel, OpArgs, SampledKernel
from dumptui.core.search.replay.numeric import FLOAT_NAMES, as_float64, dtype_name, is_integral, round_to, to_integer
from dumptui.core.search.replay.spec import ReplayUnsupported

Binary = Callable[[np.ndarray, np.ndarray], np.ndarray]
Unary = Callable[[np.ndarray], np.ndarray]


def _all_integers(*arrays: np.ndarray) -> bool:
    """Every operand is a (non-boolean) integer array: the exact integer path applies."""
    return all(np.issubdtype(a.dtype, np.integer) for a in arrays)


def _no_zero_divisor(op_type: str, divisor: np.ndarray) -> None:
    if np.any(divisor == 0):
        raise ReplayUnsupported(f"integer {op_type} by zero is undefined in C and device-dependent")


def _floor_mod_int(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    _no_zero_divisor("FloorMod", b)
    return np.asarray(np.mod(a, b))


def _mod_int(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    _no_zero_divisor("Mod", b)
    return np.asarray(np.fmod(a, b))


def _floor_div_int(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    _no_zero_divisor("FloorDiv", b)
    return np.asarray(np.floor_divide(a, b))


def _pow_int(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if np.any(b < 0):
        raise ReplayUnsupported("integer Pow with a negative exponent has no integer result")
    return np.asarray(np.power(a, b))


# op type -> (float64 function, exact int64 function or None when integers are not replayed)
_BINARY: dict[str, tuple[Binary, Binary | None]] = {
    "Add": (np.add, np.add),
    "AddV2": (np.add, np.add),
    "Sub": (np.subtract, np.subtract),
    "Mul": (np.multiply, np.multiply),
    "RealDiv": (np.divide, None),
    "Div": (np.divide, None),
    "Maximum": (np.maximum, np.maximum),  # NaN propagates, as in numpy
    "Minimum": (np.minimum, np.minimum),
    "Pow": (np.power, _pow_int),
    # FloorMod is Python's %: the result takes the divisor's sign. np.mod computes it exactly (via fmod),
    # which on float32 inputs gives the same float32 result as MindSpore's x - floor(x / y) * y.
    "FloorMod": (np.mod, _floor_mod_int),
    "Mod": (np.fmod, _mod_int),  # C fmod: truncating, the result takes the dividend's sign
    "FloorDiv": (lambda a, b: np.floor(a / b), _floor_div_int),
}

_COMPARE: dict[str, Binary] = {
    "Equal": np.equal,
    "NotEqual": np.not_equal,
    "Greater": np.greater,
    "GreaterEqual": np.greater_equal,
    "Less": np.less,
    "LessEqual": np.less_equal,
}

# Integer-valued rounding leaves integers alone; on floats it follows numpy, whose np.round is
# round-half-to-even like MindSpore's Round (documented: [0.8, 1.5, 2.3, 2.5, -4.5] -> [1, 2, 2, 2, -4]).
_ROUNDING: dict[str, Unary] = {"Floor": np.floor, "Ceil": np.ceil, "Round": np.round, "Trunc": np.trunc}

# Unary ops with an exact integer meaning.
_INT_UNARY: dict[str, Unary] = {"Neg": np.negative, "Abs": np.abs, "Square": np.square, "Sign": np.sign}


def _binary_kernel(op_type: str) -> Kernel:
    float_fn, int_fn = _BINARY[op_type]

    def kernel(args: OpArgs) -> dict[int, np.ndarray]:
        a, b = args.raw(0), args.raw(1)
        if _all_integers(a, b):
            if int_fn is None:
                raise ReplayUnsupported(f"{op_type} of two integer tensors: its integer rounding is not established")
            return {0: int_fn(a.astype(np.int64), b.astype(np.int64))}
        if a.dtype == np.bool_ and b.dtype == np.bool_:
            raise ReplayUnsupported(f"{op_type} of two boolean tensors is not replayed")
        return {0: float_fn(as_float64(a), as_float64(b))}

    return kernel


def _compare_kernel(op_type: str) -> Kernel:
    fn = _COMPARE[op_type]

    def kernel(args: OpArgs) -> dict[int, np.ndarray]:
        a, b = args.raw(0), args.raw(1)
        if is_integral(a) and is_integral(b):
            return {0: fn(a.astype(np.int64), b.astype(np.int64))}
        return {0: fn(as_float64(a), as_float64(b))}

    return kernel


def _rounding_kernel(op_type: str) -> Kernel:
    fn = _ROUNDING[op_type]

    def kernel(args: OpArgs) -> dict[int, np.ndarray]:
        x = args.raw(0)
        if is_integral(x):
            return {0: x.astype(np.int64) if x.dtype != np.bool_ else x.copy()}
        return {0: fn(as_float64(x))}

    return kernel


def _int_unary_kernel(op_type: str) -> Kernel:
    """Neg, Abs, Square, Sign: exact on integers, float64 otherwise."""
    fn = _INT_UNARY[op_type]

    def kernel(args: OpArgs) -> dict[int, np.ndarray]:
        x = args.raw(0)
        return {0: fn(x.astype(np.int64) if _all_integers(x) else as_float64(x))}

    return kernel


def select(args: OpArgs) -> dict[int, np.ndarray]:
    """Select(cond, x, y): x where cond is true, else y."""
    cond, x, y = args.raw(0), args.raw(1), args.raw(2)
    if cond.dtype != np.bool_:
        raise ReplayUnsupported(f"Select condition is {cond.dtype}, not bool")
    if is_integral(x) and is_integral(y):
        return {0: np.where(cond, x, y)}
    return {0: np.where(cond, as_float64(x), as_float64(y))}


def channel_axis(fmt: object, ndim: int, op_type: str) -> int:
    """The channel axis for a data format given as text (`"NCHW"`) or as MindSpore's Format enum.

    The enum values NCHW = 0 and NHWC = 1 are the same in every release; later values moved, so they are
    not guessed.
    """
    if isinstance(fmt, str):
        word = fmt.upper()
        if word.startswith("NC") or word in ("ND", "DEFAULTFORMAT", "DEFAULT_FORMAT"):
            return 1 if ndim > 1 else 0
        if word in ("NHWC", "NWC", "NDHWC"):
            return ndim - 1
    elif isinstance(fmt, (int, np.integer)) and not isinstance(fmt, bool):
        if int(fmt) == 0:
            return 1 if ndim > 1 else 0
        if int(fmt) == 1:
            return ndim - 1
    raise ReplayUnsupported(f"{op_type} data format {fmt!r} is not replayed")


def bias_add(args: OpArgs) -> dict[int, np.ndarray]:
    """BiasAdd(x, bias[, data_format]): bias added along the channel axis (1 for NCHW, last for NHWC)."""
    x, bias, axis = _bias_operands(args, args.float64(0))
    shape = [1] * x.ndim
    shape[axis] = bias.shape[0]
    return {0: x + bias.reshape(shape)}


def _bias_operands(args: OpArgs, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    bias = args.float64(1)
    fmt = args.option(2, ("data_format", "format"), "NCHW")
    axis = channel_axis(fmt, x.ndim, "BiasAdd")
    if bias.ndim != 1 or x.ndim == 0 or bias.shape[0] != x.shape[axis]:
        raise ReplayUnsupported(f"BiasAdd bias of shape {bias.shape} does not fit axis {axis} of {x.shape}")
    return x, bias, axis


def bias_add_at(args: OpArgs, positions: np.ndarray, dumped: int) -> np.ndarray:
    """BiasAdd at `positions` (flat, C order) only: each value x + the bias of its channel, the one addition
    the whole op makes there (a 1x32x256x256 activation's float64 copy and sum were 16 MB each)."""
    x, bias, axis = _bias_operands(args, np.asarray(args.raw(0)))
    if x.size != dumped:
        raise ValueError(f"replay gives {x.size} elements, the dump holds {dumped}")
    inner = math.prod(x.shape[axis + 1 :])  # elements per step along the channel axis
    values: np.ndarray = as_float64(x.reshape(-1)[positions]) + bias[positions // inner % bias.shape[0]]
    return values


def cast(args: OpArgs) -> dict[int, np.ndarray]:
    """Cast(x, dst_type): to a float type, the exact rounding of x to it (returned as float64 values);
    to an integer type, truncation toward zero; to bool, x != 0 (NaN is true, as in C)."""
    target = dtype_name(args.option(1, ("dst_type", "DstT", "dtype")))
    x = args.raw(0)
    if target in FLOAT_NAMES:
        return {0: round_to(x, target)}
    if target == "bool":
        return {0: np.asarray(x != 0)}
    return {0: to_integer(x, target)}


def kernels() -> dict[str, Kernel]:
    """Every kernel of this module, by op type."""
    table: dict[str, Kernel] = {name: _binary_kernel(name) for name in _BINARY}
    table.update({name: _compare_kernel(name) for name in _COMPARE})
    table.update({name: _rounding_kernel(name) for name in _ROUNDING})
    table.update({name: _int_unary_kernel(name) for name in _INT_UNARY})
    table.update({"Select": select, "BiasAdd": bias_add, "Cast": cast})
    return table


def sampled_kernels() -> dict[str, SampledKernel]:
    """The kernels that compute output.0 at given positions only, by op type."""
    return {"BiasAdd": bias_add_at}
