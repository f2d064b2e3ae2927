"""Every string from a session file is escaped before it reaches the terminal: a hand-edited session whose
dump paths carry an OSC title sequence is refused for another pair with the paths shown escaped (the app set
the terminal's title from it: "PWNED vs ...")."""

from __future__ import annotations

import json

from helpers.app import Notifications, idle, make_app, opened, run, terminal_output, wait_until

from dumptui.present import autosave as saved
from dumptui.present.status import StatusFacts, status_line
from dumptui.tui.screens.resume import ResumeScreen

OSC = "\x1b]0;PWNED\x07"


def test_a_session_saved_for_paths_with_escapes_is_said_escaped(demo_pair, tmp_path):
    session = tmp_path / "s.json"
    session.write_text(
        json.dumps(
            {
                "dumptui_session": 1,
                "mode": "graph",
                "dumps": {"ref": f"/x/{OSC}ref", "target": f"/x/{OSC}target"},
                "steps": [],
            }
        )
    )
    said = Notifications()

    async def go():
        async with opened(demo_pair.ref, demo_pair.target, "--session", session, message_hook=said.hook):
            await wait_until(lambda: said.saying("session not resumed"), what="the session refused")
            text = next(t for t in said.texts if "session not resumed" in t)
            assert "\x1b" not in text and "\x07" not in text and "\\x1b]0;PWNED\\x07" in text

    run(go())


def test_the_status_line_escapes_the_dumps_paths():
    line = status_line(StatusFacts(ref=f"/d/{OSC}r", target="/d/t"), 120)
    text = "".join(span for span, _style in line)
    assert "\x1b" not in text and "\\x1b" in text


def test_an_autosave_with_escapes_is_offered_and_resumed_escaped(demo_pair):
    """Every string of an autosave that reaches the screen — its time in the resume question, a step's
    detail in the history, a key no longer found in the note — is sent to the terminal escaped: never an OSC
    sequence (the resume question wrote `saved_at` raw)."""

    async def first():
        async with opened(demo_pair.ref, demo_pair.target) as (_app, pilot, scr):
            await pilot.press("minus")
            await idle(scr, pilot)
            await pilot.press("q")

    run(first())
    app = make_app(demo_pair.ref, demo_pair.target)
    path = saved.autosave_path(str(demo_pair.ref), str(demo_pair.target), vars(app.options))
    with open(path) as fh:
        data = json.load(fh)
    data["saved_at"] = f"today{OSC}"
    data["steps"][0].update(source="user", detail=f"checked by hand{OSC}")
    data["steps"].append({"key": f"gone{OSC}", "mark": "good", "source": "user", "detail": ""})
    with open(path, "w") as fh:
        json.dump(data, fh)
    said = Notifications()

    async def second():
        async with app.run_test(size=(120, 40), message_hook=said.hook) as pilot:
            await wait_until(lambda: isinstance(app.screen, ResumeScreen), what="the resume question")
            await pilot.pause()  # laid out and drawn
            _escaped_only(terminal_output(app), "today")
            await pilot.press("enter")
            await wait_until(lambda: said.saying("no longer found"), what="the note of the keys not found")
            scr = app.main
            await idle(scr, pilot)
            await pilot.pause()
            assert any("checked by hand" in h.detail for h in scr.bstate.history)
            screen = terminal_output(app)
            _escaped_only(screen, "checked by hand")
            note = next(t for t in said.texts if "no longer found" in t)  # (a toast wraps on screen)
            assert "\x1b" not in note and "gone\\x1b]0;PWNED\\x07" in note, note

    run(second())


def _escaped_only(sent: str, before: str) -> None:
    """`before` followed by the OSC sequence shown escaped, and no OSC title sequence sent raw."""
    assert "\x1b]0;" not in sent and "\x07" not in sent
    assert f"{before}\\x1b]0;PWNED\\x07" in sent, f"{before!r} not shown with the escaped sequence"
