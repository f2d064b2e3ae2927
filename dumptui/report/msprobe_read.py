"""Read a comparison result msprobe wrote (`compare_result_*.csv`, or `.xlsx` with openpyxl), for
`dumptui open-result`: its rows, which of msprobe's tables it is, each row's place in execution order and
whether msprobe marked it as failing.

Execution order: a MindSpore kernel compare names tensor files whose names carry the dump timestamp (the
true order within a dump, docs/formats.md#mindspore-native-dump), so the order needs no dump; an API compare names API calls, whose
order is that of the NPU dump's dump.json (`--dump DIR`); without it, msprobe's row order (which follows
dump.json) is kept.
"""

from __future__ import annotations

import csv
import json
import os
import re
from dataclasses import dataclass, field

from dumptui.core.io.errors import UsageError

NPY_NAME = re.compile(r"^(?P<type>[^.]+)\.(?P<op>[^.]+)\.\d+\.\d+\.(?P<ts>\d+)\.(?P<io>input|output)\.(?P<slot>\d+)\.")
TENSOR_SUFFIX = re.compile(r"\.(input|output|parameters|parameters_grad)(\.|$)")
FAILING = {"Accuracy Reached or Not": ("No",), "Result": ("Warning", "Different", "error")}


class ResultFileError(UsageError):
    """A result file that cannot be read: its path and why."""

    def __init__(self, path: str, reason: str):
        super().__init__(reason, path)

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}"


@dataclass
class ResultRow:
    index: int  # 0-based row of the file (after the header)
    cells: dict[str, str]
    op: str  # the op (API call, kernel file op name) the tensor belongs to
    tensor: str  # the tensor's part of the name: input.0, output.0, parameters.weight
    order: tuple[int, int]  # sort key in execution order (timestamp or call position, then row)
    failing: bool
    reachable: bool  # the NPU tensor file (kernel compare) or dump.json (API compare) exists here

    @property
    def name(self) -> str:
        return self.cells.get("NPU Name") or self.cells.get("Bench Name") or ""


@dataclass
class MsprobeResult:
    path: str
    header: list[str]
    rows: list[ResultRow]
    kind: str  # "kernel" (file names) | "api" (API/module names)
    order_source: str
    notes: list[str] = field(default_factory=list)

    def first_failing(self) -> ResultRow | None:
        failing = [r for r in self.rows if r.failing]
        return min(failing, key=lambda r: r.order) if failing else None


def read_result(path: str, dump: str | None = None) -> MsprobeResult:
    if not os.path.isfile(path):
        raise ResultFileError(path, "no such file")
    ext = os.path.splitext(path)[1].lower()
    if ext == ".xlsx":
        header, rows = _read_xlsx(path)
    elif ext == ".csv":
        header, rows = _read_csv(path)
    else:
        raise ResultFileError(path, "expected msprobe's compare_result_*.csv or .xlsx")
    if "NPU Name" not in header or "Bench Name" not in header:
        raise ResultFileError(path, "not an msprobe comparison result (no NPU Name / Bench Name columns)")
    return _build(path, header, rows, dump)


def _read_csv(path: str) -> tuple[list[str], list[dict[str, str]]]:
    try:
        with open(path, encoding="utf-8-sig", newline="") as fh:
            reader = csv.DictReader(fh)
            rows = [{k: (v or "") for k, v in r.items() if k is not None} for r in reader]
            return list(reader.fieldnames or []), rows
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        raise ResultFileError(path, f"unreadable CSV: {e}") from None


def _read_xlsx(path: str) -> tuple[list[str], list[dict[str, str]]]:
    try:
        import openpyxl
    except ImportError:
        raise ResultFileError(
            path, "reading .xlsx needs openpyxl, an optional extra: pip install 'dumptui[xlsx]'"
        ) from None
    try:
        wb = openpyxl.load_workbook(path, read_only=True, data_only=True)
    except Exception as e:  # openpyxl raises many kinds (zip, XML, key errors) for a damaged file
        raise ResultFileError(path, f"unreadable .xlsx: {e}") from None
    ws = wb.worksheets[0]
    values = list(ws.iter_rows(values_only=True))
    wb.close()
    if not values:
        return [], []
    header = [str(h) if h is not None else "" for h in values[0]]
    rows = [{h: _text(v) for h, v in zip(header, r)} for r in values[1:]]
    return header, rows


def _text(v: object) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return repr(v)
    return str(v).rstrip("\t")  # msprobe writes inf/nan as "inf\t" in xlsx


def _build(path: str, header: list[str], cells: list[dict[str, str]], dump: str | None) -> MsprobeResult:
    kind = (
        "kernel"
        if any(os.path.basename(c.get("NPU Name") or c.get("Bench Name") or "").endswith(".npy") for c in cells)
        else "api"
    )
    api_order: dict[str, int] = {}
    order_source, notes = "msprobe's row order", []
    if kind == "kernel":
        order_source = "dump timestamps in the file names"
    else:
        api_order, found = _api_order(dump)
        if api_order:
            order_source = f"dump.json of {found}"
        elif dump:
            notes.append(f"{dump}: no dump.json found there; rows kept in msprobe's order")
    rows = []
    for i, c in enumerate(cells):
        name = c.get("NPU Name") or c.get("Bench Name") or ""
        if kind == "kernel":
            op, tensor, key, reachable = _kernel_fields(c, i)
        else:
            op, tensor = _split_api(name)
            key = (api_order.get(op, i), i) if api_order else (i, i)
            reachable = bool(api_order)
        rows.append(ResultRow(i, c, op, tensor, key, _failing(c), reachable))
    return MsprobeResult(path, header, rows, kind, order_source, notes)


def _kernel_fields(c: dict[str, str], i: int) -> tuple[str, str, tuple[int, int], bool]:
    npu, bench = c.get("NPU Name", ""), c.get("Bench Name", "")
    base = os.path.basename(npu or bench)
    m = NPY_NAME.match(base)
    if not m:
        return base, "", (1 << 62, i), bool(npu) and os.path.exists(npu)
    ts = int(m.group("ts"))
    if not npu:  # only the bench has it: its timestamp is from another run, place it after the NPU rows
        ts = 1 << 61
    return (
        f"{m.group('type')}.{m.group('op')}",
        f"{m.group('io')}.{m.group('slot')}",
        (ts, i),
        bool(npu) and os.path.exists(npu),
    )


def _split_api(name: str) -> tuple[str, str]:
    m = TENSOR_SUFFIX.search(name)
    return (name[: m.start()], name[m.start() + 1 :]) if m else (name, "")


def _failing(c: dict[str, str]) -> bool:
    return any(c.get(col, "") in values for col, values in FAILING.items())


def _api_order(dump: str | None) -> tuple[dict[str, int], str]:
    """Call position of every API/module entry of the NPU dump's dump.json (found up to 3 folders down)."""
    found = _find_dump_json(dump) if dump else None
    if not found:
        return {}, ""
    try:
        with open(found, encoding="utf-8") as fh:
            data = json.load(fh).get("data") or {}
    except (OSError, ValueError, AttributeError):
        return {}, ""
    return {name: pos for pos, name in enumerate(data)}, found


def _find_dump_json(folder: str) -> str | None:
    if not os.path.isdir(folder):
        return None
    for root, _dirs, files in os.walk(folder):
        if "dump.json" in files:
            return os.path.join(root, "dump.json")
        if root.count(os.sep) - folder.count(os.sep) >= 3:
            break
    return None
