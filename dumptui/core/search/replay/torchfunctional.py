"""msprobe's PyTorch layers and activations: linear, matmul, conv2d, layer_norm, batch_norm (eval), embedding,
dropout (eval), softmax, log_softmax and the element-wise activations and math (relu, gelu, silu, sigmoid, tanh,
exp, log, sqrt, rsqrt, erf, neg, abs), by the API name msprobe records (`Functional.linear`, `Torch.sigmoid`,
`Tensor.relu_`: the name's second part).

Arguments as msprobe records them (formats/msprobe.py): the call's tensors are slots 0, 1, 2... in order (args,
then kwargs), its other arguments `scalar input N` by position or by keyword name. So `F.linear(x, w, b)` is
slots 0-2, `F.layer_norm(x, (32,), w, b, 1e-5)` slots 0-2 with `scalar input 1` = (32) and `scalar input 4` =
1e-05.

Autocast. Under `torch.autocast` a product (linear, matmul, conv2d...) is handed float32 tensors, which msprobe
records as they are passed, and computes in the autocast dtype: it rounds every float input to float16 or
bfloat16 inside the call and writes its output in that dtype. A replay from the recorded float32 inputs would
then call the device's own rounding an error of the op. So a product whose output is float16/bfloat16 rounds
its wider float inputs to the output's dtype first, as autocast does (its products accumulate in float32 or
wider, which float64 stands for). Ops that autocast runs in float32 (softmax, layer_norm...) get no rounding.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from dumptui.core.search.replay import activations, conv, linalg, norm
from dumptui.core.search.replay.args import Kernel, OpArgs, SampledKernel, normalise_axes
from dumptui.core.search.replay.irvalues import parse_value
from dumptui.core.search.replay.numeric import round_to
from dumptui.core.search.replay.spec import ReplayUnsupported, products_within_budget

_LOW_PRECISION = ("float16", "bfloat16")
_ABSENT = object()


def _text(args: OpArgs, position: int, name: str) -> str | None:
    """An argument's text as msprobe recorded it (by position, else by keyword), None when not recorded."""
    for key in (f"scalar input {position}", name):
        if key in args.spec.attrs:
            return args.spec.attrs[key]
    return None


def _value(args: OpArgs, position: int, name: str, default: object = _ABSENT) -> object:
    """An argument's value (a number, a bool, a tuple, None), `default` when not recorded."""
    text = _text(args, position, name)
    if text is None:
        if default is _ABSENT:
            raise ReplayUnsupported(f"{args.op_type} needs its argument {name}, and it is not recorded")
        return default
    return parse_value(text)


def _int_pair(args: OpArgs, position: int, name: str, default: int) -> tuple[int, int]:
    value = _value(args, position, name, default)
    items = value if isinstance(value, tuple) else (value,)
    if len(items) == 1:
        items = items * 2
    if len(items) != 2 or not all(isinstance(v, int) and not isinstance(v, bool) for v in items):
        raise ReplayUnsupported(f"{args.op_type} {name} = {value!r} is not one or two integers")
    return int(items[0]), int(items[1])


# ------------------------------------------------------------------------------------------------ autocast


def autocast_args(args: OpArgs) -> OpArgs:
    """`args` with each wider float input rounded to the output's dtype when that is float16/bfloat16 (what
    autocast does inside a product); `args` itself otherwise."""
    out_dtype = args.spec.out_dtypes.get(0)
    if out_dtype not in _LOW_PRECISION:
        return args
    rounded: dict[int, np.ndarray] = {}
    for slot, a in args.spec.inputs.items():
        a = np.asarray(a)
        if a.dtype.kind == "f" and a.dtype.itemsize > 2:
            rounded[slot] = round_to(a, out_dtype)
        else:
            rounded[slot] = a
    return OpArgs(replace(args.spec, inputs=rounded))


def _autocast(kernel: Kernel) -> Kernel:
    def lowered(args: OpArgs) -> dict[int, np.ndarray]:
        return kernel(autocast_args(args))

    lowered.__doc__ = kernel.__doc__
    return lowered


