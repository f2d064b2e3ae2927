"""MindSpore native dumps, r1.3 and later (`.npy` per tensor, or `statistic.csv` only).

    {path}/rank_{R}/.dump_metadata/config.json          {"device_target": ..., "ms_version": ...}
    {path}/rank_{R}/{net}/{graph_id}/{iteration}/{op_type}.{op_name}.{task}.{stream}.{ts}.{io}.{slot}.{fmt}[.{dtype}].npy
    {path}/rank_{R}/{net}/{graph_id}/constants/Parameter.data-{N}...npy
    {path}/rank_{R}/graphs/ms_output_trace_code_graph_{g}.ir|.pb
    {path}/rank_{R}/execution_order/ms_execution_order_graph_{g}.csv

The path given may be the dump root, a rank folder, a net/graph folder or an iteration folder (see
`mindspore_locate`). Only file names, small csv/json files and the graph files are read here; tensor headers
are read on demand. The steps after the file listing are shared with the 1.x reader (`pipeline`).
"""

from __future__ import annotations

import os
import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from dumptui.core.formats.cann_file import RAW_NAME
from dumptui.core.formats.device_tensors import restore_original_shapes
from dumptui.core.formats.files import (
    CONSTANTS_DIR,
    RANK_DIR,
    SPECIAL_DIRS,
    list_dir,
    numeric_key,
    read_json_object,
    read_mapping_csv,
)
from dumptui.core.formats.mindspore_locate import MAPPING_FILE, STAT_FILE, Located, locate
from dumptui.core.formats.names import file_form, resolve_names
from dumptui.core.formats.pipeline import (
    assign_keys,
    foreign_file,
    link_dataflow,
    listed_positions,
    misnamed_file,
    number_in_order,
    read_graphs,
    read_orders,
)
from dumptui.core.formats.reader import Selection
from dumptui.core.formats.runs import separate_runs
from dumptui.core.formats.statistic_csv import StatisticHeader, statistic_rows
from dumptui.core.io import dtypes, limits
from dumptui.core.io.fault import Fault, Flaw, NamePattern, text
from dumptui.core.io.indexing_progress import Stage, counted
from dumptui.core.model.dump import (
    CONSTANT,
    INOUT_NAMED,
    INPUT,
    INPUT_ATTRS,
    KERNEL,
    OUTPUT,
    PARAMETER,
    WEIGHT_ATTRS,
    Dump,
    FormatName,
    InOut,
    NameSource,
    Op,
    OpKind,
    OrderSource,
    Problem,
    Severity,
    TensorRef,
)
from dumptui.core.model.ir import IRGraph
from dumptui.core.model.reason import Reason, Why, because
from dumptui.core.model.vocab import Word

NPY_NAME = re.compile(
    r"^(?P<type>[^.]+)\.(?P<name>.+)\.(?P<task>\d{1,20})\.(?P<stream>\d{1,20})\.(?P<ts>\d{1,20})\."
    r"(?P<io>input|output)\.(?P<slot>\d{1,9})(?:\.(?P<fmt>[A-Za-z][A-Za-z0-9_]*))?(?:\.(?P<dtype>[A-Za-z][A-Za-z0-9]*))?\.npy$"
)
SHORT_NAME = re.compile(r"^[A-Za-z0-9]+-op\d+$")
CONSTANT_PREFIX = CONSTANTS_DIR + "/"


class NpyName(NamedTuple):
    """The fields of a dump file name, as spelled there (NPY_NAME's groups, in order)."""

    op_type: str
    name: str  # the op name in file form (scope separators replaced), or the mapping.csv original
    task: str
    stream: str
    timestamp: str
    io: str  # "input" | "output"
    slot: str
    fmt: str | None
    dtype: str | None  # the dtype label (`Float32`); absent before r2.0


