"""MindSpore 1.x synchronous dumps (`.bin`, up to r1.2): raw tensor bytes, everything else in the file name.

    {path}/{net}/device_{id}/iteration_{it}/{op full name, / -> --}_{input|output}_{slot}_shape_{d0_d1_...}_{Dtype}_{Format}.bin
    {path}/{net}/device_{id}/graphs/ms_output_trace_code_graph_{g}.ir|.pb
    {path}/{net}/device_{id}/execution_order/ms_execution_order_graph_{g}.csv

On CPU there is no `device_{id}` level. The path given may be the dump root, the net folder, the device folder or
an iteration folder. Parameters are dumped as `{name}_output_0_...` (dots kept: `conv1.weight`), constants as
`cst{N}_output_0_...`. `shape_0` is a 0-d tensor. Names carry no timestamp: the order comes from the
execution-order csv, else the graph file, else the file names.
"""
from __future__ import annotations

import os
import re
from functools import partial
from itertools import islice
from dataclasses import dataclass

import networkx as nx
import numpy as np

from .. import dtypes
from ..graph import attach_ir
from ..model import CONSTANT, KERNEL, PARAMETER, Dump, DumpError, Op, Problem, TensorRef
from ..npy import Layout
from ..ir import IRGraph
from .mindspore import load_graph_file, read_execution_order

DTYPE_LABELS = ("Bool", "Int8", "Int16", "Int32", "Int64", "UInt8", "UInt16", "UInt32", "UInt64", "Float16",
                "Float32", "Float64", "BFloat16", "Complex64", "Complex128")
# Parsed from the right: the dims are digits only and the dtype is one of the known labels, so the format
# (which may hold underscores, e.g. FRACTAL_Z) is what follows the dtype, and the op name is what precedes the
# last `_{io}_{slot}_shape_`.
BIN_NAME = re.compile(
    r"^(?P<op>.+)_(?P<io>input|output)_(?P<slot>\d+)_shape_(?P<dims>\d+(?:_\d+)*)"
    r"_(?P<dtype>" + "|".join(sorted(DTYPE_LABELS, key=len, reverse=True)) + r")_(?P<fmt>[A-Za-z0-9_]+)\.bin$")
DEVICE_DIR = re.compile(r"^device_(\d+)$")
ITERATION_DIR = re.compile(r"^iteration_(\d+)$")
GRAPH_FILE = re.compile(r"^ms_output_trace_code_graph_(\d+)(?:_0)?\.(?:ir|pb|dat)$")
ORDER_FILE = re.compile(r"^ms_execution_order_graph_(\d+)\.csv$")
KERNEL_LEAF = re.compile(r"^(?P<type>.+)-op\d+$")
CONSTANT_NAME = re.compile(r"^cst\d+$")
SCOPE_SEP = "--"
# Folders inspected per level by looks_like: enough for any real tree, cheap for a large one.
_PEEK_DIRS, _PEEK_FILES, _PEEK_ENTRIES = 8, 200, 2000


def _ls(path: str) -> list[str]:
    try:
        return sorted(os.listdir(path))
    except OSError:
        return []


def _num(s: str):
    return (0, int(s)) if s.isdigit() else (1, s)


def looks_like(path: str, depth: int = 4) -> bool:
    """Cheap test used by format detection: dump-named .bin files in `path` or up to `depth` levels below."""
    try:
        with os.scandir(path) as it:
            entries = list(islice(it, _PEEK_ENTRIES))   # a dump folder can hold 100,000 files: peek
    except OSError:
        return False
    files = [e.name for e in entries[:_PEEK_FILES] if e.name.endswith(".bin")]
    if any(BIN_NAME.match(n) for n in files):
        return True
    if depth == 0:
        return False
    subdirs = sorted(e.path for e in entries if _is_dir(e))
    # iteration folders hold the data; look at those first
    subdirs.sort(key=lambda p: not ITERATION_DIR.match(os.path.basename(p)))
    return any(looks_like(d, depth - 1) for d in subdirs[:_PEEK_DIRS])


def _is_dir(entry: os.DirEntry) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False


