"""msprobe dumps (MindStudio probe, PyTorch or MindSpore API level), docs/formats.md#msprobe-dumps.

    {dump_path}/step{N}/rank{R}/ (or proc{PID}/) dump.json, construct.json, stack.json, dump_tensor_data/*.pt|*.npy

Each `dump.json` entry is an API call (`Functional.linear.0.forward`) or a module call
(`Module.fc1.Linear.forward.0`), with records for its inputs, outputs and, for modules, parameters. API calls
become ops in the order of the file; module calls are containers: their parameters become parameter ops
(`fc1.weight`). Task `statistics` gives records without data: compared on their Max/Min/Mean/Norm.

There is no graph file. Dataflow is inferred from the records: an input whose dtype, shape and statistics
are those of an earlier output was produced by that op; an input matching a module parameter is that
parameter; anything else is an input no op produced (the network input, a weight, a constant).
"""

from __future__ import annotations

import copy
import dataclasses
import math
import os
import re
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from dumptui.core.formats.files import list_dir, numbered_subdirs
from dumptui.core.formats.reader import Selection, choose_one
from dumptui.core.formats.torchpt import pt_layout
from dumptui.core.io import dtypes, jsonstream, limits
from dumptui.core.io.errors import DumpError
from dumptui.core.io.fault import Fault, Flaw
from dumptui.core.io.indexing_progress import Stage, counted
from dumptui.core.io.npy import Layout, npy_layout
from dumptui.core.io.safeio import open_regular
from dumptui.core.model import recordstats
from dumptui.core.model.dump import (
    INPUT,
    KERNEL,
    OUTPUT,
    PARAMETER,
    WEIGHT_ATTRS,
    Dump,
    FormatName,
    InOut,
    InputSource,
    NameSource,
    Op,
    OrderSource,
    Problem,
    Severity,
    SourceKind,
    TensorRef,
)
from dumptui.core.model.flowgraph import FlowGraph, FlowGraphBuilder
from dumptui.core.model.reason import Why, because
from dumptui.core.model.slotmap import SlotMap

STEP_DIR = re.compile(r"^step(\d+)$")
RANK_DIR = re.compile(r"^(rank\d*|proc\d+)$")
DUMP_JSON = "dump.json"

Record = dict[str, Any]  # a tensor record of dump.json
# (dtype, shape, max, min, mean, norm) of a record: equal signatures are taken for the same tensor
Signature = tuple[str, int, float, float, float, float]  # dtype, elements, max, min, mean, L2 norm


def looks_like(path: str) -> bool:
    """A dump.json where _choose_dir reads one: in `path`, a rank folder, or a rank folder of a step folder.
    (A stray dump.json deeper in another format's tree is not an msprobe dump: it must not hide that dump.)"""
    if os.path.isfile(os.path.join(path, DUMP_JSON)):
        return True
    for base in [path, *numbered_subdirs(path, STEP_DIR).values()]:
        for sub in list_dir(base):
            if RANK_DIR.match(sub) and os.path.isfile(os.path.join(base, sub, DUMP_JSON)):
                return True
    return False


def _choose_dir(path: str, rank: str | None, iteration: str | None) -> str:
    """The folder of the one dump.json to read: step{N}/rank{R} (or proc{PID}), as selected."""
    if os.path.isfile(os.path.join(path, DUMP_JSON)):
        return path
    base = path
    steps = numbered_subdirs(path, STEP_DIR)
    if steps:
        steps = {n: steps[n] for n in sorted(steps, key=int)}
        _step, base = choose_one(path, steps, iteration, "step", "--step N")
    ranks = sorted(s for s in list_dir(base) if RANK_DIR.match(s) and os.path.isfile(os.path.join(base, s, DUMP_JSON)))
    if not ranks:
        raise DumpError(path, "no msprobe dump.json found")
    if rank is not None:
        want = [r for r in ranks if r in (f"rank{rank}", f"proc{rank}")]
        if not want:
            raise DumpError(path, f"no rank {rank}; here: {', '.join(ranks)}")
        ranks = want
    elif len(ranks) > 1:
        raise DumpError(path, f"several ranks ({', '.join(ranks)}): choose one with --rank N")
    return os.path.join(base, ranks[0])


