"""Names with every class of control character (issue 22.2), held by the culprit itself: ESC/CSI, OSC (a
terminal title, a hyperlink), bidi overrides, CR, a newline, U+2028, Rich markup. The culprit is found and the
answer contract holds everywhere it is said: JSON keeps the real name (escaped by JSON only), bisect's and
compare's text and the app's culprit panel show it escaped (\\x1b, \\u202e, \\x0a...) on one line, and no raw
control character reaches a terminal (no forged "culprit:" line, no title change, no link). Generated pairs
(npy folders: the names are the files' own)."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from helpers.app import idle, opened, run, wait_until
from helpers.common import write_npy
from helpers.damage import run_main

from dumptui.report.fmt import clean

# what a terminal must never get from a file: C0 controls but the newline, DEL, C1, line separators, bidi controls
RAW_CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")

# no "/" in a name: it would be a folder of the npy-folder dump
NAMES = {
    "ESC/CSI": "Mul\x1b[2J\x1b[31m-op0",
    "OSC title and link": "Mul\x1b]0;pwned\x07\x1b]8;;http:evil.example\x1b\\link\x1b]8;;\x1b\\-op0",
    "bidi override": "Mul\u202eevil\u2066-op0",
    "CR": "Mul\rculprit: Fake-op0",
    "newline": "Mul\nculprit: Fake-op0",
    "U+2028": "Mul\u2028culprit: Fake-op0",
    "Rich markup": "Mul[bold red]X[link=http:evil.example]y-op0",
}


@pytest.fixture(scope="module", params=list(NAMES))
def evil_pair(request, tmp_path_factory):
    """An op that agrees, then the culprit with the name of the class (its inputs agree, its output not)."""
    root = tmp_path_factory.mktemp("names")
    evil = NAMES[request.param]
    for side, scale in (("ref", 1.0), ("target", 5.0)):
        folder = root / side / "Default"
        write_npy(folder / "a-op0.output.0.npy", np.ones(8, np.float32))
        write_npy(folder / f"{evil}.input.0.npy", np.ones(8, np.float32))
        write_npy(folder / f"{evil}.output.0.npy", np.arange(8, dtype=np.float32) * scale)
    return root / "ref", root / "target", f"Default/{evil}"


def _shown(out: str, name: str) -> None:
    assert not RAW_CONTROL.search(out), repr(RAW_CONTROL.search(out))
    assert clean(name) in out, f"{clean(name)!r} not shown"
    assert not any(line.startswith("culprit: Fake") for line in out.splitlines()), "a forged line"


def test_json_keeps_the_real_name_and_text_shows_it_escaped(evil_pair):
    ref, target, name = evil_pair
    for command in ("bisect", "compare"):
        code, out, err = run_main(command, ref, target, "--json", "-")
        doc = json.loads(out)
        assert code == doc["exit"] == 1, (command, err)
        assert [r["ref"] for r in doc["roots"]] == [name]  # the real name, JSON-escaped only
        code, out, err = run_main(command, ref, target)
        assert code == 1, (command, err)
        _shown(out + err, name)
    code, out, _err = run_main("bisect", ref, target, "-q")
    assert code == 1 and len(out.splitlines()) == 1
    _shown(out, name)


def test_the_app_shows_the_name_escaped(evil_pair):
    ref, target, name = evil_pair

    async def go():
        async with opened(ref, target) as (_app, pilot, scr):
            await pilot.press("a")
            await wait_until(lambda: scr.bstate is not None and scr.bstate.finished, what="the bisection")
            await idle(scr, pilot)
            text = scr.panel.query_one("#bisect-status").content.plain  # what the panel draws
            assert scr.bstate.culprit is not None
            _shown(text, name)

    run(go())
