"""Reading `.npy` headers without numpy's pickling paths, and checking them against the payload size.

A real MindSpore bug writes an npy header that declares float16 while the payload holds the full float32
buffer (payload twice the declared size); `np.load` then silently returns garbage. We detect it from the
sizes and, when the payload size implies another float width, offer the payload read with that width,
clearly marked as repaired.
"""

from __future__ import annotations

import ast
import math
import os
import re
import struct
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from . import dtypes

MAGIC = b"\x93NUMPY"


class PayloadDecoder(Protocol):
    """Reads a payload that is not the plain C-order array at `offset`: a device layout (NC1HWC0, ...) to put
    back into the original shape, or bytes inside a protobuf. Returns the values in the Layout's shape."""

    def decode(self, path: str, storage: np.dtype, offset: int) -> np.ndarray: ...


_STANDARD_HEADER = re.compile(
    r"^\{'descr': '([<>|=][a-zA-Z]\d*)', 'fortran_order': (True|False), "
    r"'shape': \(([\d, ]*)\), \}\s*$"
)


@dataclass(frozen=True)
class Layout:
    """Where a tensor's bytes are and how to read them. `problem` set means: do not read."""

    storage: np.dtype | None  # numpy dtype of the bytes on disk
    shape: tuple[int, ...] | None
    offset: int  # byte offset of the payload
    fortran: bool = False
    problem: str | None = None  # why the tensor cannot be read
    repaired: str | None = None  # why the payload is read differently from what the header says
    declared: str | None = None  # what the header declared, e.g. "float16[1, 8, 32, 32]"
    widen_bf16: bool = False  # storage holds raw bfloat16 bits
    decoder: PayloadDecoder | None = None  # set when the bytes are not the plain array (frozen, picklable)

    @property
    def size(self) -> int:
        return 0 if self.shape is None else math.prod(self.shape)  # exact ints; np.prod costs 10x per call


class NpyHeaderError(ValueError):
    pass


def read_header(path: str) -> tuple[np.dtype, tuple[int, ...], bool, int]:
    """(dtype, shape, fortran_order, payload offset) from an .npy file; raises NpyHeaderError."""
    with open(path, "rb") as fh:
        head = fh.read(10)
        if len(head) < 10 or not head.startswith(MAGIC):
            raise NpyHeaderError("not an npy file (bad magic)")
        major = head[6]
        if major == 1:
            hlen = struct.unpack("<H", head[8:10])[0]
            start = 10
        elif major in (2, 3):
            head += fh.read(2)
            hlen = struct.unpack("<I", head[8:12])[0]
            start = 12
        else:
            raise NpyHeaderError(f"unsupported npy version {major}")
        text = fh.read(hlen)
    if len(text) < hlen:
        raise NpyHeaderError("truncated npy header")
    header = text.decode("latin1")
    m = _STANDARD_HEADER.match(header)
    if m:  # what numpy writes; literal_eval is ten times slower and a dump has thousands of files
        descr, fortran = m.group(1), m.group(2) == "True"
        shape = tuple(int(s) for s in m.group(3).split(",") if s.strip())
    else:
        try:
            d = ast.literal_eval(header)
            descr, fortran, shape = d["descr"], bool(d["fortran_order"]), tuple(int(s) for s in d["shape"])
        except (ValueError, SyntaxError, KeyError, TypeError) as e:
            raise NpyHeaderError(f"unreadable npy header ({e.__class__.__name__})") from None
    if not isinstance(descr, str):
        raise NpyHeaderError("structured npy arrays are not tensors")
    try:
        dt = np.dtype(descr)
    except TypeError:
        raise NpyHeaderError(f"unknown npy dtype {descr!r}") from None
    if dt.hasobject:
        raise NpyHeaderError("object arrays are refused (they need pickle)")
    return dt, shape, fortran, start + hlen


def npy_layout(path: str, size_on_disk: int | None = None) -> Layout:
    """Layout of an .npy file, with the header/payload size check."""
    try:
        dt, shape, fortran, offset = read_header(path)
        if size_on_disk is None:
            size_on_disk = os.path.getsize(path)
    except (OSError, NpyHeaderError) as e:
        return Layout(None, None, 0, problem=_reason(e))
    declared = f"{dtypes.from_numpy(dt) or dt.str}{list(shape)}"
    n = int(np.prod(shape, dtype=np.int64))
    payload = size_on_disk - offset
    expected = n * dt.itemsize
    if payload == expected:
        return Layout(dt, shape, offset, fortran, declared=declared)
    if n > 0 and payload > 0 and payload % n == 0 and dt.kind == "f":
        implied = dtypes.float_for_itemsize(payload // n)
        if implied is not None and implied != dt:
            why = (
                f"header declares {declared} ({expected} B) but the payload is {payload} B: "
                f"read as {implied.name}, the dtype its size implies"
            )
            return Layout(
                implied.newbyteorder(dt.byteorder) if dt.byteorder in "<>" else implied,
                shape,
                offset,
                fortran,
                repaired=why,
                declared=declared,
            )
    if payload < expected:
        return Layout(
            None,
            shape,
            offset,
            fortran,
            declared=declared,
            problem=f"truncated: header declares {declared} = {expected} B, payload is {payload} B",
        )
    return Layout(
        None,
        shape,
        offset,
        fortran,
        declared=declared,
        problem=f"payload {payload} B does not match header {declared} = {expected} B",
    )


def _reason(e: Exception) -> str:
    if isinstance(e, PermissionError):
        return "permission denied"
    if isinstance(e, FileNotFoundError):
        return "file not found"
    if isinstance(e, IsADirectoryError):
        return "is a directory"
    return str(e) or e.__class__.__name__


def _readable_storage(layout: Layout) -> np.dtype:
    """The storage dtype of a layout that can be read; ValueError saying why not otherwise."""
    if layout.problem:
        raise ValueError(layout.problem)
    if layout.storage is None:
        raise ValueError("no storage dtype")
    return layout.storage


def open_array(path: str, layout: Layout) -> np.ndarray:
    """A read-only view of the payload (memory-mapped when non-empty). Raises OSError/ValueError."""
    storage = _readable_storage(layout)
    if layout.decoder is not None:
        return layout.decoder.decode(path, storage, layout.offset)
    shape = layout.shape or ()
    if layout.size == 0:
        return np.zeros(shape, dtype=storage)
    return np.memmap(
        path, dtype=storage, mode="r", offset=layout.offset, shape=shape, order="F" if layout.fortran else "C"
    )


def read_small(path: str, layout: Layout) -> np.ndarray:
    """The payload read into memory as a flat array (for small tensors)."""
    storage = _readable_storage(layout)
    if layout.decoder is not None:
        return layout.decoder.decode(path, storage, layout.offset).reshape(-1)
    n = layout.size
    with open(path, "rb") as fh:
        fh.seek(layout.offset)
        arr = np.fromfile(fh, dtype=storage, count=n)
    if arr.size != n:
        raise ValueError(f"short read: {arr.size} of {n} values")
    return arr
