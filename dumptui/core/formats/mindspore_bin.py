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
from dataclasses import dataclass
from functools import partial
from itertools import islice
from typing import TypedDict

from dumptui.core.formats.device_tensors import restore_original_shapes
from dumptui.core.formats.files import is_dir, list_dir, numbered_subdirs, numeric_key
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
from dumptui.core.formats.reader import Selection, choose_one
from dumptui.core.io import dtypes, limits
from dumptui.core.io.errors import DumpError
from dumptui.core.io.fault import Fault, Flaw, NamePattern, os_text
from dumptui.core.io.npy import Layout
from dumptui.core.io.safeio import regular_size
from dumptui.core.model.dump import (
    CONSTANT,
    INOUT_NAMED,
    INPUT,
    KERNEL,
    PARAMETER,
    Dump,
    FormatName,
    InOut,
    Op,
    OpKind,
    OrderSource,
    Problem,
    TensorRef,
)
from dumptui.core.model.ir import IRGraph
from dumptui.core.model.reason import Why, because

DTYPE_LABELS = (
    "Bool",
    "Int8",
    "Int16",
    "Int32",
    "Int64",
    "UInt8",
    "UInt16",
    "UInt32",
    "UInt64",
    "Float16",
    "Float32",
    "Float64",
    "BFloat16",
    "Complex64",
    "Complex128",
)
# Parsed from the right: the dims are digits only and the dtype is one of the known labels, so the format
# (which may hold underscores, e.g. FRACTAL_Z) is what follows the dtype, and the op name is what precedes the
# last `_{io}_{slot}_shape_`.
BIN_NAME = re.compile(
    r"^(?P<op>.+)_(?P<io>input|output)_(?P<slot>\d+)_shape_(?P<dims>\d+(?:_\d+)*)"
    r"_(?P<dtype>" + "|".join(sorted(DTYPE_LABELS, key=len, reverse=True)) + r")_(?P<fmt>[A-Za-z0-9_]+)\.bin$"
)
DEVICE_DIR = re.compile(r"^device_(\d+)$")
ITERATION_DIR = re.compile(r"^iteration_(\d+)$")
GRAPH_FILE = re.compile(r"^ms_output_trace_code_graph_(\d+)(?:_0)?\.(?:ir|pb|dat)$")
ORDER_FILE = re.compile(r"^ms_execution_order_graph_(\d+)\.csv$")
KERNEL_LEAF = re.compile(r"^(?P<type>.+)-op\d+$")
CONSTANT_NAME = re.compile(r"^cst\d+$")
SCOPE_SEP = "--"
# Folders inspected per level by looks_like: enough for any real tree, cheap for a large one.
_PEEK_DIRS, _PEEK_FILES, _PEEK_ENTRIES = 8, 200, 2000


def looks_like(path: str, depth: int = 4) -> bool:
    """Cheap test used by format detection: dump-named .bin files in `path` or up to `depth` levels below."""
    try:
        with os.scandir(path) as it:
            entries = list(islice(it, _PEEK_ENTRIES))  # a dump folder can hold 100,000 files: peek
    except OSError:
        return False
    files = [e.name for e in entries[:_PEEK_FILES] if e.name.endswith(".bin")]
    if any(BIN_NAME.match(n) for n in files):
        return True
    if depth == 0:
        return False
    subdirs = sorted(e.path for e in entries if is_dir(e))
    # iteration folders hold the data; look at those first
    subdirs.sort(key=lambda p: not ITERATION_DIR.match(os.path.basename(p)))
    return any(looks_like(d, depth - 1) for d in subdirs[:_PEEK_DIRS])


@dataclass
class _Location:
    device_dir: str  # the folder holding iteration_*, graphs/ and execution_order/
    device: str | None  # the N of device_N; None without a device level (CPU)
    iteration: str  # the N of iteration_N
    data_dir: str


def _iteration_dirs(device_dir: str) -> dict[str, str]:
    """{N: folder} of the iteration_N folders, in numeric order."""
    found = numbered_subdirs(device_dir, ITERATION_DIR)
    return {n: found[n] for n in sorted(found, key=numeric_key)}


