"""Normalisations: BatchNorm (inference), LayerNorm, Softmax, LogSoftmax, L2Normalize, in float64."""

from __future__ import annotations

import numpy as np

from dumptui.core.search.replay.args import Kernel, OpArgs, normalise_axes
from dumptui.core.search.replay.elementwise import channel_axis
from dumptui.core.search.replay.spec import ReplayUnsupported


def batch_norm(args: OpArgs) -> dict[int, np.ndarray]:
    """BatchNorm in inference: y = (x - mean) / sqrt(variance + epsilon) * scale + offset, on the channel axis.

    Inputs: x, scale, offset, mean, variance, then (2.x) the 0-d is_training, epsilon, momentum, data_format;
    older graphs carry those as attributes. Only output.0 is replayed. In inference outputs 1-4 are not
    results: MindSpore's CPU kernel leaves them as whatever the memory held (zeros in a fresh process,
    garbage once memory is reused), so they are left out of the replay. Training mode is refused.
    """
    x = args.float64(0)
    if args.flag(5, ("is_training",), False):
        raise ReplayUnsupported("BatchNorm in training mode (batch statistics) is not replayed")
    eps = args.number(6, ("epsilon",), 1e-5)
    fmt = args.option(8, ("data_format", "format"), "NCHW")
    axis = channel_axis(fmt, x.ndim, "BatchNorm")
    scale, offset, mean, var = (args.float64(s) for s in (1, 2, 3, 4))
    c = x.shape[axis] if x.ndim else 0
    for name, v in (("scale", scale), ("offset", offset), ("mean", mean), ("variance", var)):
        if v.shape != (c,):
            raise ReplayUnsupported(f"BatchNorm {name} of shape {v.shape} does not fit {c} channels")
    shape = [1] * x.ndim
    shape[axis] = c
    scale, offset, mean, var = (v.reshape(shape) for v in (scale, offset, mean, var))
    return {0: (x - mean) / np.sqrt(var + eps) * scale + offset}


def layer_norm(args: OpArgs) -> dict[int, np.ndarray]:
    """LayerNorm(x, gamma, beta): normalised over the axes from begin_norm_axis on.

    Settings are 0-d inputs 3-5 (begin_norm_axis, begin_params_axis, epsilon) in 2.x, attributes otherwise.
    Outputs: 0 = (x - mean) / sqrt(var + eps) * gamma + beta; 1 = mean; 2 = the biased variance, without
    epsilon. Output 2 is the variance and not rstd on MindSpore 2.10's CPU kernel: checked on the real dump
    (variance matches to 3e-8, 1/sqrt(var + eps) is off by 46-82 %). Outputs 1 and 2 keep the normalised
    axes with size 1.
    """
    x = args.float64(0)
    gamma, beta = args.float64(1), args.float64(2)
    begin_norm = args.integer(3, ("begin_norm_axis",), -1)
    begin_params = args.integer(4, ("begin_params_axis",), -1)
    eps = args.number(5, ("epsilon",), 1e-7)
    if x.ndim == 0:
        raise ReplayUnsupported("LayerNorm of a 0-d tensor")
    (norm_from,) = normalise_axes((begin_norm,), x.ndim, "LayerNorm begin_norm_axis")
    (params_from,) = normalise_axes((begin_params,), x.ndim, "LayerNorm begin_params_axis")
    axes = tuple(range(norm_from, x.ndim))
    param_shape = x.shape[params_from:]
    for name, p in (("gamma", gamma), ("beta", beta)):
        if p.shape != param_shape:
            raise ReplayUnsupported(f"LayerNorm {name} of shape {p.shape}; expected {param_shape}")
    mean = x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    y = (x - mean) / np.sqrt(var + eps) * gamma + beta
    return {0: y, 1: mean, 2: var}


def softmax_along(x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    """exp(x - max) / sum(exp(x - max)) over `axes` (the max taken out: no overflow); empty stays empty."""
    if x.size == 0:
        return np.array(x)
    e = np.exp(x - np.max(x, axis=axes, keepdims=True))
    return np.asarray(e / np.sum(e, axis=axes, keepdims=True))


def log_softmax_along(x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    """x - max - log(sum(exp(x - max))) over `axes`; empty stays empty."""
    if x.size == 0:
        return np.array(x)
    shifted = x - np.max(x, axis=axes, keepdims=True)
    return np.asarray(shifted - np.log(np.sum(np.exp(shifted), axis=axes, keepdims=True)))


def _softmax_axes(args: OpArgs, x: np.ndarray) -> tuple[int, ...]:
    axes = args.ints(1, ("axis",), (-1,))
    return normalise_axes(axes, x.ndim, args.op_type)


def softmax(args: OpArgs) -> dict[int, np.ndarray]:
    """exp(x - max) / sum(exp(x - max)) over the axes of input.1 or attribute axis (default the last)."""
    x = args.float64(0)
    return {0: softmax_along(x, _softmax_axes(args, x))}


def log_softmax(args: OpArgs) -> dict[int, np.ndarray]:
    """x - max - log(sum(exp(x - max))) over the axis of input.1 or attribute axis (default the last)."""
    x = args.float64(0)
    return {0: log_softmax_along(x, _softmax_axes(args, x))}


def l2_normalize(args: OpArgs) -> dict[int, np.ndarray]:
    """x / sqrt(max(sum(x^2 over axis), epsilon)), as MindSpore documents it (axis 0, epsilon 1e-4 by default)."""
    x = args.float64(0)
    axes = normalise_axes(args.ints(1, ("axis",), (0,)), x.ndim, "L2Normalize")
    eps = args.number(2, ("epsilon",), 1e-4)
    squares = np.sum(x * x, axis=axes, keepdims=True)
    return {0: x / np.sqrt(np.maximum(squares, eps))}


def kernels() -> dict[str, Kernel]:
    """Every kernel of this module, by op type."""
    return {
        "BatchNorm": batch_norm,
        "LayerNorm": layer_norm,
        "Softmax": softmax,
        "LogSoftmax": log_softmax,
        "L2Normalize": l2_normalize,
    }