def parse_npy_name(fname: str, mapping: dict[str, str] | None = None) -> NpyName | None:
    """The fields of a dump file name, or None if it does not follow the pattern. `mapping` (from mapping.csv)
    gives the original name of a file MindSpore had to number because its name was too long."""
    if mapping:
        stem = fname[:-4] if fname.endswith(".npy") else fname
        if stem.isdigit() and stem in mapping:
            orig = mapping[stem]
            fname = orig if orig.endswith(".npy") else orig + ".npy"
    m = NPY_NAME.match(fname)
    if not m:
        return None
    rec = NpyName(*m.groups())
    if mapping and rec.name.isdigit() and rec.name in mapping:
        rec = rec._replace(name=mapping[rec.name])
    return rec


def _holds_dump_files(names: list[str], peek: int) -> bool:
    return STAT_FILE in names or any(NPY_NAME.match(n) for n in names[:peek])


def looks_like(path: str) -> bool:
    """Cheap test used by format detection: a rank level, or dump files here or up to two levels below."""
    names = _listdir_or_empty(path)
    if any(RANK_DIR.match(n) for n in names) or any(n in SPECIAL_DIRS for n in names):
        return True
    if _holds_dump_files(names, 200):
        return True
    # net or graph level: look one or two levels down, a few folders only
    for sub in (os.path.join(path, n) for n in names[:8]):
        if not os.path.isdir(sub):
            continue
        sub_names = _listdir_or_empty(sub)
        if _holds_dump_files(sub_names, 50):
            return True
        for subsub in (os.path.join(sub, m) for m in sub_names[:4]):
            if os.path.isdir(subsub) and any(NPY_NAME.match(x) for x in _listdir_or_empty(subsub)[:50]):
                return True
    return False


def _listdir_or_empty(path: str) -> list[str]:
    """os.listdir, [] when unreadable (unsorted: detection peeks at a few names and must not sort 100,000)."""
    try:
        return os.listdir(path)
    except OSError:
        return []


# One tensor found in a file name or a statistic.csv row (its timestamp, io and slot are the record's: no
# tuple of them per file while indexing).
_Record = TensorRef


@dataclass
class _Found:
    """What the file listing found: tensors per (graph, op name as in the file) and how the files spell things."""

    tensors: dict[tuple[str, str], list[_Record]] = field(default_factory=lambda: defaultdict(list))
    op_types: dict[tuple[str, str], str] = field(default_factory=dict)
    npy_files: int = 0
    with_dtype: int = 0  # npy file names with the .{dtype} suffix
    statistic_rows: int = 0
    statistic_variant: StatisticHeader | None = None


def _list_statistic_csv(graph: str, path: str, found: _Found, problems: list[Problem]) -> None:
    skipped: list[Fault] = []
    try:
        found.statistic_variant, rows = statistic_rows(path, skipped)
        for r in rows:  # one row at a time: only the tensors made of them stay
            tref = TensorRef(
                path,
                r["io"],
                r["slot"],
                dtype=r["dtype"],
                shape=r["shape"],
                timestamp=r["ts"],
                stats=r["stats"],
                size_on_disk=r["size"],
            )
            found.tensors[(graph, r["name"])].append(tref)
            found.op_types[(graph, r["name"])] = r["op_type"]
            found.statistic_rows += 1
    except (OSError, ValueError) as e:
        problems.append(Problem(path, text(e)))
    if skipped:
        problems.append(Problem(path, Fault(Flaw.ROWS_NOT_READ, (len(skipped), tuple(skipped[:3])))))


