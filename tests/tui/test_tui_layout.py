"""The app at the sizes people live in (80x24 over SSH, 60x18 in a split), asserted through public state: the
culprit's both names, its sentence and its hint above the fold, no table row wrapping, the footer keeping
`q` and `?`; and the habits: copy, jumps, zoom, search by type, the autosaved bisection offered back, the
theme remembered, a filter that empties a list saying so."""

from __future__ import annotations

import json
import os

import pytest
from helpers.app import idle, make_app, opened, plain, run, wait_until

from dumptui.present import autosave as saved
from dumptui.report.names import is_shown_from
from dumptui.tui.screens.copy import CopyScreen
from dumptui.tui.screens.resume import ResumeScreen
from dumptui.tui.widgets.footer import KeysFooter
from dumptui.tui.widgets.opdetail import TensorTable


def unwrapped(lines: list[str]) -> str:
    """The panel's visible lines as running text (continuation lines start with spaces)."""
    return " ".join(line.strip() for line in lines)


def shows_elided(word: str, name: str) -> bool:
    """`word` is `name` cut in the middle by the one rule of names, its own (last) component whole."""
    return "…" in word and is_shown_from(word, name) and word.endswith(name.rsplit("/", 1)[-1])


async def converge(scr, pilot) -> None:
    await pilot.press("a")
    await wait_until(lambda: scr.bstate.finished and not scr.bisect_task, what="the bisection to converge")
    await wait_until(lambda: scr.detail.result is not None and scr.detail.index == scr.bstate.culprit.index)
    await pilot.pause()


def assert_culprit_above_the_fold(scr, ref_name: str, target_name: str) -> None:
    c = scr.bstate.culprit
    visible = scr.panel.visible_lines()
    text = unwrapped(visible)
    assert scr.panel.scroll_y == 0
    assert visible[0].startswith(f"CULPRIT #{c.index + 1} ")
    for name in (ref_name, target_name):
        assert name in text or any(shows_elided(word, name) for word in text.split()), (name, visible)
    assert f"why: {c.why}" in text, visible
    if c.hints:
        kind, hint = c.hints[0]
        assert f"hint ({kind}): {hint}" in text, visible


async def assert_list_cursor_in_view(scr) -> None:
    """The list's cursor is on the culprit and in sight (after the layout of the folders just expanded)."""
    tree = scr.op_tree
    await wait_until(lambda: tree.selected_index == scr.bstate.culprit.index, 10, "the cursor on the culprit")
    await wait_until(tree.cursor_in_view, 5, f"line {tree.cursor_line} in view")


def assert_no_row_wraps(scr) -> None:
    table = scr.query_one(TensorTable)
    assert table.virtual_size.width <= table.scrollable_content_region.width  # every column fits: no cut
    for row in scr.detail.stats_rows:  # the statistics table of the tensor shown
        assert len(row) <= scr.detail.text_width, row
    for line in scr.panel.lines:
        assert sum(len(t) for t, _r in line) <= scr.panel.scrollable_content_region.width


def assert_footer_keeps_quit_and_help(app) -> None:
    keys = {k.key: k for k in app.screen.query(KeysFooter).first().query("FooterKey")}
    for key in ("q", "question_mark"):
        region = keys[key].region
        assert region.width > 0 and region.right <= app.size.width, (key, region)


@pytest.mark.parametrize("size", [(80, 24), (60, 18)])
def test_renamed_culprit_fits_at_small_sizes(renamed_demo_pair, size):
    root, ref_name, target_name = renamed_demo_pair

    async def go():
        async with opened(root / "demo" / "ref", root / "demo" / "target", size=size, stats=True) as (app, pilot, scr):
            await converge(scr, pilot)
            c = scr.bstate.culprit
            assert (c.ref_name, c.target_name) == (ref_name, target_name) and c.renamed
            assert_culprit_above_the_fold(scr, ref_name, target_name)
            await assert_list_cursor_in_view(scr)
            await wait_until(lambda: scr.detail.tensor_shown is not None, what="the culprit's tensor detail")
            assert_no_row_wraps(scr)
            assert_footer_keeps_quit_and_help(app)
            # the detail's title names both sides too, each elided in the middle, never wrapped
            title = plain(scr.query_one("#op-title")).split("\n")
            assert title[1].startswith("ref ") and title[2].startswith("target ")
            assert title[2].endswith("AddV2-op0") and all(len(t) <= scr.detail.text_width for t in title[1:])

    run(go())