def _device_dirs(net_dir: str) -> dict[str, str]:
    """{N: folder} of the device_N folders, in numeric order."""
    found = numbered_subdirs(net_dir, DEVICE_DIR)
    return {n: found[n] for n in sorted(found, key=numeric_key)}


def _has_bins(path: str) -> bool:
    return any(BIN_NAME.match(n) for n in list_dir(path))


def _device_dir(path: str, rank: str | None) -> tuple[str, str | None]:
    """The device-level folder for `path` (root, net or device folder) and its device id."""
    m = DEVICE_DIR.match(os.path.basename(path))
    if m or _iteration_dirs(path):
        if rank is not None and m and m.group(1) != rank:
            raise DumpError(path, f"this is device {m.group(1)}, not device {rank}")
        return path, m.group(1) if m else None
    devices = _device_dirs(path)
    if devices:
        device, device_dir = choose_one(path, devices, rank, "device", "--rank N")
        return device_dir, device
    # the dump root: one folder per net
    nets = [
        n
        for n in list_dir(path)
        if os.path.isdir(os.path.join(path, n))
        and (_device_dirs(os.path.join(path, n)) or _iteration_dirs(os.path.join(path, n)))
    ]
    if len(nets) > 1:
        raise DumpError(path, f"{len(nets)} nets ({', '.join(nets)}): give the folder of one of them")
    if not nets:
        raise DumpError(path, "no MindSpore 1.x dump here: expected {net}/device_{id}/iteration_{it}/*.bin")
    return _device_dir(os.path.join(path, nets[0]), rank)


def _locate_iteration_dir(path: str, rank: str | None, iteration: str | None) -> _Location:
    """`path` is the folder of the tensors (iteration_N, or a folder of .bin files)."""
    m = ITERATION_DIR.match(os.path.basename(path))
    it = m.group(1) if m else ""
    if iteration is not None and m and iteration != it:
        raise DumpError(path, f"this is iteration {it}, not iteration {iteration}")
    device_dir = os.path.dirname(path)
    dm = DEVICE_DIR.match(os.path.basename(device_dir))
    if rank is not None and dm and dm.group(1) != rank:
        raise DumpError(path, f"this is device {dm.group(1)}, not device {rank}")
    return _Location(device_dir, dm.group(1) if dm else None, it, path)


def _locate(path: str, selection: Selection) -> _Location:
    if not os.path.isdir(path):
        raise DumpError(path, "not a folder" if os.path.exists(path) else "no such folder")
    path = os.path.normpath(os.path.abspath(path))
    if ITERATION_DIR.match(os.path.basename(path)) or (_has_bins(path) and not _iteration_dirs(path)):
        return _locate_iteration_dir(path, selection.rank, selection.iteration)
    device_dir, device = _device_dir(path, selection.rank)
    its = _iteration_dirs(device_dir)
    if not its:
        raise DumpError(path, "no iteration_N folders with .bin files found")
    iteration, data_dir = choose_one(path, its, selection.iteration, "iteration", "--step N")
    return _Location(device_dir, device, iteration, data_dir)


class BinName(TypedDict):
    """The fields of a 1.x dump file name."""

    op: str  # the op's full name, `/` spelled `--` (parameters and constants: their name)
    io: InOut
    slot: int
    shape: tuple[int, ...]
    dtype: str  # canonical
    fmt: str  # device format, e.g. DefaultFormat, FRACTAL_Z


def parse_bin_name(name: str) -> BinName | None:
    """{op, io, slot, shape, dtype, fmt} from a 1.x dump file name, or None if it does not follow the pattern.
    BadValue (a ValueError) when it does, but a number in it is out of range (a 20-digit dimension)."""
    m = BIN_NAME.match(name)
    if not m:
        return None
    digits = m.group("dims").split("_")
    if len(m.group("slot")) > limits.MAX_INT_DIGITS or any(len(d) > limits.MAX_INT_DIGITS for d in digits):
        raise limits.BadValue(f"a number in the file name has more than {limits.MAX_INT_DIGITS} digits")
    dims = limits.shape([int(d) for d in digits], "shape in the file name")
    # every label of BIN_NAME has a canonical name; the label itself would only be a fallback
    dtype = dtypes.canonical(m.group("dtype")) or m.group("dtype")
    return BinName(
        op=m.group("op"),
        io=INOUT_NAMED[m.group("io")],
        slot=int(m.group("slot")),
        shape=() if dims == (0,) else dims,
        dtype=dtype,
        fmt=m.group("fmt"),
    )