@dataclass
class _Location:
    device_dir: str               # the folder holding iteration_*, graphs/ and execution_order/
    device: str | None            # the N of device_N; None without a device level (CPU)
    iteration: str                # the N of iteration_N
    data_dir: str


def _iterations(device_dir: str) -> dict[str, str]:
    found = {}
    for name in _ls(device_dir):
        m = ITERATION_DIR.match(name)
        if m and os.path.isdir(os.path.join(device_dir, name)):
            found[m.group(1)] = os.path.join(device_dir, name)
    return found


def _devices(net_dir: str) -> dict[str, str]:
    found = {}
    for name in _ls(net_dir):
        m = DEVICE_DIR.match(name)
        if m and os.path.isdir(os.path.join(net_dir, name)):
            found[m.group(1)] = os.path.join(net_dir, name)
    return found


def _has_bins(path: str) -> bool:
    return any(BIN_NAME.match(n) for n in _ls(path))


def _device_dir(path: str, rank: str | None) -> tuple[str, str | None]:
    """The device-level folder for `path` (root, net or device folder) and its device id."""
    base = os.path.basename(path)
    m = DEVICE_DIR.match(base)
    if m or _iterations(path):
        if rank is not None and m and m.group(1) != rank:
            raise DumpError(path, f"this is device {m.group(1)}, not device {rank}")
        return path, m.group(1) if m else None
    devices = _devices(path)
    if devices:
        if rank is not None:
            if rank not in devices:
                raise DumpError(path, f"no device {rank}; devices here: {', '.join(sorted(devices, key=_num))}")
            return devices[rank], rank
        if len(devices) > 1:
            raise DumpError(path, f"{len(devices)} devices ({', '.join(sorted(devices, key=_num))}): "
                                  "choose one with --rank N")
        (device, ddir), = devices.items()
        return ddir, device
    # the dump root: one folder per net
    nets = [n for n in _ls(path) if os.path.isdir(os.path.join(path, n))
            and (_devices(os.path.join(path, n)) or _iterations(os.path.join(path, n)))]
    if len(nets) > 1:
        raise DumpError(path, f"{len(nets)} nets ({', '.join(nets)}): give the folder of one of them")
    if not nets:
        raise DumpError(path, "no MindSpore 1.x dump here: expected {net}/device_{id}/iteration_{it}/*.bin")
    return _device_dir(os.path.join(path, nets[0]), rank)


def _locate(path: str, rank: str | None, iteration: str | None) -> _Location:
    if not os.path.isdir(path):
        raise DumpError(path, "not a folder" if os.path.exists(path) else "no such folder")
    path = os.path.normpath(os.path.abspath(path))
    m = ITERATION_DIR.match(os.path.basename(path))
    if m or (_has_bins(path) and not _iterations(path)):
        it = m.group(1) if m else ""
        if iteration is not None and m and iteration != it:
            raise DumpError(path, f"this is iteration {it}, not iteration {iteration}")
        device_dir = os.path.dirname(path)
        dm = DEVICE_DIR.match(os.path.basename(device_dir))
        if rank is not None and dm and dm.group(1) != rank:
            raise DumpError(path, f"this is device {dm.group(1)}, not device {rank}")
        return _Location(device_dir, dm.group(1) if dm else None, it, path)
    device_dir, device = _device_dir(path, rank)
    its = _iterations(device_dir)
    if not its:
        raise DumpError(path, "no iteration_N folders with .bin files found")
    if iteration is not None:
        if iteration not in its:
            raise DumpError(path, f"no iteration {iteration}; iterations here: {', '.join(sorted(its, key=_num))}")
        return _Location(device_dir, device, iteration, its[iteration])
    if len(its) > 1:
        raise DumpError(path, f"several iterations ({', '.join(sorted(its, key=_num))}): choose one with --iteration N")
    (it, data_dir), = its.items()
    return _Location(device_dir, device, it, data_dir)


def parse_bin_name(name: str) -> dict | None:
    """{op, io, slot, shape, dtype, fmt} from a 1.x dump file name, or None if it does not follow the pattern."""
    m = BIN_NAME.match(name)
    if not m:
        return None
    dims = tuple(int(d) for d in m.group("dims").split("_"))
    return dict(op=m.group("op"), io=m.group("io"), slot=int(m.group("slot")),
                shape=() if dims == (0,) else dims, dtype=dtypes.canonical(m.group("dtype")), fmt=m.group("fmt"))


