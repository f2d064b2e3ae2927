"""Damaged dumps, for the regression corpus (test_damaged_dumps.py) and the fuzz suite (tests/fuzz/): a small
valid dump of each format, and the means to put one defect into it (an npy header, a file name, a dump.json,
a .pt zip or pickle, a raw dump's protobuf, a folder entry that is no regular file)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import pickle
import shutil
import struct
import zipfile
from pathlib import Path

import numpy as np

from dumptui import cli
from dumptui.core.demo.residual import DemoInfo, write_demo


def clean_pair(root: Path, n_ops: int = 12) -> DemoInfo:
    """A small clean demo pair (one planted divergence, no fp16 region): the bisection reads few tensors."""
    return write_demo(str(root), n_ops=n_ops, size=64, fp16_region=None)


def same_pair(root: Path, n_ops: int = 12) -> tuple[str, str]:
    """A dump and an identical copy: nothing diverges, so only damage can change the answer."""
    info = clean_pair(root / "pair", n_ops)
    ref, target = root / "ref", root / "target"
    shutil.copytree(info.ref, ref)
    shutil.copytree(info.ref, target)
    return str(ref), str(target)


def data_dir(dump: str | Path) -> Path:
    """The iteration folder of a demo dump side."""
    return Path(dump) / "rank_0" / "Net" / "0" / "0"


def tensor_file(dump: str | Path, leaf: str, io: str = "output", slot: int = 0) -> Path:
    """The npy file of op `leaf` (a part of its file-form name), e.g. tensor_file(d, "Sigmoid")."""
    hits = sorted(p for p in data_dir(dump).iterdir() if f"_{leaf}" in p.name and f".{io}.{slot}." in p.name)
    assert hits, f"no {leaf} {io}.{slot} in {dump}"
    return hits[0]


def graph_output(dump: str | Path) -> Path:
    """The network output's file (the demo net ends in a Sigmoid)."""
    return tensor_file(dump, "head-Sigmoid_Sigmoid-op0")


def npy_bytes(header: str, payload: bytes = b"", version: int = 1) -> bytes:
    """An .npy file with `header` written as given (any text, padded and newline-terminated)."""
    text = header + " " * (-(len(header) + 11 + (2 if version > 1 else 0)) % 64) + "\n"
    raw = text.encode("latin1", errors="replace")
    size = struct.pack("<H", len(raw)) if version == 1 else struct.pack("<I", len(raw))
    return b"\x93NUMPY" + bytes([version, 0]) + size + raw + payload


def standard_header(descr: str, fortran: bool, shape: str) -> str:
    """numpy's header dict with `shape` inserted as written (e.g. "(2, 3)", "(-1,)", "[2.5]")."""
    return f"{{'descr': '{descr}', 'fortran_order': {fortran}, 'shape': {shape}, }}"


def replace_payload_header(path: Path, header: str, keep_payload: bool = True) -> None:
    """Rewrite the header of an npy file, keeping its payload."""
    from dumptui.core.io.npy import read_header

    payload = b""
    if keep_payload:
        _dt, _shape, _f, offset = read_header(str(path))
        payload = path.read_bytes()[offset:]
    path.write_bytes(npy_bytes(header, payload))


# ---------------------------------------------------------------------------------------------- msprobe


def msprobe_tree(root: Path, doc: object, files: dict[str, bytes] | None = None) -> Path:
    """step0/rank0/dump.json holding `doc` (any JSON value, or raw bytes) and dump_tensor_data files."""
    rank = root / "step0" / "rank0"
    (rank / "dump_tensor_data").mkdir(parents=True, exist_ok=True)
    raw = doc if isinstance(doc, bytes) else json.dumps(doc).encode()
    (rank / "dump.json").write_bytes(raw)
    for name, data in (files or {}).items():
        (rank / "dump_tensor_data" / name).write_bytes(data)
    return root


def msprobe_record(arr: np.ndarray, data_name: str | None = None) -> dict:
    rec = {
        "type": "torch.Tensor",
        "dtype": "torch.float32",
        "shape": list(arr.shape),
        "Max": float(arr.max()),
        "Min": float(arr.min()),
        "Mean": float(arr.mean()),
        "Norm": float(np.linalg.norm(arr)),
    }
    if data_name is not None:
        rec["data_name"] = data_name
    return rec


