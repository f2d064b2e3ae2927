"""A CANN raw dump encoder for tests: writes what an Ascend device writes, so the reader can be checked
against arrays we know. It shares only the protobuf schema with dumptui; the enum numbers (docs/formats.md#cann-raw-dump) and
the device layouts (§2.2) are written out again here, the layouts element by element with explicit index
arithmetic, so that a mistake in dumptui's vectorised conversion cannot hide behind the same mistake here.
"""

from __future__ import annotations

import itertools
import math
import os
import struct
from dataclasses import dataclass, field

import numpy as np

from dumptui.core.formats.cann_proto import DumpData

DATA_TYPE = {
    "float32": 1,
    "float16": 2,
    "int8": 3,
    "uint8": 4,
    "int16": 5,
    "uint16": 6,
    "int32": 7,
    "int64": 8,
    "uint32": 9,
    "uint64": 10,
    "bool": 11,
    "float64": 12,
    "complex64": 16,
    "complex128": 17,
    "bfloat16": 27,
}
FORMAT = {
    "NCHW": 0,
    "NHWC": 1,
    "ND": 2,
    "NC1HWC0": 3,
    "FRACTAL_Z": 4,
    "NC1HWC0_C04": 12,
    "CHWN": 14,
    "HWCN": 16,
    "FRACTAL_NZ": 29,
    "NCDHW": 30,
    "NDC1HWC0": 32,
    "C1HWNCoC0": 25,
}