def _raw_layout(path: str, dtype: str, shape: tuple[int, ...]) -> Layout:
    """A headerless file's layout: the name gives dtype and shape, the size on disk must agree."""
    declared = f"{dtype}{list(shape)}"
    storage = dtypes.storage(dtype)
    if storage is None:
        return Layout(None, shape, 0, problem=Fault(Flaw.NO_STORAGE, (dtype,)), declared=declared)
    try:
        payload = regular_size(path)
    except OSError as e:
        return Layout(None, shape, 0, problem=Fault(Flaw.CANNOT_READ, (os_text(e),)), declared=declared)
    expected = limits.elements(shape) * storage.itemsize
    if payload != expected:
        why = Fault(Flaw.NAME_PAYLOAD_MISMATCH, (payload, declared, expected, payload < expected))
        return Layout(None, shape, 0, declared=declared, problem=why)
    return Layout(storage, shape, 0, declared=declared, widen_bf16=dtype == "bfloat16")


def bin_tensor_ref(path: str, rec: BinName) -> TensorRef:
    """The lazy tensor of one .bin file, from its parsed name."""
    return TensorRef(
        path,
        rec["io"],
        rec["slot"],
        dtype=rec["dtype"],
        shape=rec["shape"],
        fmt=rec["fmt"],
        layout_fn=partial(_raw_layout, path, rec["dtype"], rec["shape"]),
    )


def _kind(file_op: str, has_inputs: bool, ir_params: set[str]) -> OpKind:
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
        for name in list_dir(os.path.join(device_dir, sub)):
            m = pattern.match(name)
            if m:
                ids.add(m.group(1))
    return sorted(ids, key=numeric_key)


def _list_files(data_dir: str, problems: list[Problem]) -> dict[str, list[TensorRef]]:
    """{op name as in the file: its tensors} from the file names of the iteration folder."""
    tensors: dict[str, list[TensorRef]] = {}
    for name in list_dir(data_dir):
        path = os.path.join(data_dir, name)
        if not name.endswith(".bin"):
            problems.append(foreign_file(path))
            continue
        try:
            rec = parse_bin_name(name)
        except limits.BadValue as e:
            problems.append(Problem(path, Fault(Flaw.NAME_NOT_READ, (str(e),))))
            continue
        if rec is None:
            problems.append(misnamed_file(path, NamePattern.MINDSPORE_BIN))
            continue
        tensors.setdefault(rec["op"], []).append(bin_tensor_ref(path, rec))
    return tensors


def _membership(graph_ids: list[str], orders: dict[str, list[str]], irs: dict[str, IRGraph]) -> dict[str, str]:
    """{full name: graph} from each graph's execution order, else its graph file (the first graph naming it)."""
    member: dict[str, str] = {}
    for g in graph_ids:
        names = list(orders.get(g, []))
        if g in irs:
            names += [n.full_name for n in irs[g].nodes.values() if n.full_name and not n.virtual]
            names += list(irs[g].params)
        for n in names:
            member.setdefault(n, g)
    return member


def _build_ops(
    tensors: dict[str, list[TensorRef]], member: dict[str, str], ir_params: set[str], default_graph: str
) -> list[Op]:
    ops: list[Op] = []
    for file_op, trefs in tensors.items():
        kind = _kind(file_op, any(t.io == INPUT for t in trefs), ir_params)
        if kind == KERNEL:
            name = file_op.replace(SCOPE_SEP, "/")
            leaf = name.rsplit("/", 1)[-1]
            m = KERNEL_LEAF.match(leaf)
            op_type = m.group("type") if m else leaf
        else:
            name, op_type = file_op, "Parameter" if kind == PARAMETER else "Constant"
        op = Op(name=name, op_type=op_type, kind=kind, graph=member.get(name, default_graph), file_name=file_op)
        for t in trefs:
            op.put(t.io, t.slot, t)
        ops.append(op)
    return ops


