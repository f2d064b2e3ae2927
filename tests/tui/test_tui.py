"""The terminal app driven by keys with Textual's Pilot (`App.run_test`), asserting on the app's state: the
culprit of a whole bisection by keys (demo pair, and the real fixtures A vs B_pad / A vs B_mod), search,
filter, navigation, undo, save/resume, export, help, the command palette, disabled keys, error screens."""

from __future__ import annotations

import json
import os
import threading

import numpy as np
import pytest
from helpers.app import (
    SIZE,
    Notifications,
    idle,
    make_app,
    opened,
    plain,
    ready,
    run,
    space_until_converged,
    wait_until,
)
from helpers.common import write_npy

from dumptui.core.compare.verdict import BAD
from dumptui.options import pair as pairing
from dumptui.tui.app import DumpTuiApp
from dumptui.tui.screens.error import OpenErrorScreen
from dumptui.tui.screens.help import HelpScreen
from dumptui.tui.screens.main import MainScreen
from dumptui.tui.screens.paths import ExportScreen, SaveScreen
from dumptui.tui.widgets.optree import OpTree

# the apps of this module share one pool of worker processes (conftest.py), not one spawned per app
pytestmark = pytest.mark.usefixtures("apps_share_one_pool")

# ---------------------------------------------------------------------------------------------- demo pair


@pytest.fixture
def held_bisection(monkeypatch):
    """The bisection order is not built until the test sets the returned event (at most 30 s): what the app
    shows and answers meanwhile can be looked at."""
    import dumptui.core.search.bisect as bisect_pkg

    gate = threading.Event()
    real = bisect_pkg.Bisection

    def slow_bisection(*args, **kw):
        gate.wait(30)
        return real(*args, **kw)

    monkeypatch.setattr(bisect_pkg, "Bisection", slow_bisection)
    yield gate
    gate.set()


def test_the_op_pane_stops_saying_opening_once_the_dumps_are_open(demo_pair, held_bisection):
    """While the bisection order is built (long on a big pair) the cursor rests on a folder: the op pane
    says no op is selected yet, never "opening the dumps…" about dumps already open."""
    gate = held_bisection

    async def go():
        app = make_app(demo_pair.ref, demo_pair.target)
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(
                lambda: app.main is not None and app.main.controller.session is not None, what="the session"
            )
            scr = app.main
            await pilot.pause()
            title = plain(scr.detail.query_one("#op-title"))
            assert scr.detail.index is None and "opening the dumps" not in title and "no op selected" in title
            gate.set()
            await ready(app, pilot)
            assert scr.detail.index is not None  # the probe's op, once the bisection starts

    run(go())


def test_first_paint_before_any_indexing(demo_pair, monkeypatch):
    """The screen paints and answers keys while the dumps are still being indexed."""
    gate = threading.Event()
    real = pairing.open_pair

    def slow_open(options, **how):
        gate.wait(30)
        return real(options, **how)

    monkeypatch.setattr(pairing, "open_pair", slow_open)

    async def go():
        app = make_app(demo_pair.ref, demo_pair.target)
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(lambda: app.main is not None)
            scr = app.main
            await pilot.pause()
            assert scr.controller.session is None
            status = plain(scr.query_one("#status"))
            assert "indexing the dumps" in status
            # keys that need the dumps are disabled, not crashing
            assert scr.check_action("accept", ()) is None and scr.check_action("search", ()) is None
            await pilot.press("space", "n", "slash", "f")
            assert scr.controller.session is None
            await pilot.press("question_mark")
            assert isinstance(app.screen, HelpScreen)
            await pilot.press("escape")
            # the tree is browsable already: the op names come from the execution-order csv
            await wait_until(lambda: scr.preview_model is not None, what="the preview tree")
            assert scr.op_tree.model is scr.preview_model
            first = scr.preview_model.pairs[0].name
            assert first == "Default/stage0-Stage/block0-ResidualBlock/conv-Conv1x1/Conv2D-op0"
            await pilot.press("down")
            gate.set()
            await ready(app, pilot)
            assert scr.controller.session is not None and scr.model is not None
            assert scr.preview_model is None and scr.op_tree.model is scr.model

    run(go())


