"""One CANN raw dump file: its name, its DumpData header, and where each tensor's bytes are (docs/formats.md#cann-raw-dump).

Two layouts exist. Current: `uint64 little-endian L` | L bytes of DumpData with empty `data` fields | the
payloads of every input, every output, every buffer and every workspace, in that order, each `size` bytes; it
is consistent when `8 + L + sum(sizes) == file size`. Older: the whole file is one DumpData with the bytes in
the `data` fields. Only the header is read here (and, for the older layout, the whole file once); tensor
bytes are read on demand through the Layout of each tensor.
"""

from __future__ import annotations

import os
import re
import struct
from dataclasses import dataclass, field
from functools import lru_cache
from types import ModuleType
from typing import TYPE_CHECKING, BinaryIO

import numpy as np

from dumptui.core.io import dtypes, limits
from dumptui.core.io.devicelayout import DeviceLayout, DevicePayload, LayoutError, plan
from dumptui.core.io.fault import Fault, Flaw, os_text, text
from dumptui.core.io.npy import Layout
from dumptui.core.io.safeio import open_regular
from dumptui.core.model.dump import INPUT, OUTPUT, InOut
from dumptui.core.model.vocab import Word

if TYPE_CHECKING:
    from dumptui.core.formats.protoschema import Message


def _proto() -> ModuleType:
    """The DumpData protobuf (cann_proto), built on first use: a command on any other dump never needs it, and
    building its schema (protobuf's descriptor modules) was ~15 ms of every command's start."""
    from dumptui.core.formats import cann_proto

    return cann_proto


# {op_type}.{op_name}.{task_id}[.{stream_id}].{timestamp}[.{task_type}.{context_id}.{thread_id}.{device_id}]:
# very old CANN wrote no stream id, FFTS+ appends four fields. Names have `.`, `/`, `\` and space replaced by `_`.
RAW_NAME = re.compile(
    r"^(?P<type>[^.]+)\.(?P<name>[^.]+)\.(?P<task>\d{1,20})(?:\.(?P<stream>\d{1,20}))?\.(?P<ts>\d{1,20})"
    r"(?P<ffts>\.[A-Za-z0-9_]+\.\d+\.\d+\.\d+)?$"
)
OVERFLOW_TYPE = "Opdebug"
MAPPING_FILE = "mapping.csv"
_LENGTH = struct.Struct("<Q")
_MAX_HEADER = 1 << 28  # a DumpData header without payloads is small; a larger length is not a length
_MAX_WHOLE_FILE = (1 << 31) - 1  # protobuf parses no message of 2 GiB or more: a larger file is not one DumpData


class RawNameStyle(Word):
    """How a raw file's name is spelled (report/reasons.py words it)."""

    CURRENT = "current"  # {op_type}.{op_name}.{task_id}.{stream_id}.{timestamp}
    NO_STREAM = "no-stream"  # very old CANN: no stream id
    FFTS = "ffts+"  # FFTS+: four more fields


class RawLayout(Word):
    """How a raw file's bytes are laid out (report/reasons.py words it)."""

    LENGTH_PREFIXED = "length-prefixed"  # an 8-byte header length, the DumpData header, then the payloads
    WHOLE_FILE = "whole-file"  # one DumpData message with the payloads inside


@dataclass(frozen=True)
class RawName:
    """The fields of a raw dump file name."""

    op_type: str
    op_name: str  # in file form (separators replaced by `_`)
    task: str
    stream: str  # "" for very old CANN
    timestamp: int
    variant: RawNameStyle

    @property
    def overflow(self) -> bool:
        return self.op_type == OVERFLOW_TYPE


def parse_raw_name(name: str, mapping: dict[str, str] | None = None) -> RawName | None:
    """The fields of a raw dump file name, or None. A name CANN had to replace by a number (too long for the
    file system) is looked up in `mapping` (mapping.csv beside it)."""
    if mapping and name in mapping:
        name = os.path.basename(mapping[name])
    m = RAW_NAME.match(name)
    if not m:
        return None
    variant = (
        RawNameStyle.FFTS
        if m.group("ffts")
        else RawNameStyle.CURRENT
        if m.group("stream") is not None
        else RawNameStyle.NO_STREAM
    )
    return RawName(
        m.group("type"), m.group("name"), m.group("task"), m.group("stream") or "", int(m.group("ts")), variant
    )