def ceil(a: int, b: int) -> int:
    return -(-a // b)


def to_device(x: np.ndarray, fmt: str, c0: int = 16, n0: int = 16, original_format: str = "NCHW") -> np.ndarray:
    """`x` (in `original_format`) laid out as the device stores it; padding is zero. Element by element."""
    if fmt in ("NCHW", "ND", "NCDHW"):
        return x.copy()
    if fmt in ("NHWC", "HWCN", "CHWN"):
        out = np.zeros([x.shape[original_format.index(a)] for a in fmt], x.dtype)
        for idx in itertools.product(*map(range, x.shape)):
            pos = dict(zip(original_format, idx))
            out[tuple(pos[a] for a in fmt)] = x[idx]
        return out
    if fmt in ("NC1HWC0", "NC1HWC0_C04"):
        c0 = 4 if fmt == "NC1HWC0_C04" else c0
        n, c, h, w = (x.shape[original_format.index(a)] for a in "NCHW")
        out = np.zeros((n, ceil(c, c0), h, w, c0), x.dtype)
        for idx in itertools.product(*map(range, x.shape)):
            p = dict(zip(original_format, idx))
            out[p["N"], p["C"] // c0, p["H"], p["W"], p["C"] % c0] = x[idx]
        return out
    if fmt == "NDC1HWC0":
        n, c, d, h, w = x.shape  # NCDHW
        out = np.zeros((n, d, ceil(c, c0), h, w, c0), x.dtype)
        for i, j, k, y, z in itertools.product(range(n), range(c), range(d), range(h), range(w)):
            out[i, k, j // c0, y, z, j % c0] = x[i, j, k, y, z]
        return out
    if fmt == "FRACTAL_Z":
        n, c, h, w = (x.shape[original_format.index(a)] for a in "NCHW")
        out = np.zeros((ceil(c, c0) * h * w, ceil(n, n0), n0, c0), x.dtype)
        for idx in itertools.product(*map(range, x.shape)):
            p = dict(zip(original_format, idx))
            row = (p["C"] // c0) * h * w + p["H"] * w + p["W"]
            out[row, p["N"] // n0, p["N"] % n0, p["C"] % c0] = x[idx]
        return out
    if fmt == "FRACTAL_NZ":
        mat = x.reshape(1, -1) if x.ndim == 1 else x
        *batch, m, n = mat.shape
        out = np.zeros((*batch, ceil(n, c0), ceil(m, 16), 16, c0), x.dtype)
        for idx in itertools.product(*map(range, mat.shape)):
            *b, i, j = idx
            out[(*b, j // c0, i // 16, i % 16, j % c0)] = mat[idx]
        return out
    raise ValueError(f"no test encoding for {fmt}")


def payload_bytes(device: np.ndarray, dtype: str) -> bytes:
    if dtype == "bfloat16":  # the upper 16 bits of the float32 (values given are bf16-exact)
        return (np.ascontiguousarray(device, np.float32).view(np.uint32) >> 16).astype("<u2").tobytes()
    return np.ascontiguousarray(device).astype(np.dtype(dtype).newbyteorder("<")).tobytes()


@dataclass
class Tensor:
    """A tensor to encode: its value in the original shape, and how the device stored it."""

    value: np.ndarray
    dtype: str = "float32"
    fmt: str = "ND"
    c0: int = 16
    original_format: str = "NCHW"
    original_shape: tuple[int, ...] | None = None  # default: value.shape; () writes no original_shape
    data_type_code: int | None = None  # to write a type number dumptui cannot decode

    def device(self) -> np.ndarray:
        return to_device(self.value, self.fmt, self.c0, original_format=self.original_format)


@dataclass
class RawOp:
    op_type: str
    op_name: str  # as in the file name (separators already replaced)
    inputs: list[Tensor] = field(default_factory=list)
    outputs: list[Tensor] = field(default_factory=list)
    buffers: list[bytes] = field(default_factory=list)
    workspaces: list[bytes] = field(default_factory=list)
    full_name: str = ""  # written to DumpData.op_name when set
    task: int = 1
    stream: int = 0
    timestamp: int = 1700000000000000


def _fill(proto, t: Tensor, data: bytes, embedded: bool) -> None:
    dev = t.device()
    proto.data_type = t.data_type_code if t.data_type_code is not None else DATA_TYPE[t.dtype]
    proto.format = FORMAT[t.fmt]
    proto.shape.dim.extend(dev.shape)
    if t.original_shape != ():
        proto.original_shape.dim.extend(t.original_shape or t.value.shape)
    proto.size = len(data)
    if embedded:
        proto.data = data


def encode(op: RawOp, layout: str = "current") -> bytes:
    """The bytes of a raw dump file: `layout` "current" (length-prefixed header + payloads) or "whole"."""
    msg = DumpData(version="2.0", dump_time=op.timestamp, op_name=op.full_name)
    embedded = layout == "whole"
    payloads = []  # the order of the current layout: inputs, outputs, buffers, workspaces
    for group, tensors in ((msg.input, op.inputs), (msg.output, op.outputs)):
        for t in tensors:
            data = payload_bytes(t.device(), t.dtype)
            _fill(group.add(), t, data, embedded)
            payloads.append(data)
    for raw in op.buffers:
        b = msg.buffer.add(buffer_type=0, size=len(raw))
        if embedded:
            b.data = raw
        payloads.append(raw)
    for raw in op.workspaces:
        w = msg.space.add(type=0, size=len(raw))
        if embedded:
            w.data = raw
        payloads.append(raw)
    header = msg.SerializeToString()
    if embedded:
        return header
    return struct.pack("<Q", len(header)) + header + b"".join(payloads)


def file_name(op: RawOp) -> str:
    return f"{op.op_type}.{op.op_name}.{op.task}.{op.stream}.{op.timestamp}"


def write(folder: str | os.PathLike, op: RawOp, layout: str = "current") -> str:
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(str(folder), file_name(op))
    with open(path, "wb") as fh:
        fh.write(encode(op, layout))
    return path


def step_folder(
    dump_path: str | os.PathLike,
    model: str = "Net.0",
    time: str = "20260101120000",
    device: str = "0",
    model_id: str = "1",
    step: str = "0",
) -> str:
    """The ACL tree `{dump_path}/{time}/{device}/{model_name}/{model_id}/{step}` (created)."""
    folder = os.path.join(str(dump_path), time, device, model, model_id, step)
    os.makedirs(folder, exist_ok=True)
    return folder


def bf16_exact(a: np.ndarray) -> np.ndarray:
    """Values that bfloat16 holds exactly (the upper 16 bits of float32)."""
    return (np.ascontiguousarray(a, np.float32).view(np.uint32) & np.uint32(0xFFFF0000)).view(np.float32)


def numel(shape: tuple[int, ...]) -> int:
    return math.prod(shape)


# --------------------------------------------------------------------------- a whole dump, re-encoded
# How an Ascend310 stores the outputs of its cube ops: conv activations in NC1HWC0, conv weights in FRACTAL_Z,
# matrix products in FRACTAL_NZ; everything else stays ND.
CUBE_LAYOUTS = {"Conv2D": ({0: "NC1HWC0", 1: "FRACTAL_Z"}, {0: "NC1HWC0"}), "MatMul": ({}, {0: "FRACTAL_NZ"})}


def _tensor_of(value: np.ndarray, fmt: str) -> Tensor:
    dtype = "bool" if value.dtype == np.bool_ else str(value.dtype)
    return Tensor(value, dtype, fmt if value.ndim else "ND")


def _raw_op(op, file_op_name: str, inputs, outputs, transform=None) -> RawOp:
    in_fmts, out_fmts = CUBE_LAYOUTS.get(op.op_type, ({}, {}))

    def tensor(io: str, slot: int, ref, fmt: str) -> Tensor:
        value = np.asarray(ref.array())
        return _tensor_of(transform(op, io, slot, value) if transform else value, fmt)

    return RawOp(
        op.op_type,
        file_op_name,
        [tensor("input", s, t, in_fmts.get(s, "ND")) for s, t in sorted(inputs.items())],
        [tensor("output", s, t, out_fmts.get(s, "ND")) for s, t in sorted(outputs.items())],
        timestamp=op.timestamp,
    )


def reencode(
    dump, dump_path: str, fuse: list[list[str]] | None = None, op_name_field: bool = False, transform=None
) -> dict:
    """Write the kernels of a MindSpore `dump` as CANN raw files in an ACL tree below `dump_path`: file names
    in file form, cube ops in their device layouts. `fuse` lists groups of kernel names (in execution order)
    that become one op, as a GE fusion makes them; `transform(op, io, slot, value)` may change a value (a
    dtype, a planted bug). Returns {kernel name: GE node name} for ge_graph_text."""
    from dumptui.core.formats.names import file_form

    folder = step_folder(dump_path)
    groups = {names[0]: names for names in (fuse or [])}
    inside = {n for names in (fuse or []) for n in names}
    node_of: dict[str, str] = {}
    for op in dump.kernels:
        if op.name in groups:
            members = [dump.op(n) for n in groups[op.name]]
            name = op.name + "".join(m.leaf for m in members[1:])
            raw = _raw_op(op, file_form(name), op.inputs, members[-1].outputs, transform)
            node_of.update({m.name: name for m in members})
        elif op.name in inside:
            continue
        else:
            name = op.name
            raw = _raw_op(op, file_form(name), op.inputs, op.outputs, transform)
            node_of[op.name] = name
        raw.full_name = name if op_name_field else ""
        write(folder, raw)
    return node_of


def ge_graph_text(dump, node_of: dict[str, str], fuse: list[list[str]] | None = None) -> str:
    """A GE Build graph (protobuf text of an ONNX model, as GE writes it) of the re-encoded `dump`: a node per
    op with the edges of the dump's graph, Data/Const nodes for parameters and constants, and
    `_datadump_original_op_names` on each fused op."""
    from google.protobuf import text_format

    from dumptui.core.formats.ge_graph import ModelProto

    model = ModelProto(ir_version=3, producer_name="GE")
    graph = model.graph
    graph.name = "graph_0"
    fused = {names[0]: names for names in (fuse or [])}
    sources: dict[str, str] = {}

    def source(src) -> str:
        if src.kind == "op":
            producer = dump.op(src.ref)
            return f"{node_of[producer.name]}:{src.slot}"
        key = f"{src.kind}:{src.ref}"
        if key not in sources:
            sources[key] = f"{'x' if src.kind == 'parameter' and src.ref == 'x' else 'const'}_{len(sources)}"
            node = graph.node.add(name=sources[key], op_type="ge:" + ("Data" if src.ref == "x" else "Const"))
            node.output.append(sources[key] + ":0")
        return sources[key] + ":0"

    done: set[str] = set()
    for op in dump.kernels:
        name = node_of.get(op.name)
        if name is None or name in done:
            continue
        done.add(name)
        node = graph.node.add(name=name, op_type="ge:" + op.op_type)
        node.input.extend(source(op.sources[s]) for s in sorted(op.sources))
        if op.name in fused:
            attr = node.attribute.add(name="_datadump_original_op_names", type=8)  # STRINGS
            attr.strings.extend(n.encode() for n in fused[op.name])
            node.attribute.add(name="_datadump_original_op_types", type=8).strings.extend(
                dump.op(n).op_type.encode() for n in fused[op.name]
            )
        desc = node.attribute.add(name="output_desc_origin_layout:0", type=3)
        desc.s = b"NCHW" if op.op_type == "Conv2D" else b"ND"
    return text_format.MessageToString(model)


RNG = np.random.default_rng(20261205)


def values(shape: tuple[int, ...], dtype: str) -> np.ndarray:
    if dtype == "bool":
        return RNG.random(shape) > 0.5
    if dtype in ("complex64", "complex128"):
        return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(dtype)
    if dtype == "bfloat16":
        return bf16_exact(RNG.standard_normal(shape).astype(np.float32) * 3)
    if dtype.startswith(("int", "uint")):
        info = np.iinfo(dtype)
        return RNG.integers(max(info.min, -1000), min(info.max, 1000), shape, endpoint=True).astype(dtype)
    return (RNG.standard_normal(shape) * 4).astype(dtype)


DTYPES = [
    "float32",
    "float16",
    "bfloat16",
    "float64",
    "int8",
    "uint8",
    "int16",
    "uint16",
    "int32",
    "int64",
    "uint32",
    "uint64",
    "bool",
    "complex64",
    "complex128",
]


def ops_for_dtypes() -> list[RawOp]:
    ops = []
    for i, dtype in enumerate(DTYPES):
        a, b = values((2, 3, 5), dtype), values((7,), dtype)
        ops.append(
            RawOp(
                "Identity",
                f"Default_id{i}-Identity_Identity-op{i}",
                [Tensor(a, dtype, "ND")],
                [Tensor(b, dtype, "ND")],
                timestamp=1700000000000000 + i,
            )
        )
    return ops


def ops_for_layouts() -> list[RawOp]:
    x = values((1, 20, 3, 5), "float16")
    w = values((33, 20, 3, 3), "float16")
    y = values((1, 33, 3, 5), "float16")
    m = values((2, 17, 40), "float32")
    v = values((1, 19, 2, 3, 2), "float16")
    small = values((1, 3, 4, 4), "float16")
    return [
        RawOp(
            "Conv2D",
            "Default_conv1-Conv2d_Conv2D-op5",
            [Tensor(x, "float16", "NC1HWC0"), Tensor(w, "float16", "FRACTAL_Z")],
            [Tensor(y, "float16", "NC1HWC0")],
            workspaces=[b"scratch!"],
            timestamp=1700000000001000,
        ),
        RawOp(
            "BatchMatMul",
            "Default_mm-Dense_BatchMatMul-op1",
            [Tensor(m, "float32", "FRACTAL_NZ", c0=8)],
            [Tensor(m * 2, "float32", "FRACTAL_NZ", c0=8)],
            buffers=[b"l1 buffer"],
            timestamp=1700000000001001,
        ),
        RawOp(
            "Conv3D",
            "Default_c3-Conv3d_Conv3D-op0",
            [Tensor(v, "float16", "NDC1HWC0")],
            [Tensor(v, "float16", "NCDHW")],
            timestamp=1700000000001002,
        ),
        RawOp(
            "Conv2D",
            "Default_stem-Stem_Conv2D-op0",
            [Tensor(small, "float16", "NC1HWC0_C04")],
            [Tensor(small, "float16", "NHWC")],
            timestamp=1700000000001003,
        ),
        RawOp(
            "Transpose",
            "Default_t-T_Transpose-op0",
            [Tensor(x, "float16", "HWCN")],
            [Tensor(x, "float16", "CHWN")],
            timestamp=1700000000001004,
        ),
    ]
