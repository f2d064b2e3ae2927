"""One dump file on its own: what its name says, what its header says, and its values."""
from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np

from . import dtypes
from .formats.mindspore import parse_npy_name
from .formats.mindspore_bin import bin_tensor_ref, parse_bin_name
from .metrics import SideStats, side_stats
from .model import TensorRef


@dataclass
class FileInfo:
    path: str
    kind: str                              # "MindSpore npy", "MindSpore 1.x bin", "npy"
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
        info.fields = {"op type": npy.op_type, "op name (file form)": npy.name, "task id": npy.task,
                       "stream id": npy.stream, "timestamp (us)": npy.timestamp, "io": npy.io, "slot": npy.slot,
                       "format": npy.fmt or "(none)", "dtype (name)": npy.dtype or "(none: older release)"}
        name_dt = dtypes.canonical(npy.dtype) if npy.dtype else None
        return TensorRef(path, npy.io, int(npy.slot), dtype=name_dt, size_on_disk=size)
    raw = parse_bin_name(base) if base.endswith(".bin") else None
    if raw is not None:
        info.kind = "MindSpore 1.x .bin dump file (raw bytes, shape and dtype from the name)"
        info.fields = {k: str(v) for k, v in raw.items()}
        return bin_tensor_ref(path, raw)
    if base.endswith(".npy"):
        info.kind = "npy file"
        return TensorRef(path, "output", 0, size_on_disk=size)
    return None


def inspect_file(path: str, n_values: int = 10) -> FileInfo:
    """Raises OSError for a missing file; everything else is reported in the FileInfo."""
    size = os.path.getsize(path)
    info = FileInfo(path=path, kind="file", size_on_disk=size)
    tref = _tensor_of(path, size, info)
    if tref is None:
        info.problem = "not a tensor file dumptui reads (.npy, or a MindSpore 1.x .bin dump file)"
        return info
    lay = tref.layout()
    info.dtype, info.shape = tref.dtype, lay.shape
    info.problem, info.repaired, info.declared = lay.problem, lay.repaired, lay.declared
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
