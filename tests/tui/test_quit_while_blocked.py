"""The app stays quittable whatever a worker does (issue 23.2): a worker blocked in a call that never returns
by itself (a read of a FIFO nobody writes, a hung network file system; here a call held on an event) does not
keep `q` from ending the app. The held call is released only after the app has quit."""

from __future__ import annotations

import asyncio
import threading

import pytest
from helpers.app import SIZE, make_app, opened, run, wait_until

import dumptui.core.search.bisect as bisect_pkg
import dumptui.core.search.bisect.bisection as bisection_module
from dumptui.options import pair as pairing


def _held(monkeypatch, module, name: str, started: threading.Event, gate: threading.Event) -> None:
    real = getattr(module, name)

    def blocked(*args, **kw):
        started.set()
        gate.wait()  # no timeout: only the test's finally releases it
        return real(*args, **kw)

    monkeypatch.setattr(module, name, blocked)


@pytest.mark.parametrize(
    ("module", "name", "what"),
    [
        (pairing, "open_pair", "opening the dumps"),
        (bisect_pkg, "Bisection", "building the bisection"),
        # a noisy pair's scan, once its first probe is shown (the app looks ready, its workers still run)
        (bisection_module, "scan", "judging every op"),
    ],
)
def test_q_ends_the_app_while_a_worker_is_blocked(demo_pair, monkeypatch, module, name, what):
    started, gate = threading.Event(), threading.Event()
    _held(monkeypatch, module, name, started, gate)

    async def go():
        app = make_app(demo_pair.ref, demo_pair.target)
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(started.is_set, what=f"the worker {what} to block")
            await pilot.press("q")
            await wait_until(lambda: not app.is_running, timeout=30, what="the app to quit")
        return app

    try:
        app = asyncio.run(asyncio.wait_for(go(), 120))
        assert not app.is_running and not gate.is_set()  # it quit while the worker was still blocked
    finally:
        gate.set()


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
