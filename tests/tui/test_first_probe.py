"""A noisy pair's search judges every op before its first mark (minutes on a big dump): meanwhile the app shows
the probe the search offers first, with its own numbers and its mark pending (issue 20); the search's answer
is then the command line's, root and sentence."""

from __future__ import annotations

import asyncio
import json
import threading

import pytest
from helpers.app import make_app, run, wait_until
from helpers.common import run_cli

import dumptui.core.search.bisect.bisection as bisection_module
from dumptui.present.progress import DONE
from dumptui.tui.messages import BisectionChanged, FirstProbe, StatisticsProgress

# the apps of this module share one pool of worker processes (conftest.py), not one spawned per app
pytestmark = pytest.mark.usefixtures("apps_share_one_pool")

SIZE = (120, 36)


def test_the_first_probe_is_shown_while_every_op_is_judged(demo_pair, monkeypatch):
    """The scan held: the first probe is selected, its numbers read and shown, its mark said pending; no
    statistics start meanwhile (the scan computes them). Released: the search's first probe is that op."""
    started, gate = threading.Event(), threading.Event()
    real_scan = bisection_module.scan

    def held_scan(*args, **kw):
        started.set()
        gate.wait(60)
        return real_scan(*args, **kw)

    monkeypatch.setattr(bisection_module, "scan", held_scan)
    seen: list[object] = []

    def hook(message) -> None:
        if isinstance(message, (FirstProbe, BisectionChanged, StatisticsProgress)):
            seen.append(message)

    async def go():
        app = make_app(demo_pair.ref, demo_pair.target)
        async with app.run_test(size=SIZE, message_hook=hook):
            await wait_until(lambda: app.main is not None and app.main.bstate is not None, what="the first probe")
            scr = app.main
            first = scr.bstate
            # the probe may be shown a moment before the search's thread enters the scan: waited for (an event)
            assert await asyncio.get_running_loop().run_in_executor(None, started.wait, 60)
            assert not gate.is_set()  # shown while the scan has not judged anything
            assert not first.started and first.pending and first.probe_index is not None
            assert "noisy pair" in first.pending
            # a real comparison of a real op: its outputs' numbers, the same words the probe's detail uses
            pair = scr.controller.pairs[first.probe_index]
            assert first.probe_name == pair.label and "output.0" in first.probe_detail
            assert "cos" in first.probe_detail  # a noisy op's outputs differ: their numbers are said
            await wait_until(
                lambda: scr.detail.result is not None and scr.detail.index == first.probe_index,
                what="the probe's numbers in the centre",
            )
            assert scr.op_tree.tags == {first.probe_index: "probe"}
            text = "\n".join(scr.panel.visible_lines())
            assert "first probe" in text and "pending" in text
            assert scr.stats_state == "waiting"  # the search first: no second computation of the same pairs
            assert not scr.check_action("accept", ()) and not scr.check_action("mark", ("good",))
            gate.set()
            await wait_until(lambda: scr.bstate.started and not scr.bisect_task, what="the search to start")
            st = scr.bstate
            assert st.search == "scan" and not st.pending
            # the network output diverges in context (a root upstream): the search offers the same op first
            assert st.history[0].mark == "bad" and st.probe_index == first.probe_index
            assert st.probe_mark in ("good", "bad")
            await wait_until(lambda: scr.stats_state == DONE, what="the statistics")

    try:
        run(go())
    finally:
        gate.set()
    kinds = [type(m).__name__ for m in seen]
    # the first probe came first, before the search's answer and before any statistic
    assert kinds[0] == "FirstProbe" and kinds.count("FirstProbe") == 1
    assert kinds.index("BisectionChanged") < kinds.index("StatisticsProgress")


def test_the_app_names_the_command_line_s_root_with_its_sentence(demo_pair):
    """`a` to the end on the noisy demo pair: the culprit and its sentence are `dumptui bisect`'s."""
    code, out, err = run_cli("bisect", demo_pair.ref, demo_pair.target, "--json")
    assert code == 1, err
    cli = json.loads(out)
    cli_root = cli["culprit"]

    async def go():
        app = make_app(demo_pair.ref, demo_pair.target)
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(
                lambda: app.main is not None and app.main.bstate is not None and app.main.bstate.started,
                what="the search to start",
            )
            scr = app.main
            await wait_until(lambda: not scr.bisect_task, what="the search's first answer")
            await pilot.press("a")
            await wait_until(lambda: scr.bstate.finished and not scr.bisect_task, what="the run to the end")
            return scr.bstate, scr.controller.pairs

    st, pairs = run(go())
    assert st.culprit is not None
    culprit = pairs[st.culprit.index]
    assert culprit.name == demo_pair.planted
    assert (cli_root["ref"], cli_root["target"]) == (culprit.ref.name, culprit.target.name)
    assert st.culprit.why == cli_root["why"]
    # every other root too, in execution order
    assert [(r["ref"], r["why"]) for r in cli["roots"]] == [
        (pairs[r.index].ref.name, r.why) for r in (st.culprit, *st.others)
    ]
