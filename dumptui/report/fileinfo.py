"""One dump file on its own, as `dumptui inspect` shows it: what its name says, what its header says, and its
values (the engine reads it; these are its words)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np

from dumptui.core.compare.metrics import side_stats
from dumptui.core.compare.pairstats import SideStats
from dumptui.core.formats.cann_file import RawName, parse_raw_name, read_raw_file
from dumptui.core.formats.mindspore import parse_npy_name
from dumptui.core.formats.mindspore_bin import bin_tensor_ref, parse_bin_name
from dumptui.core.io import dtypes, limits
from dumptui.core.io.safeio import regular_size
from dumptui.core.model.dump import INOUT_NAMED, OUTPUT, TensorRef
from dumptui.report.reasons import RAW_LAYOUT_WORDS, say


@dataclass
class FileInfo:
    path: str
    kind: str  # "MindSpore npy", "MindSpore 1.x bin", "npy"
    fields: dict[str, str] = field(default_factory=dict)
    dtype: str | None = None
    shape: tuple[int, ...] | None = None
    size_on_disk: int = 0
    problem: str | None = None
    repaired: str | None = None
    declared: str | None = None
    stats: SideStats | None = None
    first_values: list[float | int | bool | complex] = field(default_factory=list)


def _tensor_of(path: str, size: int, info: FileInfo) -> TensorRef | None:
    """The tensor of a file, reading what its name says into `info`; None when it is no tensor file we read."""
    base = os.path.basename(path)
    npy = parse_npy_name(base)
    if npy is not None:
        info.kind = "MindSpore npy dump file"
        info.fields = {
            "op type": npy.op_type,
            "op name (file form)": npy.name,
            "task id": npy.task,
            "stream id": npy.stream,
            "timestamp (us)": npy.timestamp,
            "io": npy.io,
            "slot": npy.slot,
            "format": npy.fmt or "(none)",
            "dtype (name)": npy.dtype or "(none: older release)",
        }
        name_dt = dtypes.canonical(npy.dtype) if npy.dtype else None
        return TensorRef(path, INOUT_NAMED[npy.io], int(npy.slot), dtype=name_dt, size_on_disk=size)
    cann = parse_raw_name(base)
    if cann is not None:
        return _raw_dump_tensor(path, cann, info)
    try:
        raw = parse_bin_name(base) if base.endswith(".bin") else None
    except limits.BadValue as e:
        info.kind, info.problem = "MindSpore 1.x .bin dump file", f"file name not read: {e}"
        return None
    if raw is not None:
        info.kind = "MindSpore 1.x .bin dump file (raw bytes, shape and dtype from the name)"
        info.fields = {k: str(v) for k, v in raw.items()}
        return bin_tensor_ref(path, raw)
    if base.endswith(".npy"):
        info.kind = "npy file"
        return TensorRef(path, OUTPUT, 0, size_on_disk=size)
    return None


def _raw_dump_tensor(path: str, name: RawName, info: FileInfo) -> TensorRef | None:
    """A CANN raw dump file: every tensor its header lists goes into the fields; the values shown are the
    first output's (else the first input's)."""
    raw = read_raw_file(path, name)
    layout = RAW_LAYOUT_WORDS[raw.layout_variant] if raw.layout_variant is not None else "unreadable"
    info.kind = f"CANN raw dump file ({layout})"
    info.fields = {
        "op type": name.op_type,
        "op name (file form)": name.op_name,
        "task id": name.task,
        "stream id": name.stream or "(none: old CANN)",
        "timestamp (us)": str(name.timestamp),
    }
    if raw.op_name:
        info.fields["op name (DumpData)"] = raw.op_name
    for t in raw.tensors:
        info.fields[f"{t.io}.{t.slot}"] = f"{t.dtype} {list(t.shape)} from {t.device_format} {list(t.device_shape)}" + (
            f": {say(t.layout.problem)}" if t.layout.problem else ""
        )
    if not raw.tensors:
        info.problem = say(raw.problem) if raw.problem else "no tensors in this dump file"
        return None
    t = next((t for t in raw.tensors if t.io == OUTPUT), raw.tensors[0])
    return TensorRef(
        path,
        t.io,
        t.slot,
        dtype=t.dtype,
        shape=t.shape,
        fmt=t.device_format,
        layout_fn=lambda: t.layout,
        size_on_disk=t.size,
    )


def inspect_file(path: str, n_values: int = 10) -> FileInfo:
    """Raises OSError for a missing file or one that is not a regular file (a FIFO, a device); everything else
    is reported in the FileInfo."""
    size = regular_size(path)
    info = FileInfo(path=path, kind="file", size_on_disk=size)
    tref = _tensor_of(path, size, info)
    if tref is None:
        info.problem = (
            info.problem or "not a tensor file dumptui reads (.npy, a MindSpore 1.x .bin or a CANN raw dump file)"
        )
        return info
    lay = tref.layout()
    info.dtype, info.shape = tref.dtype, lay.shape
    info.problem = say(lay.problem) if lay.problem else None
    info.repaired = say(lay.repaired) if lay.repaired else None
    info.declared = lay.declared
    if lay.problem:
        return info
    try:
        info.stats = side_stats(tref)
        arr = tref.array()
        flat = np.asarray(arr).reshape(-1)[:n_values]
        info.first_values = flat.tolist()
    except (OSError, ValueError) as e:
        info.problem = f"read failed: {e}"
    return info