def _tensor_records(value: Any, prefix: str) -> Iterator[tuple[str, Record]]:
    """(label, record) for every tensor record in an args list/dict, nested lists flattened in order."""
    if isinstance(value, dict):
        if "type" in value and ("shape" in value or "dtype" in value):
            yield prefix, value
            return
        for k, v in value.items():
            yield from _tensor_records(v, f"{prefix}.{k}" if prefix else k)
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            yield from _tensor_records(v, f"{prefix}.{i}" if prefix else str(i))


def _is_tensor(rec: Record) -> bool:
    return "Tensor" in str(rec.get("type", "")) or "shape" in rec and rec.get("dtype") is not None


def call_tensors(entry: Record) -> tuple[list[tuple[str, Record]], list[tuple[str, Record]]]:
    """An API call's tensor records, inputs (args then kwargs; a backward call's `input`, the gradients it
    receives) and outputs, each with msprobe's suffix of the tensor name (`input.0`, `input.3.1`, `input.bias`,
    `output.0`): slot N is the Nth in these lists."""
    ins = [
        (f"input.{label}", rec)
        for value in (entry.get("input_args") or [], entry.get("input_kwargs") or {}, entry.get("input") or [])
        for label, rec in _tensor_records(value, "")
        if _is_tensor(rec)
    ]
    outs = [
        (f"output.{label}", rec) for label, rec in _tensor_records(entry.get("output") or [], "") if _is_tensor(rec)
    ]
    return ins, outs


MAX_ATTR_TEXT = 200  # a scalar argument's text kept for comparison (longer ones are cut, and say so)


def call_attrs(entry: Record) -> dict[str, str]:
    """The arguments of a call that are not tensors, as attributes compared across the dumps: positional
    scalars as `scalar input N` (N the argument's position), keyword ones by name (`op`: SUM, MAX...), a
    collective's process group as `group` (its ranks, `0,1`; `world` for the default group)."""
    out: dict[str, str] = {}
    args = entry.get("input_args")
    if isinstance(args, list):
        for i, rec in enumerate(args):
            text = _scalar_text(rec)
            if text is not None:
                out[f"scalar input {i}"] = text
    kwargs = entry.get("input_kwargs")
    if isinstance(kwargs, dict):
        for name, rec in kwargs.items():
            if isinstance(rec, dict) and "ProcessGroup" in str(rec.get("type", "")):
                ranks = rec.get("group_ranks")
                if isinstance(ranks, list) and all(type(r) is int for r in ranks):
                    out["group"] = ",".join(str(r) for r in sorted(ranks))
            elif name == "group" and rec is None:
                out["group"] = "world"
            else:
                text = _scalar_text(rec)
                if text is not None:
                    out[str(name)[:MAX_ATTR_TEXT]] = text
    return out


def _scalar_text(rec: Any) -> str | None:
    """A non-tensor record's value as text (`0.5`, `SUM`, `(16)`), or None for a tensor or nothing."""
    if isinstance(rec, list):
        parts = [_scalar_text(r) for r in rec]
        return None if not parts or any(p is None for p in parts) else "(" + ", ".join(p or "" for p in parts) + ")"
    if not isinstance(rec, dict) or _is_tensor(rec) or "value" not in rec:
        return None
    value = rec["value"]
    if not isinstance(value, (int, float, str, bool)) and value is not None:
        return None
    text = str(value)
    if text.startswith("RedOpType.") or text.startswith("ReduceOp."):  # torch.distributed.ReduceOp
        text = text.split(".", 1)[1]
    return text if len(text) <= MAX_ATTR_TEXT else text[:MAX_ATTR_TEXT] + "…"


StatValues = tuple[float | None, float | None, float | None, float | None]  # max, min, mean, L2 norm


def _stat_values(rec: Record) -> StatValues:
    """A record's Max, Min, Mean and Norm, each a float (NaN and Inf included) or None."""
    number = limits.finite_number
    return (number(rec.get("Max")), number(rec.get("Min")), number(rec.get("Mean")), number(rec.get("Norm")))


def _record_shape(rec: Record) -> tuple[int, ...]:
    """The shape of a record (a missing one is 0-d); BadValue when it is not a list of dimensions."""
    value = rec.get("shape")
    return () if value is None else limits.shape(value, "shape")


