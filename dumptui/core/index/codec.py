"""A `Dump` as columns of plain values, and back: the form the index cache stores.

Pickling the objects themselves costs a reduce call and a state dict per op and per tensor (seconds for a
million-file dump); columns of strings and small ints load in a fraction of that, and rebuilding
the objects from them is one constructor call each. Repeated values (io, format, dtype, shape; op type,
kind, graph; a tensor's folder) are stored once in a table and referenced by number; a tensor keeps its
folder and its file name apart (model.TensorRef), so neither is copied or joined while loading. What is not a bulk column (the graph, problems, notes, an op's
sources/attributes/code where a graph file gave them) is pickled as it is.

Tensor layouts are not stored: they are read from the files on first need, as after a fresh index. A tensor
refused while indexing (a bad dump.json record, a FIFO) keeps its refusal and reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from dumptui.core.io.fault import Fault
from dumptui.core.io.indexing_progress import Stage, counted
from dumptui.core.model.dump import Dump, InputSource, Op, TensorRef
from dumptui.core.model.flowgraph import FlowGraph
from dumptui.core.model.numbers import counting, shared
from dumptui.core.model.slotmap import EMPTY, SlotMap

# 3: refusals kept; 4: frozen ops (SlotMap) and graph (FlowGraph); 5: tensors' folders apart; 6: names in parts
# 7: the modules moved into core/ folders (pickled class paths changed); 8: statistics records packed
# 9: names' and order's sources as codes, notes as reasons, Dump.flow_inferred; 10: problems' severities as codes
# 11: tensors' sides (input/output) as codes; 12: input sources' kinds as codes; 13: ops' kinds as codes
# 14: dumps' format names as codes; 15: why a file cannot be read as a code (io/fault.py Fault)
# 16: a dump's variant as a code (a Reason of the readers' codes), not words
# 17: reasons (a dump's notes, its variant) with slots: pickled as a tuple of values, not a dict
# 18: an msprobe backward call's forward inputs numbered after its own (no two inputs share a slot)
# 19: Dump.plain_folders (the folders of regular files only, opened without a stat)
FORMAT_VERSION = 19


class _Table:
    """Distinct values in first-seen order, each referenced by its number."""

    def __init__(self) -> None:
        self.values: list[Any] = []
        self._index: dict[Any, int] = {}

    def ref(self, value: Any) -> int:
        i = self._index.get(value)
        if i is None:
            i = self._index[value] = len(self.values)
            self.values.append(value)
        return i


def split_at_timestamp(name: str, timestamp: int | None) -> tuple[str, str | None]:
    """A file name as (the text up to its timestamp, the text after it) when it spells the timestamp as
    `.<timestamp>.` (MindSpore's `Add.Default_Add-op0.0.0.1796214303518360.input.0.DefaultFormat.Float32.npy`),
    else (the name, None). `stem + str(timestamp) + tail` is the name again, exactly."""
    if timestamp is not None:
        mark = f".{timestamp}."
        i = name.find(mark)
        if i >= 0:
            return name[: i + 1], name[i + len(mark) - 1 :]
    return name, None


def encode(dump: Dump) -> dict[str, Any]:
    """The dump as columns (see the module docstring); `decode` gives an equal dump back."""
    kinds, small = _Table(), _Table()  # kinds: (io, fmt, dtype, shape) of tensors; small: op strings
    tensor_index: dict[int, int] = {}
    t_kind: list[int] = []
    folders = _Table()
    t_folder: list[int] = []
    stems, tails = _Table(), _Table()  # file names around their timestamp (see split_at_timestamp)
    t_stem: list[int] = []
    t_tail: list[int] = []  # -1: the stem is the whole name
    t_slot: list[int] = []
    t_ts: list[int | None] = []
    t_extra: dict[int, tuple[Any, Any, Any]] = {}  # tensor -> (layout_fn, stats, size_on_disk) when any is set
    t_refused: dict[int, Fault] = {}  # tensor -> why it was refused while indexing (a bad record, a FIFO...)

    def tensor(t: TensorRef) -> int:
        i = tensor_index.get(id(t))
        if i is not None:
            return i
        i = tensor_index[id(t)] = len(t_stem)
        folder, name = t.folder_and_name
        t_folder.append(folders.ref(folder))
        stem, tail = split_at_timestamp(name, t.timestamp)
        t_stem.append(stems.ref(stem))
        t_tail.append(-1 if tail is None else tails.ref(tail))
        t_kind.append(kinds.ref((t.io, t.fmt, t._dtype, t._shape)))
        t_slot.append(t.slot)
        t_ts.append(t.timestamp)
        if t._layout_fn is not None or t.stats is not None or t.size_on_disk is not None:
            t_extra[i] = (t._layout_fn, t.stats, t.size_on_disk)
        if t.refused:
            assert t.problem is not None  # refused: its layout says why
            t_refused[i] = t.problem
        return i

    o_kind: list[int] = []  # (op type, kind, graph, name source, inputs, outputs) by number
    o_names: list[str] = []  # name, file name, key per op (the same string more often than not)
    o_ints: list[int | None] = []  # order, timestamp, call per op
    slots: list[int] = []  # per tensor of each op, inputs then outputs: its slot and its tensor
    members: list[int] = []
    o_extra: dict[int, tuple[Any, Any, Any, Any]] = {}  # op -> (sources, attrs, code, fused) when any is set
    # an input's source names its producer by key: pickled as the producer's own key string (pickle keeps
    # one copy of an object), the loaded index holds one string where it held two (~2 MB of the 20,000-op
    # demo pair, whose graph file spells each producer's name again)
    keys = {op.key: op.key for op in dump.ops}
    for i, op in enumerate(counted(Stage.STORING, dump.ops)):
        o_kind.append(small.ref((op.op_type, op.kind, op.graph, op.name_source, len(op.inputs), len(op.outputs))))
        o_names += (op.name, op.file_name, op.key)
        o_ints += (op.order, op.timestamp, op.call)
        for side in (op.inputs, op.outputs):
            for slot, t in side.items():
                slots.append(slot)
                members.append(tensor(t))
        if op.sources or op.attrs or op.code or op.fused:
            o_extra[i] = (_sources_by_key(op.sources, keys), op.attrs, op.code, op.fused)
    return {
        "version": FORMAT_VERSION,
        "dump": replace(dump, ops=[], _by_key=None),
        "t_kinds": kinds.values,
        "t_kind": t_kind,
        "t_folders": folders.values,
        "t_folder": t_folder,
        "t_stems": stems.values,
        "t_stem": t_stem,
        "t_tails": tails.values,
        "t_tail": t_tail,
        "t_slot": t_slot,
        "t_ts": t_ts,
        "t_extra": t_extra,
        "t_refused": t_refused,
        "o_kinds": small.values,
        "o_kind": o_kind,
        "o_names": o_names,
        "o_ints": o_ints,
        "slots": slots,
        "members": members,
        "o_extra": o_extra,
    }


def _sources_by_key(sources: Mapping[int, InputSource], keys: dict[str, str]) -> Mapping[int, InputSource]:
    """The sources with each producer's key as the producer's own string (the same text)."""
    if all(keys.get(src.ref, src.ref) is src.ref for src in sources.values()):
        return sources
    return SlotMap.of({slot: replace(src, ref=keys.get(src.ref, src.ref)) for slot, src in sources.items()})


def decode(cols: dict[str, Any], texts: dict[str, str] | None = None) -> Dump:
    """The dump `encode` took apart. ValueError for columns of another format version.

    `texts` (text -> the string object kept for it): the op keys, names and file names and the tensors' file
    names, wherever `texts` has their text already, as its strings, and the others added to it. Given the
    same dict for both dumps of a pair (options/pair.py), the second shares every name the first spells
    alike: a session keeps both indexes (~9 MB of the 20,000-op demo pair). Only which object holds a text
    changes, never the text."""
    if cols.get("version") != FORMAT_VERSION:
        raise ValueError(f"index columns of version {cols.get('version')!r}, not {FORMAT_VERSION}")
    kinds, folders, in_folder = cols["t_kinds"], cols["t_folders"], TensorRef.in_folder
    stems, tails = cols["t_stems"], cols["t_tails"]
    o_names = cols["o_names"]
    sharing = bool(texts)  # the first dump only fills `texts`
    if texts is not None:
        if sharing:
            share = texts.setdefault
            stems, tails, o_names = (
                [share(s, s) for s in stems],
                [share(s, s) for s in tails],
                [share(s, s) for s in o_names],
            )
        else:
            for strings in (stems, tails, o_names):
                texts.update(zip(strings, strings))
    tensors = []
    # An op's files share its timestamp, and the op's own is the earliest of them: one int object each, not
    # one per file and per op (pickle keeps no int shared; ~5 MB of the 20,000-op demo pair's index)
    stamps: dict[Any, Any] = {}
    for kind, folder, stem, tail, slot, ts in zip(
        cols["t_kind"], cols["t_folder"], cols["t_stem"], cols["t_tail"], cols["t_slot"], cols["t_ts"]
    ):
        ts = stamps.setdefault(ts, ts)
        io, fmt, dtype, shape = kinds[kind]
        name = stems[stem] if tail < 0 else (stems[stem], ts, tails[tail])
        tensors.append(in_folder(folders[folder], name, io, slot, dtype, shape, fmt, ts))
    for i, (layout_fn, stats, size_on_disk) in cols["t_extra"].items():
        tensors[i].set_extra(layout_fn, stats, size_on_disk)
    for i, reason in cols["t_refused"].items():
        tensors[i].refuse(reason)
    slots = cols["slots"]
    members = [tensors[i] for i in cols["members"]]
    o_ints, o_kinds = cols["o_ints"], cols["o_kinds"]
    counting(len(cols["o_kind"]))  # an op's order: one of the process's shared numbers (model/numbers.py)
    ops: list[Op] = []
    pos = 0
    for i, kind in enumerate(counted(Stage.CACHE, cols["o_kind"])):
        typ, op_kind, graph, source, n_in, n_out = o_kinds[kind]
        mid, end = pos + n_in, pos + n_in + n_out
        j = 3 * i
        ops.append(
            Op(
                o_names[j],
                typ,
                op_kind,
                graph,
                o_names[j + 1],
                SlotMap.from_parts(tuple(slots[pos:mid]), tuple(members[pos:mid])),
                SlotMap.from_parts(tuple(slots[mid:end]), tuple(members[mid:end])),
                shared(o_ints[j]),
                stamps.get(o_ints[j + 1], o_ints[j + 1]),
                source,
                EMPTY,
                EMPTY,
                (),
                o_names[j + 2],
                o_ints[j + 2],
            )
        )
        pos = end
    for i, (sources, attrs, code, fused) in cols["o_extra"].items():
        op = ops[i]
        op.sources, op.attrs, op.code, op.fused = sources, attrs, code, fused
        if sharing:
            assert texts is not None
            for src in sources.values():
                ref = texts.get(src.ref, src.ref)
                if ref is not src.ref:  # (a producer's key: unpickled as this dump's own string, just replaced)
                    # the source was unpickled for this op a moment ago: nothing else holds it yet
                    object.__setattr__(src, "ref", ref)
    dump: Dump = cols["dump"]
    dump.ops = ops
    if sharing and isinstance(dump.graph, FlowGraph):
        assert texts is not None
        dump.graph.share_keys(texts)
    return dump