def _autocast_sampled(kernel: SampledKernel) -> SampledKernel:
    def lowered(args: OpArgs, positions: np.ndarray, dumped: int) -> np.ndarray | None:
        return kernel(autocast_args(args), positions, dumped)

    return lowered


# ---------------------------------------------------------------------------------------------- products


def _matmul(args: OpArgs) -> dict[int, np.ndarray]:
    """torch.matmul / mm / bmm / `a @ b`: numpy's matmul has torch.matmul's rules (1-d operands, broadcast
    batch axes)."""
    a, b = args.float64(0), args.float64(1)
    if a.ndim == 0 or b.ndim == 0:
        raise ReplayUnsupported(f"{args.op_type} of a 0-d tensor")
    try:
        shape = np.broadcast_shapes(a.shape[:-2], b.shape[:-2]) if a.ndim > 1 and b.ndim > 1 else ()
    except ValueError as e:
        raise ReplayUnsupported(f"{args.op_type} of {a.shape} and {b.shape}: {e}") from e
    rows = a.shape[-2] if a.ndim > 1 else 1
    cols = b.shape[-1] if b.ndim > 1 else 1
    out = math.prod(shape) * rows * cols
    products_within_budget(args.op_type, out, out * a.shape[-1])
    try:
        return {0: np.matmul(a, b)}
    except ValueError as e:
        raise ReplayUnsupported(f"{args.op_type} of {a.shape} and {b.shape}: {e}") from e


def _conv2d(args: OpArgs) -> dict[int, np.ndarray]:
    """F.conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1), NCHW (a 3-d input is
    one unbatched image); padding a number, a pair, 'valid' or 'same'."""
    x, w = args.float64(0), args.float64(1)
    unbatched = x.ndim == 3
    if unbatched:
        x = x[None]
    if x.ndim != 4 or w.ndim != 4:
        raise ReplayUnsupported(f"conv2d of input {x.shape} and weight {w.shape}: expected NCHW and OIHW")
    stride = _int_pair(args, 3, "stride", 1)
    dilation = _int_pair(args, 5, "dilation", 1)
    groups = _value(args, 6, "groups", 1)
    if not isinstance(groups, int) or isinstance(groups, bool) or groups < 1:
        raise ReplayUnsupported(f"conv2d groups = {groups!r}")
    padding = (_text(args, 4, "padding") or "0").strip().strip("'\"")
    kh, kw = w.shape[2], w.shape[3]
    if padding == "valid":
        pads = (0, 0, 0, 0)
    elif padding == "same":
        # PyTorch pads `same` with the extra element at the end, as same_padding computes for stride 1
        pads = conv.same_padding(x.shape[2], kh, 1, dilation[0]) + conv.same_padding(x.shape[3], kw, 1, dilation[1])
    else:
        ph, pw = _int_pair(args, 4, "padding", 0)
        pads = (ph, ph, pw, pw)
    if min(stride) < 1 or min(dilation) < 1 or min(pads) < 0:
        raise ReplayUnsupported(f"conv2d stride {stride}, dilation {dilation}, padding {pads}")
    y = conv.conv2d_nchw(x, w, stride, dilation, pads, groups)
    if args.has(2):
        bias = args.float64(2)
        if bias.shape != (w.shape[0],):
            raise ReplayUnsupported(f"conv2d bias of shape {bias.shape} for {w.shape[0]} output channels")
        y = y + bias.reshape(1, -1, 1, 1)
    return {0: y[0] if unbatched else y}


# ------------------------------------------------------------------------------------------------ pooling


