"""Hypothesis strategies for damaged dump files: each draws a class of damage (its name) and the bytes or
document that carry it. Values are chosen at the edges that broke readers before: dimensions beyond int64,
negative, float, text and nested dimensions, huge lengths, deep nesting, control characters and markup in
names, and bytes that are not UTF-8."""

from __future__ import annotations

import json
import struct

import numpy as np
from helpers.damage import (
    _global,
    _pickled,
    marker_pickle,
    msprobe_record,
    npy_bytes,
    pt_file_bytes,
    standard_header,
    tensor_pickle,
)
from hypothesis import strategies as st

# ---------------------------------------------------------------------------------------------- values

BIG_INTS = st.sampled_from([2**31, 2**32, 2**62, 2**63, 2**64, 2**70, 10**30, -1, -(2**63), 0])
INTS = st.one_of(st.integers(-8, 64), BIG_INTS)
FLOATS = st.floats(allow_nan=True, allow_infinity=True, width=64)
# text a file name or a field may carry: markup, escapes, newlines, bidi controls, long runs
NASTY = st.sampled_from(
    [
        "[bold]x[/bold]",
        "\x1b[2J",
        "\x1b]8;;http://e\x1b\\",
        "\n",
        "\t",
        "\u202e",
        "\u2066",
        "[link=x]",
        "\\",
        "%s",
        "..",
        "\x7f",
    ]
)
TEXT = st.one_of(st.text(max_size=12), NASTY, st.lists(NASTY, max_size=4).map("".join))
JSON_LEAF = st.one_of(st.none(), st.booleans(), INTS, FLOATS, TEXT)
JSON_ANY = st.recursive(
    JSON_LEAF, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4), max_leaves=12
)
DIM = st.one_of(INTS, FLOATS, TEXT, st.just([4]), st.just({"n": 4}), st.booleans(), st.none())
SHAPES = st.one_of(st.lists(st.integers(0, 6), max_size=4), st.lists(DIM, max_size=40), DIM, JSON_ANY)


def _literal(value: object) -> str:
    """A Python literal for an npy header (repr; text that is not one is written as is)."""
    return value if isinstance(value, str) else repr(value)


# ---------------------------------------------------------------------------------------------- npy files

DESCRS = ["<f4", "<f2", ">f8", "|b1", "<i8", "<c8", "<U", "<U8", "|S4", "|O", "|V8", "<M8[s]", "<f3", "", "<f4,<f4"]


@st.composite
def npy_files(draw) -> tuple[str, bytes]:
    """(class of damage, bytes of an .npy file)."""
    kind = draw(
        st.sampled_from(
            [
                "random bytes",
                "magic and version",
                "header fields",
                "header length",
                "payload size",
                "fortran",
                "free text",
            ]
        )
    )
    values = np.arange(24, dtype=np.float32)
    if kind == "random bytes":
        return kind, draw(st.binary(max_size=300))
    if kind == "magic and version":
        head = draw(st.sampled_from([b"\x93NUMPY", b"\x93NUMPZ", b"", b"\x93NUM"]))
        version = draw(st.integers(0, 255))
        return kind, head + bytes([version, 0]) + draw(st.binary(max_size=80))
    if kind == "header fields":
        descr = draw(st.one_of(st.sampled_from(DESCRS), st.text(max_size=10)))
        fortran = draw(st.sampled_from(["True", "False", "'x'", "1", "None"]))
        shape = draw(
            st.one_of(
                st.lists(DIM.map(_literal), max_size=40).map(lambda d: "(" + ", ".join(d) + ",)"),
                st.lists(DIM.map(_literal), max_size=6).map(lambda d: "[" + ", ".join(d) + "]"),
                st.integers(0, 3000).map(lambda n: "(" * n + ")" * n),
                TEXT,
            )
        )
        payload = draw(st.binary(max_size=200))
        return kind, npy_bytes(f"{{'descr': '{descr}', 'fortran_order': {fortran}, 'shape': {shape}, }}", payload)
    if kind == "header length":
        body = npy_bytes(standard_header("<f4", False, "(24,)"), values.tobytes())
        version = draw(st.sampled_from([1, 2]))
        if version == 1:
            return kind, body[:8] + struct.pack("<H", draw(st.integers(0, 65535))) + body[10:]
        return kind, b"\x93NUMPY\x02\x00" + struct.pack("<I", draw(st.integers(0, 2**32 - 1))) + body[10:]
    if kind == "payload size":
        descr = draw(st.sampled_from(["<f4", "<f2", "<i8", "|b1"]))
        size = draw(st.sampled_from([0, 1, 48, 95, 96, 97, 192, 288, 1000]))
        return kind, npy_bytes(standard_header(descr, False, "(2, 3, 4)"), bytes(size))
    if kind == "fortran":
        shape = draw(st.lists(st.integers(1, 4), min_size=2, max_size=4))
        arr = np.asfortranarray(np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape))
        return kind, npy_bytes(standard_header("<f4", True, repr(tuple(shape))), arr.tobytes(order="F"))
    return kind, npy_bytes(draw(st.text(max_size=400)), draw(st.binary(max_size=64)))


