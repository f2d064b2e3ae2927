"""Reading `.npy` headers without numpy's pickling paths, and checking them against the payload size.

Every value of a header is checked before use (limits.py): the header's length, its nesting, the dtype (a
numeric one), the shape (non-negative integers, within MAX_DIMS and MAX_ELEMENTS) and the payload's size
against the shape. A file that fails a check gets a Layout with `problem` set, and is never read. Files are
opened through safeio: a FIFO or a device named like a tensor is refused, never waited on.

A real MindSpore bug writes an npy header that declares float16 while the payload holds the full float32
buffer (payload exactly twice the declared size); `np.load` then silently returns garbage. That one case,
proven by the header and the size together, is read as float32 and clearly marked as repaired. Any other
size mismatch (a float32 payload cut to half, say) is damage, never "repaired".
"""

from __future__ import annotations

import ast
import math
import os
import re
import struct
import threading
import warnings
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from dumptui.core.io import dtypes, limits
from dumptui.core.io.fault import Fault, FaultError, Flaw, error_fault
from dumptui.core.io.limits import MAX_HEADER_NESTING, MAX_NPY_HEADER, BadValue
from dumptui.core.io.safeio import open_regular, open_regular_fd

MAGIC = b"\x93NUMPY"
# bytes read first: numpy writes headers of 128 bytes (more only for very long shapes); a page, so that a
# tensor of up to ~1,000 float32 values is in hand with its header (payloads_kept)
HEADER_PEEK = 4096
KEEP_WHOLE = 64 << 10  # while payloads are kept, a file up to this size is read whole with its header


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
    problem: Fault | None = None  # why the tensor cannot be read
    repaired: Fault | None = None  # why the payload is read differently from what the header says
    declared: str | None = None  # what the header declared, e.g. "float16[1, 8, 32, 32]"
    widen_bf16: bool = False  # storage holds raw bfloat16 bits
    decoder: PayloadDecoder | None = None  # set when the bytes are not the plain array (frozen, picklable)

    @property
    def size(self) -> int:
        return 0 if self.shape is None else math.prod(self.shape)  # exact ints; np.prod costs 10x per call


class NpyHeaderError(ValueError):
    pass


def _header_text(fd: int, peek: int = HEADER_PEEK) -> tuple[str, int, bytes]:
    """The header text of an open .npy file, the payload's offset and the bytes read, from one unbuffered read
    of its first `peek` bytes (a scan reads tens of thousands of headers: a buffered file object costs more
    than the parsing)."""
    head = os.read(fd, peek)
    if len(head) < 10 or not head.startswith(MAGIC):
        raise NpyHeaderError("not an npy file (bad magic)")
    major = head[6]
    if major == 1:
        hlen = struct.unpack("<H", head[8:10])[0]
        start = 10
    elif major in (2, 3):
        if len(head) < 12:
            raise NpyHeaderError("truncated npy header")
        hlen = struct.unpack("<I", head[8:12])[0]
        start = 12
    else:
        raise NpyHeaderError(f"unsupported npy version {major}")
    if hlen > MAX_NPY_HEADER:
        raise NpyHeaderError(f"npy header of {hlen} B (at most {MAX_NPY_HEADER} B are read)")
    if start + hlen > len(head):  # a long header: the rest of it, never more than it declares
        head += os.read(fd, start + hlen - len(head))
    raw = head[start : start + hlen]
    if len(raw) < hlen:
        raise NpyHeaderError("truncated npy header")
    return raw.decode("latin1"), start + hlen, head


def _literal_header(header: str) -> tuple[Any, Any, Any]:
    """(descr, fortran_order, shape) of a header numpy did not write in its standard form."""
    if limits.bracket_depth(header) > MAX_HEADER_NESTING:
        raise NpyHeaderError(f"npy header nested deeper than {MAX_HEADER_NESTING} brackets")
    try:
        with warnings.catch_warnings():  # a header's "\p" is damage to report, not a warning to print
            warnings.simplefilter("ignore")
            d = ast.literal_eval(header)
    except (ValueError, SyntaxError, TypeError, RecursionError, MemoryError, Warning) as e:
        raise NpyHeaderError(f"unreadable npy header ({e.__class__.__name__})") from None
    if not isinstance(d, dict) or not {"descr", "fortran_order", "shape"} <= set(d):
        raise NpyHeaderError("unreadable npy header (not a dict of descr, fortran_order and shape)")
    return d["descr"], d["fortran_order"], d["shape"]


