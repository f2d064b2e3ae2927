"""Parser for MindSpore's graph protobuf (`ms_output_trace_code_graph_{g}.pb`, package `mindspore.irpb`, proto2).

The schema is MindSpore's `anf_ir.proto` (mindspore/ccsrc/utils/anf_ir.proto). We build its message classes at
import time from the tables below (protoschema.py), so neither protoc nor a generated `_pb2` module is needed.
The classes live in a private descriptor pool: an installed MindSpore registers the same `mindspore.irpb` names
in the default pool, and registering them twice there fails.

What MindSpore's exporter (dump_proto.cc) writes, as seen in real 2.10 files:
- kernels and virtual nodes alike are `NodeProto`s named "1", "2", ... in topological order, with `op_type`
  (no `PrimFunc_` prefix), `scope` and `full_name` (`Default/conv1-ConvBlock/Conv2D-op0`);
- an input names another node by that number, a parameter by its plain name (`conv1.weight`, `x`), and a value
  node by `cst{N}`, whose value is in `GraphProto.const_vals`;
- monads (the `U` state argument of Load and UpdateState) and tensor constants both arrive as empty values;
- parameters carry a type but no default value, so weights and network inputs look the same.
"""

from __future__ import annotations

import numpy as np
from google.protobuf.message import DecodeError

from dumptui.core.formats.irtext import MONADS, strip_prefix
from dumptui.core.formats.protoschema import Message, message_classes
from dumptui.core.io import dtypes, limits
from dumptui.core.io.safeio import read_bytes
from dumptui.core.model.ir import ArgKind, IRArg, IRGraph, IRNode, IRParam, TensorType

_PACKAGE = "mindspore.irpb"
_FILE_NAME = "dumptui/anf_ir.proto"

