"""Snapshots of the app at fixed terminal sizes (80x24, 160x48) on a demo pair written under a fixed relative
folder name, so no temporary path or timing shows on screen; every worker has finished before the snap.
Update after a deliberate change with `pytest tests/test_tui_snapshots.py --snapshot-update`."""

from __future__ import annotations

import pytest
from helpers.app import make_app, wait_until

from dumptui.core.demo.residual import write_demo
from dumptui.tui.app import DumpTuiApp


@pytest.fixture(scope="module")
def demo_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("snap")
    write_demo(str(root / "demo"), n_ops=60, size=512)
    return root


def demo_app(demo_root, monkeypatch) -> DumpTuiApp:
    monkeypatch.chdir(demo_root)
    return make_app("demo/ref", "demo/target")


async def settled(app, pilot) -> None:
    """Statistics done, bisection idle (the plot's numbers too), the selected op and its tensor detail on
    screen."""
    await wait_until(lambda: app.main is not None and app.main.bstate is not None and not app.main.bisect_task)
    scr = app.main
    await wait_until(lambda: scr.stats_state == "done")
    # the plot takes the statistics in once they are done (a bisection worker of its own)
    await wait_until(lambda: not any(w.group == "bisect" and w.is_running for w in scr.workers))
    await pilot.pause()  # ...and what it posted handled
    await wait_until(lambda: scr.detail.result is not None and scr.detail.index == scr.current)
    await wait_until(scr.op_tree.cursor_in_view)
    await wait_until(
        lambda: scr.detail.tensor_shown is not None and scr.detail.tensor_shown == scr.detail.highlighted_label
    )
    await pilot.pause()


def converge(app):
    async def run_before(pilot):
        await settled(app, pilot)
        await pilot.press("a")
        await wait_until(lambda: app.main.bstate.finished and not app.main.bisect_task)
        await pilot.pause()
        await settled(app, pilot)

    return run_before


@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
def test_converged(snap_compare, demo_root, monkeypatch, size):
    app = demo_app(demo_root, monkeypatch)
    assert snap_compare(app, terminal_size=size, run_before=converge(app))


def test_probe_before_any_mark(snap_compare, demo_root, monkeypatch):
    app = demo_app(demo_root, monkeypatch)

    async def run_before(pilot):
        await settled(app, pilot)

    assert snap_compare(app, terminal_size=(160, 48), run_before=run_before)


@pytest.mark.parametrize("pair", ["renamed_demo_pair", "inf_demo_pair"])
def test_culprit_view_80x24(snap_compare, pair, request, monkeypatch):
    """The culprit view as a user at 80x24 sees it: a culprit the pairing renamed (both names), and one that
    writes Inf on the target (the cosine says n/a, and why)."""
    root = request.getfixturevalue(pair)[0]
    monkeypatch.chdir(root)
    app = make_app("demo/ref", "demo/target")
    assert snap_compare(app, terminal_size=(80, 24), run_before=converge(app))


def test_help_screen(snap_compare, demo_root, monkeypatch):
    app = demo_app(demo_root, monkeypatch)

    async def run_before(pilot):
        await settled(app, pilot)
        await pilot.press("question_mark")
        await pilot.pause()

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)