class _Signatures:
    """Each tensor's signature packed in 42 bytes (dtype number, elements, max, min, mean, L2 norm): equal
    bytes are equal signatures (-0.0 made 0.0 first). A million-call dump keeps three per call until its
    dataflow is inferred: tuples of Python floats cost five times as much."""

    _PACK = struct.Struct("<Hq4d")

    def __init__(self) -> None:
        self.dtypes: dict[str, int] = {}
        self.names: list[str] = []

    def of(self, rec: Record, shape: tuple[int, ...] | None, values: StatValues) -> bytes | None:
        """The signature of `rec`, whose shape (None: not a valid one) and statistics are read already."""
        mx, mn, mean, l2 = values
        if mx is None or mn is None or mean is None or l2 is None or shape is None:
            return None
        dtype = str(rec.get("dtype"))
        number = self.dtypes.get(dtype)
        if number is None:
            if len(self.names) > 0xFFFF:
                return None  # more distinct dtype spellings than any dump has: not matched
            number = self.dtypes[dtype] = len(self.names)
            self.names.append(dtype)
        elements = math.prod(shape)
        if elements >= 1 << 63:
            return None
        # the number of elements, not the shape: a view, reshape, flatten or transpose msprobe does not record
        # keeps every value, and its consumer's input is still the producer's output
        return self._PACK.pack(number, elements, mx + 0.0, mn + 0.0, mean + 0.0, l2 + 0.0)

    def unpack(self, sig: bytes) -> Signature:
        number, elements, mx, mn, mean, l2 = self._PACK.unpack(sig)
        return (self.names[number], elements, mx, mn, mean, l2)


# significant bits (with the implicit one) of the float dtypes a cast can move a tensor between
_SIGNIFICANT_BITS = {"torch.bfloat16": 8, "torch.float16": 11, "torch.float32": 24, "torch.float64": 53}


def _rounded(x: float, bits: int) -> float:
    """x rounded to nearest (ties to even) with `bits` significant bits: what a cast to that dtype keeps."""
    if x == 0 or not math.isfinite(x):
        return x
    mantissa, exponent = math.frexp(x)
    return math.ldexp(round(mantissa * (1 << bits)), exponent - bits)


def _same_after_cast(produced: Signature, consumed: Signature) -> bool:
    """Whether `consumed` is `produced` moved to another float dtype by a cast msprobe did not record
    (`.to(bfloat16)`, `.float()`): the same number of elements, the same max and min once rounded to the
    narrower dtype, and mean and L2 norm within what that rounding (and msprobe computing them in the narrow
    dtype) can change."""
    bits_p, bits_c = _SIGNIFICANT_BITS.get(produced[0]), _SIGNIFICANT_BITS.get(consumed[0])
    if bits_p is None or bits_c is None or produced[0] == consumed[0] or produced[1] != consumed[1]:
        return False
    bits = min(bits_p, bits_c)
    if any(_rounded(a, bits) != _rounded(b, bits) for a, b in zip(produced[2:4], consumed[2:4])):
        return False
    tolerance = 2.0 ** -(bits - 3)
    l2_p, l2_c = produced[5], consumed[5]
    rms = max(l2_p, l2_c) / math.sqrt(max(produced[1], 1))
    return abs(l2_p - l2_c) <= tolerance * max(l2_p, l2_c) and abs(produced[4] - consumed[4]) <= tolerance * rms


def _pt_file_layout(path: str) -> Layout:
    return pt_layout(path)[0]


def _as_recorded(read_layout: Callable[[str], Layout], path: str, shape: tuple[int, ...]) -> Layout:
    """The layout of a tensor file, which must hold as many elements as its dump.json record says."""
    lay = read_layout(path)
    if lay.problem is None and lay.shape is not None and limits.elements(lay.shape) != limits.elements(shape):
        return dataclasses.replace(
            lay, storage=None, problem=Fault(Flaw.SHAPE_DISAGREES, (tuple(shape), tuple(lay.shape)))
        )
    return lay


