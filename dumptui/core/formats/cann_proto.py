"""The DumpData protobuf of CANN raw dumps (package `toolkit.dumpdata`, proto3; docs/formats.md#cann-raw-dump), and its enums.

Field numbers are those of CANN's dump_data.proto, as CANN defines them (docs/formats.md#cann-raw-dump). `data_type` and `format` are
declared int32 rather than enums: proto3 enums are open anyway, and a plain number keeps a value our table
does not know (a newer CANN's dtype) readable, so that we can name it instead of failing.
"""

from __future__ import annotations

from google.protobuf.message import DecodeError

from dumptui.core.formats.protoschema import EnumTable, Message, MessageTable, message_classes

_SHAPE = "Shape"
_MESSAGES: MessageTable = {
    "Shape": [("dim", 1, "repeated", "uint64")],
    "DimRange": [("dim_start", 1, "optional", "uint64"), ("dim_end", 2, "optional", "uint64")],
    "OriginalOp": [
        ("name", 1, "optional", "string"),
        ("output_index", 2, "optional", "uint32"),
        ("data_type", 3, "optional", "int32"),
        ("format", 4, "optional", "int32"),
    ],
    "OpOutput": [
        ("data_type", 1, "optional", "int32"),
        ("format", 2, "optional", "int32"),
        ("shape", 3, "optional", _SHAPE),
        ("original_op", 4, "optional", "OriginalOp"),
        ("data", 5, "optional", "bytes"),
        ("size", 6, "optional", "uint64"),
        ("original_shape", 7, "optional", _SHAPE),
        ("sub_format", 8, "optional", "int32"),
        ("address", 9, "optional", "uint64"),
        ("dim_range", 10, "repeated", "DimRange"),
        ("offset", 11, "optional", "uint64"),
    ],
    "OpInput": [
        ("data_type", 1, "optional", "int32"),
        ("format", 2, "optional", "int32"),
        ("shape", 3, "optional", _SHAPE),
        ("data", 4, "optional", "bytes"),
        ("size", 5, "optional", "uint64"),
        ("original_shape", 6, "optional", _SHAPE),
        ("sub_format", 7, "optional", "int32"),
        ("address", 8, "optional", "uint64"),
        ("offset", 9, "optional", "uint64"),
    ],
    "OpBuffer": [
        ("buffer_type", 1, "optional", "int32"),
        ("data", 2, "optional", "bytes"),
        ("size", 3, "optional", "uint64"),
    ],
    "OpAttr": [("name", 1, "optional", "string"), ("value", 2, "optional", "string")],
    "Workspace": [
        ("type", 1, "optional", "int32"),
        ("data", 2, "optional", "bytes"),
        ("size", 3, "optional", "uint64"),
    ],
    "DumpData": [
        ("version", 1, "optional", "string"),
        ("dump_time", 2, "optional", "uint64"),
        ("output", 3, "repeated", "OpOutput"),
        ("input", 4, "repeated", "OpInput"),
        ("buffer", 5, "repeated", "OpBuffer"),
        ("op_name", 6, "optional", "string"),
        ("attr", 7, "repeated", "OpAttr"),
        ("space", 8, "repeated", "Workspace"),
    ],
}
_ENUMS: EnumTable = {}

MESSAGES = message_classes("dumptui/dump_data.proto", "toolkit.dumpdata", "proto3", _ENUMS, _MESSAGES)
DumpData = MESSAGES["DumpData"]