def _raw_layout(path: str, dtype: str, shape: tuple[int, ...]) -> Layout:
    """A headerless file's layout: the name gives dtype and shape, the size on disk must agree."""
    declared = f"{dtype}{list(shape)}"
    storage = dtypes.storage(dtype)
    try:
        payload = os.path.getsize(path)
    except OSError as e:
        return Layout(None, shape, 0, problem=f"cannot read: {e.strerror or e}", declared=declared)
    expected = int(np.prod(shape, dtype=np.int64)) * storage.itemsize
    if payload != expected:
        why = f"payload {payload} B, name says {declared} = {expected} B"
        return Layout(None, shape, 0, declared=declared,
                      problem=("truncated: " + why) if payload < expected else why)
    return Layout(storage, shape, 0, declared=declared, widen_bf16=dtype == "bfloat16")


def bin_tensor_ref(path: str, rec: dict) -> TensorRef:
    """The lazy tensor of one .bin file, from its parsed name."""
    return TensorRef(path, rec["io"], rec["slot"], dtype=rec["dtype"], shape=rec["shape"], fmt=rec["fmt"],
                     layout_fn=partial(_raw_layout, path, rec["dtype"], rec["shape"]))


def _kind(file_op: str, has_inputs: bool, ir_params: set[str]) -> str:
    if CONSTANT_NAME.match(file_op):
        return CONSTANT
    if file_op in ir_params:
        return PARAMETER
    leaf = file_op.rsplit(SCOPE_SEP, 1)[-1]
    # Kernel names end in -opN; a parameter is a plain name with one output and no inputs.
    return KERNEL if has_inputs or KERNEL_LEAF.match(leaf) else PARAMETER


def _graph_ids(device_dir: str) -> list[str]:
    ids = set()
    for sub, pattern in (("graphs", GRAPH_FILE), ("execution_order", ORDER_FILE)):
        for name in _ls(os.path.join(device_dir, sub)):
            m = pattern.match(name)
            if m:
                ids.add(m.group(1))
    return sorted(ids, key=_num)


