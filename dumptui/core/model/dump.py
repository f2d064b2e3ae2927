"""The objects every reader produces and every other layer consumes.

A `Dump` is an index: ops in execution order, each with lazy `TensorRef`s. Building it reads file names
(and small graph/order files), never tensor data; a tensor's header is read on first need, its payload is
memory-mapped only while it is compared.
"""

from __future__ import annotations

import dataclasses
import gc
import math
import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING

import numpy as np

from dumptui.core.io import dtypes
from dumptui.core.io.fault import Fault, Flaw
from dumptui.core.io.npy import Layout, logical_chunks, npy_layout, open_array, read_small
from dumptui.core.io.safeio import is_listed, listed_regular, open_regular
from dumptui.core.model.reason import Reason, Said
from dumptui.core.model.recordstats import RecordStats, as_packed
from dumptui.core.model.slotmap import EMPTY, SlotMap, V
from dumptui.core.model.vocab import Word

if TYPE_CHECKING:  # networkx is imported by whoever builds a graph; the model only holds one
    import networkx as nx

    from dumptui.core.model.flowgraph import FlowGraph

SMALL_READ = 1 << 22  # tensors up to 4 MB are read whole; larger ones are memory-mapped chunk by chunk


class PairSide(Word):
    """One side of a compared pair of dumps."""

    REF = "ref"
    TARGET = "target"


class FormatName(Word):
    """A dump format, as `detect` names it and `--format` chooses it (formats/registry.py)."""

    MINDSPORE_NPY = "mindspore-npy"
    MINDSPORE_STATISTIC = "mindspore-statistic"  # MindSpore's statistic.csv (no tensor data)
    MINDSPORE_BIN = "mindspore-bin"  # MindSpore 1.x .bin files
    MSPROBE = "msprobe"
    MSPROBE_STATISTICS = "msprobe-statistics"  # msprobe's statistics task (no tensor data)
    CANN_RAW = "cann-raw"
    NPY_FOLDER = "npy-folder"


MSPROBE_FORMATS = (FormatName.MSPROBE, FormatName.MSPROBE_STATISTICS)


class OpKind(Word):
    """What an `Op` of a dump is."""

    KERNEL = "kernel"  # an operator that ran
    PARAMETER = "parameter"
    CONSTANT = "constant"


KERNEL, PARAMETER, CONSTANT = OpKind.KERNEL, OpKind.PARAMETER, OpKind.CONSTANT


class NameSource(Word):
    """How an op's name was recovered (report/reasons.py words it)."""

    FILE_NAME = "file-name"  # as its files spell it
    GRAPH = "graph"  # the execution order or graph file names it exactly
    GRAPH_SHORT = "graph-short"  # the graph's name whose last scope element the file holds
    GRAPH_COUNTER_ORDER = "graph-counter-order"  # file and graph -opN counters offset: paired in counter order
    GRAPH_COUNTER_ONLY = "graph-counter-only"  # only the -opN counter matched
    GRAPH_PARAMETER = "graph-parameter"
    MODULE_PARAMETER = "module-parameter"  # msprobe: a module's parameter
    DUMP_JSON = "dump-json"  # msprobe's dump.json
    GE_GRAPH = "ge-graph"  # CANN: the GE graph
    DUMPDATA = "dumpdata"  # CANN: the op name in the file's DumpData header
    FUSED_GROUP = "fused-group"  # the reference's ops a fused target op stands for, as one


class OrderSource(Word):
    """What gave a dump's execution order (report/reasons.py words it)."""

    FILE_NAMES = "file-names"
    FILE_TIMESTAMPS = "file-timestamps"
    EXECUTION_CSV = "execution-csv"
    GRAPH_TOPOLOGICAL = "graph-topological"  # the graph file's node order, topological
    GRAPH_NODES = "graph-nodes"  # MindSpore 1.x: the graph file's node order
    DUMP_JSON = "dump-json"  # msprobe: dump.json's order
    FILE_MTIMES = "file-mtimes"  # a folder of .npy files: their modification times