@pytest.mark.parametrize("size", [(80, 24), (60, 18)])
def test_fixture_mod_culprit_fits_at_small_sizes(fixtures, size):
    ref_name, target_name = "Default/branch-ModBranch/FloorMod-op0", "Default/branch-ModBranch/Mod-op0"

    async def go():
        async with opened(fixtures / "A", fixtures / "B_mod", size=size, stats=True) as (app, pilot, scr):
            await converge(scr, pilot)
            assert scr.bstate.culprit.hints[0][0] == "known cause"  # ops.Mod on the 310: first
            assert_culprit_above_the_fold(scr, ref_name, target_name)
            # the op's own pane agrees: a discontinuous culprit is "not benign", never "benign input noise"
            info = plain(scr.query_one("#op-info"))
            assert "not benign" in info and "tiny benign input noise" not in info, info
            await assert_list_cursor_in_view(scr)
            await wait_until(lambda: scr.detail.tensor_shown is not None, what="the culprit's tensor detail")
            assert_no_row_wraps(scr)
            assert_footer_keeps_quit_and_help(app)

    run(go())


def test_inf_culprit_says_why_cosine_means_nothing(inf_demo_pair):
    root, planted = inf_demo_pair

    async def go():
        async with opened(root / "demo" / "ref", root / "demo" / "target", size=(80, 24), stats=True) as (
            app,
            pilot,
            scr,
        ):
            await converge(scr, pilot)
            c = scr.bstate.culprit
            assert c.ref_name == planted and "NaN/Inf differ at 216 output positions" in c.why
            assert "output.0 diverged (216 Inf on target)" in c.proof
            table = scr.query_one(TensorTable)
            row = table.get_row("output.0")
            assert "n/a: 216 Inf on target" in [str(cell) for cell in row]
            assert_culprit_above_the_fold(scr, planted, planted)

    run(go())


def test_jumps_zoom_copy_and_search_by_type(demo_pair):
    async def go():
        async with opened(demo_pair.ref, demo_pair.target, size=(80, 24)) as (app, pilot, scr):
            probe = scr.bstate.probe_index
            await pilot.press("j", "j")
            await pilot.pause()
            await pilot.press("p")
            await pilot.pause()
            assert scr.current == probe
            await converge(scr, pilot)
            await pilot.press("home")
            scr.select_op(0)
            await pilot.press("c")
            await pilot.pause()
            assert scr.current == scr.bstate.culprit.index
            await pilot.press("o")  # the only root: stays, and says so
            await pilot.pause()
            assert scr.current == scr.bstate.culprit.index
            # zoom: the focused pane (the op list) gets the whole screen, z again gives the others back
            scr.op_tree.focus()
            await pilot.press("z")
            await pilot.pause()
            assert scr.zoomed_pane() == "left" and not scr.panel.display and not scr.detail.display
            assert scr.query_one("#left").outer_size.width == 80
            await pilot.press("z")
            await pilot.pause()
            assert scr.zoomed_pane() is None and scr.panel.display and scr.detail.display
            # copy: the op's name goes to the clipboard (OSC 52 in a terminal)
            await pilot.press("y")
            await wait_until(lambda: isinstance(app.screen, CopyScreen))
            assert [c.label for c in app.screen.choices][0] == "op name"
            await pilot.press("enter")
            await pilot.pause()
            assert app.clipboard == scr.controller.session.alignment.pairs[scr.current].name
            # search by type: the next Conv2D, and nothing else
            await pilot.press("slash")
            await pilot.press(*"type:conv2d")
            await pilot.pause()
            assert scr.controller.session.alignment.pairs[scr.current].op_type == "Conv2D"
            # while typing, q and ? are letters of the query: the footer says how to move and leave instead
            footer = {k.key for k in app.screen.query(KeysFooter).first().query("FooterKey") if k.region.width}
            assert {"escape", "down", "up"} <= footer, footer

    run(go())


