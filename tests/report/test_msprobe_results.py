"""msprobe's xlsx with its highlighting, and `dumptui open-result` on results msprobe (or we) wrote."""

from __future__ import annotations

import asyncio
import glob
import sys

import pytest
from helpers.common import MS, run_here

from dumptui.report import msprobe_highlight as mh
from dumptui.report.msprobe_read import ResultFileError, read_result

# the commands run in this process (what they answer is the question here, not how a process starts),
# with one pool of worker processes for the module
pytestmark = pytest.mark.usefixtures("commands_share_one_pool")


def test_xlsx_has_msprobe_highlighting(demo_pair, tmp_path):
    openpyxl = pytest.importorskip("openpyxl")
    path = tmp_path / "r.xlsx"
    rc, out, err = run_here("compare", demo_pair.ref, demo_pair.target, "--xlsx", path, "-q")
    assert rc == 1, err
    ws = openpyxl.load_workbook(path).active
    header = [c.value for c in ws[1]]
    assert header[:2] == ["NPU Name", "Bench Name"] and "Accuracy Reached or Not" in header
    col = {h: i for i, h in enumerate(header)}
    planted_out = None
    colours = {}
    for row in ws.iter_rows(min_row=2):
        fill = row[0].fill.fgColor.rgb if row[0].fill and row[0].fill.fill_type == "solid" else None
        name = str(row[col["Bench Name"]].value)
        colours[name] = fill
        if demo_pair.planted.replace("/", "_") in name and ".output.0." in name:
            planted_out = row
    assert planted_out is not None
    # the planted op: inputs agree (thousandth ratio ~1), the output does not (ratio ~0): msprobe's red rule
    assert planted_out[0].fill.fgColor.rgb == mh.RED
    assert all(c.fill.fgColor.rgb == mh.RED for c in planted_out)  # the whole row
    assert "one thousandth err ratio exceeds 0.9" in planted_out[col["Err_message"]].value
    assert isinstance(planted_out[col["Cosine"]].value, float)  # numbers are numbers in the workbook
    assert sum(1 for v in colours.values() if v is None) > len(colours) / 2  # most rows are not painted


def test_xlsx_without_openpyxl_says_how_to_get_it(demo_pair, tmp_path, monkeypatch, capsys):
    from dumptui import cli

    monkeypatch.setitem(sys.modules, "openpyxl", None)  # as if the extra were not installed
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "no-config"))
    rc = cli.main(["compare", str(demo_pair.ref), str(demo_pair.target), "--xlsx", str(tmp_path / "r.xlsx")])
    err = capsys.readouterr().err
    assert rc == 2 and "pip install 'dumptui[xlsx]'" in err and "openpyxl" in err
    assert not (tmp_path / "r.xlsx").exists()


def test_highlight_rules_on_made_up_rows():
    rows = [
        {"NPU max": "1", "Bench max": "1", "MaxAbsErr": "0.0", "One Thousandth Err Ratio": "1.0", "Cosine": "1.0"},
        {"NPU max": "1", "Bench max": "1", "MaxAbsErr": "0.5", "One Thousandth Err Ratio": "0.5", "Cosine": "0.99"},
        {"NPU max": "inf", "Bench max": "1", "MaxAbsErr": "1", "One Thousandth Err Ratio": "1", "Cosine": "1"},
        {"NPU max": "1", "Bench max": "1", "MaxAbsErr": "0.1", "One Thousandth Err Ratio": "0.85", "Cosine": "0.85"},
    ]
    groups = [(0, "input"), (0, "output"), (1, "output"), (0, "output")]
    hl = mh.find(rows, groups, "mindspore-kernel")
    assert hl.colour(0) is None
    assert hl.colour(1) == mh.RED  # in > 0.9, out < 0.6
    assert hl.colour(2) == mh.RED and "nan, -inf, or inf" in hl.reasons(2)[0]
    assert hl.colour(3) == mh.YELLOW  # thousandth falls by 0.15, cosine by 0.15
    assert len(hl.reasons(3)) == 2


@pytest.fixture
def msprobe_result():
    found = glob.glob(str(MS / "reports" / "msprobe" / "A_vs_B_pad" / "compare_result_*.csv"))
    if not found:
        pytest.skip("msprobe's own results absent from the shared fixtures")
    return found[0]


def test_open_result_finds_the_first_failing_row_in_execution_order(msprobe_result):
    res = read_result(msprobe_result)
    assert res.kind == "kernel" and len(res.rows) == 80
    first = res.first_failing()
    # msprobe lists rows by name (BiasAdd of conv2 comes first); by dump timestamps conv2's output is first
    assert first.op == "Conv2D.Default_conv2-ConvBlock_Conv2D-op0" and first.tensor == "output.0"
    by_name_first = next(r for r in res.rows if r.failing)
    assert by_name_first.op != first.op


