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
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field

from google.protobuf import text_encoding, text_format

from dumptui.core.formats.names import file_form
from dumptui.core.formats.protoschema import EnumTable, Message, MessageTable, message_classes
from dumptui.core.io import limits
from dumptui.core.io.safeio import bounded_lines
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
NodeProto = MESSAGES["NodeProto"]

BUILD_GRAPH = re.compile(r"^ge_onnx_.*_Build\.pbtxt$")
FUSED_NAMES = "_datadump_original_op_names"
FUSED_TYPES = "_datadump_original_op_types"
_DESC = re.compile(r"^(?P<io>input|output)_desc_origin_(?P<what>layout|shape):(?P<slot>\d{1,9})$")
# GE node types that hold values rather than run kernels: their outputs are graph inputs and constants.
INPUT_TYPES = {"Data", "AippData", "RefData", "PlaceHolder"}
CONSTANT_TYPES = {"Const", "Constant", "Variable", "ConstPlaceHolder"}


@dataclass(slots=True)  # one per node of graphs of up to millions
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
    # names interned: an input's source is another node's name, and types and layouts repeat (a graph of a
    # million nodes keeps one copy of each)
    node = GeNode(sys.intern(proto.name), sys.intern(op_type))
    for text in proto.input:
        src, sep, index = text.rpartition(":")
        if not text or not sep or index == "-1" or not index.lstrip("-").isdigit():
            continue  # an absent optional input, or a control edge
        node.inputs.append((sys.intern(src), int(index)))
    for attr in proto.attribute:
        if attr.name == FUSED_NAMES:
            node.fused = tuple(_text(s) for s in attr.strings)
        elif attr.name == FUSED_TYPES:
            node.fused_types = tuple(_text(s) for s in attr.strings)
        else:
            m = _DESC.match(attr.name)
            if m and m.group("what") == "layout" and attr.s:
                node.origin_layouts[(sys.intern(m.group("io")), int(m.group("slot")))] = sys.intern(_text(attr.s))
            elif m and m.group("what") == "shape":
                try:  # a dynamic (-1) or out-of-range dimension: no origin shape for this tensor
                    key = (sys.intern(m.group("io")), int(m.group("slot")))
                    node.origin_shapes[key] = limits.shape(list(attr.ints))
                except limits.BadValue:
                    pass
    return node


def read_ge_graph(path: str) -> GeGraph:
    """The graph of a GE `.pbtxt` dump, read a node at a time. OSError, or ValueError saying why it is not one.

    A node's text is parsed as a NodeProto when its closing brace is read, and only what the dump needs of it
    is kept (GeNode): parsed whole, the protobuf objects take several times the text, gigabytes for a 1M-node
    graph; read this way the memory is the GeNodes' (see README, Damaged dumps)."""
    graph: GeGraph | None = None
    name = ""
    for kind, lines in _graph_parts(path):
        if kind == "name":
            name = lines[0]
            continue
        node = _quick_node(lines)
        if node is None:  # a spelling the quick reading does not know: protobuf's own parser decides
            proto = NodeProto()
            try:
                text_format.Parse("".join(lines), proto, allow_unknown_field=True)
            except text_format.ParseError as e:
                raise ValueError(f"not a GE graph dump (protobuf text of an ONNX model): {e}") from None
            node = _node(proto) if proto.name else None
        if graph is None:
            graph = GeGraph(path, "")
        if node is not None and node.name:
            graph.nodes[node.name] = node
    if graph is None or not graph.nodes:
        raise ValueError("not a GE graph dump: no graph with nodes")
    graph.name = name
    return graph


# A token of protobuf's text format that matters to nesting: a string (skipped whole, braces in it are text),
# a comment, a field name opening a message (`node {`, `graph: <`), an opening or a closing bracket.
_TOKEN = re.compile(
    r'"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\'|#[^\n]*|(?P<field>[A-Za-z_][\w.]*)\s*:?\s*(?P<open>[{<])|(?P<bare>[{<])|(?P<close>[}>])'
)
_BRACKET = re.compile(r"[{}<>]")
_GRAPH_NAME = re.compile(r'^\s*name\s*:\s*"((?:[^"\\]|\\.)*)"')


# One line of a node as GE writes it: `field {` (or `<`), a closing bracket, or `field: value`.
_NODE_LINE = re.compile(
    r"\s*(?:(?P<open>[A-Za-z_]\w*)\s*:?\s*[{<]|(?P<close>[}>])|(?P<field>[A-Za-z_]\w*)\s*:\s*"
    r'(?:(?P<str>"(?:[^"\\\n]|\\.)*")|(?P<word>[-+\w.]+)))\s*(?:#[^\n]*)?$'
)


class _Attr:
    """What _node reads of an AttributeProto (the same names, so both readings share _node)."""

    __slots__ = ("name", "s", "ints", "strings")

    def __init__(self) -> None:
        self.name, self.s = "", b""
        self.ints: list[int] = []
        self.strings: list[bytes] = []