def _data_file(value: Any) -> str:
    """A record's `data_name`: a plain file name in dump_tensor_data (never a path that leaves it)."""
    name = limits.text(value, "data_name")
    if not name or name in (".", "..") or "/" in name or "\\" in name or "\x00" in name:
        raise limits.BadValue(f"data_name {limits.brief(name)} is not a file name in dump_tensor_data")
    return name


@dataclass
class _Calls:
    """The ops of a dump.json: API calls in file order, module parameters, and each tensor's record."""

    data_dir: str
    ops: list[Op] = field(default_factory=list)
    params: dict[str, Op] = field(default_factory=dict)
    param_of: dict[bytes, str] = field(default_factory=dict)  # signature -> parameter name
    signatures: _Signatures = field(default_factory=_Signatures)
    # per API call (as `ops`): its inputs' and outputs' signatures, by slot, until the dataflow is inferred
    op_signatures: list[tuple[tuple[bytes | None, ...], tuple[bytes | None, ...]]] = field(default_factory=list)
    forward: dict[str, int] = field(default_factory=dict)  # a forward call's name -> its number
    # equal values made one object while the dump is read (a consumer's input record repeats its producer's
    # output record): shapes, packed statistics, op types
    shared: dict[Any, Any] = field(default_factory=dict)

    def record(self, rec: Record, io: InOut, slot: int, where: str) -> tuple[TensorRef, bytes | None]:
        """The tensor of a record and its signature (None when it has none); a record with a bad value is a
        tensor that cannot be read, saying why. A statistics record is kept packed (model/recordstats.py)."""
        dump_json = os.path.join(self.data_dir, DUMP_JSON)
        values = _stat_values(rec)
        try:
            shape = _record_shape(rec)
            name = rec.get("data_name")
            if name is not None:
                name = _data_file(name)
        except limits.BadValue as e:
            tref = TensorRef(dump_json, io, slot)
            tref.refuse(Fault(Flaw.BAD_RECORD, (where, io, slot, str(e))))
            try:
                return tref, self.signatures.of(rec, _record_shape(rec), values)
            except limits.BadValue:
                return tref, None
        shared = self.shared
        shape = shared.setdefault(shape, shape)
        dt = dtypes.canonical(rec.get("dtype"))
        if not name:
            packed = recordstats.pack(values)
            tref = TensorRef.statistics_only(
                self.data_dir + os.sep, DUMP_JSON, io, slot, dt, shape, shared.setdefault(packed, packed)
            )
        else:
            path = os.path.join(self.data_dir, "dump_tensor_data", name)
            read_layout = _pt_file_layout if name.endswith(".pt") else npy_layout
            tref = TensorRef(
                path, io, slot, dtype=dt, shape=shape, layout_fn=partial(_as_recorded, read_layout, path, shape)
            )
        return tref, self.signatures.of(rec, shape, values)

    def add_module(self, name: str, entry: Record, problems: list[Problem]) -> None:
        """A module call is a container: its parameters are the network's weights, named by the module's
        whole path (`Module.layers.0.attn.Linear.forward.0` -> `layers.0.attn.weight`): in a nested model
        the first segment alone would give every layer's weight one name."""
        scope = module_path(name)
        parameters = entry.get("parameters") or {}
        if not isinstance(parameters, dict):
            where = os.path.join(self.data_dir, DUMP_JSON)
            reason = Fault(Flaw.PARAMETERS_NOT_OBJECT, (name, limits.kind_of(parameters)))
            problems.append(Problem(where, reason, Severity.WARNING))
            return
        for pname, rec in parameters.items():
            full = f"{scope}.{pname}"
            if full in self.params or not isinstance(rec, dict):
                continue
            op = Op(
                name=full, op_type="Parameter", kind=PARAMETER, file_name=full, name_source=NameSource.MODULE_PARAMETER
            )
            tref, sig = self.record(rec, OUTPUT, 0, full)
            op.put(OUTPUT, 0, tref)
            op.attrs = WEIGHT_ATTRS
            self.params[full] = op
            if sig:
                self.param_of.setdefault(sig, full)

    def add_api_call(self, name: str, entry: Record, problems: list[Problem]) -> None:
        for key in ("input_args", "input_kwargs", "output"):
            value = entry.get(key)
            if value is not None and not isinstance(value, (list, dict)):
                # a tensor list replaced by a number would drop its tensors unnamed
                reason = Fault(Flaw.CALL_FIELD_NOT_LIST, (key, name, limits.kind_of(value), limits.brief(value)))
                problems.append(Problem(os.path.join(self.data_dir, DUMP_JSON), reason, Severity.WARNING))
        parts = name.split(".")
        op_type = parts[1] if len(parts) > 1 else name
        op = Op(
            name=name,
            op_type=self.shared.setdefault(op_type, op_type),
            kind=KERNEL,
            file_name=name,
            name_source=NameSource.DUMP_JSON,
        )
        ins, outs = call_tensors(entry)
        attrs = call_attrs(entry)
        if attrs:
            op.attrs = attrs
        inputs = [self.record(rec, INPUT, slot, name) for slot, (_label, rec) in enumerate(ins)]
        outputs = [self.record(rec, OUTPUT, slot, name) for slot, (_label, rec) in enumerate(outs)]
        in_tensors = tuple(t for t, _sig in inputs)
        in_sigs = tuple(sig for _t, sig in inputs)
        if name.endswith(".forward"):
            self.forward[name] = len(self.ops)
        elif name.endswith(".backward"):
            # a backward call also reads what its forward call saved (its inputs): those are inputs of it
            # too, or its error would seem born from gradients that agree
            number = self.forward.get(name[: -len("backward")] + "forward")
            if number is not None:
                # as its inputs after its own (a copy each: the forward's tensor keeps its slot there), so no
                # two inputs of the backward share a slot in any view
                own = len(in_tensors)
                in_tensors += tuple(_as_slot(t, own + i) for i, t in enumerate(self.ops[number].inputs.values()))
                in_sigs += self.op_signatures[number][0]
        # the op's tensors in their compact form at once (a dict each until the dump is frozen raised the peak)
        op.inputs = SlotMap.from_parts(None, in_tensors)
        op.outputs = SlotMap.from_parts(None, tuple(t for t, _sig in outputs))
        op.order = len(self.ops)
        self.ops.append(op)
        self.op_signatures.append((in_sigs, tuple(sig for _t, sig in outputs)))


