"""Reading tensors saved by `torch.save` without torch, and without running pickled code.

A `.pt` file is a zip (stored, not compressed) holding `data.pkl` and one member per storage (`data/0`).
The pickle is read by an unpickler that only knows the few names a saved tensor uses
(`torch._utils._rebuild_tensor_v2`, `torch.FloatStorage`..., `collections.OrderedDict`) and refuses every
other global. The result is the tensor's layout: the storage member's byte offset inside the zip, so the data
can be memory-mapped like an npy payload.

Every step is bounded, because the file may be anything: the pickle may be at most MAX_PICKLE bytes once
inflated, which its declared size tells before anything is inflated (a zip bomb is refused unread); its
opcodes are checked before it is loaded (only those a saved tensor needs, memo indices no larger than the
pickle, at most MAX_PICKLE_OPS); every value it gives (the storage's persistent id, the sizes, strides and
offset) is checked for type and range; and the storage must lie within its zip member and the file.
"""

from __future__ import annotations

import collections
import io
import os
import pickle
import pickletools
import struct
import zipfile
from collections.abc import Iterable
from typing import Any, BinaryIO

import numpy as np

from dumptui.core.io import limits
from dumptui.core.io.fault import Fault, Flaw, os_text, text
from dumptui.core.io.limits import MAX_PICKLE, MAX_PICKLE_OPS, BadValue
from dumptui.core.io.npy import Layout
from dumptui.core.io.safeio import open_regular

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

# The opcodes a saved tensor's pickle may use: globals, calls of the allowed ones, plain values, containers
# and the memo. Object building (BUILD, INST, OBJ, NEWOBJ), extensions and out-of-band buffers are refused.
SAFE_OPCODES = frozenset(
    [
        "PROTO",
        "FRAME",
        "STOP",
        "MARK",
        "POP",
        "POP_MARK",
        "DUP",
        "GLOBAL",
        "STACK_GLOBAL",
        "REDUCE",
        "BINPERSID",
        "INT",
        "BININT",
        "BININT1",
        "BININT2",
        "LONG",
        "LONG1",
        "LONG4",
        "FLOAT",
        "BINFLOAT",
        "NONE",
        "NEWTRUE",
        "NEWFALSE",
        "STRING",
        "BINSTRING",
        "SHORT_BINSTRING",
        "UNICODE",
        "BINUNICODE",
        "SHORT_BINUNICODE",
        "BINUNICODE8",
        "BINBYTES",
        "SHORT_BINBYTES",
        "BINBYTES8",
        "EMPTY_TUPLE",
        "TUPLE",
        "TUPLE1",
        "TUPLE2",
        "TUPLE3",
        "EMPTY_LIST",
        "APPEND",
        "APPENDS",
        "LIST",
        "EMPTY_DICT",
        "DICT",
        "SETITEM",
        "SETITEMS",
        "PUT",
        "BINPUT",
        "LONG_BINPUT",
        "GET",
        "BINGET",
        "LONG_BINGET",
        "MEMOIZE",
    ]
)
_MEMO_SETS = {"PUT", "BINPUT", "LONG_BINPUT"}
_MEMO_GETS = {"GET", "BINGET", "LONG_BINGET"}
# What reading a damaged zip or pickle raises (besides BadValue): each becomes the reason the file is unreadable.
_READ_ERRORS = (
    OSError,
    zipfile.BadZipFile,
    KeyError,
    pickle.UnpicklingError,
    ValueError,
    EOFError,
    TypeError,
    RuntimeError,  # an encrypted member; RecursionError
    NotImplementedError,  # an unknown compression method
    struct.error,
    IndexError,
    OverflowError,
    MemoryError,
)


class _StorageType:
    def __init__(self, name: str):
        self.name = name


# The persistent id of a storage: ('storage', storage type, key, location, number of elements).
StorageId = tuple[str, _StorageType, str, str, int]


