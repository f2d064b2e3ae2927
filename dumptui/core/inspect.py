"""One dump file on its own: what its name says, what its header says, and its values."""
from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np

from . import dtypes
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
    first_values: list = field(default_factory=list)


def inspect_file(path: str, n_values: int = 10) -> FileInfo:
    """Raises OSError for a missing file; everything else is reported in the FileInfo."""
    size = os.path.getsize(path)
    base = os.path.basename(path)
    from .formats.mindspore import NPY_NAME
    from .formats.mindspore_bin import parse_bin_name
    info = FileInfo(path=path, kind="file", size_on_disk=size)
    tref: TensorRef | None = None
    m = NPY_NAME.match(base)
    if m:
        d = m.groupdict()
        info.kind = "MindSpore npy dump file"
        info.fields = {"op type": d["type"], "op name (file form)": d["name"], "task id": d["task"],
                       "stream id": d["stream"], "timestamp (us)": d["ts"], "io": d["io"], "slot": d["slot"],
                       "format": d["fmt"] or "(none)", "dtype (name)": d["dtype"] or "(none: older release)"}
        name_dt = dtypes.canonical(d["dtype"]) if d["dtype"] else None
        tref = TensorRef(path, d["io"], int(d["slot"]), dtype=name_dt, size_on_disk=size)
    elif base.endswith(".bin") and parse_bin_name(base):
        d = parse_bin_name(base)
        info.kind = "MindSpore 1.x .bin dump file (raw bytes, shape and dtype from the name)"
        info.fields = {k: str(v) for k, v in d.items() if k != "layout"}
        from .formats.mindspore_bin import bin_tensor_ref
        tref = bin_tensor_ref(path, d)
    elif base.endswith(".npy"):
        info.kind = "npy file"
        tref = TensorRef(path, "output", 0, size_on_disk=size)
    else:
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