def _as_slot(t: TensorRef, slot: int) -> TensorRef:
    """`t` (the same file, layout and statistics) as input `slot` of another op."""
    twin = copy.copy(t)
    twin.slot = slot
    return twin


def module_path(call: str) -> str:
    """The module's path in a module call's name, `{Module|Cell}.{path}.{Class}.{forward|backward}.{n}`;
    a name of another shape keeps its second segment, as before."""
    parts = call.split(".")
    if len(parts) >= 5 and parts[-2] in ("forward", "backward") and parts[-1].isdigit():
        return ".".join(parts[1:-3])
    return parts[1] if len(parts) > 1 else call


class _Produced:
    """The outputs produced so far, by signature (the latest production of a signature last), and an index
    to find the latest output an input is after a cast: by element count and max and min rounded to each
    precision a cast can narrow to. (Trying every earlier output made a million-call dump quadratic.)"""

    def __init__(self, signatures: _Signatures):
        self.signatures = signatures
        self.by_sig: dict[bytes, int] = {}  # signature -> its latest production's number
        self.sig_of: list[bytes] = []  # production number -> signature, op key, output slot
        self.key_of: list[str] = []
        self.slot_of: list[int] = []
        self.cast_index: dict[int, int | list[int]] = {}  # hash of (bits, elements, max, min) -> production numbers

    def get(self, sig: bytes) -> tuple[str, int] | None:
        number = self.by_sig.get(sig)
        return None if number is None else (self.key_of[number], self.slot_of[number])

    def add(self, sig: bytes, key: str, slot: int) -> None:
        number = len(self.sig_of)
        self.sig_of.append(sig)
        self.key_of.append(key)
        self.slot_of.append(slot)
        self.by_sig[sig] = number
        dtype, elements, mx, mn, _mean, _l2 = self.signatures.unpack(sig)
        bits = _SIGNIFICANT_BITS.get(dtype)
        if bits is None:
            return
        for level in _CAST_LEVELS:
            if level <= bits:
                self._index(hash((level, elements, _rounded(mx, level), _rounded(mn, level))), number)

    def _index(self, h: int, number: int) -> None:
        held = self.cast_index.get(h)
        if held is None:
            self.cast_index[h] = number
        elif isinstance(held, list):
            held.append(number)
        else:
            self.cast_index[h] = [held, number]

    def after_cast(self, sig: bytes) -> tuple[str, int] | None:
        """The latest output that `sig` is after a cast between float dtypes, if any."""
        consumed = self.signatures.unpack(sig)
        bits_c = _SIGNIFICANT_BITS.get(consumed[0])
        if bits_c is None:
            return None
        candidates: set[int] = set()
        for bits_p in _SIGNIFICANT_BITS.values():
            level = min(bits_p, bits_c)
            if level not in _CAST_LEVELS:
                continue
            held = self.cast_index.get(
                hash((level, consumed[1], _rounded(consumed[2], level), _rounded(consumed[3], level)))
            )
            if held is not None:
                candidates.update(held if isinstance(held, list) else (held,))
        for number in sorted(candidates, reverse=True):
            out_sig = self.sig_of[number]
            if self.by_sig.get(out_sig) != number:
                continue  # produced again later: that later production is the one to find
            if _same_after_cast(self.signatures.unpack(out_sig), consumed):
                return self.key_of[number], self.slot_of[number]
        return None


