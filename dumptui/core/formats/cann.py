"""CANN / ACL raw dumps (Ascend310 inference, GE graphs) and MindSpore's raw async dumps on Ascend, read
without CANN (docs/formats.md#cann-raw-dump).

One raw file is one execution of one op: its name gives the op type, the op name (separators replaced by `_`)
and the timestamp; its DumpData header gives every input and output with dtype, device format, device shape
and original shape. Tensors in a device layout are put back into their original shape when read
(devicelayout.py). Names come, best first, from DumpData.op_name, a GE graph dump (ACL: `ge_onnx_*_Build.pbtxt`
in the dump folder or a folder above it, up to the parent of the dump path) or MindSpore's graph files (rank
tree), else the file name. The order is the file timestamps: the true execution order.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from functools import partial
from typing import TYPE_CHECKING

from dumptui.core.formats.cann_file import (
    MAPPING_FILE,
    RAW_NAME,
    RawFile,
    RawLayout,
    RawName,
    parse_raw_name,
    read_raw_file,
)
from dumptui.core.formats.cann_locate import StepFolder, locate, looks_like
from dumptui.core.formats.files import list_dir, read_mapping_csv
from dumptui.core.formats.names import resolve_names
from dumptui.core.formats.pipeline import (
    assign_keys,
    foreign_file,
    link_dataflow,
    misnamed_file,
    number_in_order,
    read_graphs,
    read_orders,
)
from dumptui.core.formats.reader import Selection
from dumptui.core.formats.runs import separate_runs
from dumptui.core.io.errors import DumpError
from dumptui.core.io.fault import Fault, Flaw, NamePattern, worded
from dumptui.core.io.limits import brief
from dumptui.core.io.npy import Layout
from dumptui.core.model.dump import KERNEL, Dump, FormatName, NameSource, Op, OrderSource, Problem, Severity, TensorRef
from dumptui.core.model.ir import IRGraph
from dumptui.core.model.reason import Reason, Why, because

if TYPE_CHECKING:
    from dumptui.core.formats.ge_graph import GeGraph, GeNode

FORMAT = FormatName.CANN_RAW
OVERFLOW_REASON = because(Why.OVERFLOW_RECORD)


def _fixed(layout: Layout) -> Layout:
    return layout


def _graph_folders(path: str, step: StepFolder) -> list[str]:
    """Where a GE graph dump may be: the folder given, and the step folder and every folder above it up to
    the parent of the dump path (GE writes the graphs in the working directory of the inference)."""
    folders = [os.path.abspath(path)]
    cur = step.path
    stop = os.path.dirname(os.path.dirname(step.root)) if step.tree == "acl" and step.root else os.path.dirname(cur)
    while True:
        folders.append(cur)
        if cur == stop or os.path.dirname(cur) == cur:
            break
        cur = os.path.dirname(cur)
    return folders


def _choose_ge_graph(dump: Dump, path: str, step: StepFolder, file_names: set[str]) -> GeGraph | None:
    """The GE Build graph that names the most dumped ops (several graphs: one per compiled graph)."""
    # (imported here: the GE graph's protobuf schema is built on import, time no other dump needs)
    from dumptui.core.formats.ge_graph import find_build_graphs, read_ge_graph

    best: tuple[int, GeGraph] | None = None
    for candidate in find_build_graphs(_graph_folders(path, step)):
        try:
            graph = read_ge_graph(candidate)
        except Exception as e:  # a damaged graph must not stop the dump from loading: it is named instead
            dump.problems.append(Problem(candidate, Fault(Flaw.GE_GRAPH_UNREADABLE, (str(e),)), Severity.WARNING))
            continue
        names = graph.by_file_form()
        known = sum(1 for n in file_names if n in names)
        if known == 0:
            dump.notes.append(because(Why.GE_GRAPH_UNUSED, os.path.basename(candidate)))
        elif best is None or known > best[0]:
            best = (known, graph)
    return best[1] if best else None


def _tensor_ref(raw: RawFile, index: int) -> TensorRef:
    t = raw.tensors[index]
    return TensorRef(
        raw.path,
        t.io,
        t.slot,
        dtype=t.dtype,
        shape=t.shape,
        fmt=t.device_format,
        timestamp=raw.name.timestamp,
        layout_fn=partial(_fixed, t.layout),
        size_on_disk=t.size,
    )


def _list_files(dump: Dump, folder: str) -> list[tuple[str, RawName]]:
    """(path, parsed name) of every raw file; overflow records and foreign files go to the problems."""
    names = list_dir(folder)
    mapping = read_mapping_csv(os.path.join(folder, MAPPING_FILE)) if MAPPING_FILE in names else {}
    out = []
    overflows = 0
    for name in names:
        path = os.path.join(folder, name)
        if name == MAPPING_FILE or os.path.isdir(path):
            continue
        rec = parse_raw_name(name, mapping)
        if rec is None:
            numeric = name.isdigit()
            dump.problems.append(misnamed_file(path, NamePattern.CANN_RAW_UNMAPPED) if numeric else foreign_file(path))
        elif rec.overflow:
            overflows += 1
            dump.problems.append(Problem(path, OVERFLOW_REASON, Severity.WARNING))
        else:
            out.append((path, rec))
    if overflows:
        dump.notes.append(because(Why.OVERFLOW_RECORDS, overflows))
    return out


def _op(raw: RawFile, graph_id: str, node: GeNode | None) -> Op:
    name, source = raw.name.op_name, NameSource.FILE_NAME
    if node is not None:
        name, source = node.name, NameSource.GE_GRAPH
    if raw.op_name:
        name, source = raw.op_name, NameSource.DUMPDATA
    op = Op(
        name=name,
        op_type=raw.name.op_type,
        kind=KERNEL,
        graph=graph_id,
        file_name=raw.name.op_name,
        timestamp=raw.name.timestamp,
        name_source=source,
        fused=node.fused if node is not None else (),
    )
    for i, t in enumerate(raw.tensors):
        op.put(t.io, t.slot, _tensor_ref(raw, i))
    return op


def _spelled_alike(name: str) -> str:
    """A name as a file name may spell it: every character but letters and digits made `_` (the writers
    replace `/`, `.`, spaces and others; which ones differs between releases)."""
    return _NOT_ALNUM.sub("_", name)


_NOT_ALNUM = re.compile(r"[^0-9A-Za-z]")


def _read_ops(
    dump: Dump, files: list[tuple[str, RawName]], graph_id: str, ge: GeGraph | None
) -> tuple[list[Op], Counter[RawLayout | None]]:
    """An op per readable file, and how many files came in each layout."""
    by_form = ge.by_file_form() if ge is not None else {}
    ops = []
    layouts: Counter[RawLayout | None] = Counter()
    for path, rec in files:
        node = ge.nodes.get(by_form.get(rec.op_name, "")) if ge is not None else None
        raw = read_raw_file(
            path,
            rec,
            node.origin_layouts if node is not None else None,
            node.origin_shapes if node is not None else None,
        )
        if raw.op_name and _spelled_alike(raw.op_name) != _spelled_alike(rec.op_name):
            # DumpData.op_name names another op than the file name does (a second op_name field in a damaged
            # header wins the parse): trusted, it gave this file's tensors to that op, a divergence of its own
            dump.problems.append(
                Problem(
                    path,
                    Fault(Flaw.HEADER_NAMES_OTHER_OP, (brief(raw.op_name, 160), brief(rec.op_name, 160))),
                    Severity.WARNING,
                )
            )
            raw.op_name = ""
        if raw.problem:
            dump.problems.append(Problem(path, raw.problem))
        elif not raw.tensors:
            # a file of zeros parses as an empty DumpData: an op without tensors would vanish unnamed
            dump.problems.append(Problem(path, Fault(Flaw.NO_TENSORS), Severity.WARNING))
        if raw.tensors:
            ops.append(_op(raw, graph_id, node))
            layouts[raw.layout_variant] += 1
    return ops, layouts


def _number_calls(ops: list[Op]) -> None:
    """A kernel that ran several times in the step has a file per run: the later runs are calls 2, 3..."""
    seen: Counter[str] = Counter()
    for op in sorted(ops, key=lambda o: o.timestamp or 0):
        seen[op.name] += 1
        op.call = seen[op.name]


def _mindspore_names(dump: Dump, step: StepFolder, ops: list[Op], graph_id: str) -> dict[str, IRGraph]:
    """Full scope names and graph files of a MindSpore async dump (rank tree), as the npy reader reads them."""
    if step.root is None:
        return {}
    orders = read_orders(step.root, [graph_id])
    irs = read_graphs(dump, step.root, [graph_id])
    graph_names = list(orders.get(graph_id, []))
    if graph_id in irs:
        graph_names += [n.full_name for n in irs[graph_id].nodes.values() if n.full_name and not n.virtual]
    unnamed = [op for op in ops if op.name_source is NameSource.FILE_NAME]
    resolved = resolve_names(sorted({op.file_name for op in unnamed}), graph_names)
    for op in unnamed:
        if op.file_name in resolved:
            op.name, op.name_source = resolved[op.file_name]
    return irs


def open_cann(path: str, selection: Selection) -> Dump:
    step = locate(path, selection)
    graph_id = step.graph or ""
    dump = Dump(
        path=path,
        root=step.path,
        format=FORMAT,
        rank=step.device,
        graphs=[graph_id],
        iterations={graph_id: step.step or ""},
        device="Ascend",
        order_source=OrderSource.FILE_TIMESTAMPS,
    )
    files = _list_files(dump, step.path)
    if not files:
        raise DumpError(path, f"no raw dump files in {step.path}" + (" (only overflow records)" if dump.notes else ""))
    ge = _choose_ge_graph(dump, path, step, {rec.op_name for _p, rec in files}) if step.tree != "mindspore" else None
    ops, layouts = _read_ops(dump, files, graph_id, ge)
    if not ops:
        raise DumpError(
            path,
            f"none of the {len(files)} raw dump files in {step.path} is readable: "
            + next(
                (worded(p.reason) if isinstance(p.reason, Fault) else p.reason)
                for p in reversed(dump.problems)
                if isinstance(p.reason, str | Fault)
            ),
        )
    irs: dict[str, IRGraph] = {}
    if ge is not None:
        from dumptui.core.formats.ge_graph import to_ir

        irs = {graph_id: to_ir(ge)}
        dump.graph_source = os.path.basename(ge.path)
    elif step.tree == "mindspore":
        irs = _mindspore_names(dump, step, ops, graph_id)
    ops, two = separate_runs(ops, step.path)  # a stale run's files beside the new ones
    if two is not None:
        dump.problems.append(two)
    _number_calls(ops)
    assign_keys(ops)
    number_in_order(ops, {}, lambda op: (op.timestamp or 0, op.key))
    dump.ops = ops
    link_dataflow(dump, irs, lambda _graph, _name: None)
    dump.variant = _variant(step, files, layouts, ops, ge)
    return dump


def _variant(
    step: StepFolder,
    files: list[tuple[str, RawName]],
    layouts: Counter[RawLayout | None],
    ops: list[Op],
    ge: GeGraph | None,
) -> Reason:
    """How the dump is laid out: its tree, the name styles and file layouts seen, its GE graph (and how many
    fused ops it names): a code for report/reasons.py to word."""
    names = tuple(sorted({rec.variant for _p, rec in files}))
    fused = sum(1 for op in ops if op.fused)
    graph = os.path.basename(ge.path) if ge is not None else None
    return because(Why.CANN_RAW_VARIANT, step.tree, names, tuple(sorted(layouts, key=str)), graph, fused)


class CannRawReader:
    """The Reader of CANN raw dump files (ACL trees, MindSpore async dumps on Ascend, or a folder of them)."""

    name = FORMAT
    formats = (FORMAT,)
    # before mindspore-npy, whose rank-folder test also matches a MindSpore async dump of raw files
    priority = 40

    def looks_like(self, path: str) -> bool:
        return looks_like(path)

    def open(self, path: str, selection: Selection) -> Dump:
        return open_cann(path, selection)


__all__ = ["CannRawReader", "RAW_NAME", "open_cann"]
