"""The app as `dumptui ARGV` starts it, driven by Pilot: open, wait until ready, accept verdicts, read widgets."""

from __future__ import annotations

import asyncio
import weakref
from contextlib import asynccontextmanager

from textual.message_pump import MessagePump

from dumptui import cli
from dumptui.options import pair as pairing
from dumptui.tui.app import DumpTuiApp
from dumptui.tui.screens.main import MainScreen

SIZE = (100, 32)


def make_app(*argv) -> DumpTuiApp:
    """The app as `dumptui ARGV` starts it (the command line's own parsing of the options)."""
    args = cli.build_parser(None).parse_args([str(a) for a in argv])
    return DumpTuiApp(pairing.PairOptions.from_namespace(args), args.session)


# Waiting on events, not polling: every message or event any widget, screen or app of a running app has
# finished handling wakes the waits of its event loop, which then look at the state again. A state the app
# reaches is reached by handling a message (a worker's result, a key, a timer), so a wait wakes exactly when
# it may have come true; the timeout is only how long a broken app is given. Textual has no public hook that
# runs *after* a handler (run_test's message_hook runs before it), hence the wrapper.
_handled: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Event] = weakref.WeakKeyDictionary()
assert hasattr(MessagePump, "_dispatch_message"), "Textual renamed MessagePump._dispatch_message: update this"
_dispatch = MessagePump._dispatch_message


async def _dispatch_then_wake(self, message) -> None:  # noqa: ANN001 (Textual's own signature)
    try:
        await _dispatch(self, message)
    finally:
        event = _handled.get(asyncio.get_running_loop())
        if event is not None:
            event.set()


MessagePump._dispatch_message = _dispatch_then_wake  # type: ignore[method-assign]


async def wait_until(pred, timeout: float = 60.0, what: str = "condition") -> None:
    """Until `pred()` holds, looking again each time the app has handled a message (never on a timer)."""
    loop = asyncio.get_running_loop()
    event = _handled.setdefault(loop, asyncio.Event())
    deadline = loop.time() + timeout
    while not pred():
        event.clear()
        left = deadline - loop.time()
        if left <= 0:
            raise AssertionError(f"timed out waiting for {what}")
        try:
            await asyncio.wait_for(event.wait(), left)
        except asyncio.TimeoutError:
            if not pred():
                raise AssertionError(f"timed out waiting for {what}") from None
            return


async def ready(app, pilot, stats: bool = False) -> MainScreen:
    """The dumps are open, the bisection started (probe computed), and, if asked, all statistics done."""
    await wait_until(
        lambda: app.main is not None and app.main.bstate is not None and not app.main.bisect_task,
        what="the bisection to start",
    )
    scr = app.main
    if stats:
        await wait_until(lambda: scr.stats_state == "done", what="the statistics")
    await pilot.pause()
    return scr


@asynccontextmanager
async def opened(*argv, size=SIZE, stats: bool = False, message_hook=None):
    """The app on `dumptui ARGV`, driven by Pilot, once `ready`: yields (app, pilot, main screen)."""
    app = make_app(*argv)
    async with app.run_test(size=size, message_hook=message_hook) as pilot:
        yield app, pilot, await ready(app, pilot, stats)


async def space_until_converged(scr: MainScreen, pilot, max_steps: int = 30) -> None:
    """Accept the computed verdict (space) until the bisection converges."""
    for _ in range(max_steps):
        if scr.bstate.finished:
            return
        await pilot.press("space")
        await idle(scr, pilot)


async def idle(scr: MainScreen, pilot) -> None:
    await pilot.pause()
    await wait_until(lambda: not scr.bisect_task, what="the bisection worker")
    await pilot.pause()


def run(coro):
    return asyncio.run(coro)


def plain(widget) -> str:
    """The text a Static shows (Text, str, or a Group of them)."""
    from rich.console import Group
    from rich.text import Text

    def walk(x) -> str:
        if isinstance(x, Text):
            return x.plain
        if isinstance(x, str):
            return x
        if isinstance(x, Group):
            return "\n".join(walk(r) for r in x.renderables)
        return ""

    return walk(widget.content)


class Notifications:
    """The notifications an app shows, collected from the messages it handles (`run_test(message_hook=...)`)."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    def hook(self, message) -> None:
        from textual.notifications import Notify

        if isinstance(message, Notify):
            self.texts.append(str(message.notification.message))

    def saying(self, text: str) -> bool:
        return any(text in t for t in self.texts)


def terminal_output(app) -> str:
    """What the terminal is sent to draw the app's whole screen now (its escape sequences included): where a
    string from a file would reach the terminal raw."""
    return app.screen._compositor.render_update(full=True).render_segments(app.console)