def _pool_args(
    args: OpArgs, x: np.ndarray
) -> tuple[np.ndarray, tuple[int, int], tuple[int, int], tuple[int, int, int, int]]:
    """(x as NCHW, kernel, stride, pads) of max_pool2d / avg_pool2d(input, kernel_size, stride=None, padding=0,
    ...); ceil_mode is refused (its last window's rule is PyTorch's own)."""
    if x.ndim not in (3, 4):
        raise ReplayUnsupported(f"{args.op_type} of a {x.ndim}-d input: expected (N,) C, H, W")
    kernel = _int_pair(args, 1, "kernel_size", 0)
    stride = kernel if _value(args, 2, "stride", None) in (None, ()) else _int_pair(args, 2, "stride", 1)
    ph, pw = _int_pair(args, 3, "padding", 0)
    ceil_position = 5 if args.op_type.startswith("max") else 4
    if _value(args, ceil_position, "ceil_mode", False):
        raise ReplayUnsupported(f"{args.op_type} with ceil_mode is not replayed")
    if min(kernel) < 1 or min(stride) < 1 or min(ph, pw) < 0 or 2 * ph > kernel[0] or 2 * pw > kernel[1]:
        raise ReplayUnsupported(f"{args.op_type} kernel {kernel}, stride {stride}, padding {(ph, pw)}")
    return (x if x.ndim == 4 else x[None]), kernel, stride, (ph, ph, pw, pw)


def _max_pool2d(args: OpArgs) -> dict[int, np.ndarray]:
    """F.max_pool2d(input, kernel_size, stride=kernel_size, padding=0, dilation=1, ceil_mode=False): the padding
    never wins (-inf); NaN propagates. output.0 only (return_indices' indices are not replayed)."""
    x = args.float64(0)
    if _int_pair(args, 4, "dilation", 1) != (1, 1):
        raise ReplayUnsupported("max_pool2d with dilation is not replayed")
    x4, kernel, stride, pads = _pool_args(args, x)
    y = conv.pool_windows(x4, kernel, stride, pads, -np.inf, np.maximum, args.op_type)
    return {0: y if x.ndim == 4 else y[0]}


def _avg_pool2d(args: OpArgs) -> dict[int, np.ndarray]:
    """F.avg_pool2d(input, kernel_size, stride=kernel_size, padding=0, ceil_mode=False, count_include_pad=True,
    divisor_override=None): each window's sum over the kernel's size, or over its real elements when
    count_include_pad is False, or over divisor_override."""
    x = args.float64(0)
    x4, kernel, stride, pads = _pool_args(args, x)
    total = conv.pool_windows(x4, kernel, stride, pads, 0.0, np.add, args.op_type)
    divisor = _value(args, 6, "divisor_override", None)
    if divisor is not None:
        y = total / float(divisor)  # type: ignore[arg-type]
    elif _value(args, 5, "count_include_pad", True):
        y = total / (kernel[0] * kernel[1])
    else:
        ones = np.ones((1, 1, x4.shape[2], x4.shape[3]))
        y = total / conv.pool_windows(ones, kernel, stride, pads, 0.0, np.add, args.op_type)
    return {0: y if x.ndim == 4 else y[0]}


MAX_ADAPTIVE_WINDOWS = 1 << 16  # one numpy mean per output position


def _adaptive_avg_pool2d(args: OpArgs) -> dict[int, np.ndarray]:
    """F.adaptive_avg_pool2d(input, output_size): output (i, j) is the mean of rows floor(i H / oh) to
    ceil((i + 1) H / oh) and the same in width (None in output_size keeps that size)."""
    x = args.float64(0)
    if x.ndim not in (3, 4):
        raise ReplayUnsupported(f"adaptive_avg_pool2d of a {x.ndim}-d input")
    h, w = x.shape[-2], x.shape[-1]
    size = _value(args, 1, "output_size")
    items = size if isinstance(size, tuple) else (size, size)
    if len(items) != 2 or not all(v is None or (isinstance(v, int) and v >= 1) for v in items):
        raise ReplayUnsupported(f"adaptive_avg_pool2d output_size = {size!r}")
    oh, ow = (h if items[0] is None else items[0]), (w if items[1] is None else items[1])
    if oh * ow > MAX_ADAPTIVE_WINDOWS:
        raise ReplayUnsupported(f"over the replay budget: adaptive_avg_pool2d of {oh * ow:,} windows")
    out = np.empty((*x.shape[:-2], oh, ow))
    for i in range(oh):
        r0, r1 = (i * h) // oh, -((-(i + 1) * h) // oh)
        for j in range(ow):
            c0, c1 = (j * w) // ow, -((-(j + 1) * w) // ow)
            out[..., i, j] = x[..., r0:r1, c0:c1].mean(axis=(-2, -1))
    return {0: out}