def test_open_result_app_tree_sort_and_jump(msprobe_result):
    from dumptui.tui.result_app import ResultApp

    res = read_result(msprobe_result)

    async def go():
        app = ResultApp(res)
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.pause()
            assert app.rows_tree.cursor_node.data.op == "Conv2D.Default_conv2-ConvBlock_Conv2D-op0"
            ops = [str(n.label) for n in app.rows_tree.root.children]
            assert len(ops) == len({r.op for r in res.rows})
            failing_ops = {r.op for r in res.rows if r.failing}
            for label in ops:  # marked, never by colour alone: ✗ op n✗ when rows fail, ≈ op when all pass
                op = label[2:].split(" ")[0]
                assert label.startswith("✗ " if op in failing_ops else "≈ "), label
            await pilot.press("s")  # sort by name
            await pilot.pause()
            assert app.sort.key == "name"
            names = [str(n.label)[2:].split(" ")[0] for n in app.rows_tree.root.children]
            assert names == sorted({r.op for r in res.rows})
            await pilot.press("n")
            await pilot.pause()
            nxt = app.rows_tree.cursor_node.data
            assert nxt.failing and nxt.order > res.first_failing().order
            detail = str(app.query_one("#detail").render())
            assert "Cosine" in detail

    asyncio.run(go())


def test_open_result_reads_our_xlsx_back(demo_pair, tmp_path):
    pytest.importorskip("openpyxl")
    path = tmp_path / "r.xlsx"
    rc, _out, err = run_here("compare", demo_pair.ref, demo_pair.target, "--xlsx", path, "-q")
    assert rc == 1, err
    res = read_result(str(path))
    first = res.first_failing()
    assert first is not None and demo_pair.planted.replace("/", "_") in first.cells["Bench Name"]


def test_open_result_bad_input_exit_2(tmp_path):
    bad = tmp_path / "x.csv"
    bad.write_text("a,b\n1,2\n")
    rc, _out, err = run_here("open-result", bad)
    assert rc == 2 and str(bad) in err and "not an msprobe comparison result" in err
    rc, _out, err = run_here("open-result", tmp_path / "missing.csv")
    assert rc == 2 and "no such file" in err
    with pytest.raises(ResultFileError):
        read_result(str(tmp_path / "x.txt"))


def test_open_result_has_search_help_and_the_palette(msprobe_result):
    """`/` finds rows by op or tensor name (typing jumps, ↓ goes on, enter goes there, escape closes), `?` lists the keys and
    marks, ctrl+p offers the app's own commands."""
    from dumptui.tui.result_app import ResultApp
    from dumptui.tui.screens.help import HelpScreen

    res = read_result(msprobe_result)
    relus = sorted((r for r in res.rows if "relu" in r.op.lower()), key=lambda r: r.order)
    assert len(relus) >= 2

    async def go():
        app = ResultApp(res)
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.pause()
            await pilot.press("slash", *"relu")
            await pilot.pause()
            at = app.rows_tree.cursor_node.data
            assert "relu" in at.op.lower() and app.search_matches == len(relus)
            assert app.rows_tree.border_subtitle == f"{len(relus)} matches"
            await pilot.press("down")  # the next match
            await pilot.pause()
            assert app.rows_tree.cursor_node.data is not at and "relu" in app.rows_tree.cursor_node.data.op.lower()
            await pilot.press("escape")
            await pilot.pause()
            assert app.focused is app.rows_tree and not app.query_one("#search").display
            assert app.rows_tree.border_subtitle == ""
            # enter goes to the match and gives the keys back to the rows (n: the next failing row here)
            await pilot.press("slash", *"relu")
            await pilot.pause()
            found = app.rows_tree.cursor_node.data
            await pilot.press("enter")
            await pilot.pause()
            assert app.rows_tree.cursor_node.data is found and "relu" in found.op.lower()
            assert app.focused is app.rows_tree and not app.query_one("#search").display
            await pilot.press("question_mark")
            await pilot.pause()
            assert isinstance(app.screen, HelpScreen)
            keys = {r[0] for r in app.screen.rows}
            assert {"f", "n", "s", "/", "?", "q / ^c", "↓"} <= keys, keys  # the app's keys and the search box's
            assert [m for m, _w in app.screen.marks] == ["✗", "≈"]
            await pilot.press("escape")
            titles = [
                c[0] for c in __import__("dumptui.tui.result_app", fromlist=["x"]).ResultCommands(app.screen).commands()
            ]
            assert {"First failing", "Next failing", "Sort", "Search"} <= set(titles)

    asyncio.run(go())