# a tensor as a worker process makes it (TensorRef.worker_spec): path, io, slot, dtype, shape, size on disk, layout,
# its folder when the index found regular files only there (None otherwise: safeio.listed_regular)
WorkerSpec = tuple[
    str, "InOut", int, "str | None", "tuple[int, ...] | None", "int | None", "Layout | None", "str | None"
]
# a statistics-only tensor's statistics: max, min, mean, l2 and whatever else its file gives
TensorStats = Mapping[str, "float | str | None"]
# A parameter op's attributes, one dict for all (ops' attributes are read, never changed in place)
WEIGHT_ATTRS: Mapping[str, str] = {"is_weight": "true"}
INPUT_ATTRS: Mapping[str, str] = {"is_weight": "false"}


@contextmanager
def no_cyclic_gc() -> Iterator[None]:
    """Building an index, or a command's compares, creates hundreds of thousands of small objects and no
    garbage cycles; with a large heap alive, the cyclic GC would rescan it again and again (it doubled the
    time of an alignment here, and was ~100 ms of a noisy 3,000-kernel bisect's 1.4 s: none found)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


# What a record may say beside what its file stores: numpy has no bfloat16, so its dumps hold float32
# (widened) or the raw bits as uint16.
_STORED_AS = {"bfloat16": ("float32", "uint16")}


def _dtype_disagreement(recorded: str | None, layout: Layout) -> Fault | None:
    """Why a file cannot be read as its record says: its header declares another dtype (None when they agree,
    when either is unknown, or when the payload was repaired for a known bug and says so)."""
    if recorded is None or layout.storage is None or layout.problem is not None or layout.repaired:
        return None
    stored = dtypes.from_numpy(layout.storage)
    if stored is None or stored == recorded or stored in _STORED_AS.get(recorded, ()) or layout.widen_bf16:
        return None
    return Fault(Flaw.DTYPE_DISAGREES, (stored, recorded))


class InOut(Word):
    """Which side of an op a tensor is on."""

    INPUT = "input"
    OUTPUT = "output"


INPUT, OUTPUT = InOut.INPUT, InOut.OUTPUT
INOUT_NAMED: Mapping[str, InOut] = {"input": INPUT, "output": OUTPUT}  # a file's spelling -> the code


class Severity(Word):
    """How bad a `Problem` is."""

    ERROR = "error"  # not usable
    WARNING = "warning"  # used with a caveat (e.g. a repaired payload)


@dataclass(frozen=True)
class Problem:
    """A file or folder that could not be used as expected, and why."""

    path: str
    reason: Said  # a reader's message (why the file cannot be read), or a Reason: report/reasons.py words it
    severity: Severity = Severity.ERROR


class SourceKind(Word):
    """What produces an op's input, per the graph."""

    OP = "op"  # another op's output
    PARAMETER = "parameter"
    CONSTANT = "constant"
    INPUT = "input"  # produced by something not dumped (msprobe: from outside the recorded calls)


class Role(Word):
    """What an input is to its op (search/measure.py: input_roles decides it from the input's sources)."""

    DATA = "data"  # produced by an op, or the network input
    WEIGHT = "weight"  # a parameter
    CONSTANT = "constant"  # a graph constant: epsilon, axes, flags


Roles = dict[int, Role]  # an op pair's input slot -> its role


@dataclass(frozen=True, slots=True)  # one per op input: no __dict__ each
class InputSource:
    """Where an op's input comes from, per the graph: another op's output, a parameter, or a constant."""

    kind: SourceKind
    ref: str = ""  # op key, parameter name, or constant text
    slot: int = 0  # output slot of the producing op

    @property
    def produced(self) -> bool:
        return self.kind == SourceKind.OP


