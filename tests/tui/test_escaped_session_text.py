"""Every string from a session file is escaped before it reaches the terminal: a hand-edited session whose
dump paths carry an OSC title sequence is refused for another pair with the paths shown escaped (the app set
the terminal's title from it: "PWNED vs ...")."""

from __future__ import annotations

import json

from helpers.app import Notifications, opened, run, wait_until

from dumptui.present.status import StatusFacts, status_line

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
