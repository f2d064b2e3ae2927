"""Reading tensors saved by `torch.save` without torch, and without running pickled code.

A `.pt` file is a zip (stored, not compressed) holding `data.pkl` and one member per storage (`data/0`).
The pickle is read by an unpickler that only knows the few names a saved tensor uses
(`torch._utils._rebuild_tensor_v2`, `torch.FloatStorage`..., `collections.OrderedDict`) and refuses every
other global. The result is the tensor's layout: the storage member's byte offset inside the zip, so the data
can be memory-mapped like an npy payload.
"""

from __future__ import annotations

import collections
import io
import pickle
import struct
import zipfile
from collections.abc import Iterable
from typing import Any

import numpy as np

from ..npy import Layout

STORAGE_DTYPES = {
    "FloatStorage": ("float32", np.float32),
    "DoubleStorage": ("float64", np.float64),
    "HalfStorage": ("float16", np.float16),
    "BFloat16Storage": ("bfloat16", np.uint16),
    "LongStorage": ("int64", np.int64),
    "IntStorage": ("int32", np.int32),
    "ShortStorage": ("int16", np.int16),
    "CharStorage": ("int8", np.int8),
    "ByteStorage": ("uint8", np.uint8),
    "BoolStorage": ("bool", np.bool_),
    "ComplexFloatStorage": ("complex64", np.complex64),
    "ComplexDoubleStorage": ("complex128", np.complex128),
}


class _StorageType:
    def __init__(self, name: str):
        self.name = name


# The persistent id of a storage: ('storage', storage type, key, location, number of elements).
StorageId = tuple[str, _StorageType, str, str, int]


class _TensorSpec:
    """What `_rebuild_tensor_v2` is called with: the tensor's storage and its view of it."""

    def __init__(self, storage: StorageId, offset: int, size: Iterable[int], stride: Iterable[int]):
        self.storage, self.offset, self.size, self.stride = storage, offset, tuple(size), tuple(stride)


def _rebuild_tensor_v2(
    storage: StorageId, storage_offset: int, size: Iterable[int], stride: Iterable[int], *_rest: object
) -> _TensorSpec:
    return _TensorSpec(storage, storage_offset, size, stride)


class _Unpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if module == "torch._utils" and name in ("_rebuild_tensor_v2", "_rebuild_tensor"):
            return _rebuild_tensor_v2
        if module == "torch" and name in STORAGE_DTYPES:
            return _StorageType(name)
        if module == "collections" and name == "OrderedDict":
            return collections.OrderedDict
        raise pickle.UnpicklingError(f"refused global {module}.{name} (only plain tensors are read)")

    def persistent_load(self, pid: Any) -> Any:
        # ('storage', storage type, key, location, numel)
        if not (isinstance(pid, tuple) and pid and pid[0] == "storage"):
            raise pickle.UnpicklingError(f"unknown persistent id {pid!r}")
        return pid


def _member_offset(path: str, info: zipfile.ZipInfo) -> int:
    """Byte offset of a stored member's data: after its local header (30 bytes, name, extra field)."""
    with open(path, "rb") as fh:
        fh.seek(info.header_offset)
        head = fh.read(30)
    if head[:4] != b"PK\x03\x04":
        raise ValueError("bad zip local header")
    name_len, extra_len = struct.unpack("<HH", head[26:30])
    return info.header_offset + 30 + name_len + extra_len


def pt_layout(path: str) -> tuple[Layout, str | None]:
    """(layout, dtype) of a tensor saved with torch.save; a problem in the layout says why it cannot be read."""
    try:
        with zipfile.ZipFile(path) as z:
            names = z.namelist()
            pkl = next((n for n in names if n.endswith("data.pkl")), None)
            if pkl is None:
                return Layout(None, None, 0, problem="not a torch.save zip (no data.pkl)"), None
            spec = _Unpickler(io.BytesIO(z.read(pkl))).load()
            if not isinstance(spec, _TensorSpec):
                return Layout(None, None, 0, problem=f"holds a {type(spec).__name__}, not a tensor"), None
            _tag, stype, key, _loc, numel = spec.storage
            prefix = pkl[: -len("data.pkl")]
            info = z.getinfo(f"{prefix}data/{key}")
            if info.compress_type != zipfile.ZIP_STORED:
                return Layout(None, None, 0, problem="compressed storage (not written by torch.save)"), None
            byteorder = z.read(f"{prefix}byteorder").decode().strip() if f"{prefix}byteorder" in names else "little"
    except (OSError, zipfile.BadZipFile, KeyError, pickle.UnpicklingError, ValueError, EOFError, TypeError) as e:
        return Layout(None, None, 0, problem=f"unreadable .pt file: {e}"), None
    dtype_name, np_dtype = STORAGE_DTYPES[stype.name]
    dt = np.dtype(np_dtype).newbyteorder("<" if byteorder == "little" else ">")
    shape = spec.size
    contiguous = _contiguous_strides(shape)
    if spec.stride != contiguous and int(np.prod(shape, dtype=np.int64)) > 1:
        return Layout(
            None, shape, 0, problem=f"non-contiguous tensor (strides {spec.stride}) not supported"
        ), dtype_name
    if spec.offset + int(np.prod(shape, dtype=np.int64)) > numel:
        return Layout(None, shape, 0, problem="storage smaller than the tensor"), dtype_name
    offset = _member_offset(path, info) + spec.offset * dt.itemsize
    return Layout(
        dt, shape, offset, widen_bf16=dtype_name == "bfloat16", declared=f"{dtype_name}{list(shape)}"
    ), dtype_name


def _contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    out, acc = [], 1
    for s in reversed(shape):
        out.append(acc)
        acc *= max(s, 1)
    return tuple(reversed(out))
