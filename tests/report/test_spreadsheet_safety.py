"""Op names from a dump never run in a spreadsheet (issue 23.5): names beginning with `=`, `+`, `-` or `@`
are written with a leading quote in both CSV tables (dumptui's `full` and msprobe's profile), and as text,
never formulas, in --xlsx; numbers, negative ones included, stay numbers."""

from __future__ import annotations

import csv
import io

import pytest
from helpers.common import run_here
from helpers.msprobe_write import write_dump

from dumptui.report.cells import csv_safe

# the commands run in this process (what they answer is the question here, not how a process starts),
# with one pool of worker processes for the module
pytestmark = pytest.mark.usefixtures("commands_share_one_pool")

NAMES = ['=HYPERLINK("http://example.invalid","x").0.forward', "+cmd.0.forward", "-2+3.0.forward", "@SUM(A1).0.forward"]


@pytest.fixture(scope="module")
def hostile_pair(tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile")
    calls_ref = [(name, "", [1.0 + i], [2.0 + i]) for i, name in enumerate(NAMES)]
    calls_target = [(name, "", [1.0 + i], [2.0 + i + (i == 0) * 0.5]) for i, name in enumerate(NAMES)]
    return write_dump(root / "ref", "Module", {}, calls_ref), write_dump(root / "target", "Module", {}, calls_target)


def test_cells_that_would_run_get_a_quote_and_numbers_stay():
    for text in ("=1+1", "+1+1x", "-cmd", "@SUM(A1)", "\tx", "\rx"):
        assert csv_safe(text) == "'" + text
    for value in ("-0.5", "-inf", "+3", "1e-3", "name", "", 3, -2.5, None):
        assert csv_safe(value) == value


@pytest.mark.parametrize("profile", ["full", "msprobe"])
def test_csv_names_are_quoted(hostile_pair, profile):
    code, out, err = run_here("compare", *hostile_pair, "--csv", "-", "--csv-profile", profile)
    assert code in (0, 1), err
    rows = list(csv.reader(io.StringIO(out)))
    cells = [c for row in rows[1:] for c in row]
    for name in NAMES:
        assert not any(c.startswith(name[:3]) for c in cells), name
        assert any(c.startswith("'" + name[:3]) for c in cells), name
    numbers = [c for c in cells if c.startswith("-") and c[1:2].isdigit()]
    assert all(float(c) < 0 for c in numbers)  # negative numbers were not quoted


def test_xlsx_names_are_text_not_formulas(hostile_pair, tmp_path):
    openpyxl = pytest.importorskip("openpyxl", reason="openpyxl not installed (the xlsx extra)")
    path = tmp_path / "out.xlsx"
    code, _out, err = run_here("compare", *hostile_pair, "--xlsx", str(path))
    assert code in (0, 1), err
    ws = openpyxl.load_workbook(path).active
    cells = [c for row in ws.iter_rows(min_row=2) for c in row if isinstance(c.value, str)]
    hostile = [c for c in cells if c.value.startswith("=")]
    assert hostile and all(c.data_type == "s" for c in hostile)