def test_the_bisection_is_autosaved_and_offered_back(demo_pair):
    async def first():
        async with opened(demo_pair.ref, demo_pair.target) as (app, pilot, scr):
            await pilot.press("space")
            await idle(scr, pilot)
            await pilot.press("minus")
            await idle(scr, pilot)
            steps = len([h for h in scr.bstate.history if h.source in ("user", "computed")])
            await pilot.press("q")  # no confirmation needed: nothing is lost
        return steps

    steps = run(first())
    path = saved.autosave_path(
        str(demo_pair.ref), str(demo_pair.target), vars(make_app(demo_pair.ref, demo_pair.target).options)
    )
    with open(path) as fh:
        data = json.load(fh)
    assert len(data["steps"]) == steps == 2 and data["dumps"]["ref"] == os.path.abspath(demo_pair.ref)

    async def second(resume: bool):
        app = make_app(demo_pair.ref, demo_pair.target)
        async with app.run_test(size=(100, 32)) as pilot:
            await wait_until(lambda: isinstance(app.screen, ResumeScreen), what="the resume question")
            assert "2 marks" in app.screen.question
            await pilot.press("enter" if resume else "n")
            await wait_until(lambda: app.main.bstate is not None and not app.main.bisect_task)
            return len([h for h in app.main.bstate.history if h.source in ("user", "computed")])

    assert run(second(True)) == 2
    assert run(second(False)) == 0 and not os.path.exists(path)  # started over: the save is forgotten


def test_theme_is_remembered(demo_pair):
    async def go(theme: str | None):
        app = make_app(demo_pair.ref, demo_pair.target)
        async with app.run_test(size=(100, 32)) as pilot:
            await pilot.pause()
            if theme:
                app.theme = theme
                await pilot.pause()
            return app.theme

    assert run(go("gruvbox")) == "gruvbox"
    assert saved.read_settings() == {"theme": "gruvbox"}
    assert run(go(None)) == "gruvbox"


def test_a_filter_that_empties_the_list_says_so(demo_pair):
    async def go():
        async with opened(demo_pair.ref, demo_pair.ref, stats=True) as (app, pilot, scr):  # a dump against itself
            assert scr.bstate.finished and scr.bstate.culprit is None
            # not "opening the dumps…" forever: the first op is shown
            await wait_until(lambda: scr.detail.result is not None)
            assert "opening" not in plain(scr.query_one("#op-title"))
            await pilot.press("f")
            await pilot.pause()
            assert [str(n.label) for n in scr.op_tree.root.children] == ["no diverged op: every compared op agrees"]
            await pilot.press("t")
            await pilot.pause()
            assert scr.flat.empty_text == "no diverged op: every compared op agrees"
            status = plain(scr.query_one("#status"))
            assert "│  │" not in status and not status.rstrip().endswith("│")
            # every op compared by the statistics: the plot of the clean pair has no op "not read" left
            await wait_until(lambda: len(scr.bstate.points) == scr.bstate.n, what="the compared ops in the plot")
            assert not any("not read (" in "".join(t for t, _r in line) for line in scr.panel.lines)

    run(go())


def test_statistics_run_in_worker_processes_that_q_ends(demo_pair):
    """The numbers of the whole tree come from the screen's worker processes (the headers are read there
    too; each layout is kept on its tensor); `q` ends those processes at once."""
    from helpers.procs import alive, wait_gone

    async def go():
        async with opened(demo_pair.ref, demo_pair.target, size=(80, 24), stats=True) as (app, pilot, scr):
            pids = list(scr.controller.pool._ex._processes)
            assert pids and all(alive(pid) for pid in pids)
            tensors = [
                t
                for p in scr.controller.session.alignment.pairs
                for op in (p.ref, p.target)
                if op
                for t in op.tensors()
            ]
            assert tensors and all(t.deferred_layout() is None for t in tensors)
            assert sum(1 for r in scr.controller.session.results() if r.stats is not None) > 100
            await pilot.press("q")
            await wait_until(lambda: not app.is_running, what="the app to quit")
        return pids

    pids = run(go())
    assert not wait_gone(pids, 20)