# ---------------------------------------------------------------------------------------------- names

DIGITS = st.one_of(
    st.integers(0, 10**6).map(str),  # twice: mostly numbers a pattern takes, so that the rest of the name is read
    st.integers(0, 10**6).map(str),
    st.integers(1, 45).map(lambda n: "9" * n),
    st.just(""),
)
_WORD = st.from_regex(r"[A-Za-z0-9_\-]{1,12}", fullmatch=True)
NAME_PART = st.one_of(_WORD, _WORD, _WORD, TEXT)  # mostly names a pattern takes, so that the content is read


def _safe_name(name: str) -> str:
    """A name the file system takes: no separator, no NUL, not `.`/`..`, at most 255 bytes."""
    name = name.replace("/", "_").replace("\x00", "_") or "x"
    if name in (".", ".."):
        name = "x" + name
    while len(name.encode("utf-8", "surrogateescape")) > 255:
        name = name[: len(name) // 2]
    return name


@st.composite
def file_names(draw) -> tuple[str, str]:
    """(class of damage, a file name following, or almost following, a dump's naming pattern)."""
    kind = draw(st.sampled_from(["npy name", "bin name", "raw name", "any name"]))
    op_type, op, fmt = draw(NAME_PART), draw(NAME_PART), draw(NAME_PART)
    io = draw(st.sampled_from(["input", "output", "in", "Output", "x"]))
    if kind == "npy name":
        dtype = draw(st.sampled_from(["Float32", "Float16", "Int64", "Bool", "BFloat16", "Unicode", ""]))
        fields = [op_type, op, draw(DIGITS), draw(DIGITS), draw(DIGITS), io, draw(DIGITS), fmt] + (
            [dtype] if dtype else []
        )
        name = ".".join(fields) + ".npy"
    elif kind == "bin name":
        dims = "_".join(draw(st.lists(DIGITS, min_size=1, max_size=6)))
        dtype = draw(st.sampled_from(["Float32", "Int32", "BFloat16", "Complex64", "Float8"]))
        name = f"{op}_{io}_{draw(DIGITS)}_shape_{dims}_{dtype}_{fmt}.bin"
    elif kind == "raw name":
        name = ".".join([op_type, op, draw(DIGITS), draw(DIGITS), draw(DIGITS)])
    else:
        name = draw(st.text(min_size=1, max_size=60))
    return kind, _safe_name(name)


# ---------------------------------------------------------------------------------------------- dump.json


@st.composite
def dump_json_documents(draw, files: dict[str, np.ndarray]) -> tuple[str, bytes]:
    """(class of damage, the bytes of a dump.json): the valid two-call document of damage.msprobe_dump with
    one part replaced, or bytes that are not a JSON document dumptui can take."""
    records = {name: msprobe_record(arr, f"{name}.npy") for name, arr in files.items()}
    doc: dict = {
        "task": "tensor",
        "level": "L1",
        "framework": "pytorch",
        "data": {
            "Functional.relu.0.forward": {"input_args": [records["relu.in0"]], "output": [records["relu.out0"]]},
            "Tensor.mul.1.forward": {"input_args": [records["mul.in0"]], "output": [records["mul.out0"]]},
        },
    }
    kind = draw(
        st.sampled_from(
            [
                "record shape",
                "record dtype",
                "record data_name",
                "record statistics",
                "record replaced",
                "call entry",
                "data",
                "top level",
                "module parameters",
                "deep nesting",
                "not JSON",
                "descriptive fields",
            ]
        )
    )
    rec = draw(st.sampled_from(sorted(records)))
    if kind == "record shape":
        records[rec]["shape"] = draw(SHAPES)
    elif kind == "record dtype":
        records[rec]["dtype"] = draw(st.one_of(JSON_ANY, st.sampled_from(["torch.bfloat16", "torch.uint8", "<U4"])))
    elif kind == "record data_name":
        records[rec]["data_name"] = draw(
            st.one_of(JSON_ANY, st.sampled_from(["../x.npy", "/etc/passwd", "..", "", "a/b.pt", "x.pt", "missing.npy"]))
        )
    elif kind == "record statistics":
        for key in draw(st.lists(st.sampled_from(["Max", "Min", "Mean", "Norm"]), min_size=1, max_size=4)):
            records[rec][key] = draw(st.one_of(JSON_ANY, st.just(10**400)))
    elif kind == "record replaced":
        entry = doc["data"][draw(st.sampled_from(sorted(doc["data"])))]
        entry[draw(st.sampled_from(["input_args", "output", "input_kwargs"]))] = draw(JSON_ANY)
    elif kind == "call entry":
        doc["data"][draw(TEXT)] = draw(JSON_ANY)
    elif kind == "data":
        doc["data"] = draw(JSON_ANY)
    elif kind == "top level":
        return kind, json.dumps(draw(JSON_ANY)).encode()
    elif kind == "module parameters":
        doc["data"][f"Module.{draw(NAME_PART)}.Linear.forward.0"] = {"parameters": draw(JSON_ANY)}
    elif kind == "deep nesting":
        depth = draw(st.integers(60, 200_000))
        opener = draw(st.sampled_from([b"[", b'{"a":']))
        closer = b"]" if opener == b"[" else b"}"
        return kind, b'{"task": "tensor", "data": ' + opener * depth + b"1" + closer * depth + b"}"
    elif kind == "not JSON":
        raw = json.dumps(doc).encode()
        cut = draw(st.integers(0, len(raw)))
        return kind, draw(st.sampled_from([raw[:cut], raw.replace(b'"L1"', b'"\xff\xfe"'), b"NaN", b""]))
    else:
        for key in ("task", "level", "framework"):
            doc[key] = draw(JSON_ANY)
    return kind, json.dumps(doc, allow_nan=True).encode()


# ---------------------------------------------------------------------------------------------- .pt files

DANGEROUS = [("os", "system"), ("builtins", "eval"), ("builtins", "exec"), ("subprocess", "Popen"), ("posix", "system")]
SAFE_OPS = b"KJM\x88\x89N)](}"  # BININT1, BININT, BININT2, NEWTRUE, NEWFALSE, NONE, EMPTY_TUPLE/LIST, MARK, EMPTY_DICT


@st.composite
def pt_files(draw, marker: str) -> tuple[str, bytes]:
    """(class of damage, the bytes of a .pt file). `marker`: the path a pickle that ran code would create."""
    storage = np.arange(4, dtype=np.float32).tobytes()
    kind = draw(
        st.sampled_from(
            [
                "persistent id values",
                "persistent id shape",
                "sizes and strides",
                "offset",
                "storage name",
                "code in the pickle",
                "opcode soup",
                "memo indices",
                "zip bytes flipped",
                "zip truncated",
                "members missing",
                "compressed members",
                "byteorder",
            ]
        )
    )
    value = JSON_ANY
    if kind == "persistent id values":
        pkl = tensor_pickle(key=draw(value), numel=draw(st.one_of(value, BIG_INTS)))
    elif kind == "persistent id shape":
        items = draw(st.lists(JSON_LEAF.map(_pickled), max_size=7))
        pkl = tensor_pickle(pid=b"(" + b"".join(items) + b"t")
    elif kind == "sizes and strides":
        pkl = tensor_pickle(size=draw(SHAPES), stride=draw(SHAPES), numel=draw(st.one_of(st.integers(0, 8), BIG_INTS)))
    elif kind == "offset":
        pkl = tensor_pickle(offset=draw(st.one_of(value, BIG_INTS)))
    elif kind == "storage name":
        pkl = tensor_pickle(
            storage=draw(st.sampled_from(["FloatStorage", "HalfStorage", "QInt8Storage", "x", "Storage"]))
        )
    elif kind == "code in the pickle":
        module, name = draw(st.sampled_from(DANGEROUS))
        pkl = draw(
            st.sampled_from(
                [
                    marker_pickle(marker),
                    b"\x80\x02" + _global(module, name) + _pickled((f"touch {marker}",)) + b"R.",
                    b"\x80\x04\x95\x00\x00\x00\x00\x00\x00\x00\x00" + _pickled(module) + _pickled(name) + b"\x93.",
                ]
            )
        )
    elif kind == "opcode soup":
        pkl = b"\x80\x02" + draw(st.binary(max_size=120)) + b"."
    elif kind == "memo indices":
        index = draw(st.sampled_from([0, 1, 255, 2**31 - 1, 2**32 - 1]))
        op = draw(st.sampled_from([b"r" + struct.pack("<I", index), b"j" + struct.pack("<I", index), b"p%d\n" % index]))
        pkl = b"\x80\x02K\x01" + op + b"."
    else:
        pkl = tensor_pickle()
    compress = kind == "compressed members" and draw(st.booleans())
    data = pt_file_bytes(
        pkl,
        storage,
        compress_pickle=compress,
        byteorder=draw(st.sampled_from([b"little", b"big", b"middle", b"\xff"])) if kind == "byteorder" else b"little",
    )
    if kind == "zip bytes flipped":
        out = bytearray(data)
        for pos in draw(st.lists(st.integers(0, len(out) - 1), min_size=1, max_size=8)):
            out[pos] = draw(st.integers(0, 255))
        data = bytes(out)
    elif kind == "zip truncated":
        data = data[: draw(st.integers(0, len(data)))]
    elif kind == "members missing":
        import io
        import zipfile

        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as z:
            for name in draw(
                st.lists(
                    st.sampled_from(["t/data.pkl", "t/data/0", "t/byteorder", "data.pkl"]), max_size=3, unique=True
                )
            ):
                z.writestr(name, pkl if name.endswith("pkl") else storage)
        data = buf.getvalue()
    elif kind == "compressed members" and not compress:
        data = pt_file_bytes(pkl, bytes(draw(st.sampled_from([0, 16, 1 << 20]))), compress_pickle=True)
    return kind, data


# ---------------------------------------------------------------------------------------------- raw dumps


@st.composite
def raw_dump_files(draw) -> tuple[str, bytes]:
    """(class of damage, the bytes of a CANN raw dump file)."""
    from dumptui.core.formats.cann_proto import DumpData

    kind = draw(
        st.sampled_from(["random bytes", "header fields", "length prefix", "payload size", "whole-file layout"])
    )
    if kind == "random bytes":
        return kind, draw(st.binary(max_size=400))
    msg = DumpData(op_name=draw(TEXT))
    u64 = st.one_of(st.integers(0, 64), st.sampled_from([2**32, 2**62, 2**63, 2**64 - 1]))
    payload = b""
    for group in (msg.input, msg.output):
        for _ in range(draw(st.integers(0, 3))):
            t = group.add()
            t.data_type = draw(st.one_of(st.integers(0, 40), st.sampled_from([-1, 2**31 - 1])))
            t.format = draw(st.one_of(st.integers(0, 50), st.sampled_from([-1, 0x7FFFFFFF, 0x1003])))
            t.shape.dim.extend(draw(st.lists(u64, max_size=6)))
            if draw(st.booleans()):
                t.original_shape.dim.extend(draw(st.lists(u64, max_size=6)))
            size = draw(st.one_of(st.integers(0, 256), st.sampled_from([2**40, 2**64 - 1])))
            t.size = size
            if kind == "whole-file layout":
                t.data = draw(st.binary(max_size=256))
            else:
                payload += bytes(min(size, 256))
    header = msg.SerializeToString()
    if kind == "whole-file layout":
        return kind, header
    length = len(header)
    if kind == "length prefix":
        length = draw(st.one_of(st.integers(0, 2 * len(header) + 8), st.sampled_from([2**28 + 1, 2**64 - 1])))
    if kind == "payload size":
        payload = payload[: draw(st.integers(0, len(payload)))] + draw(st.binary(max_size=32))
    return kind, struct.pack("<Q", length) + header + payload