def _list_npy_files(graph: str, folder: str, names: list[str], found: _Found, problems: list[Problem]) -> None:
    """The hot loop of indexing: one pass over the file names of an iteration folder (tens of thousands)."""
    mapping = read_mapping_csv(os.path.join(folder, MAPPING_FILE)) if MAPPING_FILE in names else {}
    prefix = os.path.join(folder, "")
    tensors, op_types, canonical = found.tensors, found.op_types, dtypes.canonical
    # one string object per distinct io/format/dtype label and op type, not one per file: a million-file index
    # holds them a million times over
    spelled: dict[str | None, str] = {}
    for n in counted(Stage.LISTING, names):
        if not n.endswith(".npy"):
            if RAW_NAME.match(n):  # another format's tensor file: what it holds is not read, never unsaid
                problems.append(Problem(prefix + n, Fault(Flaw.MIXED_RAW_FILE)))
            elif n not in (MAPPING_FILE, STAT_FILE):
                problems.append(foreign_file(prefix + n))
            continue
        rec = parse_npy_name(n, mapping)
        if rec is None:
            problems.append(misnamed_file(prefix + n, NamePattern.MINDSPORE_NPY))
            continue
        found.npy_files += 1
        if rec.dtype:
            found.with_dtype += 1
        ts, slot = int(rec.timestamp), int(rec.slot)
        io = INOUT_NAMED[rec.io]  # NPY_NAME spells it input or output
        fmt = spelled.setdefault(rec.fmt, rec.fmt or "")
        # the listed name is the tensor's (no joined path to split again)
        tref = TensorRef.in_folder(prefix, n, io, slot, canonical(rec.dtype) if rec.dtype else None, None, fmt, ts)
        tensors[(graph, rec.name)].append(tref)
        op_types[(graph, rec.name)] = spelled.setdefault(rec.op_type, rec.op_type)


def _list_constants(graph: str, folder: str, found: _Found) -> None:
    """The graph's constants (`constants/`): each one output; files that do not parse are not tensors."""
    for n in list_dir(folder):
        rec = parse_npy_name(n)
        if rec is None:
            continue
        ts, slot = int(rec.timestamp), int(rec.slot)
        tref = TensorRef(
            os.path.join(folder, n),
            OUTPUT,
            slot,
            dtype=dtypes.canonical(rec.dtype) if rec.dtype else None,
            fmt=rec.fmt or "",
            timestamp=ts,
        )
        found.tensors[(graph, CONSTANT_PREFIX + rec.name)].append(tref)
        found.op_types[(graph, CONSTANT_PREFIX + rec.name)] = "Constant"


def _list_files(loc: Located, problems: list[Problem]) -> _Found:
    """Every tensor of the chosen iteration folders, from file names (or statistic.csv rows) only."""
    found = _Found()
    for g, (_iteration, folder) in loc.chosen.items():
        names = list_dir(folder)
        if STAT_FILE in names and not any(n.endswith(".npy") for n in names):
            _list_statistic_csv(g, os.path.join(folder, STAT_FILE), found, problems)
            continue
        _list_npy_files(g, folder, names, found, problems)
        if g in loc.constants:
            _list_constants(g, loc.constants[g], found)
    return found


def _kind(op_type: str, file_op: str) -> OpKind:
    if file_op.startswith(CONSTANT_PREFIX):
        return CONSTANT
    return PARAMETER if op_type == "Parameter" else KERNEL


def _free_call(calls: list[Op], io: InOut, slot: int) -> Op | None:
    """The first call of a kernel that has no tensor yet for this io and slot."""
    for call in calls:
        if slot not in (call.inputs if io == INPUT else call.outputs):
            return call
    return None


def _file_time(t: TensorRef) -> int:
    assert t.timestamp is not None  # a tensor found in a file name or a statistic.csv row has its time
    return t.timestamp


def _calls(graph: str, file_op: str, op_type: str, records: list[_Record]) -> list[Op]:
    """One op per call: a kernel that ran twice in the iteration has each slot twice, the later ones the 2nd call."""
    kind = _kind(op_type, file_op)
    calls: list[Op] = []
    records.sort(key=_file_time)
    for tref in records:
        ts, io, slot = _file_time(tref), tref.io, tref.slot
        call = _free_call(calls, io, slot)
        if call is None:
            call = Op(name=file_op, op_type=op_type, kind=kind, graph=graph, file_name=file_op)
            calls.append(call)
        call.put(io, slot, tref)
        if call.timestamp is None or ts < call.timestamp:
            call.timestamp = ts
    for i, call in enumerate(calls):
        call.call = i + 1
    return calls