def parse_header(header: str, offset: int) -> tuple[np.dtype, tuple[int, ...], bool, int]:
    """(dtype, shape, fortran_order, payload offset) from an .npy header's text; NpyHeaderError says what is
    wrong."""
    known = _PARSED.get(header)
    if known is not None:  # a dump's files have a few dozen distinct headers: each parsed and checked once
        return (*known, offset)
    dt, dims, fortran = _parse_header(header)
    if len(header) <= MAX_PARSED_TEXT:
        if len(_PARSED) >= MAX_PARSED:
            _PARSED.clear()
        _PARSED[header] = (dt, dims, fortran)
    return dt, dims, fortran, offset


MAX_PARSED, MAX_PARSED_TEXT = 4096, 1024  # distinct well-formed headers remembered, of at most this length
_PARSED: dict[str, tuple[np.dtype, tuple[int, ...], bool]] = {}


def _parse_header(header: str) -> tuple[np.dtype, tuple[int, ...], bool]:
    m = _STANDARD_HEADER.match(header)
    if m:  # what numpy writes; literal_eval is ten times slower and a dump has thousands of files
        descr, fortran, shape = m.group(1), m.group(2) == "True", [int(s) for s in m.group(3).split(",") if s.strip()]
    else:
        descr, fortran, shape = _literal_header(header)
    if not isinstance(descr, str):
        raise NpyHeaderError("structured npy arrays are not tensors")
    if not isinstance(fortran, bool):
        raise NpyHeaderError(f"npy fortran_order is {limits.kind_of(fortran)}, not True or False")
    try:
        dims = limits.shape(shape, "npy shape")
        dt = np.dtype(descr)
        limits.numeric_dtype(dt, "npy dtype")
    except BadValue as e:
        raise NpyHeaderError(str(e)) from None
    except (TypeError, ValueError, SyntaxError, SystemError):
        raise NpyHeaderError(f"unknown npy dtype {limits.brief(descr)}") from None
    return dt, dims, fortran


def _read_header(path: str) -> tuple[np.dtype, tuple[int, ...], bool, int, int]:
    """read_header's answer and the file's size (from the fstat that proved it a regular file)."""
    fd, size = open_regular_fd(path)
    try:
        # a small file read whole while payloads are kept: its values come with the header's one read
        header, offset, head = _header_text(
            fd, size if _kept.budget and HEADER_PEEK < size <= KEEP_WHOLE else HEADER_PEEK
        )
    finally:
        os.close(fd)
    if _kept.budget and len(head) == size > offset:
        _kept.add(path, offset, head[offset:])
    return (*parse_header(header, offset), size)


class _KeptPayloads:
    """Payloads that came with their header in one read, kept for the read of the values that follows
    (`payloads_kept`): a scan of small tensors then opens each file once, not twice. Bounded in bytes,
    oldest dropped first; a payload is handed out once, but for the files `kept_for_reuse` names: those as
    often as they are read while it lasts."""

    def __init__(self) -> None:
        self.budget = 0
        self.users = 0
        self.held = 0
        self.by_path: dict[str, tuple[int, bytes]] = {}
        self.reused: dict[str, int] = {}  # path -> how many `kept_for_reuse` name it now
        self.lock = threading.Lock()

    def add(self, path: str, offset: int, payload: bytes) -> None:
        with self.lock:
            if not self.budget:
                return
            old = self.by_path.pop(path, None)
            self.held += len(payload) - (len(old[1]) if old else 0)
            self.by_path[path] = (offset, payload)
            while self.held > self.budget and self.by_path:
                _path, (_offset, dropped) = _pop_oldest(self.by_path)
                self.held -= len(dropped)

    def take(self, path: str, offset: int, nbytes: int) -> bytes | None:
        with self.lock:
            if path in self.reused:
                got = self.by_path.get(path)
            else:
                got = self.by_path.pop(path, None)
                if got is not None:
                    self.held -= len(got[1])
            if got is None:
                return None
        return got[1] if got[0] == offset and len(got[1]) == nbytes else None