def test_bisect_demo_by_space_finds_the_planted_culprit(demo_pair):
    async def go():
        async with opened(demo_pair.ref, demo_pair.target) as (app, pilot, scr):
            st = scr.bstate
            assert st.started and st.probe is not None and st.probe_mark in ("good", "bad")
            # the probe is selected in the tree and shown in the centre
            await wait_until(lambda: scr.detail.result is not None and scr.detail.index == st.probe_index)
            assert scr.op_tree.selected_index == st.probe_index
            assert scr.op_tree.tags == {st.probe_index: "probe"} and scr.detail.roots == set()
            await space_until_converged(scr, pilot)
            st = scr.bstate
            assert st.finished and st.culprit is not None
            pairs = scr.controller.session.alignment.pairs
            assert pairs[st.culprit.index].name == demo_pair.planted
            assert st.culprit.why.startswith('its definition differs (attribute format: "NCHW" vs "NHWC")')
            assert "→ output.0 diverged" in st.culprit.proof
            # at convergence the culprit is selected and its inputs vs outputs are on screen
            await wait_until(lambda: scr.detail.result is not None and scr.detail.index == st.culprit.index)
            res = scr.detail.result
            assert all(r.good for r in res.inputs) and res.verdict == "diverged"
            assert scr.op_tree.tags[st.culprit.index] == "culprit" and scr.flat.tags == scr.op_tree.tags
            # the detail knows the roots (a root's hints say "not benign"): the culprit and the other roots
            assert scr.detail.roots == {st.culprit.index, *(o.index for o in st.others)}
            # marks make no sense any more: disabled
            assert scr.check_action("mark", ("good",)) is None and scr.check_action("accept", ()) is None
            assert scr.check_action("undo", ()) is True

    run(go())


def test_run_all_with_a_and_culprit_report(demo_pair):
    async def go():
        async with opened(demo_pair.ref, demo_pair.target) as (app, pilot, scr):
            await pilot.press("a")
            await wait_until(lambda: scr.bstate.finished and not scr.bisect_task, what="run to the end")
            await pilot.pause()
            assert scr.controller.session.alignment.pairs[scr.bstate.culprit.index].name == demo_pair.planted
            panel = plain(scr.query_one("#bisect-status"))
            assert "CULPRIT" in panel and "proof:" in panel and "other roots of divergence" in panel
            assert "search: local-error scan" in panel and "err  " in panel and "gain " in panel

    run(go())


def test_overrule_undo_and_reset(demo_pair):
    async def go():
        async with opened(demo_pair.ref, demo_pair.target) as (app, pilot, scr):
            assert scr.check_action("undo", ()) is None  # nothing marked yet
            first = scr.bstate
            await pilot.press("plus")
            await idle(scr, pilot)
            after_good = scr.bstate
            assert after_good.history[-1].source == "user" and after_good.history[-1].mark == "good"
            assert after_good.history[-1].index == first.probe_index
            assert after_good.candidates != first.candidates and after_good.can_undo
            await pilot.press("minus")
            await idle(scr, pilot)
            assert scr.bstate.history[-1].mark == "bad"
            await pilot.press("u")
            await idle(scr, pilot)
            assert scr.bstate.candidates == after_good.candidates and scr.bstate.probe == after_good.probe
            await pilot.press("u")
            await idle(scr, pilot)
            assert scr.bstate.candidates == first.candidates and scr.bstate.probe == first.probe
            assert len(scr.bstate.history) == len(first.history) and not scr.bstate.can_undo
            await pilot.press("space", "space")
            await idle(scr, pilot)
            marked = scr.bstate
            await pilot.press("r")
            await idle(scr, pilot)
            assert scr.bstate.candidates == first.candidates and scr.bstate.probe == first.probe
            # the reset is undoable: u brings the two accepted marks back (issue 21.4)
            assert scr.bstate.can_undo
            await pilot.press("u")
            await idle(scr, pilot)
            assert scr.bstate.history == marked.history and scr.bstate.candidates == marked.candidates

    run(go())


def test_search_moves_to_matching_ops(demo_pair):
    async def go():
        async with opened(demo_pair.ref, demo_pair.target) as (app, pilot, scr):
            await pilot.press("slash")
            bar = scr.query_one("#search")
            assert bar.display and bar.has_focus
            await pilot.press(*"sigmoid")
            await pilot.pause()
            pairs = scr.controller.session.alignment.pairs
            assert "Sigmoid" in pairs[scr.current].name
            assert scr.op_tree.selected_index == scr.current
            await pilot.press("escape")
            assert not bar.display and scr.op_tree.has_focus
            # enter goes to the match and gives the keys back; n the next match (tests/tui/test_keys_habit.py)
            await pilot.press("slash", *"relu-op0")
            first = scr.current
            await pilot.press("enter")
            assert scr.current == first and scr.op_tree.has_focus
            await pilot.press("n")
            second = scr.current
            assert second != first and "ReLU" in pairs[second].name
            assert scr.search_matches == sum(1 for p in pairs if "relu-op0" in p.name.lower())
            assert scr.query_one("#left").border_subtitle.startswith(f"{scr.search_matches} matches")
            await pilot.press("N")
            assert scr.current == first
            await pilot.press("escape")
            # a query that matches nothing leaves the selection alone
            await pilot.press("slash", *"zzz-no-such-op")
            assert scr.current == first
            assert "no match" in scr.query_one("#left").border_subtitle
            await pilot.press("escape")
            assert scr.query_one("#left").border_subtitle == ""  # the count leaves with the box

    run(go())


