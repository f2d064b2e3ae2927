"""The session file: a bisection's marks saved by op key, with the dumps and options it was made with, so
`dumptui REF TARGET --session FILE` (or a script) resumes it. The one place sessions are written and read."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from typing import Any

from dumptui.core.io.fault import os_text
from dumptui.core.io.limits import MAX_OPTION_FILE
from dumptui.core.io.safeio import read_json, write_text
from dumptui.core.model.reason import Reason, Why, because
from dumptui.core.search.bisect.types import Mark, Source, Step, StrategyName

# A session as JSON: the marks of steps_json (version, mode, steps), plus dumps, options and saved_at once saved.
# Values are whatever JSON decodes to: session_problems checks a file read back, field by field.
SessionJson = dict[str, Any]

VERSION = 1
SESSION_OPTIONS = (
    "rank",
    "graph",
    "iteration",
    "ref_rank",
    "ref_graph",
    "ref_iteration",
    "target_rank",
    "target_graph",
    "target_iteration",
    "gain",
    "floor",
    "floor_scale",
    "max_off",
    "cos",
    "no_replay",
    "ignore",
    "ignore_file",
    "map",
)


def steps_json(mode: StrategyName, history: tuple[Step, ...] | list[Step]) -> SessionJson:
    """The marks of a bisection (the start and the culprit check's continuations are recomputed on replay)."""
    return {
        "version": VERSION,
        "mode": mode,
        "steps": [
            {
                "key": s.key,
                "mark": str(s.mark),
                "source": str(s.source),
                "detail": s.detail if isinstance(s.detail, str) else "",
            }
            for s in history
            if Source(s.source).is_mark
        ],
    }


def session_payload(
    bisection_json: SessionJson, ref_path: str, target_path: str, options: Mapping[str, object]
) -> SessionJson:
    """What `S` saves: the bisection's steps plus the dumps and options it was made with."""
    data = dict(bisection_json)
    data["dumptui_session"] = 1
    data["dumps"] = {"ref": os.path.abspath(ref_path), "target": os.path.abspath(target_path)}
    data["options"] = {k: options.get(k) for k in SESSION_OPTIONS if options.get(k) not in (None, [], "", False)}
    data["saved_at"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    return data


def write_session(path: str, payload: SessionJson) -> None:
    write_text(path, json.dumps(payload, indent=1))


class SessionError(ValueError):
    """A session file that is not resumed: its path and why (a Reason: report/reasons.py words it)."""

    def __init__(self, path: str, reason: Reason):
        super().__init__(path, reason.code)
        self.path = path
        self.reason = reason


def read_session(path: str) -> SessionJson:
    """A saved session file, or SessionError with the reason."""
    try:  # a regular file of a bounded size only: a FIFO, a device or a loop is refused at once
        data = read_json(path, limit=MAX_OPTION_FILE)
    except OSError as e:
        raise SessionError(path, because(Why.SESSION_UNREADABLE, os_text(e))) from None
    except ValueError as e:
        raise SessionError(path, because(Why.SESSION_NOT_JSON, str(e))) from None
    if not isinstance(data, dict) or not isinstance(data.get("steps"), list):
        raise SessionError(path, because(Why.SESSION_NO_STEPS))
    wrong = session_problems(data)
    if wrong:
        raise SessionError(path, because(Why.SESSION_INVALID, wrong[:3]))
    return data


_MARKS = {str(m) for m in Mark}
_SOURCES = {str(s) for s in Source if s.is_mark}
_OPTION_TYPES: dict[str, tuple[type, ...]] = {
    **{k: (str, int) for k in SESSION_OPTIONS[:9]},  # rank, graph, iteration (a number or "all")
    "gain": (int, float),
    "floor": (list,),
    "floor_scale": (int, float),
    "max_off": (int, float),
    "cos": (int, float),
    "no_replay": (bool,),
    "ignore": (list,),
    "ignore_file": (str,),
    "map": (str,),
}


def session_problems(data: SessionJson) -> list[Reason]:
    """What does not fit the session schema, field by field (empty when it fits): each step an object with
    a string key, a mark (good, bad or skip), a source (user or computed) and a string detail; dumps two
    paths; options of their types. A hand-edited file is refused with these, never run into an internal
    error (steps with int keys, a bogus mark, a null source)."""
    out: list[Reason] = []
    for i, step in enumerate(data.get("steps") or []):
        where = f"steps[{i}]"
        if not isinstance(step, dict):
            out.append(because(Why.SESSION_NOT_OBJECT, where, type(step).__name__))
            continue
        out.extend(_step_problems(where, step))
    dumps = data.get("dumps")
    if dumps is not None and not (
        isinstance(dumps, dict) and all(isinstance(dumps.get(side), str) for side in ("ref", "target"))
    ):
        out.append(because(Why.SESSION_DUMPS))
    options = data.get("options")
    if options is not None:
        if not isinstance(options, dict):
            out.append(because(Why.SESSION_NOT_OBJECT, "options", _kind(options)))
        else:
            out.extend(_option_problems(options))
    for field in ("mode", "saved_at"):
        if field in data and not isinstance(data[field], str):
            out.append(because(Why.SESSION_NOT_STRING, field, _kind(data[field])))
    return out


def _step_problems(where: str, step: dict[str, Any]) -> list[Reason]:
    out = []
    if not isinstance(step.get("key"), str):
        out.append(because(Why.SESSION_NOT_STRING, f"{where}.key", _kind(step.get("key"))))
    if step.get("mark") not in _MARKS:
        out.append(because(Why.SESSION_NOT_ONE_OF, f"{where}.mark", repr(step.get("mark")), sorted(_MARKS)))
    if step.get("source", str(Source.USER)) not in _SOURCES:
        out.append(because(Why.SESSION_NOT_ONE_OF, f"{where}.source", repr(step.get("source")), sorted(_SOURCES)))
    if not isinstance(step.get("detail", ""), str):
        out.append(because(Why.SESSION_NOT_STRING, f"{where}.detail", _kind(step.get("detail"))))
    return out


def _option_problems(options: dict[str, Any]) -> list[Reason]:
    out = []
    for k, v in options.items():
        types = _OPTION_TYPES.get(k)
        if types is None:
            out.append(because(Why.SESSION_OPTION_UNKNOWN, k))
        elif (isinstance(v, bool) and bool not in types) or not isinstance(v, types):
            out.append(because(Why.SESSION_OPTION_KIND, k, _kind(v)))
        elif isinstance(v, list) and not all(isinstance(x, str) for x in v):
            out.append(because(Why.SESSION_OPTION_NOT_STRINGS, k))
    return out


def _kind(v: object) -> str:
    return "missing" if v is None else type(v).__name__


def session_mismatch(data: SessionJson, ref_path: str, target_path: str) -> Reason | None:
    """Why a session saved for other dumps is not resumed here (marks of another pair would judge ops they were
    never made for); None when it was saved for these."""
    dumps = data.get("dumps")
    if not isinstance(dumps, dict):
        return None
    saved = (dumps.get("ref"), dumps.get("target"))
    now = (os.path.abspath(ref_path), os.path.abspath(target_path))
    if saved != now:
        return because(Why.SESSION_OTHER_DUMPS, saved[0], saved[1], now[0], now[1])
    return None