def loc_folder(loc: Located) -> str:
    """The iteration folder the tensors were listed from (the first graph's, for a dump of several)."""
    return next((folder for _iteration, folder in loc.chosen.values()), loc.rank_dir or "")


def _build_ops(found: _Found) -> list[Op]:
    ops: list[Op] = []
    for (g, file_op), records in found.tensors.items():
        ops.extend(_calls(g, file_op, found.op_types[(g, file_op)], records))
    return ops


def _name_ops(ops: list[Op], graphs: list[str], orders: dict[str, list[str]], irs: dict[str, IRGraph]) -> None:
    """Full scope names: the execution-order csv first, then the graph file's nodes; parameters from the graph."""
    for g in graphs:
        graph_names = list(orders.get(g, []))
        if g in irs:
            known = set(graph_names)
            graph_names += [
                n.full_name for n in irs[g].nodes.values() if n.full_name and not n.virtual and n.full_name not in known
            ]
        kernels = [op for op in ops if op.graph == g and op.kind == KERNEL]
        resolved = resolve_names(sorted({op.file_name for op in kernels}), graph_names)
        for op in kernels:
            if op.file_name in resolved:
                op.name, op.name_source = resolved[op.file_name]
        params = {file_form(p): prm for p, prm in (irs[g].params.items() if g in irs else ())}
        for op in ops:
            if op.graph == g and op.kind == PARAMETER and op.file_name in params:
                prm = params[op.file_name]
                op.name, op.name_source = prm.name, NameSource.GRAPH_PARAMETER
                op.attrs = WEIGHT_ATTRS if prm.is_weight else INPUT_ATTRS


class DtypeSuffix(Word):
    """Whether the .npy file names end in `.{dtype}` (report/reasons.py words it)."""

    WITH = "with"
    WITHOUT = "without"
    MIXED = "mixed"  # some do, some do not


def _variant(found: _Found, ops: list[Op], statistics_only: bool) -> Reason:
    """How this dump spells things: a code for report/reasons.py to word."""
    if statistics_only:
        return because(Why.STATISTIC_CSV_VARIANT, found.statistic_variant)
    kernels = [op for op in ops if op.kind == KERNEL]
    short_style = sum(1 for op in kernels if SHORT_NAME.match(op.file_name))
    if found.with_dtype and found.npy_files > found.with_dtype:
        suffix = DtypeSuffix.MIXED
    else:
        suffix = DtypeSuffix.WITH if found.with_dtype else DtypeSuffix.WITHOUT
    return because(Why.MINDSPORE_NPY_VARIANT, short_style > len(kernels) / 2, suffix)


def _order_kernels(dump: Dump, kernels: list[Op], orders: dict[str, list[str]], irs: dict[str, IRGraph]) -> bool:
    """Number the kernels in execution order (DESIGN.md: file timestamps, else the csv, else the graph file's
    topological order, else file names). Returns whether the timestamps gave it."""
    timestamps = [op.timestamp for op in kernels]
    have_ts = all(timestamps) and len(set(timestamps)) == len(kernels)
    if have_ts and kernels:
        dump.order_source = OrderSource.FILE_TIMESTAMPS
        number_in_order(kernels, {}, lambda op: (op.timestamp, op.key))
    elif orders:
        dump.order_source = OrderSource.EXECUTION_CSV
        position = listed_positions((g, n) for g in dump.graphs for n in orders.get(g, []))
        number_in_order(kernels, position, lambda op: (op.timestamp or 0, op.key))
    elif irs:
        # the graph file lists nodes in a topological order: the last resort that still respects dataflow
        dump.order_source = OrderSource.GRAPH_TOPOLOGICAL
        position = listed_positions((g, n.full_name) for g, ir in irs.items() for n in ir.nodes.values() if n.full_name)
        number_in_order(kernels, position, lambda op: (op.key,))
    else:
        number_in_order(kernels, {}, lambda op: (op.timestamp or 0, op.key))
    return have_ts