def test_only_diverged_filter_and_next_diverged(demo_pair):
    async def go():
        async with opened(demo_pair.ref, demo_pair.target, stats=True) as (app, pilot, scr):
            model = scr.model
            bad = sorted(i for i, v in model.verdicts.items() if v in BAD)
            assert bad and model.diverged == len(bad)
            # folder counts in the tree labels
            default = model.by_path["Default"]
            assert default.diverged == len(bad)
            assert f"{len(bad)}✗" in str(scr.op_tree.folder_label("Default"))
            await pilot.press("t")  # flat list
            assert scr.flat_mode and scr.flat.has_focus
            await pilot.press("f")
            assert scr.only_diverged and scr.flat.rows == bad
            await pilot.press("t")  # tree: only folders that hold a diverged op
            assert not scr.flat_mode
            top = [n.data.path for n in scr.op_tree.root.children]
            assert top == ["Default"]
            await pilot.press("f")
            assert not scr.only_diverged and len(scr.flat.rows) == len(model.pairs)
            # n / N walk the diverged ops in execution order, wrapping
            scr.select_op(0)
            await pilot.press("n")
            assert scr.current == bad[0]
            await pilot.press("n")
            assert scr.current == bad[1]
            await pilot.press("N", "N")
            assert scr.current == bad[-1]
            assert scr.op_tree.selected_index == bad[-1]

    run(go())