# the precisions a cast between two of _SIGNIFICANT_BITS's dtypes rounds to (the narrower of the two)
_CAST_LEVELS = (8, 11, 24)


def _input_source(
    calls: _Calls, op: Op, slot: int, sig: bytes | None, produced: _Produced, first: bool
) -> tuple[InputSource, tuple[str, int] | None]:
    """Where an input comes from, and the (key, output slot) of the graph edge that brings it when one does."""
    if sig is not None:
        # the output this input is, or else the latest output it is after a cast (bf16 autocast, `.to(float32)`)
        found = produced.get(sig) or produced.after_cast(sig)
        if found is not None:
            src_key, src_slot = found
            return InputSource(SourceKind.OP, src_key, src_slot), (src_key, src_slot)
    if sig is not None and sig in calls.param_of:
        return InputSource(SourceKind.PARAMETER, calls.param_of[sig]), (calls.param_of[sig], 0)
    if first and slot == 0:
        # nothing ran before the first call: its first input is the network input
        return InputSource(SourceKind.PARAMETER, f"{op.name}.input.0"), None
    # produced by something not dumped (e.g. a call outside the dumped level)
    return InputSource(SourceKind.INPUT, f"{op.name}.input.{slot}"), None


# calls whose values output reorders its input (the same statistics): never taken as the producer of a later
# read of those statistics, which is a read of the input (its producer's), not of the sorted copy
_REORDERING = frozenset({"sort", "msort", "topk"})


def _infer_dataflow(dump: Dump, calls: _Calls) -> FlowGraph:
    """Edges from matching records: an input equal (dtype, element count, statistics) to an earlier output,
    or equal to it after a cast between float dtypes, or to a module parameter, was produced by it. Fills the ops' `sources`; names the network input in `parameters`."""
    g = FlowGraphBuilder()
    for op in calls.ops:
        g.add_node(op.key, dumped=True, op_type=op.op_type, kind=KERNEL)
    for p in calls.params.values():
        g.add_node(p.key, dumped=True, op_type="Parameter", kind=PARAMETER)
    produced = _Produced(calls.signatures)
    for i, (op, (in_sigs, out_sigs)) in enumerate(zip(calls.ops, calls.op_signatures)):
        sources = []
        for slot, sig in zip(op.inputs, in_sigs):
            src, edge = _input_source(calls, op, slot, sig, produced, first=i == 0)
            sources.append(src)
            if edge is not None:
                g.add_edge(edge[0], op.key, slots=[(edge[1], slot)])
            elif src.kind == SourceKind.PARAMETER:
                dump.parameters[src.ref] = False
        op.sources = SlotMap.from_parts(None, tuple(sources))  # every input slot, 0, 1, ... in order
        for slot, out_sig in zip(op.outputs, out_sigs):
            if out_sig is None or (op.op_type in _REORDERING and out_sig in in_sigs):
                continue  # a sorted copy has its input's statistics: a later read of them is of the input
            produced.add(out_sig, op.key, slot)  # the latest production of a signature is the one found
    calls.op_signatures.clear()
    return g.freeze()


