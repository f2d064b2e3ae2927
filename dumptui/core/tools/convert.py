"""`dumptui convert RAW -o OUT`: the tensors of a CANN raw dump as `.npy` files that plain `np.load` reads.

This replaces the vendor converter (`msaccucmp.py convert` of the CANN run package): each tensor is decoded,
put back from its device layout into its original shape, and saved as
`{op_type}.{op_name}.{task}.{stream}.{timestamp}.{input|output}.{slot}.{shape}.{dtype}.npy`, e.g.
`Conv2D.Default_conv1-Conv2d_Conv2D-op5.3.1.1700000000000001.output.0.1x33x3x5.float16.npy`: the raw file's
name (what the vendor tool's users know) followed by what the tensor is. bfloat16 is saved widened to float32
(numpy has no bfloat16; the name keeps bfloat16). A name too long for the file system becomes a number, listed
in OUT/mapping.csv as CANN itself does. Nothing is written inside RAW.
"""

from __future__ import annotations

import csv
import os
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from dumptui.core.formats import detect, open_dump
from dumptui.core.formats.cann import FORMAT, OVERFLOW_REASON, RAW_NAME
from dumptui.core.formats.cann_file import MAPPING_FILE
from dumptui.core.formats.files import read_mapping_csv
from dumptui.core.io.devicelayout import BLOCK_FORMATS, TRANSPOSES
from dumptui.core.io.errors import UsageError
from dumptui.core.model.dump import Dump, Op, Severity, TensorRef
from dumptui.core.model.reason import Said

MAX_NAME_BYTES = 255


@dataclass
class ConvertReport:
    source: str
    out: str
    ops: int = 0
    written: list[str] = field(default_factory=list)
    bytes_written: int = 0
    layouts: Counter[str] = field(default_factory=Counter)  # device format -> tensors put back
    widened_bf16: int = 0
    not_converted: list[tuple[str, Said]] = field(default_factory=list)  # (file and tensor, reason)
    overflow: list[str] = field(default_factory=list)
    numbered: int = 0

    @property
    def complete(self) -> bool:
        return not self.not_converted


def _inside(path: str, folder: str) -> bool:
    path, folder = os.path.realpath(path), os.path.realpath(folder)
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


@lru_cache(maxsize=8)
def _mapping(folder: str) -> dict[str, str]:
    return read_mapping_csv(os.path.join(folder, MAPPING_FILE))


def _raw_prefix(op: Op, t: TensorRef) -> str:
    """The raw file's name; for a file CANN numbered, the name mapping.csv gives it."""
    base = os.path.basename(t.path)
    if RAW_NAME.match(base):
        return base
    mapped = os.path.basename(_mapping(os.path.dirname(t.path)).get(base, ""))
    return mapped if RAW_NAME.match(mapped) else f"{op.op_type}.{op.file_name}.{op.timestamp}"


def tensor_file_name(op: Op, t: TensorRef, shape: tuple[int, ...]) -> str:
    dims = "x".join(str(d) for d in shape) if shape else "scalar"
    return f"{_raw_prefix(op, t)}.{t.io}.{t.slot}.{dims}.{t.dtype}.npy"


def _save(report: ConvertReport, mapping: list[tuple[str, str]], name: str, value: np.ndarray) -> None:
    if len(name.encode()) > MAX_NAME_BYTES:
        mapping.append((str(len(mapping) + 1), name))
        report.numbered += 1
        name = f"{len(mapping)}.npy"
    path = os.path.join(report.out, name)
    np.save(path, value, allow_pickle=False)
    report.written.append(path)
    report.bytes_written += os.path.getsize(path)


def convert_dump(dump: Dump, out: str) -> ConvertReport:
    """Write every readable tensor of the raw dump `dump` to `out`; what could not be converted is listed."""
    for folder in (dump.path, dump.root):
        if _inside(out, folder):
            raise UsageError(f"{out}: refusing to write inside the dump folder {os.path.realpath(folder)}")
    os.makedirs(out, exist_ok=True)
    report = ConvertReport(source=dump.root, out=os.path.abspath(out), ops=len(dump.ops))
    report.overflow = [p.path for p in dump.problems if p.reason == OVERFLOW_REASON]
    report.not_converted += [(p.path, p.reason) for p in dump.problems if p.severity == Severity.ERROR]
    mapping: list[tuple[str, str]] = []
    for op in dump.ops:
        for t in op.tensors():
            what = f"{os.path.basename(t.path)} {t.label}"
            if t.problem:
                report.not_converted.append((what, t.problem))
                continue
            try:
                value = np.asarray(t.array(), order="C")  # (ascontiguousarray makes a 0-d tensor 1-d)
            except (OSError, ValueError) as e:
                report.not_converted.append((what, f"read failed: {e}"))
                continue
            _save(report, mapping, tensor_file_name(op, t, value.shape), value)
            if t.fmt in BLOCK_FORMATS or (t.fmt in TRANSPOSES and t.layout().decoder is not None):
                report.layouts[t.fmt] += 1
            report.widened_bf16 += t.dtype == "bfloat16"
    if mapping:
        with open(os.path.join(report.out, "mapping.csv"), "w", newline="", encoding="utf-8") as fh:
            csv.writer(fh).writerows(mapping)
    return report


def convert(
    raw_path: str, out: str, rank: str | None = None, graph: str | None = None, iteration: str | None = None
) -> ConvertReport:
    """Open the raw dump at `raw_path` (as selected) and convert it; UsageError for another kind of dump."""
    fmt = detect(raw_path)
    if fmt != FORMAT:
        raise UsageError(f"{raw_path}: this is a {fmt} dump, not CANN raw dump files: dumptui reads it as it is")
    return convert_dump(open_dump(raw_path, rank=rank, graph=graph, iteration=iteration, fmt=FORMAT), out)