class _Node:
    __slots__ = ("name", "op_type", "input", "attribute")

    def __init__(self) -> None:
        self.name, self.op_type = "", ""
        self.input: list[str] = []
        self.attribute: list[_Attr] = []


def _quick_node(lines: list[str]) -> GeNode | None:
    """A node's lines as GE writes them (one `field: value`, `field {` or `}` a line, strings in double
    quotes), read ten times faster than protobuf's text parser does; None for any other spelling (lists in
    brackets, several fields on a line), which the caller gives to protobuf's parser."""
    node, attr = _Node(), None
    depth = 0  # 0: the node's fields, 1: an attribute's, more: inside a message not read
    try:
        for line in lines:
            if not line or line.isspace():
                continue
            m = _NODE_LINE.match(line)
            if m is None:
                return None
            opened, closed, field_name, quoted, word = m.group("open", "close", "field", "str", "word")
            if opened is not None or closed is not None:
                depth += 1 if opened is not None else -1
                if depth < 0:
                    return None
                attr = _attribute_at(node, depth, opened, attr)
                continue
            ok = True
            if depth == 0:
                ok = _node_field(node, field_name, quoted)
            elif depth == 1 and attr is not None:
                ok = _attribute_field(attr, field_name, quoted, word)
            if not ok:
                return None
    except ValueError:
        return None
    return _node(node) if depth == 0 else None


def _attribute_at(node: _Node, depth: int, opened: str | None, attr: _Attr | None) -> _Attr | None:
    """The attribute being read after a bracket line (`opened`: the message it opens, None for a closing one):
    a new one for `attribute {` in the node, none once back in the node's own fields."""
    if opened is None:
        return None if depth == 0 else attr
    if depth == 1 and opened == "attribute":
        attr = _Attr()
        node.attribute.append(attr)
    return attr


def _node_field(node: _Node, field_name: str, quoted: str | None) -> bool:
    """One of the node's own fields (name, op_type, input; the rest skipped); False for a spelling protobuf's
    parser must judge."""
    if field_name not in ("name", "op_type", "input"):
        return True
    if quoted is None:
        return False
    value = _unquoted(quoted).decode("utf-8", errors="replace")
    if field_name == "input":
        node.input.append(value)
    elif getattr(node, field_name):
        return False  # a field given twice: protobuf's parser refuses it, and says why
    else:
        setattr(node, field_name, value)
    return True


def _attribute_field(attr: _Attr, field_name: str, quoted: str | None, word: str | None) -> bool:
    """One field of an attribute (name, s, strings, ints; the rest skipped); False for a spelling protobuf's
    parser must judge. ValueError for an integer that is none."""
    if quoted is not None and field_name in ("name", "s", "strings"):
        value = _unquoted(quoted)
        if field_name == "name":
            attr.name = value.decode("utf-8", errors="replace")
        elif field_name == "s":
            attr.s = value
        else:
            attr.strings.append(value)
    elif field_name == "ints":
        if word is None:
            return False
        attr.ints.append(int(word, 0))
    return True


def _unquoted(token: str) -> bytes:
    body = token[1:-1]
    if body.isascii() and "\\" not in body:  # most names: nothing to unescape
        return body.encode("ascii")
    raw: bytes = text_encoding.CUnescape(body)
    return raw


def _graph_parts(path: str) -> Iterator[tuple[str, list[str]]]:
    """("node", the lines inside one `graph { node { ... } }`, the first and last cut at its brackets) for each
    node, and ("name", [the graph's name]), from the file's lines read one at a time (each within
    MAX_GRAPH_LINE). Only lines holding a bracket are looked into: the others cannot change the nesting."""
    stack: list[str] = []  # the field names of the open messages
    body: list[str] | None = None  # the lines of the node being read
    for line in bounded_lines(path, limits.MAX_GRAPH_LINE, limits.MAX_TEXT_FILE):
        if not _BRACKET.search(line):
            if body is not None:
                body.append(line)
            elif stack == ["graph"] and (m := _GRAPH_NAME.match(line)):
                yield "name", [text_encoding.CUnescape(m.group(1)).decode("utf-8", errors="replace")]
            continue
        start = 0  # of this line's part that belongs to the node being read
        for m in _TOKEN.finditer(line):
            if m.group("open") or m.group("bare"):
                stack.append(m.group("field") or "")
                if body is None and stack == ["graph", "node"]:
                    body, start = [], m.end()
            elif m.group("close"):
                if not stack:
                    raise ValueError("not a GE graph dump: a closing bracket without an opening one")
                stack.pop()
                if body is not None and stack == ["graph"]:
                    body.append(line[start : m.start()])
                    yield "node", body
                    body = None
        if body is not None:
            body.append(line[start:])
    if stack:
        raise ValueError("not a GE graph dump: the file ends inside a message (cut short?)")


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
