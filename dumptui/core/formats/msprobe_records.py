"""msprobe's own names and records for the tensors of an msprobe dump, for reports in msprobe's profile.

The reader (msprobe.py) numbers an API call's tensors as slots; msprobe names them by where they sit in the
call (`Functional.conv2d.0.forward.input.0`, `...input.bias`, `Module.fc1.Linear.forward.0.parameters.weight`)
and prints their dtype as dump.json spells it (`torch.float32`), with `requires_grad` and `md5` when dumped.
This re-reads dump.json once and walks it exactly as the reader does, so slot N gets the Nth record.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from dumptui.core.formats.msprobe import DUMP_JSON, call_tensors, module_path, read_calls
from dumptui.core.io.errors import DumpError
from dumptui.core.model.dump import MSPROBE_FORMATS, Dump


@dataclass(frozen=True)
class TensorRecord:
    name: str  # msprobe's full tensor name
    record: dict[str, Any]  # the dump.json record (dtype, shape, Max, Min, Mean, Norm, requires_grad, md5, ...)


@dataclass
class MsprobeRecords:
    task: str  # "tensor" | "statistics"
    framework: str
    by_tensor: dict[tuple[str, str, int], TensorRecord]  # (op name, io, slot) -> its record

    @property
    def has_md5(self) -> bool:
        return any("md5" in r.record for r in self.by_tensor.values())

    def get(self, op_name: str, io: str, slot: int) -> TensorRecord | None:
        return self.by_tensor.get((op_name, io, slot))


def read_records(dump: Dump) -> MsprobeRecords | None:
    """The records of an msprobe dump (None for other formats, or when dump.json cannot be read again)."""
    if dump.format not in MSPROBE_FORMATS:
        return None
    fields: dict[str, Any] = {}
    by: dict[tuple[str, str, int], TensorRecord] = {}
    try:  # streamed as the reader reads it, within its limits (a FIFO, a huge or damaged document: no records)
        for kind, name, entry in read_calls(os.path.join(dump.root, DUMP_JSON)):
            if kind == "member":
                fields[name] = entry
            elif isinstance(entry, dict):
                _add(by, name, entry)
    except DumpError:
        return None
    return MsprobeRecords(str(fields.get("task", "")), str(fields.get("framework", "")), by)


def _add(by: dict[tuple[str, str, int], TensorRecord], name: str, entry: dict[str, Any]) -> None:
    """The records of one call of dump.json, walked exactly as the reader walks it."""
    if name.startswith(("Module.", "Cell.")):
        scope = module_path(name)  # as the reader names parameters
        parameters = entry.get("parameters") or {}
        if not isinstance(parameters, dict):  # the reader lists it as a damaged field
            return
        for pname, rec in parameters.items():
            if isinstance(rec, dict):
                by.setdefault((f"{scope}.{pname}", "output", 0), TensorRecord(f"{name}.parameters.{pname}", rec))
        return
    ins, outs = call_tensors(entry)
    for io, items in (("input", ins), ("output", outs)):
        for slot, (label, rec) in enumerate(items):
            by.setdefault((name, io, slot), TensorRecord(f"{name}.{label}", rec))