# anf_ir.proto, value for value and field for field. Field rows: (name, number, label, type), where label is
# "optional", "repeated", "packed" (repeated, [packed = true]) or "oneof NAME"; a type that is not a scalar names
# a message or enum of the package.
_ENUMS = {
    "Version": [("UNKNOWWN_VERSION", 0), ("IR_VERSION", 1)],
    "DataType": [
        ("DT_UNDEFINED", 0),
        ("DT_BOOL", 1),
        ("DT_INT8", 2),
        ("DT_INT16", 3),
        ("DT_INT32", 4),
        ("DT_INT64", 5),
        ("DT_UINT8", 6),
        ("DT_UINT16", 7),
        ("DT_UINT32", 8),
        ("DT_UINT64", 9),
        ("DT_FLOAT16", 10),
        ("DT_FLOAT32", 11),
        ("DT_FLOAT64", 12),
        ("DT_STRING", 13),
        ("DT_TENSOR", 14),
        ("DT_GRAPH", 15),
        ("DT_BOOLS", 16),
        ("DT_INTS8", 17),
        ("DT_INTS16", 18),
        ("DT_INTS32", 19),
        ("DT_INTS64", 20),
        ("DT_UINTS8", 21),
        ("DT_UINTS16", 22),
        ("DT_UINTS32", 23),
        ("DT_UINTS64", 24),
        ("DT_FLOATS16", 25),
        ("DT_FLOATS32", 26),
        ("DT_FLOATS64", 27),
        ("DT_STRINGS", 28),
        ("DT_TENSORS", 29),
        ("DT_GRAPHS", 30),
        ("DT_TUPLE", 31),
        ("DT_LIST", 32),
        ("DT_DICT", 33),
        ("DT_NONE", 34),
        ("DT_SYM_INST", 35),
        ("DT_BASE_INT", 36),
        ("DT_BASE_UINT", 37),
        ("DT_BASE_FLOAT", 38),
        ("DT_TYPE", 39),
        ("DT_ANY", 40),
        ("DT_REFKEY", 41),
        ("DT_REF", 42),
        ("DT_COMPLEX64", 43),
        ("DT_COMPLEX128", 44),
        ("DT_BASE_COMPLEX", 45),
    ],
    "InputProto.EdgeType": [("DATA_EDGE", 0), ("CONTROL_EDGE", 1)],
}
_MESSAGES = {
    "ValueProto": [
        ("dtype", 1, "optional", "DataType"),
        ("bool_val", 2, "optional", "bool"),
        ("int_val", 3, "optional", "int64"),
        ("uint_val", 4, "optional", "uint64"),
        ("float_val", 5, "optional", "float"),
        ("double_val", 6, "optional", "double"),
        ("str_val", 7, "optional", "string"),
        ("tensor_val", 8, "optional", "TensorProto"),
        ("graph", 9, "optional", "GraphProto"),
        ("bool_vals", 10, "repeated", "bool"),
        ("int_vals", 11, "repeated", "int64"),
        ("uint_vals", 12, "repeated", "uint64"),
        ("float_vals", 13, "repeated", "float"),
        ("double_vals", 14, "repeated", "double"),
        ("str_vals", 15, "repeated", "string"),
        ("tensor_vals", 16, "repeated", "TensorProto"),
        ("graphs", 17, "repeated", "GraphProto"),
        ("values", 18, "repeated", "ValueProto"),
        ("dict_val", 19, "repeated", "NamedValueProto"),
        ("type_val", 20, "optional", "TypeProto"),
    ],
    "AttributeProto": [("name", 1, "optional", "string"), ("value", 2, "optional", "ValueProto")],
    "NamedValueProto": [("key", 1, "optional", "string"), ("value", 2, "optional", "ValueProto")],
    "TensorShapeProto": [("dim", 1, "repeated", "TensorShapeProto.Dimension")],
    "TensorShapeProto.Dimension": [("size", 1, "optional", "int64"), ("name", 2, "optional", "string")],
    "TypeProto": [
        ("data_type", 1, "optional", "DataType"),
        ("tensor_type", 2, "oneof value", "TypeProto.Tensor"),
        ("sequence_type", 3, "oneof value", "TypeProto.Sequence"),
    ],
    "TypeProto.Tensor": [("elem_type", 1, "optional", "DataType"), ("shape", 2, "optional", "TensorShapeProto")],
    "TypeProto.Sequence": [("elem_types", 1, "repeated", "TypeProto")],
    "ParameterProto": [
        ("name", 1, "optional", "string"),
        ("type", 2, "optional", "TypeProto"),
        ("default_val", 3, "optional", "ValueProto"),
    ],
    "OutputProto": [("name", 1, "optional", "string"), ("type", 2, "optional", "TypeProto")],
    "InputProto": [("name", 1, "optional", "string"), ("type", 2, "optional", "InputProto.EdgeType")],
    "NodeProto": [
        ("input", 1, "repeated", "InputProto"),
        ("name", 2, "optional", "string"),
        ("op_type", 3, "optional", "string"),
        ("scope", 4, "optional", "string"),
        ("attribute", 5, "repeated", "AttributeProto"),
        ("output_type", 6, "optional", "TypeProto"),
        ("output_i", 7, "optional", "uint64"),
        ("full_name", 8, "optional", "string"),
        ("instance_name", 10, "optional", "string"),
    ],
    "ModelProto": [
        ("ir_version", 1, "optional", "int64"),
        ("domain", 2, "optional", "string"),
        ("model_version", 3, "optional", "int64"),
        ("graph", 4, "optional", "GraphProto"),
        ("metadata_operators", 5, "optional", "OperatorSetProto"),
    ],
    "OperatorProto": [
        ("name", 1, "optional", "string"),
        ("config", 2, "optional", "bytes"),
        ("obj_info", 3, "optional", "bytes"),
    ],
    "OperatorSetProto": [("operators", 1, "repeated", "OperatorProto"), ("summary", 2, "optional", "string")],
    "GraphProto": [
        ("node", 1, "repeated", "NodeProto"),
        ("name", 2, "optional", "string"),
        ("parameters", 3, "repeated", "ParameterProto"),
        ("outputs", 4, "repeated", "OutputProto"),
        ("const_vals", 5, "repeated", "NamedValueProto"),
    ],
    "TensorProto": [
        ("dims", 1, "repeated", "int64"),
        ("data_type", 2, "optional", "DataType"),
        ("float_data", 3, "packed", "float"),
        ("int32_data", 4, "packed", "int32"),
        ("int64_data", 5, "packed", "int64"),
        ("double_data", 6, "packed", "double"),
        ("uint64_data", 7, "packed", "uint64"),
        ("raw_data", 8, "optional", "bytes"),
    ],
}