@dataclass
class RawTensor:
    """One input or output of a raw file: what the header says, and how to read it (or why not)."""

    io: InOut
    slot: int
    dtype: str  # canonical name, or the CANN type's name when it is not decoded
    device_format: str
    device_shape: tuple[int, ...]
    original_shape: tuple[int, ...] | None
    size: int  # bytes, from the header (or the length of the embedded data)
    layout: Layout

    @property
    def shape(self) -> tuple[int, ...]:
        """The shape a comparison sees: the original one when the layout maps to it."""
        return self.layout.shape if self.layout.shape is not None else self.device_shape


@dataclass
class RawFile:
    """A parsed raw file. `problem` set: the file is damaged, and its tensors are unreadable for that reason."""

    path: str
    name: RawName
    op_name: str = ""  # DumpData.op_name (the real name, separators kept) when the writer set it
    layout_variant: RawLayout | None = None  # None: not parsed
    tensors: list[RawTensor] = field(default_factory=list)
    problem: Fault | None = None


# What a GE graph says of the tensors of an op, by (io, slot): the framework layout and shape.
OriginalFormats = dict[tuple[str, int], str]
OriginalShapes = dict[tuple[str, int], tuple[int, ...]]


def _tensor(
    io: InOut,
    slot: int,
    proto: Message,
    offset: int,
    size: int,
    problem: Fault | None,
    graph: tuple[OriginalFormats, OriginalShapes],
    embedded: bool,
) -> RawTensor:
    """The tensor of an OpInput/OpOutput, its payload at `offset` (or inside the protobuf when `embedded`)."""
    type_name = _proto().data_type_name(proto.data_type)
    dtype = _proto().DECODED_TYPES.get(type_name)
    fmt = _proto().format_name(proto.format)
    device = _proto().dims(proto.shape)
    original_formats, original_shapes = graph
    original = (
        _proto().dims(proto.original_shape) if proto.HasField("original_shape") else original_shapes.get((io, slot))
    )
    original_format = original_formats.get((io, slot))
    if original_format is None and io == OUTPUT and proto.original_op.name:
        original_format = _proto().format_name(proto.original_op.format)
    label = dtype or type_name
    declared = f"{label}{limits.brief(list(device), 80)} {fmt}"
    try:  # uint64 dimensions from the file: checked before any arithmetic on them
        limits.shape(device, "device shape")
        if original is not None:
            limits.shape(original, "original shape")
    except limits.BadValue as e:
        problem = problem or text(e)
        device, original = (), None
    shape = original if original is not None else device

    def unreadable(reason: Fault) -> RawTensor:
        return RawTensor(
            io, slot, label, fmt, device, original, size, Layout(None, shape, offset, problem=reason, declared=declared)
        )

    if problem:
        return unreadable(problem)
    storage = dtypes.storage(dtype) if dtype else None
    if dtype is None or storage is None:
        unsettled = _proto().unsettled(proto.data_type)
        name = Fault(Flaw.DTYPE_UNSETTLED, (proto.data_type,)) if unsettled else type_name
        return unreadable(Fault(Flaw.DTYPE_NOT_DECODED, (name,)))
    expected = limits.elements(device) * storage.itemsize
    if size != expected:
        return unreadable(Fault(Flaw.RAW_PAYLOAD_MISMATCH, (size, declared, expected)))
    try:
        device_layout = plan(fmt, device, original, original_format)
    except LayoutError as e:
        return unreadable(text(e))
    decoder: EmbeddedPayload | DevicePayload | None = None
    if embedded:
        decoder = EmbeddedPayload(io, slot, device, device_layout)
    elif device_layout is not None:
        decoder = DevicePayload(device_layout)
    out_shape = device_layout.original_shape if device_layout is not None else device
    return RawTensor(
        io,
        slot,
        dtype,
        fmt,
        device,
        original,
        size,
        Layout(storage, out_shape, offset, declared=declared, widen_bf16=dtype == "bfloat16", decoder=decoder),
    )


@dataclass(frozen=True)
class EmbeddedPayload:
    """The PayloadDecoder of a tensor whose bytes are inside the DumpData (the older whole-file layout)."""

    io: InOut
    slot: int
    device_shape: tuple[int, ...]
    device_layout: DeviceLayout | None

    def decode(self, path: str, storage: np.dtype, offset: int) -> np.ndarray:
        msg = _whole_file(path, os.path.getmtime(path))
        protos = msg.input if self.io == INPUT else msg.output
        stored = np.frombuffer(protos[self.slot].data, dtype=storage).reshape(self.device_shape)
        return stored.copy() if self.device_layout is None else self.device_layout.to_original(stored)


