"""Sessions and autosaves are validated field by field: a hand-edited one is refused with its path and what is
wrong (an autosave set aside, the app opens fresh), never run into "the bisection stopped: AttributeError"."""

from __future__ import annotations

import json
import os

import pytest
from helpers.app import Notifications, opened, run, wait_until

from dumptui.core.search.bisect.sessionfile import SessionError, read_session, session_payload, steps_json
from dumptui.core.search.bisect.types import Mark, Source, Step
from dumptui.present import autosave
from dumptui.report.reasons import say

# the apps of this module share one pool of worker processes (conftest.py), not one spawned per app
pytestmark = pytest.mark.usefixtures("apps_share_one_pool")

GOOD = session_payload(
    steps_json("graph", [Step("k1", 3, Mark.BAD, Source.USER, "marked by the user")]),
    "/d/ref",
    "/d/target",
    {"cos": 0.99, "floor": ["float16=1e-3"]},
)

BAD = {
    "steps with an int key": ({"steps": [{"key": 7, "mark": "bad", "source": "user"}]}, "steps[0].key is int"),
    "a bogus mark": ({"steps": [{"key": "k", "mark": "maybe", "source": "user"}]}, "steps[0].mark is 'maybe'"),
    "a null source": ({"steps": [{"key": "k", "mark": "bad", "source": None}]}, "steps[0].source is None"),
    "a step that is a number": ({"steps": [3]}, "steps[0] is int"),
    "dumps of the wrong type": ({"steps": [], "dumps": {"ref": 1, "target": None}}, "dumps is not an object"),
    "an option of the wrong type": ({"steps": [], "options": {"cos": "high"}}, "options.cos is str"),
    "an unknown option": ({"steps": [], "options": {"rm": "-rf"}}, "options.rm is not an option"),
}


def test_a_saved_session_validates():
    assert read_session_text(GOOD) == GOOD


def read_session_text(data: dict, path: str = "/tmp/never-written.json") -> dict:
    import tempfile

    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
        json.dump(data, fh)
    try:
        return read_session(fh.name)
    finally:
        os.remove(fh.name)


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_hand_edited_session_is_refused_naming_the_path_and_the_field(case, tmp_path):
    data, what = BAD[case]
    path = tmp_path / "s.json"
    path.write_text(json.dumps(data))
    with pytest.raises(SessionError) as e:
        read_session(str(path))
    assert e.value.path == str(path) and what in say(e.value.reason), say(e.value.reason)


def test_a_bad_autosave_is_set_aside_and_not_offered(tmp_path):
    path = tmp_path / "state" / "pair.json"
    path.parent.mkdir()
    path.write_text(json.dumps(BAD["a bogus mark"][0]))
    assert autosave.resumable(str(path)) is None
    assert not path.exists() and (tmp_path / "state" / "pair.json.invalid").exists()


def test_the_app_refuses_a_bad_session_and_bisects_afresh(demo_pair, tmp_path):
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"steps": [{"key": 7, "mark": "bad", "source": None}]}))
    said = Notifications()

    async def go():
        async with opened(demo_pair.ref, demo_pair.target, "--session", path, message_hook=said.hook) as (
            _app,
            pilot,
            scr,
        ):
            await wait_until(lambda: said.saying("session not resumed"), what="the refusal")
            assert said.saying(str(path)) and said.saying("steps[0].key is int")
            assert not any("bisection stopped" in t or "Error" in t for t in said.texts)
            # a fresh search: only its start (the graph output), no mark replayed from the file
            assert scr.bstate is not None and all(h.source == Source.START for h in scr.bstate.history)

    run(go())
