"""Dtype names as dump files spell them, mapped to one canonical spelling and to numpy storage.

Dumps spell dtypes in many ways (`Float32`, `float16`, `BFloat16`, `<f2`, CANN enum numbers). Everything in
dumptui uses the canonical lower-case names below. bfloat16 has no numpy dtype: MindSpore npy dumps store it
widened to float32, raw dumps store its 16 bits, which we widen ourselves.
"""

from __future__ import annotations

import sys
import warnings
from functools import lru_cache

import numpy as np

# canonical name -> numpy dtype used to hold the values (None: not decodable)
_STORAGE: dict[str, np.dtype | None] = {
    "bool": np.dtype(np.bool_),
    "int4": np.dtype(np.int8),  # stored widened by MindSpore npy dumps
    "int8": np.dtype(np.int8),
    "int16": np.dtype(np.int16),
    "int32": np.dtype(np.int32),
    "int64": np.dtype(np.int64),
    "uint1": np.dtype(np.uint8),
    "uint8": np.dtype(np.uint8),
    "uint16": np.dtype(np.uint16),
    "uint32": np.dtype(np.uint32),
    "uint64": np.dtype(np.uint64),
    "float16": np.dtype(np.float16),
    "bfloat16": np.dtype(np.uint16),  # raw bits; widened on read
    "float32": np.dtype(np.float32),
    "float64": np.dtype(np.float64),
    "complex64": np.dtype(np.complex64),
    "complex128": np.dtype(np.complex128),
}

_ALIASES = {
    "float": "float32",
    "double": "float64",
    "half": "float16",
    "bf16": "bfloat16",
    "fp16": "float16",
    "fp32": "float32",
    "fp64": "float64",
    "float8": None,
    "bfloat": "bfloat16",
    "boolean": "bool",
}

FLOAT_DTYPES = ("float16", "bfloat16", "float32", "float64")


def canonical(label: object) -> str | None:
    """`Float32`, `float32`, `<f4`, `torch.float32`, `BFloat16` -> canonical name; unknown (or not a string:
    labels come from files) -> None."""
    return _canonical(label) if isinstance(label, str) and len(label) <= 64 else None


@lru_cache(maxsize=512)
def _canonical(label: str) -> str | None:
    if not label:
        return None
    s = label.strip()
    if s.startswith("torch."):
        s = s[6:]
    low = s.lower().replace("_", "")
    if low in _STORAGE:
        return sys.intern(low)  # one object per dtype name, however many tensors carry it
    if low in _ALIASES:
        return _ALIASES[low]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", DeprecationWarning)  # numpy's deprecated aliases ("a") are no dtype
            dt = np.dtype(s)
    except (TypeError, ValueError, SyntaxError, DeprecationWarning):
        return None
    return from_numpy(dt)


_NAMES: dict[np.dtype, str | None] = {}  # a numpy dtype's name, asked for once per tensor: 2 us each made anew


def from_numpy(dt: np.dtype) -> str | None:
    dt = np.dtype(dt)
    known = _NAMES.get(dt, _NAMES)
    if known is not _NAMES:
        return known  # type: ignore[return-value]  # not the sentinel: a name or None
    name: str | None = "bool" if dt.kind == "b" else dt.name if dt.name in _STORAGE else None
    if len(_NAMES) < 1024:  # structured dtypes are many: only the common ones are kept
        _NAMES[dt] = name
    return name


def storage(name: str) -> np.dtype | None:
    return _STORAGE.get(name)


def is_float(name: str | None) -> bool:
    return name in FLOAT_DTYPES


def is_complex(name: str | None) -> bool:
    return name is not None and name.startswith("complex")


def itemsize(name: str) -> int | None:
    if name == "bfloat16":
        return 2
    dt = _STORAGE.get(name)
    return None if dt is None else dt.itemsize


def bf16_bits_to_float32(bits: np.ndarray) -> np.ndarray:
    """Widen raw bfloat16 bit patterns (uint16) to float32 exactly."""
    return (bits.astype(np.uint32) << 16).view(np.float32)


_FLOAT_BY_ITEMSIZE: dict[int, np.dtype] = {2: np.dtype(np.float16), 4: np.dtype(np.float32), 8: np.dtype(np.float64)}


# Unit roundoff of the low-precision formats a deliberate conversion would round to (half an ulp, relative).
UNIT_ROUNDOFF = {"float16": 2.0**-11, "bfloat16": 2.0**-8}
# Smallest positive subnormal of each format: an absolute floor for rounding near zero.
SMALLEST_SUBNORMAL = {"float16": 2.0**-24, "bfloat16": 2.0**-133}