class _TensorSpec:
    """What `_rebuild_tensor_v2` is called with: the tensor's storage and its view of it."""

    def __init__(self, storage: StorageId, offset: int, size: tuple[int, ...], stride: tuple[int, ...]):
        self.storage, self.offset, self.size, self.stride = storage, offset, size, stride


def _storage_id(pid: Any) -> StorageId:
    """A persistent id checked for the types and ranges of ('storage', type, key, location, numel)."""
    if not isinstance(pid, tuple) or len(pid) != 5 or pid[0] != "storage":
        raise pickle.UnpicklingError(f"unknown persistent id {limits.brief(pid)}")
    _tag, stype, key, location, numel = pid
    if not isinstance(stype, _StorageType):
        raise BadValue(f"storage type is {limits.brief(stype)}, not a torch storage")
    key = limits.text(key, "storage key")
    if not key or "/" in key or "\\" in key or key in (".", ".."):
        raise BadValue(f"storage key {limits.brief(key)} is not a member name")
    return ("storage", stype, key, limits.text(location, "storage location"), limits.integer(numel, "storage size"))


def _rebuild_tensor_v2(storage: Any, storage_offset: Any, size: Any, stride: Any, *_rest: object) -> _TensorSpec:
    sizes = limits.shape(size, "tensor size")
    if not isinstance(stride, (tuple, list)) or len(stride) != len(sizes):
        raise BadValue(f"tensor stride {limits.brief(stride)} does not match its {len(sizes)} dimensions")
    strides = tuple(limits.integer(s, "tensor stride") for s in stride)
    return _TensorSpec(_storage_id(storage), limits.integer(storage_offset, "storage offset"), sizes, strides)


class _Unpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if module == "torch._utils" and name in ("_rebuild_tensor_v2", "_rebuild_tensor"):
            return _rebuild_tensor_v2
        if module == "torch" and name in STORAGE_DTYPES:
            return _StorageType(name)
        if module == "collections" and name == "OrderedDict":
            return collections.OrderedDict
        raise pickle.UnpicklingError(
            f"refused global {limits.cut(str(module), 60)}.{limits.cut(str(name), 60)} (only plain tensors are read)"
        )

    def persistent_load(self, pid: Any) -> Any:
        return _storage_id(pid)


def check_opcodes(data: bytes) -> None:
    """Refuse a pickle before it is loaded: an opcode a saved tensor does not use, a memo index beyond the
    pickle (the C unpickler would grow its memo to that index), or more than MAX_PICKLE_OPS opcodes."""
    puts: set[int] = set()
    for count, (op, arg, _pos) in enumerate(pickletools.genops(data), start=1):
        if count > MAX_PICKLE_OPS:
            raise BadValue(f"pickle of more than {MAX_PICKLE_OPS} opcodes")
        if op.name not in SAFE_OPCODES:
            raise pickle.UnpicklingError(f"refused pickle opcode {op.name} (only plain tensors are read)")
        if op.name in _MEMO_SETS:
            if not isinstance(arg, int) or not 0 <= arg < MAX_PICKLE_OPS:
                raise BadValue(f"pickle memo index {limits.brief(arg)} out of range")
            puts.add(arg)
        elif op.name == "MEMOIZE":
            puts.add(len(puts))
        elif op.name in _MEMO_GETS and arg not in puts:
            raise BadValue(f"pickle reads memo entry {limits.brief(arg)} that it never stored")


def _member_offset(fh: BinaryIO, info: zipfile.ZipInfo, file_size: int) -> int:
    """Byte offset of a stored member's data: after its local header (30 bytes, name, extra field)."""
    fh.seek(info.header_offset)
    head = fh.read(30)
    if len(head) < 30 or head[:4] != b"PK\x03\x04":
        raise ValueError("bad zip local header")
    name_len, extra_len = struct.unpack("<HH", head[26:30])
    offset: int = info.header_offset + 30 + name_len + extra_len
    if offset + info.file_size > file_size:
        raise BadValue(f"zip member {limits.brief(info.filename)} ends beyond the end of the file")
    return offset