class TensorRef:
    """One dumped tensor: where it is and what it should be; data read on demand.

    `layout_fn` resolves the byte layout (reads an npy header at most); it is called once and cached.
    Statistic-only dumps carry `stats` and no data.

    An index holds one per dump file for the whole session, so it is kept small: the path as its folder (one
    string shared by the folder's files) and its name, joined when asked for; what few tensors have (a layout
    call, statistics, a size on disk) in one slot, None for the others; a statistics-only record's packed
    statistics (recordstats.py) alone in that slot, as they are (a million-call msprobe dump has three a call).
    Its io, slot, format, dtype, file-name tail and folder, which few distinct values take across a dump, are one
    tuple shared by the tensors that have the same (`_kind`: five slots fewer, 5 MB of the 20,000-op demo pair).
    """

    __slots__ = ("_name", "_kind", "_shape", "timestamp", "_layout", "_extra")

    def __init__(
        self,
        path: str,
        io: InOut,
        slot: int,
        dtype: str | None = None,
        shape: tuple[int, ...] | None = None,
        fmt: str = "",
        timestamp: int | None = None,
        layout_fn: Callable[[], Layout] | None = None,
        stats: TensorStats | None = None,
        size_on_disk: int | None = None,
    ):
        cut = path.rfind(os.sep) + 1
        self._name = path[cut:]
        # (io, slot, fmt, logical dtype: what the framework computed in (file name, IR, header), the file name's
        # text after its timestamp (see `in_folder`), the folder (a string shared by the folder's files)), shared
        self._kind = _kind(io, slot, fmt, dtype, None, sys.intern(path[:cut]))
        self._shape = shape
        self.timestamp = timestamp
        self._layout: Layout | None = None
        self._extra: tuple[Callable[[], Layout] | None, TensorStats | None, int | None] | bytes | None = None
        if layout_fn is not None or stats is not None or size_on_disk is not None:
            self.set_extra(layout_fn, stats, size_on_disk)

    @classmethod
    def in_folder(
        cls,
        folder: str,
        name: str | tuple[str, int, str],
        io: InOut,
        slot: int,
        dtype: str | None,
        shape: tuple[int, ...] | None,
        fmt: str,
        timestamp: int | None,
    ) -> TensorRef:
        """A tensor whose path is `folder` (ending in a separator, or empty) + `name`, without splitting it again
        (the index cache stores paths so). `name` may come in three parts, the text before the file's
        timestamp, the timestamp, the text after it (`Add.Default_Add-op0.0.0.`, 1796214303518360,
        `.input.0.DefaultFormat.Float32.npy`): from the index cache, whose first and last parts are shared by
        the files of an op and by all the files, so a name costs a small tuple instead of a string of its own
        (~13 MB less for the 20,000-op demo pair's 140,000 files). The tensor keeps the first and last parts in
        slots of their own, the timestamp being its `timestamp` (a tuple of three per file was ~9 MB more)."""
        t = cls.__new__(cls)
        tail_: str | None = None
        if isinstance(name, str):
            t._name = name
        else:
            stem, ts, tail = name
            if ts == timestamp:
                t._name, tail_ = stem, tail
            else:
                t._name = stem + str(ts) + tail
        t._kind = _kind(io, slot, fmt, dtype, tail_, sys.intern(folder))
        t._shape, t.timestamp = shape, timestamp
        t._layout, t._extra = None, None
        return t

    @classmethod
    def statistics_only(
        cls, folder: str, name: str, io: InOut, slot: int, dtype: str | None, shape: tuple[int, ...], packed: bytes
    ) -> TensorRef:
        """A tensor known by its statistics alone, packed (recordstats.py), its record in `folder` + `name`
        (the one file of all of a dump's records: `name` is shared, not a string each)."""
        t = cls.in_folder(folder, name, io, slot, dtype, shape, "", None)
        RecordStats(packed)  # checks its size
        t._extra = packed
        return t

    @property
    def io(self) -> InOut:
        return self._kind[0]

    @property
    def slot(self) -> int:
        return self._kind[1]

    @slot.setter
    def slot(self, slot: int) -> None:  # (a reader numbering a copy otherwise: msprobe's backward inputs)
        io, _old, fmt, dtype, tail, folder = self._kind
        self._kind = _kind(io, slot, fmt, dtype, tail, folder)

    @property
    def fmt(self) -> str:
        return self._kind[2]

    @property
    def _dtype(self) -> str | None:
        return self._kind[3]

    @_dtype.setter
    def _dtype(self, dtype: str | None) -> None:
        io, slot, fmt, _old, tail, folder = self._kind
        self._kind = _kind(io, slot, fmt, dtype, tail, folder)

    @property
    def _tail(self) -> str | None:
        return self._kind[4]

    @property
    def _folder(self) -> str:
        return self._kind[5]

    @property
    def path(self) -> str:
        return self._kind[5] + self.file_name

    @property
    def file_name(self) -> str:
        tail = self._kind[4]
        # (text before the timestamp, the timestamp, text after it): see `in_folder`
        return self._name if tail is None else self._name + str(self.timestamp) + tail

    @property
    def folder_and_name(self) -> tuple[str, str]:
        return self._folder, self.file_name

    @property
    def _layout_fn(self) -> Callable[[], Layout] | None:
        extra = self._extra
        return None if extra is None or extra.__class__ is bytes else extra[0]  # type: ignore[return-value]  # a tuple here (see stats)

    @property
    def stats(self) -> TensorStats | None:
        """The statistics of a statistics-only tensor (max, min, mean, l2, and whatever else its file gives),
        None for a tensor with data."""
        extra = self._extra
        if extra is None:
            return None
        if extra.__class__ is bytes:
            return RecordStats(extra)
        return extra[1]  # type: ignore[return-value]  # a tuple here: `__class__ is` narrows only the bytes branch

    @property
    def size_on_disk(self) -> int | None:
        extra = self._extra
        return None if extra is None or extra.__class__ is bytes else extra[2]

    def set_extra(
        self, layout_fn: Callable[[], Layout] | None, stats: TensorStats | None, size_on_disk: int | None
    ) -> None:
        packed = as_packed(stats)
        if packed is not None and layout_fn is None and size_on_disk is None:
            self._extra = packed
        elif layout_fn is None and stats is None and size_on_disk is None:
            self._extra = None
        else:
            self._extra = (layout_fn, stats, size_on_disk)

    def __repr__(self) -> str:
        return f"TensorRef({self.io}.{self.slot} {self._dtype} {self._shape} {os.path.basename(self.path)})"

    @property
    def label(self) -> str:
        return f"{self.io}.{self.slot}"

    def relayout(self, shape: tuple[int, ...] | None, layout_fn: Callable[[], Layout]) -> TensorRef:
        """This tensor read through another layout, e.g. a device layout put back into the graph's shape."""
        return TensorRef(
            self.path,
            self.io,
            self.slot,
            self._dtype,
            shape,
            self.fmt,
            self.timestamp,
            layout_fn,
            self.stats,
            self.size_on_disk,
        )

    @property
    def has_data(self) -> bool:
        extra = self._extra
        return extra is None or (extra.__class__ is not bytes and extra[1] is None)

    def refuse(self, reason: Fault) -> None:
        """Mark this tensor unreadable for `reason` (found before its layout was read: e.g. its file is a
        FIFO); it is then never opened."""
        self._layout = Layout(None, self._shape, 0, problem=reason)
        self.set_extra(None, self.stats, self.size_on_disk)

    @property
    def refused(self) -> bool:
        """Known to be unreadable without reading anything (refused while indexing, or its layout read)."""
        return self._layout is not None and self._layout.problem is not None

    def layout(self) -> Layout:
        if self._layout is None:
            if self._layout_fn is not None:
                self.adopt_layout(self._layout_fn())
            elif not self.has_data:
                self.adopt_layout(Layout(None, self._shape, 0, problem=Fault(Flaw.STATISTICS_ONLY)))
            else:
                self.adopt_layout(npy_layout(self.path, self.size_on_disk))
        assert self._layout is not None
        return self._layout

    def deferred_layout(self) -> Callable[[], Layout] | None:
        """The header read that resolves this tensor's layout as a picklable call, for a worker process to
        make (the app's statistics: the UI process then reads no file); None when it is resolved already or
        only this process can resolve it (a reader's own layout function)."""
        if self._layout is not None or self._layout_fn is not None or not self.has_data:
            return None
        return partial(npy_layout, self.path, self.size_on_disk)

    def worker_spec(self) -> WorkerSpec | None:
        """What a worker process needs to make this same tensor (`from_worker_spec`): its path, io, slot, the
        index's dtype and shape, its size on disk and its layout when known here (None: the worker reads the
        npy header). None when only this process can resolve the layout (a reader's own layout function) or
        the tensor has no data (statistics only)."""
        if self.stats is not None or (self._layout is None and self._layout_fn is not None):
            return None
        folder = self._folder
        return (
            self.path,
            self.io,
            self.slot,
            self._dtype,
            self._shape,
            self.size_on_disk,
            self._layout,
            folder if is_listed(folder) else None,
        )

    @classmethod
    def from_worker_spec(cls, spec: WorkerSpec) -> tuple[TensorRef, Layout | None]:
        """The tensor of `worker_spec`, its layout resolved: (tensor, the layout as read from the file when it
        was read here, to send back; None when the spec carried it)."""
        path, io, slot, dtype, shape, size_on_disk, layout, listed = spec
        if listed is not None:  # the parent's index found regular files only there: so does this process
            listed_regular((listed,))
        t = cls(path, io, slot, dtype, shape, size_on_disk=size_on_disk)
        read = None
        if layout is None:
            layout = read = npy_layout(path, size_on_disk)
        t.adopt_layout(layout)
        return t, read

    def adopt_layout(self, layout: Layout) -> None:
        """Keep a layout resolved here or by `deferred_layout` elsewhere (the first one kept wins). A file
        whose bytes are of another dtype than its name or record says is damage, not data (read as what
        its header says, an int32 payload under a Float32 name makes a divergence of its own)."""
        if self._layout is None:
            disagreement = _dtype_disagreement(self._dtype, layout)
            if disagreement is not None:
                layout = dataclasses.replace(layout, storage=None, problem=disagreement)
            self._layout = layout
            if self._dtype is None and layout.storage is not None:
                self._dtype = dtypes.from_numpy(layout.storage)

    @property
    def dtype(self) -> str | None:
        """The logical dtype (file name or graph first; the npy header, read on first need, otherwise)."""
        dtype = self._kind[3]
        if dtype is None and self.has_data:
            self.layout()
            dtype = self._kind[3]
        return dtype

    @property
    def shape(self) -> tuple[int, ...] | None:
        if self._shape is None and self.has_data:
            self._shape = self.layout().shape
        return self._shape

    @property
    def problem(self) -> Fault | None:
        return self.layout().problem

    @property
    def repaired(self) -> Fault | None:
        return self.layout().repaired

    @property
    def size(self) -> int | None:
        s = self.shape
        return None if s is None else math.prod(s)  # exact for any size; np.prod is ten times slower here

    def array(self) -> np.ndarray:
        """The values as a (memory-mapped) array in its storage dtype; bfloat16 bits are widened."""
        lay = self.layout()
        arr = open_array(self.path, lay)
        if lay.widen_bf16:
            arr = dtypes.bf16_bits_to_float32(np.asarray(arr))
        if self._shape is not None and tuple(arr.shape) != tuple(self._shape) and arr.size == self.size:
            arr = arr.reshape(self._shape)
        return arr

    def nbytes(self) -> int:
        lay = self.layout()
        return 0 if lay.storage is None else lay.size * lay.storage.itemsize

    def chunks(self, elems: int, reuse: bool = False) -> Iterator[np.ndarray]:
        """Flat chunks of at most `elems` values (bfloat16 widened per chunk, so memory stays bounded).
        `reuse`: the caller is done with a chunk when it asks for the next one, which may overwrite it (one
        buffer for every chunk read from the file, not an allocation and its page faults a chunk)."""
        lay = self.layout()
        if 0 < self.nbytes() <= SMALL_READ and not lay.fortran:
            parts = logical_chunks(read_small(self.path, lay), elems)  # one read() beats setting up a memory map
        elif lay.storage is not None and lay.decoder is None and not lay.fortran and not lay.problem:
            # Plain reads, not a memory map: the pages of a map stay in the process's resident set once
            # touched, so a 4 GB tensor would make a 4 GB process; read() keeps it to one chunk.
            yield from self._read_chunks(lay, lay.storage, elems, reuse)
            return
        else:
            parts = logical_chunks(open_array(self.path, lay), elems)  # C index order, also for Fortran payloads
        for part in parts:
            yield dtypes.bf16_bits_to_float32(part) if lay.widen_bf16 else part

    def _read_chunks(self, lay: Layout, storage: np.dtype, elems: int, reuse: bool) -> Iterator[np.ndarray]:
        n = lay.size
        buffer = np.empty(min(elems, n), storage) if reuse else None
        with open_regular(self.path) as fh:  # swapped for a FIFO since its layout was read: refused, not waited on
            fh.seek(lay.offset)
            for start in range(0, n, elems):
                want = min(elems, n - start)
                if buffer is None:
                    part = np.fromfile(fh, dtype=storage, count=want)
                    got = part.size
                else:
                    part = buffer[:want]
                    got = (fh.readinto(part.view(np.uint8).data) or 0) // storage.itemsize
                if got != want:
                    raise ValueError(f"short read: {start + got} of {n} values")
                yield dtypes.bf16_bits_to_float32(part) if lay.widen_bf16 else part

    def read(self, into: np.ndarray | None = None) -> np.ndarray:
        """All values in memory, flat in C index order, in their storage dtype (bfloat16 widened). `into`: bytes
        to read into when they are enough (read_small); the values are then a view of them."""
        lay = self.layout()
        flat = read_small(self.path, lay, into) if not lay.fortran else np.asarray(self.array()).reshape(-1)
        return dtypes.bf16_bits_to_float32(flat) if lay.widen_bf16 else flat