@lru_cache(maxsize=2)
def _whole_file(path: str, _mtime: float) -> Message:
    """The parsed DumpData of an older-layout file, kept for the next tensor of the same op."""
    with open_regular(path) as fh:
        if os.fstat(fh.fileno()).st_size > _MAX_WHOLE_FILE:
            raise ValueError("too large to be one whole DumpData")
        return _proto().parse_dump_data(fh.read())


def _header(fh: BinaryIO, size: int) -> tuple[Message, int] | Fault:
    """(DumpData header, its length L) of the current layout, or why the file is not in it."""
    head = fh.read(_LENGTH.size)
    if len(head) < _LENGTH.size:
        return Fault(Flaw.SHORT_FOR_HEADER, (size,))
    (length,) = _LENGTH.unpack(head)
    if length > min(size - _LENGTH.size, _MAX_HEADER):
        return Fault(Flaw.HEADER_TOO_LONG, (length, size))
    try:
        return _proto().parse_dump_data(fh.read(length)), length
    except ValueError as e:
        return text(e)


def _payload_sizes(msg: Message) -> list[int]:
    return [int(p.size) for group in (msg.input, msg.output, msg.buffer, msg.space) for p in group]


def _current_layout(
    raw: RawFile, msg: Message, length: int, size: int, graph: tuple[OriginalFormats, OriginalShapes]
) -> None:
    total = _LENGTH.size + length + sum(_payload_sizes(msg))
    problem = None
    if total != size:
        problem = Fault(Flaw.RAW_SIZES_DISAGREE, (length, total - _LENGTH.size - length, total, size))
    offset = _LENGTH.size + length
    for io, protos in ((INPUT, msg.input), (OUTPUT, msg.output)):
        for slot, proto in enumerate(protos):
            raw.tensors.append(_tensor(io, slot, proto, offset, int(proto.size), problem, graph, False))
            offset += int(proto.size)
    raw.problem = problem


def _whole_file_layout(raw: RawFile, msg: Message, graph: tuple[OriginalFormats, OriginalShapes]) -> None:
    for io, protos in ((INPUT, msg.input), (OUTPUT, msg.output)):
        for slot, proto in enumerate(protos):
            problem = None
            if proto.size and proto.size != len(proto.data):
                problem = Fault(Flaw.RAW_DATA_SIZE, (io, slot, len(proto.data), int(proto.size)))
            raw.tensors.append(_tensor(io, slot, proto, 0, len(proto.data), problem, graph, True))


def _is_whole_file_dump(msg: Message) -> bool:
    """A parse that found a dump: an op name or a tensor with a shape (random bytes rarely give either)."""
    return bool(msg.op_name) or any(p.HasField("shape") for p in list(msg.input) + list(msg.output))


def read_raw_file(
    path: str,
    name: RawName,
    original_formats: OriginalFormats | None = None,
    original_shapes: OriginalShapes | None = None,
) -> RawFile:
    """The header of one raw file, in either layout; a damaged file comes back with `problem` set. A GE graph
    may tell the original layout of a tensor, and its original shape where the header has none."""
    raw = RawFile(path, name)
    graph = (original_formats or {}, original_shapes or {})
    try:
        with open_regular(path) as fh:
            size = os.fstat(fh.fileno()).st_size
            header = _header(fh, size)
            if not isinstance(header, Fault):
                msg, length = header
                raw.op_name, raw.layout_variant = msg.op_name, RawLayout.LENGTH_PREFIXED
                _current_layout(raw, msg, length, size, graph)
                if raw.problem is None or _is_whole_file_dump(msg):
                    return raw
            why_not_current = header if isinstance(header, Fault) else raw.problem
            if size > _MAX_WHOLE_FILE:
                raw.tensors.clear()
                raw.problem = Fault(Flaw.NOT_RAW_TOO_LARGE, (why_not_current,))
                return raw
            fh.seek(0)
            data = fh.read()
    except OSError as e:
        raw.tensors.clear()
        raw.problem = Fault(Flaw.CANNOT_READ, (os_text(e),))
        return raw
    try:
        whole = _proto().parse_dump_data(data)
    except ValueError:
        whole = None
    if whole is None or not _is_whole_file_dump(whole):
        raw.tensors.clear()
        raw.problem = Fault(Flaw.NOT_RAW, (why_not_current,))
        return raw
    raw.tensors.clear()
    raw.problem = None
    raw.op_name, raw.layout_variant = whole.op_name, RawLayout.WHOLE_FILE
    _whole_file_layout(raw, whole, graph)
    return raw