def _pop_oldest(d: dict[str, tuple[int, bytes]]) -> tuple[str, tuple[int, bytes]]:
    key = next(iter(d))
    return key, d.pop(key)


_kept = _KeptPayloads()


@contextmanager
def payloads_kept(budget: int = 32 << 20) -> Iterator[None]:
    """While it lasts, small payloads read with their headers are kept (up to `budget` bytes) for read_small;
    afterwards none is, and the kept ones are dropped."""
    with _kept.lock:
        _kept.users += 1
        _kept.budget = max(_kept.budget, budget)
    try:
        yield
    finally:
        with _kept.lock:
            _kept.users -= 1
            if not _kept.users:
                _kept.budget = _kept.held = 0
                _kept.by_path.clear()


@contextmanager
def kept_for_reuse(paths: Iterable[str]) -> Iterator[None]:
    """Inside `payloads_kept`: the payloads of `paths` handed out to every read of them while it lasts (not
    once), then dropped. A worker that compares a batch of small tensor pairs and then works on some of them
    again (replays their ops, looks at their rounding) opens each of those files once."""
    named = list(paths)
    with _kept.lock:
        for path in named:
            _kept.reused[path] = _kept.reused.get(path, 0) + 1
    try:
        yield
    finally:
        with _kept.lock:
            for path in named:
                left = _kept.reused.pop(path) - 1
                if left:
                    _kept.reused[path] = left
                elif (got := _kept.by_path.pop(path, None)) is not None:
                    _kept.held -= len(got[1])


def read_header(path: str) -> tuple[np.dtype, tuple[int, ...], bool, int]:
    """(dtype, shape, fortran_order, payload offset) from an .npy file; raises NpyHeaderError or OSError."""
    return _read_header(path)[:4]


def _halves_differ(path: str, offset: int, half: int) -> bool:
    """Whether the two halves of a payload of 2 * `half` bytes at `offset` differ (or are all zeros, where
    either reading gives the same values): read a MiB at a time. Unreadable: treated as differing (the read of
    the values that follows says what is wrong)."""
    step = 1 << 20
    try:
        with open_regular(path) as first, open_regular(path) as second:
            first.seek(offset)
            second.seek(offset + half)
            nonzero = False
            for start in range(0, half, step):
                a, b = first.read(min(step, half - start)), second.read(min(step, half - start))
                if a != b:
                    return True
                nonzero = nonzero or a.count(0) != len(a)
            return not nonzero
    except OSError:
        return True


def npy_layout(path: str, size_on_disk: int | None = None) -> Layout:
    """Layout of an .npy file, with the header/payload size check."""
    try:
        dt, shape, fortran, offset, size = _read_header(path)
        if size_on_disk is None:
            size_on_disk = size
    except (OSError, NpyHeaderError) as e:
        return Layout(None, None, 0, problem=error_fault(e))
    n = limits.elements(shape)
    payload = size_on_disk - offset
    expected = n * dt.itemsize
    if payload == expected:
        return _plain_layout(dt, shape, offset, fortran)
    declared = f"{dtypes.from_numpy(dt) or dt.str}{list(shape)}"

    def unreadable(why: Fault) -> Layout:
        return Layout(None, shape, offset, fortran, declared=declared, problem=why)

    if n > 0 and dt.kind == "f" and dt.itemsize == 2 and payload == 2 * expected:
        if not _halves_differ(path, offset, expected):
            return unreadable(Fault(Flaw.PAYLOAD_TWICE, (declared, expected)))
        # MindSpore's float16-header-over-float32-payload bug: the header and the size prove it
        implied = np.dtype(np.float32).newbyteorder(dt.byteorder) if dt.byteorder in "<>" else np.dtype(np.float32)
        why = Fault(Flaw.F16_OVER_F32, (declared, expected, payload))
        return Layout(implied, shape, offset, fortran, repaired=why, declared=declared)
    if payload < expected:
        return unreadable(Fault(Flaw.TRUNCATED, (declared, expected, max(payload, 0))))
    return unreadable(Fault(Flaw.PAYLOAD_MISMATCH, (payload, declared, expected)))


