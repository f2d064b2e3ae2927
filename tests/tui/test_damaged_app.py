"""The app on damaged dumps: a failed load or worker is an error state with the reason and the path, the app
stays usable and can always be quit; strings from files reach the screen as data."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import numpy as np
import pytest
from helpers.app import make_app, wait_until
from helpers.damage import graph_output, same_pair, tensor_file

from dumptui.present.progress import FAILED
from dumptui.tui.screens.error import OpenErrorScreen

# the apps of this module share one pool of worker processes (conftest.py), not one spawned per app
pytestmark = pytest.mark.usefixtures("apps_share_one_pool")

SIZE = (110, 34)


def status(scr) -> str:
    return scr.query_one("#status").content.plain


def panel(scr) -> str:
    return scr.panel.query_one("#bisect-status").content.plain


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_dump_with_a_fifo_and_a_stdin_link_opens_and_quits(tmp_path):
    ref, target = same_pair(tmp_path)
    fifo = tensor_file(target, "block0-ResidualBlock_Add-op0")
    fifo.unlink()
    os.mkfifo(fifo)
    stdin = tensor_file(target, "block1-ResidualBlock_Add-op0")
    stdin.unlink()
    stdin.symlink_to("/dev/stdin")
    notes: list[str] = []

    def hook(message) -> None:
        from textual.notifications import Notify

        if isinstance(message, Notify):
            notes.append(str(message.notification.message))

    async def go():
        app = make_app(ref, target)
        async with app.run_test(size=SIZE, message_hook=hook) as pilot:
            await wait_until(lambda: app.main is not None and app.main.bstate is not None, what="the bisection")
            scr = app.main
            await wait_until(lambda: any("unreadable" in n for n in notes), what="the unreadable files")
            shown = next(n for n in notes if "unreadable" in n)
            assert f"{fifo}: not a regular file: a FIFO (named pipe), not read" in shown
            await pilot.press("q")
            await wait_until(lambda: not app.is_running, timeout=10, what="the app to quit")
            assert scr is not None

    asyncio.run(asyncio.wait_for(go(), 120))


def test_a_failed_worker_is_an_error_state_and_the_app_stays_usable(tmp_path, monkeypatch):
    ref, target = same_pair(tmp_path)
    from dumptui.present import controller

    def broken(*_args, **_kwargs):
        raise OSError(5, "Input/output error", str(graph_output(target)))

    monkeypatch.setattr(controller, "evaluate_all", broken)

    async def go():
        app = make_app(ref, target)
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(lambda: app.main is not None and app.main.bstate is not None, what="the bisection")
            scr = app.main
            await wait_until(lambda: scr.stats_state == FAILED, what="the statistics to fail")
            await pilot.pause()
            line = status(scr)
            assert line.startswith("dumptui statistics failed: ") and "cancelled" not in line
            assert scr.failure == ("stats", f"the statistics stopped: {graph_output(target)}: Input/output error")
            assert line.endswith("Input/output error")  # the path is elided from the left to fit
            await pilot.press("t")  # still usable
            await pilot.pause()
            assert scr.flat_mode

    asyncio.run(asyncio.wait_for(go(), 120))


def test_undecided_is_shown_not_no_divergence(tmp_path):
    ref, target = same_pair(tmp_path)
    out = graph_output(target)
    out.write_bytes(out.read_bytes()[:100])

    async def go():
        app = make_app(ref, target)
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(lambda: app.main is not None and app.main.bstate is not None, what="the bisection")
            scr = app.main
            await wait_until(lambda: scr.bstate.finished, what="the bisection to finish")
            await pilot.pause()
            text = panel(scr)
            assert "Undecided" in text and "No divergence" not in text
            assert "Sigmoid" in text and "cannot be read" in text

    asyncio.run(asyncio.wait_for(go(), 120))


def test_nothing_to_compare_is_the_open_error_screen(tmp_path):
    ref, _target = same_pair(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    np.save(other / "x.npy", np.ones(4, np.float32))

    async def go():
        app = make_app(ref, other)
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(lambda: isinstance(app.screen, OpenErrorScreen), what="the error screen")
            screen = app.screen
            assert "nothing to compare" in screen.reason and str(other) in screen.path
            await pilot.press("q")
        assert app.return_code == 2

    asyncio.run(asyncio.wait_for(go(), 120))


def test_a_newline_in_the_culprits_name_forges_no_line_in_the_panel(tmp_path):
    forged = "evil\nNo divergence: all good"
    for side, scale in (("ref", 1.0), ("target", 3.0)):
        folder = tmp_path / side
        folder.mkdir()
        np.save(folder / f"{forged}.input.0.npy", np.ones(8, np.float32))
        np.save(folder / f"{forged}.output.0.npy", np.arange(8, dtype=np.float32) * scale)

    async def go():
        app = make_app(tmp_path / "ref", tmp_path / "target")
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(lambda: app.main is not None and app.main.bstate is not None, what="the bisection")
            scr = app.main
            await pilot.press("a")
            await wait_until(lambda: scr.bstate.culprit is not None, what="the culprit")
            await pilot.pause()
            text = panel(scr)
            assert "CULPRIT" in text and "evil\\x0aNo divergence" in text
            assert not any(line.startswith("No divergence") for line in text.splitlines())

    asyncio.run(asyncio.wait_for(go(), 120))


def test_markup_in_a_path_reaches_the_error_screen_as_text(tmp_path):
    missing = Path(tmp_path) / "[bold]no[/bold]\x1b[2J"

    async def go():
        app = make_app(missing, missing)
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(
                lambda: isinstance(app.screen, OpenErrorScreen) and app.screen.query("#error-path"),
                what="the error screen, composed",
            )
            path = app.screen.query_one("#error-path").content.plain
            assert "[bold]no[/bold]\\x1b[2J" in path and "\x1b" not in path
            await pilot.press("q")

    asyncio.run(asyncio.wait_for(go(), 120))
