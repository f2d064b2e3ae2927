"""Keys as less, vim, lazygit and k9s users' hands expect them (issue 35, item 1): `g` / `G` and home / end go
to the top and bottom of the focused list (and of the help), the probe is marked good / bad with `+` / `-`,
`/` + enter goes to the match and gives the keys back to the list, `n` / `N` then walk the matches, escape
ends the search (and `n` / `N` walk the diverged ops again). Driven by Pilot on the demo pair."""

from __future__ import annotations

import pytest
from helpers.app import idle, opened, run, wait_until

from dumptui.core.compare.verdict import BAD
from dumptui.present.search import WALK_HINT, find_op
from dumptui.tui.screens.help import HelpScreen
from dumptui.tui.widgets.footer import KeysFooter

# the apps of this module share one pool of worker processes (conftest.py), not one spawned per app
pytestmark = pytest.mark.usefixtures("apps_share_one_pool")


def footer_keys(app) -> dict[str, str]:
    """The footer's keys on screen now (not cut at the right edge): key -> label."""
    width = app.size.width
    keys = app.screen.query(KeysFooter).first().query("FooterKey")
    return {k.key: k.description for k in keys if k.region.width and k.region.right <= width}


async def g_G_home_end_go_to_the_ends_of_each_focused_list(app, pilot, scr):
    tree = scr.op_tree
    tree.focus()
    await pilot.press("G")
    assert tree.last_line > 0 and tree.cursor_line == tree.last_line
    await pilot.press("g")
    assert tree.cursor_line == 0
    await pilot.press("end")
    assert tree.cursor_line == tree.last_line
    await pilot.press("home")
    assert tree.cursor_line == 0
    # the flat list: the last op and the first, and the op pane follows
    await pilot.press("t")
    assert scr.flat.has_focus
    last = len(scr.flat.rows) - 1
    await pilot.press("G")
    await pilot.pause()
    assert scr.flat.cursor == last and scr.current == scr.flat.rows[last]
    await pilot.press("g")
    await pilot.pause()
    assert scr.flat.cursor == 0 and scr.current == scr.flat.rows[0]
    await pilot.press("end")
    assert scr.flat.cursor == last
    await pilot.press("home")
    assert scr.flat.cursor == 0
    # the tensor table of an op with several tensors
    several = next(p.index for p in scr.model.pairs if p.ref is not None and len(list(p.ref.tensors())) >= 3)
    scr.select_op(several)
    await wait_until(lambda: scr.detail.result is not None and scr.detail.index == several, what="the op")
    await pilot.pause()
    tensors = scr.query_one("#tensors")
    tensors.focus()
    assert tensors.row_count >= 3
    await pilot.press("g")
    assert tensors.cursor_row == 0
    await pilot.press("G")
    assert tensors.cursor_row == tensors.row_count - 1
    await pilot.press("home")
    assert tensors.cursor_row == 0
    await pilot.press("end")
    assert tensors.cursor_row == tensors.row_count - 1
    # the producers / consumers
    relations = scr.query_one("#relations")
    relations.focus()
    assert relations.option_count >= 2
    await pilot.press("G")
    assert relations.highlighted == relations.option_count - 1
    await pilot.press("g")
    assert relations.highlighted == 0


async def g_G_home_end_in_the_help(app, pilot, scr):
    await pilot.press("question_mark")
    await wait_until(lambda: isinstance(app.screen, HelpScreen), what="the help")
    await pilot.pause()
    body = app.screen.query_one("#help-body")
    assert body.max_scroll_y > 0  # at 80x24 the help is longer than the screen
    await pilot.press("G")
    await wait_until(lambda: body.scroll_y == body.max_scroll_y, what="the help's end")
    await pilot.press("g")
    await wait_until(lambda: body.scroll_y == 0, what="the help's top")
    await pilot.press("end")
    await wait_until(lambda: body.scroll_y == body.max_scroll_y, what="the help's end")
    await pilot.press("home")
    await wait_until(lambda: body.scroll_y == 0, what="the help's top")
    # the help lists the keys from the table: g / home, G / end, + / -
    keys = {r[0]: r[1] for r in app.screen.rows}
    assert "g / home" in keys and "G / end" in keys
    assert keys["+"].startswith("Mark the probe good") and keys["-"].startswith("Mark the probe bad")


async def plus_and_minus_mark_the_probe_and_g_no_longer_does(app, pilot, scr):
    scr.op_tree.focus()
    before = scr.bstate
    assert {"plus": "Good", "minus": "Bad"}.items() <= footer_keys(app).items()
    await pilot.press("g")  # the top of the tree, never a mark
    await idle(scr, pilot)
    assert scr.bstate.history == before.history and scr.op_tree.cursor_line == 0
    await pilot.press("plus")
    await idle(scr, pilot)
    good = scr.bstate.history[-1]
    assert (good.source, good.mark, good.index) == ("user", "good", before.probe_index)
    probe = scr.bstate.probe_index
    await pilot.press("minus")
    await idle(scr, pilot)
    bad = scr.bstate.history[-1]
    assert (bad.source, bad.mark, bad.index) == ("user", "bad", probe)
    assert len(scr.bstate.history) == len(before.history) + 2