def _small_member(z: zipfile.ZipFile, name: str, limit: int) -> bytes:
    """A member read whole, refused from its declared size when that is over `limit` (a zip bomb is never
    inflated); the zip module stops inflating at the declared size."""
    info = z.getinfo(name)
    if info.file_size > limit:
        raise BadValue(f"{limits.brief(name)} declares {info.file_size} B (at most {limit} B are read)")
    with z.open(info) as member:
        return member.read(info.file_size)


def _read_spec(fh: BinaryIO, file_size: int) -> tuple[_TensorSpec, int, zipfile.ZipInfo, str] | Fault:
    """(tensor spec, payload offset of its storage, the storage member, byte order), or why there is none."""
    with zipfile.ZipFile(fh) as z:
        names = z.namelist()
        pkl = next((n for n in names if n.endswith("data.pkl")), None)
        if pkl is None:
            return Fault(Flaw.PT_NO_PICKLE)
        data = _small_member(z, pkl, MAX_PICKLE)
        check_opcodes(data)
        spec = _Unpickler(io.BytesIO(data)).load()
        if not isinstance(spec, _TensorSpec):
            return Fault(Flaw.PT_NOT_TENSOR, (type(spec).__name__,))
        prefix = pkl[: -len("data.pkl")]
        info = z.getinfo(f"{prefix}data/{spec.storage[2]}")
        if info.compress_type != zipfile.ZIP_STORED:
            return Fault(Flaw.PT_COMPRESSED)
        order_name = f"{prefix}byteorder"
        byteorder = _small_member(z, order_name, 16).decode("ascii").strip() if order_name in names else "little"
        if byteorder not in ("little", "big"):
            raise BadValue(f"byteorder {limits.brief(byteorder)} is neither little nor big")
        return spec, _member_offset(fh, info, file_size), info, byteorder


def pt_layout(path: str) -> tuple[Layout, str | None]:
    """(layout, dtype) of a tensor saved with torch.save; a problem in the layout says why it cannot be read."""
    try:
        with open_regular(path) as fh:
            found = _read_spec(fh, os.fstat(fh.fileno()).st_size)
    except _READ_ERRORS as e:
        return Layout(None, None, 0, problem=Fault(Flaw.PT_UNREADABLE, (_reason(e),))), None
    if isinstance(found, Fault):
        return Layout(None, None, 0, problem=found), None
    spec, member_offset, info, byteorder = found
    dtype_name, np_dtype = STORAGE_DTYPES[spec.storage[1].name]
    dt = np.dtype(np_dtype).newbyteorder("<" if byteorder == "little" else ">")
    shape = spec.size
    n = limits.elements(shape)
    if spec.stride != _contiguous_strides(shape) and n > 1:
        return Layout(None, shape, 0, problem=Fault(Flaw.PT_NON_CONTIGUOUS, (spec.stride,))), dtype_name
    numel = spec.storage[4]
    if spec.offset + n > numel:
        return Layout(None, shape, 0, problem=Fault(Flaw.PT_STORAGE_SMALL)), dtype_name
    if numel * dt.itemsize > info.file_size:
        problem = Fault(Flaw.PT_STORAGE_DECLARES, (numel * dt.itemsize, info.file_size))
        return Layout(None, shape, 0, problem=problem), dtype_name
    offset = member_offset + spec.offset * dt.itemsize
    return Layout(
        dt, shape, offset, widen_bf16=dtype_name == "bfloat16", declared=f"{dtype_name}{list(shape)}"
    ), dtype_name


def _reason(e: BaseException) -> Fault:
    if isinstance(e, OSError) and e.strerror:
        return os_text(e)
    if isinstance(e, (RecursionError, MemoryError)):
        return Fault(Flaw.TOO_DEEP, (type(e).__name__,))
    message = str(e)
    return text(limits.cut(message) if message else type(e).__name__)


def _contiguous_strides(shape: Iterable[int]) -> tuple[int, ...]:
    out, acc = [], 1
    for s in reversed(tuple(shape)):
        out.append(acc)
        acc *= max(s, 1)
    return tuple(reversed(out))
