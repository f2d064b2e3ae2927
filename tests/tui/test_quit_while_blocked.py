"""The app stays quittable whatever a worker does (issue 23.2): a worker blocked in a call that never returns
by itself (a read of a FIFO nobody writes, a hung network file system; here a call held on an event) does not
keep `q` from ending the app. The held call is released only after the app has quit."""

from __future__ import annotations

import asyncio
import threading

import pytest
from helpers.app import SIZE, make_app, wait_until

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
