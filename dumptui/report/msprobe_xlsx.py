"""`compare --xlsx FILE`: the msprobe-profile table as an Excel workbook with msprobe's highlighting (rows
painted red or yellow by report/msprobe_highlight.py), written with openpyxl, the optional extra
`pip install 'dumptui[xlsx]'` (Excel's format is not one to write by hand; openpyxl also reads it back
for `dumptui open-result`)."""

from __future__ import annotations

import io

from dumptui.core.io.errors import UsageError
from dumptui.core.io.safeio import write_bytes
from dumptui.report import msprobe_highlight as mh
from dumptui.report.msprobe_csv import MsprobeTable

INSTALL_HINT = "pip install 'dumptui[xlsx]'"
# columns whose cells are numbers when they parse as one (names, dtypes, shapes and messages stay text)
TEXT_COLUMNS = {
    "NPU Name",
    "Bench Name",
    "NPU Dtype",
    "Bench Dtype",
    "NPU Tensor Shape",
    "Bench Tensor Shape",
    "Err_message",
    "Data_name",
    "NPU MD5",
    "BENCH MD5",
    "dumptui Verdict",
    "dumptui Reason",
    "dumptui Paired By",
}


class XlsxUnavailable(UsageError):
    """openpyxl is not installed."""


def require_openpyxl(path: str) -> None:
    try:
        import openpyxl  # noqa: F401
    except ImportError:
        raise XlsxUnavailable(f"writing .xlsx needs openpyxl, an optional extra: {INSTALL_HINT}", path) from None


def write_xlsx(table: MsprobeTable, path: str) -> mh.Highlights:
    require_openpyxl(path)
    from openpyxl import Workbook
    from openpyxl.styles import PatternFill

    hl = mh.find(table.rows, table.groups, table.mode)
    rows = mh.with_reasons(table.rows, hl)
    wb = Workbook()
    ws = wb.active
    ws.title = "compare_result"
    ws.append(table.header)
    for row in rows:
        ws.append([_cell(col, row.get(col, "")) for col in table.header])
        for c in ws[ws.max_row]:
            # openpyxl stores a text beginning with "=" as a formula: an op name would run when opened
            if isinstance(c.value, str) and c.value.startswith("="):
                c.data_type = "s"
    fills = {
        colour: PatternFill(start_color=colour, end_color=colour, fill_type="solid") for colour in (mh.RED, mh.YELLOW)
    }
    for i in range(len(rows)):
        colour = hl.colour(i)
        if colour is None:
            continue
        for j in range(1, len(table.header) + 1):
            ws.cell(row=i + 2, column=j).fill = fills[colour]
    ws.freeze_panes = "C2"
    # built in memory, then written as every output is (safeio.write_bytes): a FIFO nobody reads refused at
    # once instead of blocking, a full disk an error naming the path, never openpyxl's ignored exception
    data = io.BytesIO()
    wb.save(data)
    write_bytes(path, data.getvalue())
    return hl


def _cell(col: str, text: str) -> object:
    if col in TEXT_COLUMNS or not text:
        return text
    v = mh.number(text)
    return text if v is None else v