# DataType numbers (docs/formats.md#cann-raw-dump). 28 and up disagree between CANN sources: they are named, never decoded.
DATA_TYPES = {
    0: "UNDEFINED",
    1: "FLOAT",
    2: "FLOAT16",
    3: "INT8",
    4: "UINT8",
    5: "INT16",
    6: "UINT16",
    7: "INT32",
    8: "INT64",
    9: "UINT32",
    10: "UINT64",
    11: "BOOL",
    12: "DOUBLE",
    13: "STRING",
    14: "DUAL_SUB_INT8",
    15: "DUAL_SUB_UINT8",
    16: "COMPLEX64",
    17: "COMPLEX128",
    18: "QINT8",
    19: "QINT16",
    20: "QINT32",
    21: "QUINT8",
    22: "QUINT16",
    23: "RESOURCE",
    24: "STRING_REF",
    25: "DUAL",
    26: "VARIANT",
    27: "BF16",
}
# The DataTypes whose bytes are plain numpy values, as canonical dtype names (dtypes.py). The quantised
# integers are stored as the integers they are; their scale is not in the dump, so they compare as stored.
DECODED_TYPES = {
    "FLOAT": "float32",
    "FLOAT16": "float16",
    "INT8": "int8",
    "UINT8": "uint8",
    "INT16": "int16",
    "UINT16": "uint16",
    "INT32": "int32",
    "INT64": "int64",
    "UINT32": "uint32",
    "UINT64": "uint64",
    "BOOL": "bool",
    "DOUBLE": "float64",
    "COMPLEX64": "complex64",
    "COMPLEX128": "complex128",
    "BF16": "bfloat16",
    "QINT8": "int8",
    "QINT16": "int16",
    "QINT32": "int32",
    "QUINT8": "uint8",
    "QUINT16": "uint16",
}
# Format numbers: ge::Format of CANN's graph/types.h, which docs/formats.md#cann-raw-dump quotes in part.
FORMAT_NAMES = {
    0: "NCHW",
    1: "NHWC",
    2: "ND",
    3: "NC1HWC0",
    4: "FRACTAL_Z",
    5: "NC1C0HWPAD",
    6: "NHWC1C0",
    7: "FSR_NCHW",
    8: "FRACTAL_DECONV",
    9: "C1HWNC0",
    10: "FRACTAL_DECONV_TRANSPOSE",
    11: "FRACTAL_DECONV_SP_STRIDE_TRANS",
    12: "NC1HWC0_C04",
    13: "FRACTAL_Z_C04",
    14: "CHWN",
    15: "FRACTAL_DECONV_SP_STRIDE8_TRANS",
    16: "HWCN",
    17: "NC1KHKWHWC0",
    18: "BN_WEIGHT",
    19: "FILTER_HWCK",
    20: "HASHTABLE_LOOKUP_LOOKUPS",
    21: "HASHTABLE_LOOKUP_KEYS",
    22: "HASHTABLE_LOOKUP_VALUE",
    23: "HASHTABLE_LOOKUP_OUTPUT",
    24: "HASHTABLE_LOOKUP_HITS",
    25: "C1HWNCoC0",
    26: "MD",
    27: "NDHWC",
    28: "FRACTAL_ZZ",
    29: "FRACTAL_NZ",
    30: "NCDHW",
    31: "DHWCN",
    32: "NDC1HWC0",
    33: "FRACTAL_Z_3D",
    34: "CN",
    35: "NC",
    36: "DHWNC",
    37: "FRACTAL_Z_3D_TRANSPOSE",
    38: "FRACTAL_ZN_LSTM",
    39: "FRACTAL_Z_G",
    40: "RESERVED",
    41: "ALL",
    42: "NULL",
    43: "ND_RNN_BIAS",
    44: "FRACTAL_ZN_RNN",
    45: "NYUV",
    46: "NYUV_A",
    47: "NCL",
}


def data_type_name(number: int) -> str:
    """`FLOAT16` for 2; a number our table does not hold is named by its number (`data type 29`)."""
    return DATA_TYPES.get(number, f"data type {number}")


def unsettled(number: int) -> bool:
    """Whether CANN releases disagree on what the DataType `number` is (28 and up): never decoded."""
    return number >= 28 and number not in DATA_TYPES


def format_name(number: int) -> str:
    """`NC1HWC0` for 3. Newer CANN packs a sub-format and C0 into the high bits: the primary format is the low byte."""
    return FORMAT_NAMES.get(number & 0xFF, f"format {number}")


def parse_dump_data(data: bytes) -> Message:
    """A DumpData message; ValueError saying why when the bytes are not one."""
    msg = DumpData()
    try:
        msg.ParseFromString(data)
    except DecodeError as e:
        raise ValueError(f"not a DumpData protobuf ({e})") from None
    return msg


def dims(shape: Message) -> tuple[int, ...]:
    return tuple(int(d) for d in shape.dim)
