"""The app's op pane says a selection op's judgement as selections ("25 of 32 selections equal; ranks 24 and 25
swapped ..."), not an element-wise error alone, and its rows carry the flip's reason, never "diverged"."""

from __future__ import annotations

import pytest
from helpers.app import opened, plain, run, wait_until

from dumptui.core.demo.detector import FLIP_OPS, write_detector_demo

# the apps of this module share one pool of worker processes (conftest.py), not one spawned per app
pytestmark = pytest.mark.usefixtures("apps_share_one_pool")


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    return write_detector_demo(str(tmp_path_factory.mktemp("detector-app") / "flips"), "flips")


def test_op_pane_says_the_selections_of_a_flipped_topk(demo):
    async def go():
        async with opened(demo.ref, demo.target, size=(140, 40)) as (app, pilot, scr):
            await pilot.press("a")
            await wait_until(lambda: scr.bstate.finished and not scr.bisect_task, what="the search's end")
            assert scr.bstate.culprit is None and scr.bstate.benign
            topk = next(p.index for p in scr.model.pairs if p.name == FLIP_OPS[0])
            assert "selections equal" in scr.bstate.selections[topk]
            scr.select_op(topk)
            await wait_until(
                lambda: (
                    scr.detail.result is not None
                    and scr.detail.index == topk
                    and "selection: " in plain(scr.query_one("#op-info"))
                ),
                what="the op pane to show the TopK's selections",
            )
            info = plain(scr.query_one("#op-info"))
            assert f"{32 - demo.topk_flips} of 32 selections equal" in info
            assert "flipped" in {str(r.verdict) for r in scr.detail.result.outputs}
            assert not [r for r in scr.detail.result.outputs if str(r.verdict) == "diverged"]
            # the tree's mark (⇄) arrives with the in-context verdicts, a message after the search's end
            await wait_until(lambda: scr.model.verdict(topk) == "flipped", what="the tree's flipped mark")

    run(go())