def test_save_and_resume_with_session_file(demo_pair, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    path = tmp_path / "sessions" / "s.json"

    async def save():
        async with opened(demo_pair.ref, demo_pair.target, "--cos", "0.99") as (app, pilot, scr):
            await pilot.press("space")
            await idle(scr, pilot)
            await pilot.press("minus")
            await idle(scr, pilot)
            state = scr.bstate
            await pilot.press("S")
            assert isinstance(app.screen, SaveScreen)
            inp = app.screen.query_one("#save-path")
            assert inp.value.startswith(str(tmp_path / "state" / "dumptui" / "session-"))
            # a path inside the dump is refused, the dialog stays open
            inp.value = os.path.join(demo_pair.ref, "s.json")
            await pilot.press("enter")
            assert isinstance(app.screen, SaveScreen)
            assert "inside the dump folder" in plain(app.screen.query_one("#dialog-error"))
            inp.value = str(path)
            await pilot.press("enter")
            await pilot.pause()
            assert isinstance(app.screen, MainScreen) and scr.exports.saved_path == str(path)
            return state

    state = run(save())
    data = json.loads(path.read_text())
    assert data["dumptui_session"] == 1 and data["mode"] == "graph"
    assert data["dumps"] == {"ref": os.path.abspath(demo_pair.ref), "target": os.path.abspath(demo_pair.target)}
    assert data["options"] == {"cos": 0.99}
    assert [s["mark"] for s in data["steps"]][-1] == "bad" and data["steps"][-1]["source"] == "user"
    assert len(data["steps"]) == 2

    async def resume():
        async with opened(demo_pair.ref, demo_pair.target, "--session", path) as (app, pilot, scr):
            st = scr.bstate
            assert (st.candidates, st.probe, st.good, st.bad) == (state.candidates, state.probe, state.good, state.bad)
            assert [h.mark for h in st.history] == [h.mark for h in state.history]
            assert st.can_undo

    run(resume())


def test_export_redump_config_for_the_interval(demo_pair, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "data_dump.json"

    async def go():
        async with opened(demo_pair.ref, demo_pair.target) as (app, pilot, scr):
            await pilot.press("space", "space")
            await idle(scr, pilot)
            st = scr.bstate
            await pilot.press("e")
            assert isinstance(app.screen, ExportScreen)
            dlg = app.screen
            assert dlg.query_one("#export-path").value == str(out)
            dump_dir = dlg.query_one("#export-dump-dir")
            assert os.path.isabs(dump_dir.value)
            # relative MindSpore path refused; inside-the-dump output refused
            dump_dir.value = "relative/dir"
            await pilot.press("enter")
            assert isinstance(app.screen, ExportScreen)
            assert "absolute" in plain(dlg.query_one("#dialog-error"))
            dump_dir.value = str(tmp_path / "redump")
            dlg.query_one("#export-path").value = os.path.join(demo_pair.target, "rank_0", "x.json")
            await pilot.press("enter")
            assert isinstance(app.screen, ExportScreen)
            assert "inside the dump folder" in plain(dlg.query_one("#dialog-error"))
            dlg.query_one("#export-path").value = str(out)
            await pilot.press("enter")
            await pilot.pause()
            assert isinstance(app.screen, MainScreen) and scr.exports.exported_path == str(out)
            order = scr.controller.driver.bi.order
            suspects = sorted(st.candidates)
            return [order[c].name for c in suspects]

    suspects = run(go())
    cfg = json.loads(out.read_text())
    common = cfg["common_dump_settings"]
    assert common["dump_mode"] == 1 and common["path"] == str(tmp_path / "redump")
    assert set(suspects) <= set(common["kernels"])
    assert len(common["kernels"]) == len(set(common["kernels"]))
    assert not os.path.exists(os.path.join(demo_pair.target, "rank_0", "x.json"))


def test_help_lists_every_binding_generated(demo_pair):
    async def go():
        async with opened(demo_pair.ref, demo_pair.target) as (app, pilot, scr):
            await pilot.press("question_mark")
            assert isinstance(app.screen, HelpScreen)
            rows = app.screen.rows
            ids = {r[2] for r in rows}
            for b in list(MainScreen.BINDINGS) + list(DumpTuiApp.BINDINGS) + list(OpTree.BINDINGS):
                assert b.id and b.description, b  # every binding has an id and a description
                assert b.id in ids
            keys = {r[0] for r in rows}
            for k in (
                "space",
                "+",
                "-",
                "g / home",
                "G / end",
                "a",
                "u",
                "r",
                "S",
                "e",
                "/",
                "n",
                "N",
                "f",
                "t",
                "?",
                "q",
                "^c",  # ctrl+c: an interrupt (exit 130)
                "^p",
                "tab",
                "esc",
                "↑ / k",
                "↓ / j",
                "⏎",
            ):
                assert k in keys, k
            for title, section in app.screen.sections:  # a key shared by the dialogs is listed once
                said = [(r[0], r[1]) for r in section]
                assert len(said) == len(set(said)), title
            # availability follows check_action: undo is not available before any mark
            undo = next(r for r in rows if r[2] == "bisect.undo")
            assert undo[3] is False
            await pilot.press("escape")
            assert app.screen is scr

    run(go())


def test_every_command_of_the_action_table_runs_an_action():
    """A typo in the table would be a key that silently does nothing."""
    from dumptui.present import keys
    from dumptui.tui.screens.picker import UnitTable

    owners = {keys.APP: DumpTuiApp, keys.SCREEN: MainScreen, keys.PICKER: UnitTable}  # the picker's: its table
    for a in keys.ACTIONS:
        owner = DumpTuiApp if a.action.startswith("app.") else owners[a.on]
        assert callable(getattr(owner, "action_" + a.name.removeprefix("app."), None)), a.id


def test_command_palette_lists_the_main_actions(demo_pair):
    async def go():
        async with opened(demo_pair.ref, demo_pair.target) as (app, pilot, scr):
            from dumptui.tui.commands import DumpCommands

            provider = DumpCommands(scr)
            titles = [h.text async for h in provider.discover()]
            assert "Bisection: run to the end" in titles and "View: toggle tree / flat execution-order list" in titles
            assert "Bisection: undo the last mark" not in titles  # disabled now: not offered
            hits = [h async for h in provider.search("run to the end")]
            assert hits and hits[0].text == "Bisection: run to the end"
            assert "key a" in hits[0].help
            await pilot.press("ctrl+p")
            await pilot.pause()
            from textual.command import CommandList, CommandPalette

            assert isinstance(app.screen, CommandPalette)
            await pilot.press(*"toggle tree")
            palette = app.screen
            await wait_until(
                lambda: any(
                    "toggle tree" in str(palette.query_one(CommandList).get_option_at_index(i).prompt)
                    for i in range(palette.query_one(CommandList).option_count)
                ),
                what="the palette to offer the command",
            )
            await pilot.pause(0.3)
            await pilot.press("enter")
            await pilot.pause(0.2)
            await wait_until(lambda: app.screen is scr)
            await wait_until(lambda: scr.flat_mode, what="the palette command to run")

    run(go())


def test_open_error_shows_path_and_reason_and_exits_2(tmp_path):
    async def go():
        app = make_app(tmp_path / "missing", tmp_path / "missing2")
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(
                lambda: isinstance(app.screen, OpenErrorScreen) and app.screen.query("#error-reason"),
                what="the error screen",
            )
            text = plain(app.screen.query_one("#error-path")) + plain(app.screen.query_one("#error-reason"))
            assert str(tmp_path / "missing") in text and "no such file or folder" in text
            await pilot.press("q")
            await pilot.pause()
        return app.return_code

    assert run(go()) == 2


def test_bad_session_file_is_reported_not_fatal(demo_pair, tmp_path):
    bad = tmp_path / "s.json"
    bad.write_text("{not json")

    async def go():
        async with opened(demo_pair.ref, demo_pair.target, "--session", bad, message_hook=notifications.hook) as (
            app,
            pilot,
            scr,
        ):
            assert scr.bstate.started and not scr.bstate.can_undo
            assert notifications.saying("session not resumed")

    notifications = Notifications()
    run(go())


def test_names_from_files_are_escaped_and_cleaned(tmp_path):
    """Markup in op names is shown literally; terminal control characters are shown as their escapes."""
    evil = "Default/blk[bold red]X[b]/Mul\x1b[2J-op0"
    for side, v in (("ref", 1.0), ("target", 5.0)):
        write_npy(tmp_path / side / f"{evil}.input.0.npy", np.ones(8, np.float32))
        write_npy(tmp_path / side / f"{evil}.output.0.npy", np.full(8, v, np.float32) * np.arange(8))

    async def go():
        async with opened(tmp_path / "ref", tmp_path / "target", stats=True) as (app, pilot, scr):
            await wait_until(lambda: scr.detail.result is not None)
            assert "blk[bold red]X[b]" in str(scr.op_tree.folder_label("Default/blk[bold red]X[b]"))
            scr.op_tree.reveal(0)
            await pilot.pause()
            label = str(scr.op_tree.op_label(0))
            assert "\x1b" not in label and "Mul\\x1b[2J-op0" in label
            title = plain(scr.query_one("#op-title"))
            assert "\x1b" not in title and "blk[bold red]X[b]" in title
            await pilot.press("t")
            line = scr.flat.render_line(0).text
            assert "\x1b" not in line and "Mul\\x1b[2J" in line

    run(go())


def test_layout_at_80x24_reaches_every_pane_by_keyboard(demo_pair):
    async def go():
        async with opened(demo_pair.ref, demo_pair.target, size=(80, 24)) as (app, pilot, scr):
            seen = []
            for _ in range(8):
                await pilot.press("tab")
                seen.append(app.focused.id if app.focused else None)
            for pane in ("tree", "detail", "tensors", "relations", "bisect"):
                assert pane in seen, (pane, seen)
            for w in (scr.op_tree, scr.detail, scr.panel):
                assert w.region.width > 0 and w.region.height > 2
            # enter on the probe in the tree moves into its tensor table
            scr.op_tree.focus()
            scr.op_tree.reveal(scr.bstate.probe_index)
            await pilot.press("enter")
            assert scr.query_one("#tensors").has_focus

    run(go())


def test_tree_is_lazy_on_a_large_demo(tmp_path):
    from dumptui.core.demo.residual import write_demo

    info = write_demo(str(tmp_path), n_ops=2000, size=16)

    async def go():
        app = make_app(info.ref, info.target)
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(lambda: app.main is not None and app.main.model is not None, what="the tree")
            scr = app.main
            await pilot.pause()
            n_pairs = len(scr.model.pairs)
            assert scr.op_tree.op_nodes_built < 50 < n_pairs  # only what is expanded has nodes
            await wait_until(lambda: scr.bstate is not None and not scr.bisect_task, what="the bisection")
            await pilot.pause()
            assert scr.op_tree.op_nodes_built < 100
            # escape cancels the statistics; the palette command computes them again
            if scr.stats_state == "running":
                await pilot.press("escape")
                await wait_until(lambda: scr.stats_state == "cancelled")
                assert scr.check_action("compute_statistics", ()) is True

    run(go())


# ---------------------------------------------------------------------------------------------- real dumps


@pytest.mark.parametrize(
    "variant, culprit_ref, culprit_target",
    [
        ("B_pad", "Default/conv2-ConvBlock/Conv2D-op0", "Default/conv2-ConvBlock/Conv2D-op0"),
        ("B_mod", "Default/branch-ModBranch/FloorMod-op0", "Default/branch-ModBranch/Mod-op0"),
    ],
)
def test_bisection_by_keys_on_the_fixtures(fixtures, variant, culprit_ref, culprit_target):
    async def go():
        async with opened(fixtures / "A", fixtures / variant, size=(80, 24)) as (app, pilot, scr):
            await space_until_converged(scr, pilot)
            st = scr.bstate
            assert st.finished and st.culprit is not None
            pair = scr.controller.session.alignment.pairs[st.culprit.index]
            assert (pair.ref.name, pair.target.name) == (culprit_ref, culprit_target)
            await wait_until(lambda: scr.detail.result is not None and scr.detail.index == st.culprit.index)
            if variant == "B_mod":
                assert pair.how != "exact name" and "Mod" in " ".join(t for _k, t in st.culprit.hints)

    run(go())


def test_theme_change_recolours_the_marks(demo_pair):
    """Verdict colours come from the theme's variables: switching the theme restyles the tree labels."""

    async def go():
        async with opened(demo_pair.ref, demo_pair.target, stats=True) as (app, pilot, scr):
            before = scr.op_tree.folder_label("Default").spans[0].style
            app.theme = "nord"  # its error colour differs from textual-dark's
            await pilot.pause()
            await pilot.pause()
            after = scr.op_tree.folder_label("Default").spans[0].style
            assert str(before) != str(after)
            assert scr.theme_styles.verdict("diverged").color is not None
            # every pane draws with the screen's new styles (bound, not copied)
            for pane in (scr.op_tree, scr.flat, scr.detail, scr.panel):
                assert pane.theme_styles is scr.theme_styles, pane

    run(go())


def test_a_worker_error_becomes_a_notification(demo_pair, monkeypatch):
    from dumptui.present import relations

    def broken(session, pair, max_hops=6):
        raise RuntimeError("graph walk failed")

    monkeypatch.setattr(relations, "relations_of", broken)

    async def go():
        async with opened(demo_pair.ref, demo_pair.target, message_hook=notifications.hook) as (app, pilot, scr):
            await wait_until(lambda: notifications.saying("graph walk failed"), what="the error notification")
            # what failed, the op it was reading and the reason; no traceback
            shown = scr.controller.session.alignment.pairs[scr.current].label
            assert notifications.saying(f"cannot show the op: {shown}: RuntimeError: graph walk failed")
            assert not notifications.saying("Traceback")
            assert app.is_running and isinstance(app.screen, MainScreen)
            await pilot.press("j")  # still answering keys
            await pilot.pause()

    notifications = Notifications()
    run(go())


def test_a_statistics_failure_says_why_not_cancelled(demo_pair, monkeypatch):
    from dumptui.core.io.errors import DumpError
    from dumptui.present import controller

    def broken(*args, **kwargs):
        raise DumpError("/dumps/target/rank_0/x.npy", "truncated payload")

    monkeypatch.setattr(controller, "compare_batches", broken)  # the statistics worker fails on its first batch

    async def go():
        async with opened(demo_pair.ref, demo_pair.target, message_hook=notifications.hook) as (app, pilot, scr):
            await wait_until(lambda: scr.stats_state == "failed", what="the statistics to fail")
            await pilot.pause()
            assert notifications.saying("the statistics stopped: /dumps/target/rank_0/x.npy: truncated payload")
            status = plain(scr.query_one("#status"))
            assert "cancelled" not in status
            assert "statistics failed: /dumps/target/rank_0/x.npy: truncated payload" in status
            assert scr.check_action("compute_statistics", ()) is True

    notifications = Notifications()
    run(go())


def test_an_unreadable_map_file_is_shown_with_its_path(demo_pair, tmp_path):
    async def go():
        app = make_app(demo_pair.ref, demo_pair.target, "--map", tmp_path / "no-map.csv")
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(
                lambda: isinstance(app.screen, OpenErrorScreen) and app.screen.query("#error-reason"),
                what="the error screen",
            )
            assert plain(app.screen.query_one("#error-path")).endswith(str(tmp_path / "no-map.csv"))
            assert "No such file or directory" in plain(app.screen.query_one("#error-reason"))
            await pilot.press("enter")
            await pilot.pause()
        return app.return_code

    assert run(go()) == 2


def test_enter_on_a_producer_goes_to_it(demo_pair):
    async def go():
        async with opened(demo_pair.ref, demo_pair.target) as (app, pilot, scr):
            await wait_until(lambda: scr.detail.result is not None and scr.detail.index == scr.current)
            producer = next(r for r in scr.detail.relations if r.direction == "producer" and r.index is not None)
            relations = scr.query_one("#relations")
            relations.focus()
            relations.highlighted = next(
                i
                for i in range(relations.option_count)
                if relations.get_option_at_index(i).id == f"op-{producer.index}"
            )
            await pilot.press("enter")
            await pilot.pause()
            assert scr.current == producer.index and scr.op_tree.selected_index == producer.index
            assert scr.op_tree.has_focus

    run(go())


def test_a_burst_of_progress_is_handled_once(demo_pair):
    """Progress messages waiting in the queue coalesce: one status update for the latest numbers."""
    from dumptui.tui.messages import StatisticsProgress

    handled: list[StatisticsProgress] = []

    def hook(message):
        if isinstance(message, StatisticsProgress):
            handled.append(message)

    async def go():
        async with opened(demo_pair.ref, demo_pair.target, stats=True, message_hook=hook) as (app, pilot, scr):
            handled.clear()
            for done in range(1, 51):  # queued together: the screen handles none before the last
                scr.post_message(StatisticsProgress(done, 100, "running"))
            await pilot.pause()
            assert [(m.done, m.total) for m in handled] == [(50, 100)]
            assert "statistics 50%" in plain(scr.query_one("#status"))

    run(go())


def test_remedy_key_writes_the_files_for_the_culprit(tmp_path, monkeypatch):
    """R (once a culprit is found): the remedy of a precision culprit, written into a folder the dialog asks for
    (never inside a dump)."""
    from dumptui.core.demo.quantised import write_quantised_demo

    demo = write_quantised_demo(str(tmp_path / "pair"), "precision")
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "fixes"

    async def go():
        async with opened(demo.ref, demo.target) as (app, pilot, scr):
            await pilot.press("a")
            await idle(scr, pilot)
            await wait_until(lambda: scr.bstate.culprit is not None, what="the culprit")
            await pilot.press("R")
            assert isinstance(app.screen, SaveScreen)
            dlg = app.screen
            await pilot.pause()
            assert dlg.query_one("#dialog").border_title == "remedy"  # not the session dialog's title
            dlg.query_one("#save-path").value = os.path.join(demo.target, "fixes")
            await pilot.press("enter")
            assert isinstance(app.screen, SaveScreen) and "inside the dump" in plain(dlg.query_one("#dialog-error"))
            dlg.query_one("#save-path").value = str(out)
            await pilot.press("enter")
            await wait_until(lambda: scr.exports.remedy_path == str(out), what="the remedy files")

    run(go())
    assert (out / "keep_dtype.cfg").read_text() == demo.culprit[1] + "\n"
    assert "precision" in (out / "REMEDY.txt").read_text()
    assert not os.path.exists(os.path.join(demo.target, "fixes"))


def test_a_cancel_is_not_undone_by_the_cancelled_runs_last_messages(demo_pair):
    """`esc` cancels the statistics; a progress message the cancelled run had queued (running, or done: the
    worker finished its batch meanwhile) arrives after it and must not turn the state back."""
    from dumptui.tui.messages import StatisticsProgress

    async def go():
        async with opened(demo_pair.ref, demo_pair.target, stats=True) as (app, pilot, scr):
            scr.stats_state = "running"  # as while a run is under way (a real one ends too soon on this demo)
            cancelled_run = scr.stats_run
            await pilot.press("escape")
            assert scr.stats_state == "cancelled"
            for state in ("running", "done"):
                scr.post_message(StatisticsProgress(10, 10, state, cancelled_run))
                await pilot.pause()
                assert scr.stats_state == "cancelled"
            assert scr.check_action("compute_statistics", ()) is True

    run(go())


def test_the_search_shows_its_count_while_a_noisy_pair_is_judged(demo_pair):
    """A noisy pair's bisection starts by judging every op: the panel counts it (compares, then replays), up
    to the total, and the words go once the probe is ready."""
    from dumptui.tui.messages import SearchProgress

    counts: list[tuple[int, int]] = []
    shown: list[str] = []

    def hook(message) -> None:
        if isinstance(message, SearchProgress):
            counts.append((message.done, message.total))

    async def go():
        async with opened(demo_pair.ref, demo_pair.target, message_hook=hook) as (app, pilot, scr):
            shown.append(scr.panel.busy)
            assert scr.bstate is not None and scr.bstate.started

    run(go())
    assert counts, "no count while every op was judged"
    done, total = counts[-1]
    assert done == total > 0 and all(d <= t for d, t in counts)
    assert shown == [""]  # idle once the probe is ready: no stale "judging every op"


def test_search_words_say_the_count():
    from dumptui.present.progress import search_words

    assert search_words("start", 120, 347) == "checking inputs and the graph output: judging every op, 120 of 347 (35%)"


@pytest.mark.parametrize("profile", ["msprobe", "full"])
def test_x_writes_the_same_table_as_compare_csv(demo_pair, tmp_path, profile):
    """`x` asks for a path and a profile and writes what `compare --csv FILE --csv-profile P` writes."""
    import csv

    from helpers.common import run_cli

    from dumptui.tui.screens.paths import CsvExportScreen

    ours = tmp_path / f"app-{profile}.csv"

    async def go():
        async with opened(demo_pair.ref, demo_pair.target, stats=True) as (app, pilot, scr):
            await pilot.press("x")
            await wait_until(lambda: isinstance(app.screen, CsvExportScreen), what="the CSV dialog")
            dialog = app.screen
            assert dialog.query_one("#dialog").border_title == "export CSV"
            dialog.query_one("#csv-profile").value = "both"
            await pilot.press("enter")
            await pilot.pause()
            assert "profile 'both': one of msprobe, full" in plain(dialog.query_one("#dialog-error"))
            dialog.query_one("#csv-path").value = str(ours)
            dialog.query_one("#csv-profile").value = profile
            await pilot.press("enter")
            await wait_until(lambda: scr.exports.csv_path == str(ours), what="the CSV written")

    run(go())
    theirs = tmp_path / f"cli-{profile}.csv"
    code, _out, err = run_cli(  # with --kl: the app computes the KL divergence too
        "compare", demo_pair.ref, demo_pair.target, "--kl", "--csv", theirs, "--csv-profile", profile, "-q"
    )
    assert code == 1, err
    a = list(csv.reader(ours.open(encoding="utf-8")))
    b = list(csv.reader(theirs.open(encoding="utf-8")))
    assert a[0] == b[0] and len(a) == len(b) > 10
    assert sorted(map(tuple, a[1:])) == sorted(map(tuple, b[1:]))


def test_a_bisection_key_before_the_bisection_is_ready_is_answered(demo_pair, held_bisection):
    """While the bisection order is still built, space and + are not dropped unsaid: "not ready: ..."."""
    gate = held_bisection

    async def go():
        app = make_app(demo_pair.ref, demo_pair.target)
        async with app.run_test(size=SIZE, message_hook=notifications.hook) as pilot:
            # the tree comes (SessionReady) a message before the app says it builds the order: wait for both
            await wait_until(
                lambda: (
                    app.main is not None
                    and app.main.model is not None
                    and "bisection order" in (app.main.view.open_stage or "")
                ),
                what="the tree and the order's building",
            )
            assert app.main.controller.driver is None
            await pilot.press("space")
            await pilot.press("plus")
            await pilot.pause()
            gate.set()
            await wait_until(lambda: app.main.bstate is not None, what="the bisection")

    notifications = Notifications()
    try:
        run(go())
    finally:
        gate.set()
    said = [t for t in notifications.texts if t.startswith("not ready: ")]
    assert len(said) == 2 and "bisection order" in said[0], notifications.texts


def test_a_session_saved_to_a_fifo_is_refused_and_the_app_answers(demo_pair, tmp_path):
    """`S` to a FIFO nobody reads: refused at once with the path (the failure is the state), never a UI thread
    waiting for a reader; the app takes keys after it (issue 23.2)."""
    fifo = tmp_path / "session.fifo"
    os.mkfifo(fifo)

    async def go():
        async with opened(demo_pair.ref, demo_pair.target) as (app, pilot, scr):
            await pilot.press("S")
            app.screen.query_one("#save-path").value = str(fifo)
            await pilot.press("enter")
            await wait_until(lambda: scr.failure is not None, what="the refusal")
            assert scr.failure[0] == "save" and str(fifo) in scr.failure[1] and "FIFO" in scr.failure[1]
            assert scr.exports.saved_path is None
            await pilot.press("question_mark")  # still answering keys
            await wait_until(lambda: isinstance(app.screen, HelpScreen), what="the help")

    run(go())
