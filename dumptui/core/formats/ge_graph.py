"""GE graph dumps (`export DUMP_GE_GRAPH=1|2` -> `ge_onnx_*_graph_*_Build.pbtxt`): the graph that ran on Ascend.

The file is an ONNX ModelProto in protobuf text format, written by GE's OnnxUtils: a node per op with `name`
(the op name of the raw dump files, before `/` became `_`), `op_type` `ge:{type}`, inputs `{src}:{index}`
(`{src}:-1` for a control edge, "" for an absent optional input), and GE's attributes, among them
`_datadump_original_op_names`: the framework ops a fused op replaced, in order (GE writes string-list
attributes at level 1 only). Tensor descriptions come as `input_desc_origin_layout:{i}`,
`output_desc_origin_shape:{i}` and kin. The schema is ONNX's onnx.proto for the fields GE writes, built in code.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from google.protobuf import text_format

from dumptui.core.formats.names import file_form
from dumptui.core.formats.protoschema import EnumTable, Message, MessageTable, message_classes
from dumptui.core.io import limits
from dumptui.core.io.safeio import read_text
from dumptui.core.model.ir import IRArg, IRGraph, IRNode, IRParam

_ENUMS: EnumTable = {
    "AttributeProto.AttributeType": [
        ("UNDEFINED", 0),
        ("FLOAT", 1),
        ("INT", 2),
        ("STRING", 3),
        ("TENSOR", 4),
        ("GRAPH", 5),
        ("FLOATS", 6),
        ("INTS", 7),
        ("STRINGS", 8),
        ("TENSORS", 9),
        ("GRAPHS", 10),
        ("SPARSE_TENSOR", 11),
        ("SPARSE_TENSORS", 12),
        ("TYPE_PROTO", 13),
        ("TYPE_PROTOS", 14),
    ],
}
_MESSAGES: MessageTable = {
    "ModelProto": [
        ("ir_version", 1, "optional", "int64"),
        ("producer_name", 2, "optional", "string"),
        ("producer_version", 3, "optional", "string"),
        ("domain", 4, "optional", "string"),
        ("model_version", 5, "optional", "int64"),
        ("doc_string", 6, "optional", "string"),
        ("graph", 7, "optional", "GraphProto"),
        ("opset_import", 8, "repeated", "OperatorSetIdProto"),
        ("metadata_props", 14, "repeated", "StringStringEntryProto"),
    ],
    "OperatorSetIdProto": [("domain", 1, "optional", "string"), ("version", 2, "optional", "int64")],
    "StringStringEntryProto": [("key", 1, "optional", "string"), ("value", 2, "optional", "string")],
    "GraphProto": [
        ("node", 1, "repeated", "NodeProto"),
        ("name", 2, "optional", "string"),
        ("initializer", 5, "repeated", "TensorProto"),
        ("doc_string", 10, "optional", "string"),
        ("input", 11, "repeated", "ValueInfoProto"),
        ("output", 12, "repeated", "ValueInfoProto"),
        ("value_info", 13, "repeated", "ValueInfoProto"),
    ],
    "NodeProto": [
        ("input", 1, "repeated", "string"),
        ("output", 2, "repeated", "string"),
        ("name", 3, "optional", "string"),
        ("op_type", 4, "optional", "string"),
        ("attribute", 5, "repeated", "AttributeProto"),
        ("doc_string", 6, "optional", "string"),
        ("domain", 7, "optional", "string"),
    ],
    "AttributeProto": [
        ("name", 1, "optional", "string"),
        ("f", 2, "optional", "float"),
        ("i", 3, "optional", "int64"),
        ("s", 4, "optional", "bytes"),
        ("t", 5, "optional", "TensorProto"),
        ("g", 6, "optional", "GraphProto"),
        ("floats", 7, "repeated", "float"),
        ("ints", 8, "repeated", "int64"),
        ("strings", 9, "repeated", "bytes"),
        ("tensors", 10, "repeated", "TensorProto"),
        ("graphs", 11, "repeated", "GraphProto"),
        ("doc_string", 13, "optional", "string"),
        ("type", 20, "optional", "AttributeProto.AttributeType"),
        ("ref_attr_name", 21, "optional", "string"),
    ],
    "ValueInfoProto": [
        ("name", 1, "optional", "string"),
        ("type", 2, "optional", "TypeProto"),
        ("doc_string", 3, "optional", "string"),
    ],
    "TypeProto": [("tensor_type", 1, "oneof value", "TypeProto.Tensor"), ("denotation", 6, "optional", "string")],
    "TypeProto.Tensor": [("elem_type", 1, "optional", "int32"), ("shape", 2, "optional", "TensorShapeProto")],
    "TensorShapeProto": [("dim", 1, "repeated", "TensorShapeProto.Dimension")],
    "TensorShapeProto.Dimension": [
        ("dim_value", 1, "oneof value", "int64"),
        ("dim_param", 2, "oneof value", "string"),
        ("denotation", 3, "optional", "string"),
    ],
    "TensorProto": [
        ("dims", 1, "repeated", "int64"),
        ("data_type", 2, "optional", "int32"),
        ("float_data", 4, "packed", "float"),
        ("int32_data", 5, "packed", "int32"),
        ("string_data", 6, "repeated", "bytes"),
        ("int64_data", 7, "packed", "int64"),
        ("name", 8, "optional", "string"),
        ("raw_data", 9, "optional", "bytes"),
        ("double_data", 10, "packed", "double"),
        ("uint64_data", 11, "packed", "uint64"),
        ("doc_string", 12, "optional", "string"),
    ],
}
MESSAGES = message_classes("dumptui/ge_onnx.proto", "ge.onnx", "proto2", _ENUMS, _MESSAGES)
ModelProto = MESSAGES["ModelProto"]

BUILD_GRAPH = re.compile(r"^ge_onnx_.*_Build\.pbtxt$")
FUSED_NAMES = "_datadump_original_op_names"
FUSED_TYPES = "_datadump_original_op_types"
_DESC = re.compile(r"^(?P<io>input|output)_desc_origin_(?P<what>layout|shape):(?P<slot>\d{1,9})$")
# GE node types that hold values rather than run kernels: their outputs are graph inputs and constants.
INPUT_TYPES = {"Data", "AippData", "RefData", "PlaceHolder"}
CONSTANT_TYPES = {"Const", "Constant", "Variable", "ConstPlaceHolder"}


@dataclass
class GeNode:
    name: str
    op_type: str  # without GE's "ge:" prefix
    inputs: list[tuple[str, int]] = field(default_factory=list)  # data inputs: (source node, output index)
    fused: tuple[str, ...] = ()  # framework ops this op replaced, in order
    fused_types: tuple[str, ...] = ()
    origin_layouts: dict[tuple[str, int], str] = field(default_factory=dict)  # (io, slot) -> NCHW...
    origin_shapes: dict[tuple[str, int], tuple[int, ...]] = field(default_factory=dict)


@dataclass
class GeGraph:
    path: str
    name: str
    nodes: dict[str, GeNode] = field(default_factory=dict)

    def by_file_form(self) -> dict[str, str]:
        """{the name as a raw dump file spells it: node name}, for the names that spelling keeps apart."""
        out: dict[str, list[str]] = {}
        for name in self.nodes:
            out.setdefault(file_form(name), []).append(name)
        return {k: v[0] for k, v in out.items() if len(v) == 1}


def _text(value: bytes) -> str:
    return value.decode("utf-8", errors="replace")


def _node(proto: Message) -> GeNode:
    op_type = proto.op_type[3:] if proto.op_type.startswith("ge:") else proto.op_type
    node = GeNode(proto.name, op_type)
    for text in proto.input:
        src, sep, index = text.rpartition(":")
        if not text or not sep or index == "-1" or not index.lstrip("-").isdigit():
            continue  # an absent optional input, or a control edge
        node.inputs.append((src, int(index)))
    for attr in proto.attribute:
        if attr.name == FUSED_NAMES:
            node.fused = tuple(_text(s) for s in attr.strings)
        elif attr.name == FUSED_TYPES:
            node.fused_types = tuple(_text(s) for s in attr.strings)
        else:
            m = _DESC.match(attr.name)
            if m and m.group("what") == "layout" and attr.s:
                node.origin_layouts[(m.group("io"), int(m.group("slot")))] = _text(attr.s)
            elif m and m.group("what") == "shape":
                try:  # a dynamic (-1) or out-of-range dimension: no origin shape for this tensor
                    node.origin_shapes[(m.group("io"), int(m.group("slot")))] = limits.shape(list(attr.ints))
                except limits.BadValue:
                    pass
    return node


def read_ge_graph(path: str) -> GeGraph:
    """The graph of a GE `.pbtxt` dump. OSError, or ValueError saying why it is not one."""
    text = read_text(path)
    model = ModelProto()
    try:
        text_format.Parse(text, model, allow_unknown_field=True)
    except text_format.ParseError as e:
        raise ValueError(f"not a GE graph dump (protobuf text of an ONNX model): {e}") from None
    if not model.HasField("graph") or not model.graph.node:
        raise ValueError("not a GE graph dump: no graph with nodes")
    graph = GeGraph(path, model.graph.name)
    for proto in model.graph.node:
        if proto.name:
            graph.nodes[proto.name] = _node(proto)
    return graph


def find_build_graphs(folders: list[str]) -> list[str]:
    """The `ge_onnx_*_Build.pbtxt` files in `folders` (each listed once, in order)."""
    found: list[str] = []
    for folder in folders:
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            continue
        found += [os.path.join(folder, n) for n in names if BUILD_GRAPH.match(n)]
    return list(dict.fromkeys(os.path.realpath(p) for p in found))


def to_ir(graph: GeGraph) -> IRGraph:
    """The dataflow of a GE graph as an IRGraph (graph/build.py turns it into edges between dumped ops): a data or
    constant node becomes a parameter or constant argument; output k > 0 of a node is read through a
    TupleGetItem, as in MindSpore graphs, so that edges keep their output slot."""
    ir = IRGraph(name=graph.name, source=graph.path)
    for node in graph.nodes.values():
        if node.op_type in INPUT_TYPES:
            ir.params[node.name] = IRParam(name=node.name, is_weight=False)
    for node in graph.nodes.values():
        if node.op_type in INPUT_TYPES or node.op_type in CONSTANT_TYPES:
            continue
        args = []
        for src, index in node.inputs:
            producer = graph.nodes.get(src)
            if src in ir.params:
                args.append(IRArg("param", src))
            elif producer is None or producer.op_type in CONSTANT_TYPES:
                args.append(IRArg("const", src))
            elif index == 0:
                args.append(IRArg("node", src))
            else:
                getter = f"{src}:{index}"
                if getter not in ir.nodes:
                    ir.nodes[getter] = IRNode(
                        getter, "TupleGetItem", args=[IRArg("node", src), IRArg("const", str(index))], attrs={}
                    )
                args.append(IRArg("node", getter))
        ir.nodes[node.name] = IRNode(node.name, node.op_type, full_name=node.name, args=args, attrs={})
    return ir
