"""Every name the app shows at 80x24 is a real one, or a real one cut in the middle with `…` (report/names.py):
in the tree, the flat list, the op pane (its title, both names of a rename, its producers and consumers) and the
bisection pane (the culprit, other roots, the history), on generated pairs with long scopes: MindSpore (plain
and renamed) and msprobe (API calls whose names differ only in their API)."""

from __future__ import annotations

import pytest
from helpers.app import opened, plain, run, wait_until
from helpers.names import known_names, long_scope_pair, msprobe_pair, not_real
from rich.text import Text

from dumptui.tui.widgets.opdetail import RelationList

# the apps of this module share one pool of worker processes (conftest.py), not one spawned per app
pytestmark = pytest.mark.usefixtures("apps_share_one_pool")

SIZE = (80, 24)


def screen_lines(app) -> list[str]:
    """The screen's text, without the header (the dumps' folders) and the footer (the keys)."""
    lines = [strip.text for strip in app.screen._compositor.render_strips()]
    return lines[1:-1]


def pane_texts(scr) -> list[str]:
    """Everything the panes hold, scrolled out of sight or not: every label of the tree, every row of the flat
    list, the op pane's title and neighbours, the bisection pane's lines and history."""
    out = [n.label.plain for n in scr.op_tree._op_nodes.values()]
    out += [n.label.plain for n in scr.op_tree._folder_nodes.values()]
    flat = scr.flat
    width = flat.scrollable_content_region.width or 26
    out += [flat._row_text(i, width).plain for i in flat.rows]
    for part in ("#op-title", "#op-info", "#tensor-detail"):
        out += plain(scr.detail.query_one(part)).split("\n")
    for option in scr.detail.query_one(RelationList).options:
        out.append(option.prompt.plain if isinstance(option.prompt, Text) else str(option.prompt))
    out += ["".join(t for t, _r in line) for line in scr.panel.lines]
    out += plain(scr.panel.query_one("#bisect-history")).split("\n")
    return out


async def walk(app, pilot, scr) -> list[str]:
    """What a user sees on the way: the bisection run to its end, the cursor down the tree op by op, the flat
    list, the op pane zoomed."""
    await pilot.press("a")
    await wait_until(lambda: scr.bstate.finished and not scr.bisect_task, what="the bisection to converge")
    await pilot.pause()
    seen = screen_lines(app) + pane_texts(scr)
    scr.op_tree.focus()
    for _ in range(12):
        await pilot.press("down")
        await pilot.pause()
        seen += screen_lines(app) + pane_texts(scr)
    await scr.run_action("goto_culprit")
    await pilot.pause()
    seen += screen_lines(app) + pane_texts(scr)
    await scr.run_action("toggle_view")
    await pilot.pause()
    seen += screen_lines(app) + pane_texts(scr)
    await scr.run_action("zoom")
    await pilot.pause()
    seen += screen_lines(app)
    return seen


def known(scr) -> set[str]:
    pairs = scr.op_tree.model.pairs
    names = [side.name for p in pairs for side in (p.ref, p.target) if side is not None]
    return known_names(names + [p.name for p in pairs], [p.op_type for p in pairs])


def check(*argv) -> None:
    async def go() -> None:
        async with opened(*argv, size=SIZE) as (app, pilot, scr):
            seen = await walk(app, pilot, scr)
            real = known(scr)
            assert any("…" in s for s in seen)  # the names were long enough to be cut somewhere
            bad = not_real(seen, real)
            assert bad == [], "\n".join(sorted(set(bad)))

    run(go())


def test_mindspore_names_shown_are_real(demo_pair):
    check(demo_pair.ref, demo_pair.target)


def test_long_mindspore_scopes_shown_are_real(demo_pair, tmp_path):
    ref, target = long_scope_pair(demo_pair, tmp_path)
    check(ref, target)


def test_renamed_mindspore_names_shown_are_real(renamed_demo_pair):
    root, _ref_name, _target_name = renamed_demo_pair
    check(root / "demo" / "ref", root / "demo" / "target")


def test_msprobe_names_shown_are_real_and_keep_their_api(tmp_path):
    ref, target = msprobe_pair(tmp_path)

    async def go() -> None:
        async with opened(ref, target, size=SIZE) as (app, pilot, scr):
            seen = await walk(app, pilot, scr)
            bad = not_real(seen, known(scr))
            assert bad == [], "\n".join(sorted(set(bad)))
            labels = [n.label.plain for n in scr.op_tree._op_nodes.values()]
            for api in ("scaled_dot", "__getitem_", "__add__", "conv2d.3", "conv2d.4", "layer_norm"):
                assert any(api in label for label in labels), (api, labels)  # the API tells the calls apart

    run(go())


@pytest.mark.parametrize("word", ["Default/stage0/block6-ResidualBlock/Add-op0", "…t/mixer/quant/Floor-op0"])
def test_the_check_catches_names_in_no_dump(word):
    real = known_names(["Default/stage0-Stage/block6-ResidualBlock/Add-op0", "Default/mixer-M/quant-Q/Floor-op0"])
    assert not_real([f"│ {word} │"], real) != []
