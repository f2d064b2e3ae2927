"""MindIR files (`.mindir`, package `mind_ir`, proto2; docs/formats.md#mindir): the name of the graph they hold.

An Ascend310 dump config must name the model as that graph's name plus ".0"; a wrong name silently dumps
nothing, and `mindspore.load()` does not expose it. The name is `ModelProto.graph.name` (field 7, then 2),
written after all the nodes. The schema is mind_ir.proto for the fields on the way to it, built in code.
"""

from __future__ import annotations

from google.protobuf.message import DecodeError

from dumptui.core.formats.protoschema import EnumTable, MessageTable, message_classes
from dumptui.core.io.safeio import read_bytes

_MESSAGES: MessageTable = {
    "ModelProto": [
        ("ir_version", 1, "optional", "string"),
        ("producer_name", 2, "optional", "string"),
        ("producer_version", 3, "optional", "string"),
        ("domain", 4, "optional", "string"),
        ("model_version", 5, "optional", "string"),
        ("doc_string", 6, "optional", "string"),
        ("graph", 7, "optional", "GraphProto"),
        ("functions", 8, "repeated", "GraphProto"),
    ],
    "GraphProto": [
        ("node", 1, "repeated", "NodeProto"),
        ("name", 2, "optional", "string"),
        ("parameter", 3, "repeated", "TensorProto"),
        ("doc_string", 4, "optional", "string"),
        ("input", 5, "repeated", "ValueInfoProto"),
        ("output", 6, "repeated", "ValueInfoProto"),
    ],
    "NodeProto": [
        ("input", 1, "repeated", "string"),
        ("output", 2, "repeated", "string"),
        ("name", 3, "optional", "string"),
        ("op_type", 4, "optional", "string"),
        ("doc_string", 6, "optional", "string"),
        ("domain", 7, "optional", "string"),
    ],
    "ValueInfoProto": [("name", 1, "optional", "string"), ("doc_string", 3, "optional", "string")],
    "TensorProto": [
        ("dims", 1, "repeated", "int64"),
        ("data_type", 2, "optional", "int32"),
        ("name", 7, "optional", "string"),
    ],
}
_ENUMS: EnumTable = {}
MESSAGES = message_classes("dumptui/mind_ir.proto", "mind_ir", "proto2", _ENUMS, _MESSAGES)
ModelProto = MESSAGES["ModelProto"]


def read_graph_name(path: str) -> str:
    """The name of the main graph of a MindIR file. OSError, or ValueError saying why there is none."""
    data = read_bytes(path)
    model = ModelProto()
    try:
        model.ParseFromString(data)
    except DecodeError as e:
        raise ValueError(f"not a MindIR file (mind_ir.ModelProto): {e}") from None
    if not model.HasField("graph"):
        raise ValueError("not a MindIR file: no graph in the ModelProto")
    if not model.graph.name:
        raise ValueError("the MindIR graph has no name")
    return str(model.graph.name)