def msprobe_dump(root: Path, scale: float = 1.0, fmt: str = "npy", mutate=None) -> Path:
    """x -> relu -> mul (two API calls), tensors as .npy (or .pt) files; `mutate(doc)` damages the document."""
    x = np.linspace(-1, 1, 8, dtype=np.float32)
    y = np.maximum(x, 0)
    z = (y * scale).astype(np.float32)
    files: dict[str, bytes] = {}

    def rec(name: str, arr: np.ndarray) -> dict:
        file_name = f"{name}.{fmt}"
        if fmt == "pt":
            files[file_name] = pt_file_bytes(tensor_pickle(numel=arr.size, size=arr.shape), arr.tobytes())
        else:
            buf = io.BytesIO()
            np.save(buf, arr)
            files[file_name] = buf.getvalue()
        return msprobe_record(arr, file_name)

    doc = {
        "task": "tensor",
        "level": "L1",
        "framework": "pytorch",
        "dump_data_dir": None,
        "data": {
            "Functional.relu.0.forward": {"input_args": [rec("relu.in0", x)], "output": [rec("relu.out0", y)]},
            "Tensor.mul.1.forward": {"input_args": [rec("mul.in0", y)], "output": [rec("mul.out0", z)]},
        },
    }
    if mutate is not None:
        doc = mutate(doc)
    return msprobe_tree(root, doc, files)


# ---------------------------------------------------------------------------------------------- .pt


def _pickled(value: object) -> bytes:
    """The opcodes of a plain value (no PROTO, no STOP), to splice into a hand-made pickle."""
    return pickle.dumps(value, protocol=2)[2:-1]


def _global(module: str, name: str) -> bytes:
    return b"c" + f"{module}\n{name}\n".encode()


def tensor_pickle(
    storage: str = "FloatStorage",
    key: object = "0",
    numel: object = 4,
    offset: object = 0,
    size: object = (4,),
    stride: object = None,
    pid: bytes | None = None,
) -> bytes:
    """The pickle `torch.save` writes for one tensor, with every value as given (of any type): the opcodes
    of `torch._utils._rebuild_tensor_v2(storage, offset, size, stride, False, OrderedDict())`."""
    if stride is None and isinstance(size, tuple) and all(isinstance(s, int) for s in size):
        acc, out = 1, []
        for s in reversed(size):
            out.append(acc)
            acc *= max(s, 1)
        stride = tuple(reversed(out))
    if pid is None:
        pid = b"(" + _pickled("storage") + _global("torch", storage) + _pickled(key) + _pickled("cpu")
        pid += _pickled(numel) + b"t"
    return (
        b"\x80\x02"
        + _global("torch._utils", "_rebuild_tensor_v2")
        + b"("
        + pid
        + b"Q"  # BINPERSID
        + _pickled(offset)
        + _pickled(size)
        + _pickled(stride)
        + b"\x89"  # NEWFALSE
        + _global("collections", "OrderedDict")
        + b")R"  # EMPTY_TUPLE, REDUCE
        + b"tR."  # TUPLE, REDUCE, STOP
    )


def pt_file_bytes(
    pickle_bytes: bytes, storage: bytes, compress_pickle: bool = False, byteorder: bytes = b"little"
) -> bytes:
    """A torch.save zip: t/data.pkl, t/byteorder, t/data/0."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as z:
        z.writestr("t/data.pkl", pickle_bytes, zipfile.ZIP_DEFLATED if compress_pickle else zipfile.ZIP_STORED)
        z.writestr("t/byteorder", byteorder)
        z.writestr("t/data/0", storage)
        z.writestr("t/version", "3\n")
    return buf.getvalue()


def marker_pickle(marker: Path) -> bytes:
    """A pickle that, if it were ever run, would create `marker` (builtins.open(marker, "w"))."""
    return b"\x80\x02" + _global("builtins", "open") + _pickled((str(marker), "w")) + b"R."


# ---------------------------------------------------------------------------------------------- .bin


def bin_dump(root: Path) -> Path:
    """A MindSpore 1.x dump: Add then ReLU, raw bytes with dtype and shape in the names."""
    it = root / "Net" / "device_0" / "iteration_0"
    it.mkdir(parents=True)
    x = np.arange(4, dtype=np.float32)
    for name, arr in (
        ("Default--Add-op1_input_0_shape_4_Float32_DefaultFormat.bin", x),
        ("Default--Add-op1_output_0_shape_4_Float32_DefaultFormat.bin", x + 1),
        ("Default--ReLU-op2_input_0_shape_4_Float32_DefaultFormat.bin", x + 1),
        ("Default--ReLU-op2_output_0_shape_4_Float32_DefaultFormat.bin", x + 1),
    ):
        (it / name).write_bytes(arr.tobytes())
    return root


# ---------------------------------------------------------------------------------------------- running


def snapshot(root: str | Path) -> dict[str, tuple[int, int]]:
    """Every entry below `root` with its size and modification time: to prove nothing was written there."""
    out = {}
    for dirpath, dirs, files in os.walk(root):
        for name in dirs + files:
            p = os.path.join(dirpath, name)
            st = os.lstat(p)
            out[p] = (st.st_size, st.st_mtime_ns)
    return out


def run_main(*argv: object) -> tuple[int, str, str]:
    """`dumptui ARGV` in this process (fast: the imports are done): (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "1000"  # no wrapping: a path stays on one line
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = cli.main([str(a) for a in argv])
    finally:
        if old is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = old
    return code, out.getvalue(), err.getvalue()
