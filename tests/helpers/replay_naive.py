"""Independent references for the replay tests: textbook formulas as plain Python loops over indices.

Nothing here uses the replay package, numpy broadcasting tricks or vectorised numpy reductions, so that a
replay and its reference cannot share a bug.
"""

from __future__ import annotations

import itertools
import math

import numpy as np


def conv2d(
    x: np.ndarray,
    w: np.ndarray,
    stride: tuple[int, int],
    dilation: tuple[int, int],
    pads: tuple[int, int, int, int],
    groups: int,
) -> np.ndarray:
    """out[n, o, i, j] = sum over c, p, q of x[n, g*cg + c, i*sh + p*dh - top, j*sw + q*dw - left] * w[o, c, p, q]."""
    n_, c_, h_, w_ = x.shape
    o_, cg, kh, kw = w.shape
    top, bottom, left, right = pads
    ho = (h_ + top + bottom - dilation[0] * (kh - 1) - 1) // stride[0] + 1
    wo = (w_ + left + right - dilation[1] * (kw - 1) - 1) // stride[1] + 1
    og = o_ // groups
    out = np.zeros((n_, o_, ho, wo))
    for n, o, i, j in itertools.product(range(n_), range(o_), range(ho), range(wo)):
        g = o // og
        total = 0.0
        for c, p, q in itertools.product(range(cg), range(kh), range(kw)):
            r = i * stride[0] + p * dilation[0] - top
            s = j * stride[1] + q * dilation[1] - left
            if 0 <= r < h_ and 0 <= s < w_:
                total += float(x[n, g * cg + c, r, s]) * float(w[o, c, p, q])
        out[n, o, i, j] = total
    return out


def pool2d(
    x: np.ndarray, kernel: tuple[int, int], stride: tuple[int, int], pads: tuple[int, int, int, int], how: str
) -> np.ndarray:
    """Max, or average over the window's real (unpadded) elements."""
    n_, c_, h_, w_ = x.shape
    top, bottom, left, right = pads
    ho = (h_ + top + bottom - kernel[0]) // stride[0] + 1
    wo = (w_ + left + right - kernel[1]) // stride[1] + 1
    out = np.zeros((n_, c_, ho, wo))
    for n, c, i, j in itertools.product(range(n_), range(c_), range(ho), range(wo)):
        values = []
        for p, q in itertools.product(range(kernel[0]), range(kernel[1])):
            r, s = i * stride[0] + p - top, j * stride[1] + q - left
            if 0 <= r < h_ and 0 <= s < w_:
                values.append(float(x[n, c, r, s]))
        out[n, c, i, j] = max(values) if how == "max" else sum(values) / len(values)
    return out


def matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    m, k = a.shape
    k2, n = b.shape
    assert k == k2
    out = np.zeros((m, n))
    for i, j in itertools.product(range(m), range(n)):
        out[i, j] = sum(float(a[i, t]) * float(b[t, j]) for t in range(k))
    return out


def batch_norm_nchw(
    x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, mean: np.ndarray, var: np.ndarray, eps: float
) -> np.ndarray:
    out = np.zeros(x.shape)
    for idx in itertools.product(*map(range, x.shape)):
        c = idx[1]
        out[idx] = (float(x[idx]) - float(mean[c])) / math.sqrt(float(var[c]) + eps) * float(gamma[c]) + float(beta[c])
    return out


def layer_norm(
    x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, begin_norm: int, begin_params: int, eps: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Normalised x, mean and (biased) variance over the axes from begin_norm on."""
    lead, rest = x.shape[:begin_norm], x.shape[begin_norm:]
    out = np.zeros(x.shape)
    means = np.zeros(lead + (1,) * len(rest))
    variances = np.zeros(lead + (1,) * len(rest))
    for li in itertools.product(*map(range, lead)):
        group = [float(x[li + ri]) for ri in itertools.product(*map(range, rest))]
        mu = sum(group) / len(group)
        var = sum((v - mu) ** 2 for v in group) / len(group)
        means[li + (0,) * len(rest)] = mu
        variances[li + (0,) * len(rest)] = var
        for ri in itertools.product(*map(range, rest)):
            full = li + ri
            pi = full[begin_params:]
            out[full] = (float(x[full]) - mu) / math.sqrt(var + eps) * float(gamma[pi]) + float(beta[pi])
    return out, means, variances


def _lines(shape: tuple[int, ...], axis: int) -> list[list[tuple[int, ...]]]:
    """Index lists of every 1-D line along `axis`."""
    others = [range(n) if d != axis else range(1) for d, n in enumerate(shape)]
    lines = []
    for base in itertools.product(*others):
        lines.append([base[:axis] + (k,) + base[axis + 1 :] for k in range(shape[axis])])
    return lines


def softmax(x: np.ndarray, axis: int, log: bool = False) -> np.ndarray:
    out = np.zeros(x.shape)
    for line in _lines(x.shape, axis % x.ndim):
        values = [float(x[i]) for i in line]
        top = max(values)
        total = sum(math.exp(v - top) for v in values)
        for i, v in zip(line, values):
            out[i] = (v - top - math.log(total)) if log else math.exp(v - top) / total
    return out


def reduce(x: np.ndarray, axes: tuple[int, ...], keep: bool, how: str) -> np.ndarray:
    """Sum / mean / max / min / prod over `axes`, looping over every element."""
    axes = tuple(a % x.ndim for a in axes)
    out_shape = tuple(1 if d in axes else n for d, n in enumerate(x.shape))
    groups: dict[tuple[int, ...], list[float]] = {}
    for idx in itertools.product(*map(range, x.shape)):
        key = tuple(0 if d in axes else i for d, i in enumerate(idx))
        groups.setdefault(key, []).append(float(x[idx]))
    out = np.zeros(out_shape)
    for key, values in groups.items():
        if how == "sum":
            out[key] = sum(values)
        elif how == "mean":
            out[key] = sum(values) / len(values)
        elif how == "max":
            out[key] = max(values)
        elif how == "min":
            out[key] = min(values)
        else:
            out[key] = math.prod(values)
    if not keep:
        out = out.reshape(tuple(n for d, n in enumerate(x.shape) if d not in axes))
    return out
