"""Protobuf message classes from a schema written out in code, without protoc or generated `_pb2` modules.

A schema is two tables: enums `{path: [(name, number), ...]}` and messages `{path: [(field, number, label, type)]}`
where a path is `Outer` or `Outer.Inner`, the label is "optional", "repeated", "packed" (repeated with
`[packed = true]`) or "oneof NAME", and a type is a scalar name or the path of a message or enum of the schema.
Each schema gets its own descriptor pool: a framework installed beside dumptui (MindSpore, CANN's toolkit,
onnx) registers the same package names in the default pool, and registering them twice there fails.
"""

from __future__ import annotations

from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool

# The message classes are made at run time from the descriptor: their instances have no static type.
Message = Any
EnumTable = dict[str, list[tuple[str, int]]]
MessageTable = dict[str, list[tuple[str, int, str, str]]]

_F = descriptor_pb2.FieldDescriptorProto
SCALAR_TYPES = {
    "bool": _F.TYPE_BOOL,
    "int32": _F.TYPE_INT32,
    "int64": _F.TYPE_INT64,
    "uint32": _F.TYPE_UINT32,
    "uint64": _F.TYPE_UINT64,
    "float": _F.TYPE_FLOAT,
    "double": _F.TYPE_DOUBLE,
    "string": _F.TYPE_STRING,
    "bytes": _F.TYPE_BYTES,
}


def file_descriptor(
    file_name: str, package: str, syntax: str, enums: EnumTable, messages: MessageTable
) -> descriptor_pb2.FileDescriptorProto:
    """The schema as a FileDescriptorProto."""
    fd = descriptor_pb2.FileDescriptorProto(name=file_name, package=package, syntax=syntax)
    built: dict[str, descriptor_pb2.DescriptorProto] = {}

    def message(path: str) -> descriptor_pb2.DescriptorProto:
        if path not in built:
            outer, _, leaf = path.rpartition(".")
            built[path] = (message(outer).nested_type if outer else fd.message_type).add(name=leaf)
        return built[path]

    for path, values in enums.items():
        outer, _, leaf = path.rpartition(".")
        enum = (message(outer).enum_type if outer else fd.enum_type).add(name=leaf)
        for name, number in values:
            enum.value.add(name=name, number=number)
    for path, fields in messages.items():
        msg = message(path)
        for name, number, label, type_name in fields:
            field = msg.field.add(name=name, number=number)
            field.label = _F.LABEL_REPEATED if label in ("repeated", "packed") else _F.LABEL_OPTIONAL
            if label == "packed":
                field.options.packed = True
            if label.startswith("oneof "):
                oneof = label.split(" ", 1)[1]
                oneofs = [o.name for o in msg.oneof_decl]
                if oneof not in oneofs:
                    msg.oneof_decl.add(name=oneof)
                    oneofs.append(oneof)
                field.oneof_index = oneofs.index(oneof)
            if type_name in SCALAR_TYPES:
                field.type = SCALAR_TYPES[type_name]
            else:
                field.type = _F.TYPE_ENUM if type_name in enums else _F.TYPE_MESSAGE
                field.type_name = f".{package}.{type_name}"
    return fd


def message_classes(
    file_name: str, package: str, syntax: str, enums: EnumTable, messages: MessageTable
) -> dict[str, type]:
    """{message path: class} for the schema, in a descriptor pool of its own."""
    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(file_descriptor(file_name, package, syntax, enums, messages).SerializeToString())
    try:
        from google.protobuf.message_factory import GetMessageClass
    except ImportError:  # protobuf < 4.21
        from google.protobuf.message_factory import MessageFactory

        GetMessageClass = MessageFactory(pool).GetPrototype
    return {path: GetMessageClass(pool.FindMessageTypeByName(f"{package}.{path}")) for path in messages}
