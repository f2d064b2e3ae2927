"""Element-wise math functions and activations, in float64.

GeLU is MindSpore's tanh approximation: on the real 2.10 CPU dump it matches to 4e-8 (relative), while the
erf form is off by 2e-4. FastGeLU follows MindSpore's documented formula. Integer inputs are widened to float64.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from dumptui.core.search.replay.args import Kernel, OpArgs, SampledKernel
from dumptui.core.search.replay.numeric import as_float64

Unary = Callable[[np.ndarray], np.ndarray]

_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_erf_scalar = np.frompyfunc(math.erf, 1, 1)


def erf(x: np.ndarray) -> np.ndarray:
    """The error function, element by element, via the C library's erf (scipy is not a dependency).

    Correct to the last bit or so of float64; a Python call per element, which is fine for a replay.
    """
    x = np.asarray(x, dtype=np.float64)
    return np.asarray(_erf_scalar(x), dtype=np.float64).reshape(x.shape)


def sigmoid(x: np.ndarray) -> np.ndarray:
    # exp(-x) overflows to inf for x < -709, and 1 / (1 + inf) = 0 is the right limit.
    return np.asarray(1.0 / (1.0 + np.exp(-x)))


def gelu_tanh(x: np.ndarray) -> np.ndarray:
    """0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), MindSpore's GeLU."""
    return np.asarray(0.5 * x * (1.0 + np.tanh(_SQRT_2_OVER_PI * (x + 0.044715 * x**3))))


def fast_gelu(x: np.ndarray) -> np.ndarray:
    """x / (1 + exp(-1.702 |x|)) * exp(0.851 (x - |x|)), as MindSpore documents FastGeLU.

    Written this way (rather than x * sigmoid(1.702 x), the same function) so that no exp overflows.
    """
    ax = np.abs(x)
    return np.asarray(x / (1.0 + np.exp(-1.702 * ax)) * np.exp(0.851 * (x - ax)))


def relu(x: np.ndarray) -> np.ndarray:
    return np.asarray(np.maximum(x, 0.0))  # NaN propagates


def relu6(x: np.ndarray) -> np.ndarray:
    return np.asarray(np.minimum(np.maximum(x, 0.0), 6.0))


FUNCTIONS: dict[str, Unary] = {
    "Sqrt": np.sqrt,
    "Rsqrt": lambda x: 1.0 / np.sqrt(x),
    "Reciprocal": lambda x: 1.0 / x,
    "Exp": np.exp,
    "Log": np.log,
    "ReLU": relu,
    "ReLU6": relu6,
    "Sigmoid": sigmoid,
    "Tanh": np.tanh,
    "GeLU": gelu_tanh,
    "FastGeLU": fast_gelu,
    "SiLU": lambda x: x * sigmoid(x),
    "Softplus": lambda x: np.logaddexp(0.0, x),  # log(1 + exp(x)) without overflow
    "Erf": erf,
}


def _unary_kernel(fn: Unary) -> Kernel:
    def kernel(args: OpArgs) -> dict[int, np.ndarray]:
        return {0: fn(args.float64(0))}

    return kernel


def leaky_relu(args: OpArgs) -> dict[int, np.ndarray]:
    """x where x >= 0, alpha * x elsewhere (alpha from input.1 or attribute alpha / negative_slope)."""
    x = args.float64(0)
    alpha = args.number(1, ("alpha", "negative_slope"))
    return {0: np.where(x >= 0, x, alpha * x)}


def kernels() -> dict[str, Kernel]:
    """Every kernel of this module, by op type."""
    table = {name: _unary_kernel(fn) for name, fn in FUNCTIONS.items()}
    table["LeakyReLU"] = leaky_relu
    return table


EXACT_AT = {"ReLU": relu, "ReLU6": relu6}  # no rounding of their own: a value is the same whatever its neighbours


def _unary_at(fn: Unary) -> SampledKernel:
    def kernel(args: OpArgs, positions: np.ndarray, dumped: int) -> np.ndarray:
        """The function of input.0 at `positions` only (the whole input's float64 copy and result were
        16 MB each for a 1x32x256x256 activation compared at 4,096 positions)."""
        x = np.asarray(args.raw(0))
        if x.size != dumped:
            raise ValueError(f"replay gives {x.size} elements, the dump holds {dumped}")
        return fn(as_float64(x.reshape(-1)[positions]))

    return kernel


def sampled_kernels() -> dict[str, SampledKernel]:
    """The kernels that compute output.0 at given positions only, by op type: the exact ones (ReLU's maximum
    is the same number at a position computed alone; an exp or a tanh may not be, numpy's vector and scalar
    paths round differently)."""
    return {name: _unary_at(fn) for name, fn in EXACT_AT.items()}