_PLAIN: dict[tuple[np.dtype, tuple[int, ...], int, bool], Layout] = {}


def _plain_layout(dt: np.dtype, shape: tuple[int, ...], offset: int, fortran: bool) -> Layout:
    """One shared (immutable) Layout per distinct well-formed header: a dump's tensors have a few dozen
    shapes, and a Layout per tensor adds up once a large compare has read them all."""
    key = (dt, shape, offset, fortran)
    layout = _PLAIN.get(key)
    if layout is None:
        declared = f"{dtypes.from_numpy(dt) or dt.str}{list(shape)}"
        layout = _PLAIN.setdefault(key, Layout(dt, shape, offset, fortran, declared=declared))
    return layout


def shared_layout(layout: Layout) -> Layout:
    """The shared instance of a well-formed layout made elsewhere (a worker process read the header and sent
    a copy back): the memory saving of `_plain_layout` holds for the app's statistics too."""
    if layout.storage is None or layout.shape is None or layout.problem or layout.repaired or layout.decoder:
        return layout
    plain = _plain_layout(layout.storage, tuple(layout.shape), layout.offset, layout.fortran)
    return plain if plain == layout else layout


def _readable_storage(layout: Layout) -> np.dtype:
    """The storage dtype of a layout that can be read; ValueError saying why not otherwise."""
    if layout.problem:
        raise FaultError(layout.problem)
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
    with open_regular(path) as fh:  # the map keeps its own reference to the file
        return np.memmap(
            fh, dtype=storage, mode="r", offset=layout.offset, shape=shape, order="F" if layout.fortran else "C"
        )


def read_small(path: str, layout: Layout, into: np.ndarray | None = None) -> np.ndarray:
    """The payload read into memory as a flat array in file order (for small C-order tensors). `into`: bytes
    (uint8) of the caller's to read into when they are enough, not a fresh array (whose pages are faulted in
    and zeroed anew each time): the array returned is then a view of them."""
    storage = _readable_storage(layout)
    if layout.decoder is not None:
        flat: np.ndarray = layout.decoder.decode(path, storage, layout.offset).reshape(-1)
        return flat
    n = layout.size
    kept = _kept.take(path, layout.offset, n * storage.itemsize) if _kept.budget else None
    if kept is not None:  # read with its header moments ago (payloads_kept)
        copied: np.ndarray = np.frombuffer(kept, dtype=storage, count=n).copy()
        return copied
    nbytes = n * storage.itemsize
    arr = into[:nbytes].view(storage) if into is not None and into.nbytes >= nbytes else np.empty(n, dtype=storage)
    if not n:
        return arr
    # read straight into the array at its offset (no file object, no seek: a replay reads thousands of these)
    fd, _size = open_regular_fd(path)
    try:
        got = _read_into(fd, arr.view(np.uint8).data, layout.offset)
    finally:
        os.close(fd)
    if got != arr.nbytes:
        raise ValueError(f"short read: {got // storage.itemsize} of {n} values")
    return arr


def _read_into(fd: int, buf: memoryview, offset: int) -> int:
    """Bytes read into `buf` from `offset` on (fewer only at the end of the file)."""
    done = 0
    while done < len(buf):
        got = os.preadv(fd, [buf[done:]], offset + done)
        if not got:
            break
        done += got
    return done


def logical_chunks(arr: np.ndarray, elems: int) -> Iterator[np.ndarray]:
    """The values of `arr` in C (row-major) index order, `elems` at a time, whatever its memory order: a
    Fortran-order payload compares element for element with the same values stored in C order."""
    if arr.size == 0:
        return
    if arr.flags.c_contiguous:
        flat = arr.reshape(-1)
        for start in range(0, flat.size, elems):
            yield flat[start : start + elems]
        return
    # buffered: at most `elems` values are copied at a time, so memory stays bounded for a large tensor
    for chunk in np.nditer(arr, flags=["external_loop", "buffered", "zerosize_ok"], order="C", buffersize=elems):
        yield np.array(chunk)  # a copy: the iterator reuses its buffer