# Message classes by name ("ModelProto", "TypeProto.Tensor", ...).
MESSAGES = message_classes(_FILE_NAME, _PACKAGE, "proto2", _ENUMS, _MESSAGES)
ModelProto = MESSAGES["ModelProto"]

_DT = dict(_ENUMS["DataType"])
_DT_NAMES = {number: name for name, number in _ENUMS["DataType"]}
_DATA_EDGE = 0
# The text IR's spelling of scalar values (`I64(3)`, `F32(0.1)`, `Bool(1)`), so that attributes and constants
# read from a .pb compare equal to the same ones read from a .ir.
_SCALAR_LABELS = {
    "DT_INT8": "I8",
    "DT_INT16": "I16",
    "DT_INT32": "I32",
    "DT_INT64": "I64",
    "DT_UINT8": "U8",
    "DT_UINT16": "U16",
    "DT_UINT32": "U32",
    "DT_UINT64": "U64",
    "DT_FLOAT32": "F32",
    "DT_FLOAT64": "F64",
}
# The exporter maps MindSpore's width-less number types (`mstype.float_`...) to these.
_BASE_TYPES = {
    "DT_BASE_INT": "Int",
    "DT_BASE_UINT": "UInt",
    "DT_BASE_FLOAT": "Float",
    "DT_BASE_COMPLEX": "Complex",
    "DT_BOOL": "Bool",
}
_ATTR_LIMIT = 200


def _dtype(number: int) -> str | None:
    name = _DT_NAMES.get(number, "")
    return dtypes.canonical(name[3:]) if name.startswith("DT_") else None


def _tensor_types(type_proto: Message, in_sequence: bool = False) -> list[TensorType]:
    """(dtype, shape) of each tensor in a TypeProto; a tuple gives one entry per element.

    The exporter writes no shape field for a 0-d tensor, and none at all for tuple elements: a missing shape is
    () at the top level and unknown (None) inside a tuple.
    """
    which = type_proto.WhichOneof("value")
    if which == "tensor_type":
        tensor = type_proto.tensor_type
        shape: tuple[int, ...] | None
        if tensor.HasField("shape"):
            try:  # a dynamic dimension (-1) or one out of range: the shape is unknown
                shape = limits.shape([d.size for d in tensor.shape.dim])
            except limits.BadValue:
                shape = None
        else:
            shape = None if in_sequence else ()
        return [(_dtype(tensor.elem_type), shape)]
    if which == "sequence_type":
        return [t for elem in type_proto.sequence_type.elem_types for t in _tensor_types(elem, True)]
    return []


def value_text(value: Message, nested: bool = False) -> str | None:
    """A ValueProto in the text IR's spelling where known; None for an empty value (monads, tensor constants)."""
    dtype = _DT_NAMES.get(value.dtype, "") if value.HasField("dtype") else ""
    if value.HasField("bool_val"):
        return ("true" if value.bool_val else "false") if nested else f"Bool({int(value.bool_val)})"
    for field in ("int_val", "uint_val", "float_val", "double_val"):
        if value.HasField(field):
            number = getattr(value, field)
            text = str(np.float32(number)) if field == "float_val" else str(number)
            label = _SCALAR_LABELS.get(dtype)
            return text if nested or label is None else f"{label}({text})"
    if value.HasField("str_val"):
        return value.str_val if nested or dtype == "DT_NONE" else f'"{value.str_val}"'
    if dtype in ("DT_TUPLE", "DT_LIST") or value.values:
        inner = ", ".join(value_text(v, nested=True) or "?" for v in value.values)
        return f"[{inner}]" if dtype == "DT_LIST" else f"({inner})"
    if value.dict_val:
        return "{" + ", ".join(f"{kv.key}: {value_text(kv.value, nested=True) or '?'}" for kv in value.dict_val) + "}"
    if value.HasField("tensor_val"):
        tensor = value.tensor_val
        dims = ", ".join(str(d) for d in tensor.dims)
        return f"Tensor(shape=[{dims}], dtype={_dtype(tensor.data_type) or _DT_NAMES.get(tensor.data_type, '?')})"
    if value.HasField("type_val"):
        type_val = value.type_val
        if type_val.WhichOneof("value") == "tensor_type":
            return f"TensorType[{_dtype(type_val.tensor_type.elem_type)}]"
        name = _DT_NAMES.get(type_val.data_type, str(type_val.data_type))
        return _BASE_TYPES.get(name) or dtypes.canonical(name[3:]) or name[3:]
    for field in ("str_vals", "bool_vals", "int_vals", "uint_vals", "float_vals", "double_vals"):
        items = getattr(value, field)
        if items:
            return "(" + ", ".join(str(v) for v in items) + ")"
    return None


