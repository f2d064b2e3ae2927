"""MindSpore dumps written with `trans_flag: false`: tensors stay in the device layout their kernel used, and the
file name says which (`...output.0.NC1HWC0.Float16.npy`, `..._shape_1_1_8_8_16_Float16_NC1HWC0.bin`). The
shape in the file is then the device's; the graph file holds the framework's shape (the text IR's type line of
the node, or the producer's output type, or the parameter's type). Each such tensor is read through its
device layout back into that shape; without a graph shape it is unreadable, with the reason. Nothing is read
here: the npy header is read, and the layout checked, when the tensor is first needed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from functools import partial

from dumptui.core.io.devicelayout import PLAIN_FORMATS, TRANSPOSES, DevicePayload, LayoutError, plan
from dumptui.core.io.fault import Fault, Flaw, text
from dumptui.core.io.npy import Layout
from dumptui.core.model.dump import INPUT, KERNEL, OUTPUT, PARAMETER, Dump, InOut, Op, SourceKind, TensorRef
from dumptui.core.model.ir import IRGraph, IRNode
from dumptui.core.model.reason import Why, because

Shape = tuple[int, ...]


def _original_view(stored: TensorRef, original: Shape | None) -> Layout:
    """The layout of `stored` (a tensor in a device layout) as seen in its original shape."""
    lay = stored.layout()
    if lay.problem or lay.storage is None or lay.shape is None:
        return lay
    if lay.shape == original and stored.fmt not in TRANSPOSES:
        return lay  # already converted whatever the name says (a device layout changes the rank)
    if lay.fortran:
        return dataclasses.replace(lay, problem=Fault(Flaw.FORTRAN_DEVICE_LAYOUT, (stored.fmt,)))
    try:
        device = plan(stored.fmt, lay.shape, original)
    except LayoutError as e:
        return dataclasses.replace(lay, shape=original or lay.shape, problem=text(e))
    if device is None:
        return lay
    return dataclasses.replace(lay, shape=device.original_shape, decoder=DevicePayload(device))


def _graph_shape(
    op: Op, io: InOut, slot: int, node: IRNode | None, ir: IRGraph | None, nodes: Mapping[str, IRNode], dump: Dump
) -> Shape | None:
    """The framework shape of a tensor per the graph: the node's own type line, else (an input) the type of
    the output or parameter that feeds it."""
    if op.kind == PARAMETER:
        param = ir.params.get(op.name) if ir is not None else None
        return param.shape if param is not None else None
    if node is not None:
        types = node.in_types if io == INPUT else node.out_types
        if slot < len(types) and types[slot][1] is not None:
            return types[slot][1]
    if io == INPUT and slot in op.sources:
        src = op.sources[slot]
        if src.kind == SourceKind.PARAMETER and ir is not None and src.ref in ir.params:
            return ir.params[src.ref].shape
        producer = dump.op(src.ref) if src.kind == SourceKind.OP else None
        producer_node = nodes.get(producer.name) if producer is not None else None
        if producer_node is not None and src.slot < len(producer_node.out_types):
            return producer_node.out_types[src.slot][1]
    return None


def restore_original_shapes(dump: Dump, irs: Mapping[str, IRGraph]) -> int:
    """Read every tensor whose file name says a device layout in its graph shape; returns how many."""
    by_name = {g: ir.by_full_name() for g, ir in irs.items()}
    count = 0
    for op in dump.ops:
        if op.kind not in (KERNEL, PARAMETER):
            continue
        ir = irs.get(op.graph)
        nodes = by_name.get(op.graph, {})
        for io, tensors in ((INPUT, op.inputs), (OUTPUT, op.outputs)):
            for slot, t in list(tensors.items()):
                if t.fmt in PLAIN_FORMATS or not t.has_data:
                    continue
                shape = _graph_shape(op, io, slot, nodes.get(op.name), ir, nodes, dump)
                op.put(io, slot, t.relayout(shape, partial(_original_view, t, shape)))
                count += 1
    if count:
        dump.notes.append(because(Why.DEVICE_LAYOUT_READ, count))
    return count
