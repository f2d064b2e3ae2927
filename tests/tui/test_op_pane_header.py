"""A new op opens in the op pane at its header (issue 35, item 2): after scrolling one op's statistics, moving
to another op (a jump, `n`, a search) shows the new op's name, not the old scroll position mid-statistics."""

from __future__ import annotations

import pytest
from helpers.app import opened, run, wait_until

# the apps of this module share one pool of worker processes (conftest.py), not one spawned per app
pytestmark = pytest.mark.usefixtures("apps_share_one_pool")


def test_a_new_op_opens_at_its_header(demo_pair):
    async def go():
        async with opened(demo_pair.ref, demo_pair.target, size=(80, 24)) as (app, pilot, scr):
            pairs = scr.model.pairs
            first, other = pairs[2].index, pairs[5].index
            scr.select_op(first)
            await wait_until(lambda: scr.detail.result is not None and scr.detail.index == first, what="the op")
            scr.detail.scroll_end(animate=False)
            await wait_until(lambda: scr.detail.scroll_y > 0, what="the pane scrolled down")
            scr.select_op(other)
            await wait_until(lambda: scr.detail.result is not None and scr.detail.index == other, what="the other op")
            await pilot.pause()
            assert scr.detail.scroll_y == 0
            # the same op refreshed with new numbers keeps where the user is
            scr.detail.scroll_end(animate=False)
            await wait_until(lambda: scr.detail.scroll_y > 0, what="the pane scrolled down again")
            y = scr.detail.scroll_y
            scr.detail.show_result(scr.detail.result, scr.detail.relations, scr.kernel_count)
            await pilot.pause()
            assert scr.detail.scroll_y == y

    run(go())