def _meta_text(meta: dict[str, Any], key: str, path: str, problems: list[Problem]) -> str | None:
    """A text field of `.dump_metadata/config.json`; a value of another type is named, not used."""
    value = meta.get(key)
    if value is None or isinstance(value, str):
        return value
    problems.append(Problem(path, Fault(Flaw.META_NOT_STRING, (key, limits.kind_of(value))), Severity.WARNING))
    return None


def _new_dump(path: str, loc: Located) -> Dump:
    meta_path = os.path.join(loc.rank_dir, ".dump_metadata", "config.json") if loc.rank_dir else ""
    meta = read_json_object(meta_path) if meta_path else {}
    problems: list[Problem] = []
    dump = Dump(
        path=path,
        root=loc.rank_dir or os.path.abspath(path),
        format=FormatName.MINDSPORE_NPY,
        version=_meta_text(meta, "ms_version", meta_path, problems),
        device=_meta_text(meta, "device_target", meta_path, problems),
        rank=loc.rank,
        problems=problems,
    )
    dump.graphs = sorted(loc.chosen, key=numeric_key)
    dump.iterations = {g: it for g, (it, _) in loc.chosen.items()}
    for g in sorted(set(loc.data_dirs) - set(loc.chosen), key=numeric_key):
        dump.notes.append(because(Why.GRAPH_NOT_READ, g))
    return dump


def open_mindspore(path: str, selection: Selection) -> Dump:
    loc = locate(path, selection)
    dump = _new_dump(path, loc)
    found = _list_files(loc, dump.problems)
    dump.statistics_only = found.npy_files == 0 and found.statistic_rows > 0
    if dump.statistics_only:
        dump.format = FormatName.MINDSPORE_STATISTIC
    orders = read_orders(loc.rank_dir, dump.graphs) if loc.rank_dir else {}
    irs = read_graphs(dump, loc.rank_dir, dump.graphs) if loc.rank_dir else {}
    for ir in irs.values():
        dump.parameters.update({name: prm.is_weight for name, prm in ir.params.items()})

    ops, two = separate_runs(_build_ops(found), loc_folder(loc))  # a stale run's files beside the new ones
    if two is not None:
        dump.problems.append(two)
    _name_ops(ops, dump.graphs, orders, irs)
    dump.variant = _variant(found, ops, dump.statistics_only)
    assign_keys(ops)
    kernels = [op for op in ops if op.kind == KERNEL]
    have_ts = _order_kernels(dump, kernels, orders, irs)
    others = sorted((op for op in ops if op.kind != KERNEL), key=lambda op: (op.kind, op.timestamp or 0, op.key))
    dump.ops = kernels + others

    param_keys = {(op.graph, op.name): op.key for op in others if op.kind == PARAMETER}
    unmapped = link_dataflow(dump, irs, lambda g, name: param_keys.get((g, name)))
    restore_original_shapes(dump, irs)  # trans_flag false: device layouts back to the graph's shapes
    if unmapped and len(unmapped) < len(kernels):
        dump.notes.append(because(Why.KERNELS_NOT_IN_GRAPH, len(unmapped), True))
    if not orders and not have_ts:
        dump.notes.append(because(Why.ORDER_FROM_FILE_NAMES, False))
    return dump


class MindSporeNpyReader:
    """The Reader of MindSpore r1.3+ dumps (the statistic.csv variant included)."""

    name = FormatName.MINDSPORE_NPY
    formats = (FormatName.MINDSPORE_NPY, FormatName.MINDSPORE_STATISTIC)
    priority = 20

    def looks_like(self, path: str) -> bool:
        return looks_like(path)

    def open(self, path: str, selection: Selection) -> Dump:
        return open_mindspore(path, selection)