# ---------------------------------------------------------------------------------------- normalisations


def _dim(args: OpArgs, x: np.ndarray) -> tuple[int, ...]:
    dim = _value(args, 1, "dim", None)
    if dim is None:
        raise ReplayUnsupported(f"{args.op_type} without dim (PyTorch's implicit choice is not replayed)")
    if not isinstance(dim, int) or isinstance(dim, bool):
        raise ReplayUnsupported(f"{args.op_type} dim = {dim!r} is not an integer")
    return normalise_axes((dim,), x.ndim, args.op_type)


def _softmax(args: OpArgs) -> dict[int, np.ndarray]:
    """F.softmax(input, dim): exp(x - max) / sum(exp(x - max)) along dim."""
    x = args.float64(0)
    return {0: norm.softmax_along(x, _dim(args, x))}


def _log_softmax(args: OpArgs) -> dict[int, np.ndarray]:
    """F.log_softmax(input, dim): x - max - log(sum(exp(x - max))) along dim."""
    x = args.float64(0)
    return {0: norm.log_softmax_along(x, _dim(args, x))}


def _layer_norm(args: OpArgs) -> dict[int, np.ndarray]:
    """F.layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5) over the last axes named by
    normalized_shape; the biased variance. The tensors after the input are the weight, then the bias (as
    nn.LayerNorm passes them; a bias without a weight cannot be told from a weight alone, and no torch layer
    makes one)."""
    x = args.float64(0)
    shape = _value(args, 1, "normalized_shape")
    shape = shape if isinstance(shape, tuple) else (shape,)
    eps = _value(args, 4, "eps", 1e-5)
    if not isinstance(eps, (int, float)) or isinstance(eps, bool):
        raise ReplayUnsupported(f"layer_norm eps = {eps!r} is not a number")
    n = len(shape)
    if n == 0 or n > x.ndim or tuple(x.shape[x.ndim - n :]) != tuple(shape):
        raise ReplayUnsupported(f"layer_norm normalized_shape {shape} does not end the input's shape {x.shape}")
    axes = tuple(range(x.ndim - n, x.ndim))
    mean = x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    y = (x - mean) / np.sqrt(var + float(eps))
    for slot in (1, 2):
        if args.has(slot):
            p = args.float64(slot)
            if p.shape != tuple(shape):
                raise ReplayUnsupported(f"layer_norm parameter of shape {p.shape}; expected {tuple(shape)}")
            y = y * p if slot == 1 else y + p
    return {0: y}


def _batch_norm(args: OpArgs) -> dict[int, np.ndarray]:
    """F.batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum, eps)
    in evaluation: (x - mean) / sqrt(var + eps) * weight + bias on axis 1. Training (batch statistics) is
    refused."""
    x = args.float64(0)
    if _value(args, 5, "training", False):
        raise ReplayUnsupported("batch_norm in training mode (batch statistics) is not replayed")
    eps = _value(args, 7, "eps", 1e-5)
    if not isinstance(eps, (int, float)) or isinstance(eps, bool) or x.ndim < 2:
        raise ReplayUnsupported(f"batch_norm of {x.shape} with eps = {eps!r}")
    c = x.shape[1]
    shape = [1] * x.ndim
    shape[1] = c
    params: list[np.ndarray | None] = []
    for slot in (1, 2, 3, 4):
        if not args.has(slot):
            params.append(None)
            continue
        p = args.float64(slot)
        if p.shape != (c,):
            raise ReplayUnsupported(f"batch_norm input.{slot} of shape {p.shape} does not fit {c} channels")
        params.append(p.reshape(shape))
    mean, var, weight, bias = params
    if mean is None or var is None:
        raise ReplayUnsupported("batch_norm without its running statistics")
    y = (x - mean) / np.sqrt(var + float(eps))
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return {0: y}