def _short(text: str | None) -> str:
    text = text or ""
    return text if len(text) <= _ATTR_LIMIT else text[: _ATTR_LIMIT - 3] + "..."


def _monad_constants(proto: Message, constants: dict[str, str | None]) -> set[str]:
    """Names of the constants that hold a monad (state token), which the text IR leaves out of argument lists.

    Older exporters write the monad's name (`U`, `IO`); 2.x write an empty value, the same as for tensor
    constants, so there we recognise monads by their use: the state argument of Load(param, U) and of
    UpdateState(U, ...).
    """
    monads = {name for name, text in constants.items() if text and text.strip('"') in MONADS}
    for node in proto.node:
        state_slot = {"Load": 1, "UpdateState": 0}.get(strip_prefix(node.op_type))
        if state_slot is not None and len(node.input) > state_slot:
            name = node.input[state_slot].name
            if name in constants and constants[name] is None:
                monads.add(name)
    return monads


def parse_anf_pb(path: str) -> IRGraph:
    """The graph in a `mindspore.irpb.ModelProto` file. Raises OSError, or ValueError for a damaged file."""
    data = read_bytes(path)
    model = ModelProto()
    try:
        model.ParseFromString(data)
    except DecodeError as e:
        raise ValueError(f"not a MindSpore graph protobuf ({e})") from None
    if not model.HasField("graph"):
        raise ValueError("not a MindSpore graph protobuf (no graph in the ModelProto)")
    proto = model.graph
    graph = IRGraph(name=proto.name, source=path)

    constants = {kv.key: value_text(kv.value) for kv in proto.const_vals}
    monads = _monad_constants(proto, constants)
    # Since auto-monad (r1.2) graphs read every weight through Load(param, U); network inputs are used directly.
    loaded = {node.input[0].name for node in proto.node if strip_prefix(node.op_type) == "Load" and node.input}
    for param in proto.parameters:
        types = _tensor_types(param.type)
        dtype, shape = types[0] if len(types) == 1 else (None, None)
        is_weight = param.HasField("default_val") or param.name in loaded
        graph.params[param.name] = IRParam(name=param.name, dtype=dtype, shape=shape, is_weight=is_weight)

    # The exporter writes nodes in topological order, but collect all names first so that a file written in
    # another order still resolves.
    node_names = {node.name for node in proto.node if node.name}
    for node in proto.node:
        if not node.name:
            continue  # the exporter leaves calls of sub-graphs and closures empty: nothing to map
        op_type = strip_prefix(node.op_type)
        # Exporters fill full_name; without it, scope/op_type only labels the node. It never equals a dumped
        # kernel's name (those end in -opN), so it cannot pair the node with the wrong kernel.
        full_name = node.full_name or "/".join(p for p in (node.scope, op_type) if p)
        args = []
        for inp in node.input:
            if inp.type != _DATA_EDGE or inp.name in monads:
                continue
            if inp.name in graph.params:
                args.append(IRArg(ArgKind.PARAM, inp.name))
            elif inp.name in node_names:
                args.append(IRArg(ArgKind.NODE, inp.name))
            else:
                # The value when the file has it (TupleGetItem needs its index), else the constant's name.
                args.append(IRArg(ArgKind.CONST, constants.get(inp.name) or inp.name))
        graph.nodes[node.name] = IRNode(
            node_id=node.name,
            op_type=op_type,
            full_name=full_name,
            args=args,
            attrs={a.name: _short(value_text(a.value)) for a in node.attribute},
            out_types=_tensor_types(node.output_type) if node.HasField("output_type") else [],
        )
    return graph
