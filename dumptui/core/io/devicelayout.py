"""Ascend device tensor layouts back to the framework's shape, padding cut away (docs/formats.md#device-layouts).

A device dumps a tensor in the layout its kernel used: NC1HWC0 splits channels into blocks of C0, FRACTAL_Z
and FRACTAL_NZ tile weights and matrices into 16 x C0 fractals, NHWC/HWCN/CHWN are plain transposes. To
compare it with the same tensor from another device it must be put back into the framework's shape (the
`original_shape` of a raw dump, the graph's shape for a MindSpore dump with trans_flag false) with the padding
of the last block cut away; otherwise shapes differ and the padding skews every statistic.

`plan()` checks the device shape against the original shape without reading data and returns a
`DeviceLayout` (frozen, picklable: worker processes get it with the tensor's Layout); its `to_original`
moves the values. C0 and the fractal sizes are read from the device shape, never assumed from the dtype.
Anything that does not fit is a `LayoutError` naming both shapes: a wrong guess would be worse than no data.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dumptui.core.io import limits
from dumptui.core.io.safeio import open_regular

# Formats whose bytes are already in the framework's order.
PLAIN_FORMATS = {"", "ND", "DefaultFormat", "DEFAULT", "NC", "NCL", "CN", "MD", "NCHW", "NCDHW"}
UNSHAPED_FORMATS = {"", "ND", "DefaultFormat", "DEFAULT"}
# Plain transposes: the axis letters, and the framework layout they are undone to when none is known.
TRANSPOSES = {"NHWC": "NCHW", "HWCN": "NCHW", "CHWN": "NCHW", "NDHWC": "NCDHW", "DHWCN": "NCDHW"}
BLOCK_FORMATS = ("NC1HWC0", "NC1HWC0_C04", "NDC1HWC0", "FRACTAL_Z", "FRACTAL_NZ")
CONVERTED_FORMATS = tuple(BLOCK_FORMATS) + tuple(TRANSPOSES)


class LayoutError(ValueError):
    """A device shape that is not the stated layout of the original shape."""


@dataclass(frozen=True)
class DeviceLayout:
    """How to turn a tensor stored as `device_format`/`device_shape` into `original_shape`.

    `original_format` is the framework layout the values are put back into (NCHW or NHWC for NC1HWC0, ...).
    """

    device_format: str
    device_shape: tuple[int, ...]
    original_shape: tuple[int, ...]
    original_format: str

    def describe(self) -> str:
        return (
            f"{self.device_format}{list(self.device_shape)} -> {self.original_format or 'ND'}"
            f"{list(self.original_shape)}"
        )

    def to_original(self, device: np.ndarray) -> np.ndarray:
        """The values in the original shape (a new C-ordered array)."""
        arr = np.asarray(device).reshape(self.device_shape)
        fmt, orig = self.device_format, self.original_shape
        if fmt in ("NC1HWC0", "NC1HWC0_C04"):
            out = _from_nc1hwc0(arr, _as_4d(orig, self.original_format), self.original_format)
        elif fmt == "NDC1HWC0":
            out = _from_ndc1hwc0(arr, orig, self.original_format)
        elif fmt == "FRACTAL_Z":
            out = _from_fractal_z(arr, _as_4d(orig, self.original_format), self.original_format)
        elif fmt == "FRACTAL_NZ":
            out = _from_fractal_nz(arr, orig)
        elif fmt in TRANSPOSES:
            out = arr.transpose([fmt.index(axis) for axis in self.original_format])
        else:
            out = arr
        return np.ascontiguousarray(out).reshape(orig)


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def _as_4d(orig: tuple[int, ...], original_format: str) -> tuple[int, ...]:
    """An original shape of rank < 4 as the 4-D shape the device padded it to: (C,) -> (1, C, 1, 1),
    (N, C) -> (N, C, 1, 1), (C, H, W) -> (1, C, H, W) for NCHW; the NHWC analogues keep C last."""
    if len(orig) >= 4:
        return orig
    if original_format == "NHWC":
        return {0: (1, 1, 1, 1), 1: (1, 1, 1) + orig, 2: (orig[0], 1, 1, orig[1]), 3: (1,) + orig}[len(orig)]
    return {0: (1, 1, 1, 1), 1: (1,) + orig + (1, 1), 2: orig + (1, 1), 3: (1,) + orig}[len(orig)]
    # (only NCHW and NHWC are tried for an original shape of rank < 4: see _candidate_formats)


def _nchw(shape: tuple[int, ...], original_format: str) -> tuple[int, int, int, int]:
    """(N, C, H, W) of a 4-D shape in `original_format` (NCHW, NHWC or HWCN)."""
    n, c, h, w = (shape[original_format.index(axis)] for axis in "NCHW")
    return n, c, h, w


def _in_format(canonical: np.ndarray, letters: str, original_format: str) -> np.ndarray:
    """An array whose axes are `letters` (NCHW or NCDHW) transposed to `original_format`."""
    moved: np.ndarray = canonical.transpose([letters.index(axis) for axis in original_format])
    return moved


def _from_nc1hwc0(arr: np.ndarray, orig4: tuple[int, ...], original_format: str) -> np.ndarray:
    """(N, C1, H, W, C0): channel c of (n, h, w) lives at [n, c // C0, h, w, c % C0]."""
    n, c, h, w = _nchw(orig4, original_format)
    c1, c0 = arr.shape[1], arr.shape[4]
    return _in_format(arr.transpose(0, 1, 4, 2, 3).reshape(n, c1 * c0, h, w)[:, :c], "NCHW", original_format)


def _from_ndc1hwc0(arr: np.ndarray, orig: tuple[int, ...], original_format: str) -> np.ndarray:
    """(N, D, C1, H, W, C0): channel c of (n, d, h, w) lives at [n, d, c // C0, h, w, c % C0]."""
    n, d, c1, h, w, c0 = arr.shape
    c = orig[original_format.index("C")]
    return _in_format(arr.transpose(0, 2, 5, 1, 3, 4).reshape(n, c1 * c0, d, h, w)[:, :c], "NCDHW", original_format)


def _from_fractal_z(arr: np.ndarray, orig4: tuple[int, ...], original_format: str) -> np.ndarray:
    """(C1*H*W, N1, N0, C0): element (n, c, h, w) lives at [(c // C0)*H*W + h*W + w, n // N0, n % N0, c % C0]."""
    n, c, h, w = _nchw(orig4, original_format)
    _, n1, n0, c0 = arr.shape
    c1 = _ceil(c, c0)
    nchw = arr.reshape(c1, h, w, n1, n0, c0).transpose(3, 4, 0, 5, 1, 2).reshape(n1 * n0, c1 * c0, h, w)[:n, :c]
    return _in_format(nchw, "NCHW", original_format)


def _from_fractal_nz(arr: np.ndarray, orig: tuple[int, ...]) -> np.ndarray:
    """(..., N1, M1, M0, N0): element (..., m, n) lives at [..., n // N0, m // M0, m % M0, n % N0]."""
    *batch, n1, m1, m0, n0 = arr.shape
    m, n = (1, orig[0]) if len(orig) == 1 else orig[-2:]
    out = arr.transpose(*range(len(batch)), len(batch) + 1, len(batch) + 2, len(batch), len(batch) + 3)
    matrix: np.ndarray = out.reshape(*batch, m1 * m0, n1 * n0)[..., :m, :n]
    return matrix


# ------------------------------------------------------------------------------------------ planning
def _expected_device_shape(
    fmt: str, orig: tuple[int, ...], original_format: str, device: tuple[int, ...]
) -> tuple[int, ...] | None:
    """The device shape `orig` (in `original_format`) takes in `fmt`, with C0/N0/M0 read from `device`."""
    if fmt in ("NC1HWC0", "NC1HWC0_C04") and len(device) == 5 and len(orig) <= 4:
        n, c, h, w = _nchw(_as_4d(orig, original_format), original_format)
        return (n, _ceil(c, device[4]), h, w, device[4])
    if fmt == "NDC1HWC0" and len(device) == 6 and len(orig) == 5:
        n, c, d, h, w = (orig[original_format.index(axis)] for axis in "NCDHW")
        return (n, d, _ceil(c, device[5]), h, w, device[5])
    if fmt == "FRACTAL_Z" and len(device) == 4 and len(orig) <= 4:
        n, c, h, w = _nchw(_as_4d(orig, original_format), original_format)
        return (_ceil(c, device[3]) * h * w, _ceil(n, device[2]), device[2], device[3])
    if fmt == "FRACTAL_NZ" and len(device) >= 4 and len(orig) >= 1:
        m, n = (1, orig[0]) if len(orig) == 1 else orig[-2:]
        m0, n0 = device[-2], device[-1]
        return tuple(orig[:-2]) + (_ceil(n, n0), _ceil(m, m0), m0, n0)
    if fmt in TRANSPOSES and len(orig) == len(fmt):
        return tuple(orig[original_format.index(axis)] for axis in fmt)
    return None


def _without_ones(shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(d for d in shape if d != 1)


def _candidate_formats(fmt: str, rank: int, known: str | None) -> list[str]:
    """The framework layouts to try for the original shape: the known one alone when it is one of them, else
    all of them, MindSpore's NCHW first (a shape that fits both ways, H = W = C, is read as NCHW)."""
    if fmt == "NDC1HWC0":
        candidates = ["NCDHW", "NDHWC"]
    elif fmt in TRANSPOSES:
        candidates = [TRANSPOSES[fmt], fmt]
    elif fmt in ("NC1HWC0", "NC1HWC0_C04"):
        candidates = ["NCHW", "NHWC"]
    elif fmt == "FRACTAL_Z":
        candidates = ["NCHW", "HWCN", "NHWC"] if rank == 4 else ["NCHW"]
    else:
        candidates = ["ND"]
    return [known] if known in candidates else candidates


def plan(
    device_format: str,
    device_shape: tuple[int, ...],
    original_shape: tuple[int, ...] | None,
    original_format: str | None = None,
) -> DeviceLayout | None:
    """The conversion of a tensor stored as `device_format`/`device_shape` to `original_shape`; None when the
    bytes are already in the original order and shape. LayoutError when the shapes do not fit the format
    (or no original shape is known for a device layout), or the format has no conversion here."""
    fmt = device_format
    try:  # both shapes come from files (a header, a graph): checked before any arithmetic on them
        device_shape = limits.shape(device_shape, "device shape")
        orig = None if original_shape is None else limits.shape(original_shape, "original shape")
    except limits.BadValue as e:
        raise LayoutError(str(e)) from None
    if fmt in PLAIN_FORMATS:
        if orig is None or orig == device_shape:
            return None
        # ND holds the values in row-major order whatever the grouping of its dims; a named layout (NCHW...)
        # may only add or drop unit dims, or we would be guessing which axes are which
        same_values = (
            math.prod(orig) == math.prod(device_shape)
            if fmt in UNSHAPED_FORMATS
            else _without_ones(orig) == _without_ones(device_shape)
        )
        if same_values:
            return DeviceLayout(fmt, device_shape, orig, "ND")
        raise LayoutError(f"{fmt} shape {list(device_shape)} does not hold the original shape {list(orig)}")
    if fmt not in CONVERTED_FORMATS:
        raise LayoutError(f"device layout {fmt} has no conversion here: not compared")
    if orig is None:
        raise LayoutError(
            f"device layout {fmt}{list(device_shape)} and no original shape known: cannot cut the padding"
        )
    for candidate in _candidate_formats(fmt, len(orig), original_format):
        if _expected_device_shape(fmt, orig, candidate, device_shape) == device_shape:
            if fmt in TRANSPOSES and candidate == fmt:
                return None
            return DeviceLayout(fmt, device_shape, orig, candidate)
    tried = " or ".join(_candidate_formats(fmt, len(orig), original_format))
    raise LayoutError(f"device shape {list(device_shape)} is not {fmt} of the original shape {list(orig)} ({tried})")


@dataclass(frozen=True)
class DevicePayload:
    """The PayloadDecoder (npy.py) of a tensor stored in a device layout at an offset of its file."""

    layout: DeviceLayout

    def decode(self, path: str, storage: np.dtype, offset: int) -> np.ndarray:
        count = math.prod(self.layout.device_shape)
        with open_regular(path) as fh:
            fh.seek(offset)
            stored = np.fromfile(fh, dtype=storage, count=count)
        if stored.size != count:
            raise ValueError(f"short read: {stored.size} of {count} values of {self.layout.describe()}")
        return self.layout.to_original(stored)
