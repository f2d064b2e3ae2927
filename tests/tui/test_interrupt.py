"""ctrl+c in the app quits with the exit code of an interrupted command (130, as bisect and compare give);
`q` quits with 0."""

from __future__ import annotations

from helpers.app import make_app, ready, run


def _quit_with(demo_pair, key: str) -> int | None:
    async def go():
        app = make_app(demo_pair.ref, demo_pair.target)
        async with app.run_test(size=(100, 32)) as pilot:
            await ready(app, pilot)
            await pilot.press(key)
            await pilot.pause()
        return app.return_code

    return run(go())


def test_ctrl_c_is_an_interrupt_and_q_a_quit(demo_pair):
    assert _quit_with(demo_pair, "ctrl+c") == 130
    assert _quit_with(demo_pair, "q") in (0, None)