def read_calls(path: str) -> Iterator[tuple[str, str, Any]]:
    """dump.json one member at a time (core/io/jsonstream.py): ("member", key, value) for the top-level fields
    (`task`, `level`...), ("entry", name, record) for each call of `data`, one at a time, so that a million
    calls never sit in memory as Python objects at once. DumpError when the file is not a JSON object, its
    `data` not an object, or one call larger than MAX_JSON_RECORD (named with what to do)."""
    try:
        with open_regular(path) as fh:
            for kind, key, value in counted(Stage.DUMP_JSON, jsonstream.members(fh, "data", limits.MAX_JSON_RECORD)):
                if kind == "document":
                    raise DumpError(
                        path, f"unreadable dump.json: the document is {limits.kind_of(value)}, not an object"
                    )
                if kind == "member" and key == "data" and value is not None:
                    raise DumpError(
                        path, f"unreadable dump.json: its data is {limits.kind_of(value)}, not an object of calls"
                    )
                yield kind, key, value
    except jsonstream.RecordTooLarge as e:
        raise DumpError(
            path,
            f"unreadable dump.json: {e}; msprobe writes a few KB per call: the file is damaged, or dump fewer calls (msprobe's `list` or `scope` in config.json)",
        ) from None
    except OSError as e:
        raise DumpError(path, f"unreadable dump.json: {e.strerror or e}") from None
    except ValueError as e:
        raise DumpError(path, f"unreadable dump.json: {e}") from None


def _word(value: Any) -> str:
    """A descriptive field of dump.json (task, level, framework), as the variant shows it."""
    return value if isinstance(value, str) and len(value) <= 40 else limits.brief(value)


def open_msprobe(path: str, selection: Selection) -> Dump:
    d = _choose_dir(path, selection.rank, selection.iteration)
    dj = os.path.join(d, DUMP_JSON)
    fields: dict[str, Any] = {}
    problems: list[Problem] = []
    calls = _Calls(d)
    seen: set[str] = set()
    for kind, name, entry in read_calls(dj):
        if kind == "member":
            fields[name] = entry
        elif name in seen:
            problems.append(Problem(dj, Fault(Flaw.ENTRY_TWICE, (limits.cut(name),)), Severity.WARNING))
        elif not isinstance(entry, dict):
            seen.add(name)
            problems.append(Problem(dj, Fault(Flaw.ENTRY_NOT_OBJECT, (name,)), Severity.WARNING))
        else:
            seen.add(name)
            if name.startswith("Module.") or name.startswith("Cell."):
                calls.add_module(name, entry, problems)
            else:
                calls.add_api_call(name, entry, problems)
    del seen
    calls.shared.clear()  # what it made one object stays one object
    task = fields.get("task", "?")
    statistics = task == "statistics"
    dump = Dump(
        path=path,
        root=d,
        format=FormatName.MSPROBE_STATISTICS if statistics else FormatName.MSPROBE,
        variant=because(
            Why.MSPROBE_VARIANT, _word(task), _word(fields.get("level", "?")), _word(fields.get("framework", "?"))
        ),
        device=None,
        rank=os.path.basename(d),
    )
    dump.problems.extend(problems)
    dump.statistics_only = statistics
    m = re.search(r"step(\d+)", d)
    dump.iterations = {"": m.group(1)} if m else {}
    dump.ops = calls.ops + list(calls.params.values())
    dump.graph = _infer_dataflow(dump, calls)
    dump.flow_inferred = True
    dump.order_source = OrderSource.DUMP_JSON
    dump.parameters.update({p: True for p in calls.params})
    return dump


class MsprobeReader:
    """The Reader of msprobe dumps (tensor and statistics tasks)."""

    name = FormatName.MSPROBE
    formats = (FormatName.MSPROBE, FormatName.MSPROBE_STATISTICS)
    priority = 40  # a dump.json names the format outright

    def looks_like(self, path: str) -> bool:
        return looks_like(path)

    def open(self, path: str, selection: Selection) -> Dump:
        return open_msprobe(path, selection)
