"""The report to share, written from the app (`W`): the page `dumptui report` writes for the same pair (one
comparison, one set of numbers), under a megabyte, nothing a page could run. `serve` delivers it as a download
(test_serve.py)."""

from __future__ import annotations

import pytest
from helpers.app import opened, run, wait_until
from helpers.common import run_cli

from dumptui.tui.screens.paths import SaveScreen

# the apps of this module share one pool of worker processes (conftest.py), not one spawned per app
pytestmark = pytest.mark.usefixtures("apps_share_one_pool")


def test_w_writes_the_report_dumptui_report_writes(demo_pair, tmp_path):
    ours = tmp_path / "app-report.html"

    async def go():
        async with opened(demo_pair.ref, demo_pair.target, stats=True) as (app, pilot, scr):
            await pilot.press("W")
            await wait_until(lambda: isinstance(app.screen, SaveScreen), what="the report dialog")
            dialog = app.screen
            assert dialog.query_one("#dialog").border_title == "report"
            assert dialog.value("save-path").endswith("dumptui-report.html")  # beside the other exports
            dialog.query_one("#save-path").value = str(ours)
            await pilot.press("enter")
            await wait_until(lambda: scr.exports.report_path == str(ours), what="the report written")

    run(go())
    theirs = tmp_path / "cli-report.html"
    code, _out, err = run_cli("report", demo_pair.ref, demo_pair.target, "-o", theirs, "-q")
    assert code == 1, err
    page = ours.read_text(encoding="utf-8")
    assert page == theirs.read_text(encoding="utf-8")
    assert "<script" not in page and ours.stat().st_size < 1_000_000
    assert demo_pair.planted in page


def test_w_is_in_the_footer_help_and_palette_once_statistics_are_done():
    from dumptui.present import keys

    action = next(a for a in keys.ACTIONS if a.action == "export_report")
    assert action.keys == "W" and "report" in action.palette.lower()
    assert sum(1 for a in keys.ACTIONS if "W" in a.keys.split(",")) == 1  # no other action on the key