# ------------------------------------------------------------------------------------------- the others


def _embedding(args: OpArgs) -> dict[int, np.ndarray]:
    """F.embedding(input, weight, padding_idx, max_norm, ...): the weight's rows at the indices (max_norm,
    which rewrites the weight, is refused)."""
    ids, weight = args.raw(0), args.float64(1)
    if _value(args, 3, "max_norm", None) is not None:
        raise ReplayUnsupported("embedding with max_norm (it renormalises the weight in place) is not replayed")
    if ids.dtype.kind not in "iu" or weight.ndim != 2:
        raise ReplayUnsupported(f"embedding of indices {ids.dtype} {ids.shape} into a weight {weight.shape}")
    if ids.size and (ids.min() < 0 or ids.max() >= weight.shape[0]):
        raise ReplayUnsupported(f"embedding index out of range [0, {weight.shape[0]})")
    return {0: weight[ids]}


def _dropout(args: OpArgs) -> dict[int, np.ndarray]:
    """F.dropout(input, p=0.5, training=True) in evaluation (or with p = 0): the input. A random mask is
    refused."""
    training = _value(args, 2, "training", True)
    p = _value(args, 1, "p", 0.5)
    if training and p != 0:
        raise ReplayUnsupported(f"{args.op_type} in training mode (a random mask) is not replayed")
    return {0: args.float64(0)}


def _gelu(args: OpArgs) -> dict[int, np.ndarray]:
    """F.gelu(input, approximate='none'): x Φ(x) with the erf, or the tanh form when approximate='tanh'."""
    how = (_text(args, 1, "approximate") or "none").strip().strip("'\"")
    x = args.float64(0)
    if how == "tanh":
        return {0: activations.gelu_tanh(x)}
    if how != "none":
        raise ReplayUnsupported(f"gelu approximate = {how!r}")
    return {0: 0.5 * x * (1.0 + activations.erf(x / math.sqrt(2.0)))}


def _unary(fn: Callable[[np.ndarray], np.ndarray]) -> Kernel:
    def kernel(args: OpArgs) -> dict[int, np.ndarray]:
        with np.errstate(all="ignore"):
            return {0: np.asarray(fn(args.float64(0)))}

    return kernel


_UNARY: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "relu": activations.relu,
    "silu": lambda x: x * activations.sigmoid(x),
    "sigmoid": activations.sigmoid,
    "tanh": np.tanh,
    "exp": np.exp,
    "log": np.log,
    "sqrt": np.sqrt,
    "rsqrt": lambda x: 1.0 / np.sqrt(x),
    "erf": activations.erf,
    "neg": np.negative,
    "abs": np.abs,
}


def kernels() -> dict[str, Kernel]:
    """Every kernel of this module by the API name msprobe records; the element-wise ones in place too
    (`relu_`: msprobe records an in-place call's input before the call)."""
    table: dict[str, Kernel] = {name: _unary(fn) for name, fn in _UNARY.items()}
    table["gelu"] = _gelu
    table.update({f"{name}_": kernel for name, kernel in table.items()})
    table.update(
        {
            "linear": _autocast(linalg.dense),
            "matmul": _autocast(_matmul),
            "mm": _autocast(_matmul),
            "bmm": _autocast(_matmul),
            "__matmul__": _autocast(_matmul),
            "conv2d": _autocast(_conv2d),
            "max_pool2d": _max_pool2d,
            "avg_pool2d": _avg_pool2d,
            "adaptive_avg_pool2d": _adaptive_avg_pool2d,
            "softmax": _softmax,
            "log_softmax": _log_softmax,
            "layer_norm": _layer_norm,
            "batch_norm": _batch_norm,
            "embedding": _embedding,
            "dropout": _dropout,
        }
    )
    return table


def sampled_kernels() -> dict[str, SampledKernel]:
    """A big linear computed at the compared positions only, as Dense is."""
    return {"linear": _autocast_sampled(linalg.dense_at)}