def _order_kernels(dump: Dump, kernels: list[Op], orders: dict[str, list[str]], irs: dict[str, IRGraph]) -> None:
    """Number the kernels: names carry no timestamp, so the csv gives the order, else the graph file's node
    order, else the file names."""
    chosen_orders = {g: orders[g] for g in dump.graphs if g in orders}
    if chosen_orders:
        dump.order_source = OrderSource.EXECUTION_CSV
        listed = [(g, n) for g, names in chosen_orders.items() for n in names]
    elif irs:
        dump.order_source = OrderSource.GRAPH_NODES
        listed = [(g, n.full_name) for g, ir in irs.items() for n in ir.nodes.values() if not n.virtual]
    else:
        listed = []
        dump.notes.append(because(Why.ORDER_FROM_FILE_NAMES, True))
    position = listed_positions(listed)
    number_in_order(kernels, position, lambda op: (op.file_name,))
    missing = [op for op in kernels if (op.graph, op.name) not in position]
    if position and missing:
        dump.notes.append(because(Why.KERNELS_NOT_IN_ORDER, len(missing), dump.order_source))


def open_mindspore_bin(path: str, selection: Selection) -> Dump:
    loc = _locate(path, selection)
    dump = Dump(
        path=path,
        root=loc.device_dir,
        format=FormatName.MINDSPORE_BIN,
        rank=loc.device,
        variant=because(Why.MINDSPORE_BIN_VARIANT, loc.device is None),
    )
    all_graph_ids = _graph_ids(loc.device_dir)
    graph = selection.graph
    if graph is not None and graph not in all_graph_ids:
        raise DumpError(path, f"no graph {graph}; graphs here: {', '.join(all_graph_ids) or 'none'}")
    dump.graphs = [graph] if graph is not None else all_graph_ids
    dump.iterations = {g: loc.iteration for g in dump.graphs} or {"": loc.iteration}
    # The csv of every graph tells which kernels belong to it, even to the graphs not chosen.
    orders = read_orders(loc.device_dir, all_graph_ids)
    irs = read_graphs(dump, loc.device_dir, dump.graphs)

    tensors = _list_files(loc.data_dir, dump.problems)
    if not tensors:
        raise DumpError(path, f"no MindSpore 1.x .bin tensor files in {loc.data_dir}")
    ir_params = {p for ir in irs.values() for p in ir.params}
    default_graph = dump.graphs[0] if len(dump.graphs) == 1 else ""
    ops = _build_ops(tensors, _membership(all_graph_ids, orders, irs), ir_params, default_graph)
    if graph is not None:
        foreign = [op for op in ops if op.graph not in ("", graph)]
        if foreign:
            ops = [op for op in ops if op.graph in ("", graph)]
            dump.notes.append(because(Why.OTHER_GRAPHS_LEFT_OUT, len(foreign), graph))
    assign_keys(ops)

    kernels = [op for op in ops if op.kind == KERNEL]
    _order_kernels(dump, kernels, orders, irs)
    others = sorted((op for op in ops if op.kind != KERNEL), key=lambda op: (op.kind, op.name))
    dump.ops = kernels + others

    param_keys = {op.name: op.key for op in others if op.kind == PARAMETER}
    unmapped = link_dataflow(dump, irs, lambda _graph, name: param_keys.get(name))
    restore_original_shapes(dump, irs)  # trans_flag false: device layouts back to the graph's shapes
    if unmapped:
        dump.notes.append(because(Why.KERNELS_NOT_IN_GRAPH, len(unmapped), False))
    return dump


class MindSporeBinReader:
    """The Reader of MindSpore 1.x `.bin` dumps."""

    name = FormatName.MINDSPORE_BIN
    formats = (FormatName.MINDSPORE_BIN,)
    # before mindspore-npy: a 1.x device folder holds graphs/ and execution_order/ too, which that reader takes
    # for a rank folder
    priority = 30

    def looks_like(self, path: str) -> bool:
        return looks_like(path)

    def open(self, path: str, selection: Selection) -> Dump:
        return open_mindspore_bin(path, selection)