# a tensor's (io, slot, fmt, dtype, file-name tail, folder): one tuple for the tensors that have the same (TensorRef)
_Kind = tuple["InOut", int, str, "str | None", "str | None", str]
_KINDS: dict[_Kind, _Kind] = {}
_KINDS_MAX = 1 << 16


def _kind(io: InOut, slot: int, fmt: str, dtype: str | None, tail: str | None, folder: str) -> _Kind:
    kind: _Kind = (io, slot, fmt, dtype, tail, folder)
    found = _KINDS.get(kind)
    if found is None:
        found = _KINDS.setdefault(kind, kind) if len(_KINDS) < _KINDS_MAX else kind
    return found


@dataclass(eq=False, slots=True)  # a dump has up to hundreds of thousands: no __dict__ each
class Op:
    """One operator (kernel), parameter or constant of a dump."""

    name: str  # full scope name, e.g. Default/conv2-ConvBlock/Conv2D-op0
    op_type: str  # Conv2D
    kind: OpKind = KERNEL
    graph: str = ""  # graph id within the dump
    file_name: str = ""  # the op name as spelled in file names
    # by slot: dicts while a reader builds the op, then frozen into compact SlotMaps (`freeze`)
    inputs: Mapping[int, TensorRef] = field(default_factory=dict)
    outputs: Mapping[int, TensorRef] = field(default_factory=dict)
    order: int = -1  # position in the dump's execution order (kernels), -1 otherwise
    timestamp: int | None = None  # earliest file timestamp
    name_source: NameSource = NameSource.FILE_NAME  # how `name` was recovered
    sources: Mapping[int, InputSource] = field(default_factory=dict)  # input slot -> producer (from the graph)
    attrs: Mapping[str, str] = field(default_factory=lambda: EMPTY)  # primitive attributes (from the IR)
    code: Sequence[str] = ()  # user source lines (from the IR)
    key: str = ""  # unique within the dump (name, or graph:name when graphs collide)
    call: int = 1  # 2, 3... when the same kernel ran more than once in one iteration
    fused: tuple[str, ...] = ()  # the framework ops a fused op stands for, in order (GE graphs; fusion.py)

    def __post_init__(self) -> None:
        if not self.key:
            self.key = self.name

    def __repr__(self) -> str:
        return f"Op({self.key!r}, {self.op_type}, {self.kind}, in={sorted(self.inputs)}, out={sorted(self.outputs)})"

    @property
    def scope(self) -> str:
        return self.name.rsplit("/", 1)[0] if "/" in self.name else ""

    @property
    def leaf(self) -> str:
        return self.name.rsplit("/", 1)[-1]

    @property
    def backward_call(self) -> bool:
        """An API call's backward (msprobe's `Functional.linear.0.backward`): it has its forward call's op
        type, but computes gradients from gradients, so no replay of the op type fits it."""
        return self.name.endswith(".backward")

    def tensors(self) -> Iterator[TensorRef]:
        for s in sorted(self.inputs):
            yield self.inputs[s]
        for s in sorted(self.outputs):
            yield self.outputs[s]

    def put(self, io: InOut, slot: int, tensor: TensorRef) -> None:
        """A reader adds a tensor to the op it builds."""
        _building(self, self.inputs if io == INPUT else self.outputs)[slot] = tensor

    def put_source(self, slot: int, source: InputSource) -> None:
        """A reader says where input `slot` comes from."""
        _building(self, self.sources)[slot] = source

    def freeze(self) -> None:
        """Once its dump is indexed: the op's mappings in compact form (slotmap.py); `put` is refused after."""
        self.inputs = SlotMap.of(self.inputs)
        self.outputs = SlotMap.of(self.outputs)
        self.sources = SlotMap.of(self.sources)