async def search_enter_leaves_the_box_n_N_walk_the_matches_escape_ends_it(app, pilot, scr):
    pairs, rows = scr.controller.pairs, scr.model.rows()
    query = "relu-op0"
    matches = [i for i in rows if query in pairs[i].name.lower()]
    assert len(matches) >= 3
    scr.select_op(0)
    await pilot.pause()
    await pilot.press("slash", *query)
    bar = scr.query_one("#search")
    assert bar.has_focus and scr.current == matches[0]
    await pilot.press("enter")
    await pilot.pause()
    # enter: at the match, the list has the keys, the query stays on show with what n / N do now
    assert scr.current == matches[0] and scr.op_tree.has_focus and not bar.has_focus
    assert bar.display and bar.value == query
    assert scr.query_one("#left").border_subtitle == f"{len(matches)} matches · {WALK_HINT}"
    shown = footer_keys(app)
    assert shown.get("n") == "Next match" and shown.get("N") == "Prev match"
    assert shown.get("escape") == "End search"
    # n / N walk the matches (not the diverged ops), wrapping, never typing into the box
    await pilot.press("n")
    assert scr.current == matches[1] and bar.value == query
    await pilot.press("n")
    assert scr.current == matches[2]
    await pilot.press("N", "N", "N")
    assert scr.current == matches[-1]
    assert scr.current == find_op(pairs, rows, query, matches[0], forward=False)
    # escape ends the search: the box goes, n / N are the next diverged op again
    await pilot.press("escape")
    await pilot.pause()
    assert not bar.display and bar.value == "" and scr.search_query == ""
    assert scr.query_one("#left").border_subtitle == ""
    assert "Next match" not in footer_keys(app).values()
    bad = sorted(i for i, v in scr.model.verdicts.items() if v in BAD)
    scr.select_op(0)
    await pilot.pause()
    await pilot.press("n")
    assert scr.current == bad[0]
    # escape inside the box ends the search too
    await pilot.press("slash", *query)
    assert scr.search_query == query
    await pilot.press("escape")
    await pilot.pause()
    assert not bar.display and scr.search_query == "" and scr.op_tree.has_focus
    # a query with no match: enter leaves the box, n says so and stays
    at = scr.current
    await pilot.press("slash", *"zzz-no-such-op", "enter")
    await pilot.pause()
    assert scr.op_tree.has_focus and "no match" in scr.query_one("#left").border_subtitle
    await pilot.press("n")
    assert scr.current == at


async def at_80_columns_the_footer_says_what_n_N_do_and_typing_is_typing(app, pilot, scr):
    """The search's keys come right after q and ? (never cut at 80 columns); while the box has the keys,
    + and - are letters of the query, not marks, and the footer does not offer them."""

    marks = len(scr.bstate.history)
    await pilot.press("slash", "r", "e", "l", "plus", "minus")
    await idle(scr, pilot)
    bar = scr.query_one("#search")
    assert bar.value == "rel+-" and len(scr.bstate.history) == marks
    typing = footer_keys(app)
    assert "plus" not in typing and "minus" not in typing and "q" not in typing
    assert {"enter", "escape", "up", "down"} <= typing.keys(), typing
    for _ in range(2):
        await pilot.press("backspace")
    await pilot.press("enter")
    await pilot.pause()
    walking = list(footer_keys(app).items())
    assert walking[:5] == [
        ("q", "Quit"),
        ("question_mark", "Help"),
        ("n", "Next match"),
        ("N", "Prev match"),
        ("escape", "End search"),
    ], walking
    await pilot.press("escape")
    await pilot.pause()
    assert [k for k, _ in footer_keys(app).items()][:5] == ["q", "question_mark", "space", "plus", "minus"]


async def g_G_home_end_in_the_op_pane_and_the_bisection_panel(app, pilot, scr):
    """The panes that scroll rather than hold a cursor: g / home their top, G / end their bottom."""

    for _ in range(3):  # a history longer than the panel
        await pilot.press("space")
        await idle(scr, pilot)
    await wait_until(lambda: scr.detail.result is not None and scr.detail.index == scr.current, what="the op")
    await pilot.pause()
    for pane in (scr.detail, scr.panel):
        pane.focus()
        await pilot.pause()
        assert pane.max_scroll_y > 0, pane.id
        for bottom, top in (("G", "g"), ("end", "home")):
            await pilot.press(bottom)
            await wait_until(lambda p=pane: p.scroll_y == p.max_scroll_y, what=f"{pane.id}'s {bottom}")
            await pilot.press(top)
            await wait_until(lambda p=pane: p.scroll_y == 0, what=f"{pane.id}'s {top}")


# Two apps for the module, one per terminal size, each taking the scenarios above in turn (an app's opening is
# most of a scenario's time). The order is chosen so that each finds the state it starts from: a search
# ended, the help closed, the bisection's marks only where a scenario counts its own.


async def _search_ended(scr, pilot) -> None:
    await pilot.press("escape")
    await wait_until(lambda: scr.search_query == "" and not scr.query_one("#search").display, what="no search")


async def _help_closed(app, pilot) -> None:
    await pilot.press("escape")
    await wait_until(lambda: not isinstance(app.screen, HelpScreen), what="the help closed")
    await pilot.pause()


def test_keys_at_100_columns_search_marks_and_the_ends_of_each_list(demo_pair):
    async def go():
        async with opened(demo_pair.ref, demo_pair.target, stats=True) as (app, pilot, scr):
            await search_enter_leaves_the_box_n_N_walk_the_matches_escape_ends_it(app, pilot, scr)
            await _search_ended(scr, pilot)
            await plus_and_minus_mark_the_probe_and_g_no_longer_does(app, pilot, scr)
            await g_G_home_end_go_to_the_ends_of_each_focused_list(app, pilot, scr)

    run(go())


def test_keys_at_80_columns_the_footer_the_help_and_the_panes(demo_pair):
    async def go():
        async with opened(demo_pair.ref, demo_pair.target, size=(80, 24)) as (app, pilot, scr):
            await at_80_columns_the_footer_says_what_n_N_do_and_typing_is_typing(app, pilot, scr)
            await g_G_home_end_in_the_help(app, pilot, scr)
            await _help_closed(app, pilot)
            await g_G_home_end_in_the_op_pane_and_the_bisection_panel(app, pilot, scr)

    run(go())