def open_mindspore_bin(path: str, rank: str | None = None, graph: str | None = None,
                       iteration: str | None = None) -> Dump:
    loc = _locate(path, rank, iteration)
    problems: list[Problem] = []
    dump = Dump(path=path, root=loc.device_dir, format="mindspore-bin", rank=loc.device,
                variant="MindSpore 1.x synchronous dump (raw .bin files, dtype and shape in the file names)"
                        + ("" if loc.device is not None else ", no device_{id} level (CPU)"))

    all_graph_ids = _graph_ids(loc.device_dir)
    if graph is not None and graph not in all_graph_ids:
        raise DumpError(path, f"no graph {graph}; graphs here: {', '.join(all_graph_ids) or 'none'}")
    graph_ids = [graph] if graph is not None else all_graph_ids
    # The csv of every graph tells which kernels belong to it, even to the graphs not chosen.
    orders: dict[str, list[str]] = {}
    for g in all_graph_ids:
        csv_path = os.path.join(loc.device_dir, "execution_order", f"ms_execution_order_graph_{g}.csv")
        if os.path.exists(csv_path):
            orders[g] = read_execution_order(csv_path)
    irs: dict[str, IRGraph] = {}
    for g in graph_ids:
        ir, src = load_graph_file(loc.device_dir, g, problems)
        if ir is not None:
            irs[g] = ir
            rel = os.path.relpath(src, loc.device_dir)
            dump.graph_source = rel if dump.graph_source is None else "graphs/ (several)"
    dump.graphs = graph_ids
    dump.iterations = {g: loc.iteration for g in graph_ids} or {"": loc.iteration}

    # index the iteration folder: file names only
    tensors: dict[str, list[tuple[str, TensorRef]]] = {}
    for name in _ls(loc.data_dir):
        fp = os.path.join(loc.data_dir, name)
        if not name.endswith(".bin"):
            problems.append(Problem(fp, "not a dump tensor file (ignored)", "warning"))
            continue
        rec = parse_bin_name(name)
        if rec is None:
            problems.append(Problem(fp, "file name does not follow the MindSpore 1.x dump pattern "
                                        "{op}_{input|output}_{slot}_shape_{dims}_{Dtype}_{Format}.bin"))
            continue
        tref = bin_tensor_ref(fp, rec)
        tensors.setdefault(rec["op"], []).append((rec["io"], tref))
    if not tensors:
        raise DumpError(path, f"no MindSpore 1.x .bin tensor files in {loc.data_dir}")

    # which graph each name belongs to: its execution order, else its graph file
    member: dict[str, str] = {}
    for g in all_graph_ids:
        names = list(orders.get(g, []))
        if g in irs:
            names += [n.full_name for n in irs[g].nodes.values() if n.full_name and not n.virtual]
            names += list(irs[g].params)
        for n in names:
            member.setdefault(n, g)
    ir_params = {p for ir in irs.values() for p in ir.params}
    default_graph = graph_ids[0] if len(graph_ids) == 1 else ""

    ops: list[Op] = []
    for file_op, recs in tensors.items():
        kind = _kind(file_op, any(io == "input" for io, _ in recs), ir_params)
        if kind == KERNEL:
            name = file_op.replace(SCOPE_SEP, "/")
            leaf = KERNEL_LEAF.match(name.rsplit("/", 1)[-1])
            op_type = leaf.group("type") if leaf else name.rsplit("/", 1)[-1]
        else:
            name, op_type = file_op, "Parameter" if kind == PARAMETER else "Constant"
        op = Op(name=name, op_type=op_type, kind=kind, graph=member.get(name, default_graph), file_name=file_op)
        for io, tref in recs:
            (op.inputs if io == "input" else op.outputs)[tref.slot] = tref
        ops.append(op)
    if graph is not None:
        foreign = [op for op in ops if op.graph not in ("", graph)]
        if foreign:
            ops = [op for op in ops if op.graph in ("", graph)]
            dump.notes.append(f"{len(foreign)} ops of other graphs left out (--graph {graph})")

    kernels = [op for op in ops if op.kind == KERNEL]
    chosen_orders = {g: orders[g] for g in graph_ids if g in orders}
    if chosen_orders:
        dump.order_source = "execution order csv"
        listed = [(g, n) for g, names in chosen_orders.items() for n in names]
    elif irs:
        dump.order_source = "graph node order"
        listed = [(g, n.full_name) for g, ir in irs.items() for n in ir.nodes.values() if not n.virtual]
    else:
        listed = []
        dump.notes.append("no execution-order csv and no graph file: order follows file names")
    position: dict[tuple[str, str], int] = {}
    for entry in listed:
        position.setdefault(entry, len(position))
    unlisted = len(position)  # after every listed kernel, in file-name order
    kernels.sort(key=lambda op: (position.get((op.graph, op.name), unlisted), op.file_name))
    missing = [op for op in kernels if (op.graph, op.name) not in position]
    if position and missing:
        dump.notes.append(f"{len(missing)} kernels not in the {dump.order_source}: placed last, by file name")
    for i, op in enumerate(kernels):
        op.order = i
    others = sorted((op for op in ops if op.kind != KERNEL), key=lambda op: (op.kind, op.name))
    dump.ops = kernels + others

    if irs:
        g_all = nx.DiGraph()
        for op in dump.ops:
            g_all.add_node(op.key, dumped=True, op_type=op.op_type, kind=op.kind)
        param_keys = {op.name: op.key for op in dump.ops if op.kind == PARAMETER}
        for g, ir in irs.items():
            attach_ir(dump, ir, g, g_all, param_keys.get)
        dump.graph = g_all
        unmapped = [op for op in kernels if not op.sources and op.inputs]
        if unmapped:
            dump.notes.append(f"{len(unmapped)} kernels not found in the graph file")
    elif kernels:
        dump.notes.append("no graph file: inputs cannot be traced to their producers")
    dump.problems = problems
    return dump