def _building(op: Op, side: Mapping[int, V]) -> dict[int, V]:
    if not isinstance(side, dict):
        raise TypeError(f"{op.key}: the op is frozen (its dump is indexed)")
    return side


@dataclass(eq=False)
class Dump:
    """An indexed dump: what was found, how it was read, and what could not be read."""

    path: str  # as given by the user
    root: str  # the folder the tensors were indexed from (rank level when known)
    format: FormatName
    variant: Reason | None = None  # how this dump spells things: a code (report/reasons.py words it)
    version: str | None = None  # framework version when known
    device: str | None = None  # device target when known
    rank: str | None = None
    graphs: list[str] = field(default_factory=list)
    iterations: dict[str, str] = field(default_factory=dict)  # graph -> iteration used
    ops: list[Op] = field(default_factory=list)  # kernels in execution order, then the rest
    problems: list[Problem] = field(default_factory=list)
    order_source: OrderSource | Reason = OrderSource.FILE_NAMES  # a Reason: ranks interleaved (ranks/merge.py)
    statistics_only: bool = False
    # dataflow over op keys, when a graph file was read (or inferred): a networkx graph while a reader builds
    # it, frozen into a compact FlowGraph once the dump is indexed (formats.open_dump)
    graph: nx.DiGraph | FlowGraph | None = None
    graph_source: str | None = None
    notes: list[Said] = field(default_factory=list)  # report/reasons.py words them
    flow_inferred: bool = False  # the dataflow was inferred (msprobe: from matching statistics), not read
    # why this part of the dump was opened when the user let dumptui choose it (`--step all` in the app)
    selection_note: str = ""
    parameters: dict[str, bool] = field(default_factory=dict)  # graph parameter name -> is a weight (else an input)
    # the folders (with their separator) whose every tensor file indexing found a regular file, no link
    # (formats/filecheck.py): their files are opened without a stat first (io/safeio.py `listed_regular`)
    plain_folders: frozenset[str] = frozenset()
    _by_key: dict[str, Op] | None = field(default=None, repr=False)

    def __repr__(self) -> str:
        return f"Dump({self.root!r}, {self.format}, {len(self.ops)} ops)"

    @property
    def kernels(self) -> list[Op]:
        return [op for op in self.ops if op.kind == KERNEL]

    def op(self, key: str) -> Op | None:
        if self._by_key is None:
            self._by_key = {op.key: op for op in self.ops}
        return self._by_key.get(key)

    def freeze(self) -> None:
        """Once indexed: every op's mappings and the dataflow graph in compact, read-only form (a session
        keeps them for as long as it runs; slotmap.py, flowgraph.py)."""
        from dumptui.core.model.flowgraph import FlowGraph

        for op in self.ops:
            op.freeze()
        if self.graph is not None:
            self.graph = FlowGraph.freeze(self.graph)

    def tensor_count(self) -> int:
        return sum(len(op.inputs) + len(op.outputs) for op in self.ops)
