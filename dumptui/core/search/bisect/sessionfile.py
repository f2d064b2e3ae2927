"""The session file: a bisection's marks saved by op key, with the dumps and options it was made with, so
`dumptui REF TARGET --session FILE` (or a script) resumes it. The one place sessions are written and read."""

from __future__ import annotations

import json
import os
import time
from typing import Mapping

from dumptui.core.io.limits import MAX_OPTION_FILE
from dumptui.core.io.safeio import read_json, write_text
from dumptui.core.search.bisect.types import Source, Step

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


def steps_json(mode: str, history: tuple[Step, ...] | list[Step]) -> dict:
    """The marks of a bisection (the start and the culprit check's continuations are recomputed on replay)."""
    return {
        "version": VERSION,
        "mode": mode,
        "steps": [
            {"key": s.key, "mark": str(s.mark), "source": str(s.source), "detail": s.detail}
            for s in history
            if Source(s.source).is_mark
        ],
    }


def session_payload(bisection_json: dict, ref_path: str, target_path: str, options: Mapping[str, object]) -> dict:
    """What `S` saves: the bisection's steps plus the dumps and options it was made with."""
    data = dict(bisection_json)
    data["dumptui_session"] = 1
    data["dumps"] = {"ref": os.path.abspath(ref_path), "target": os.path.abspath(target_path)}
    data["options"] = {k: options.get(k) for k in SESSION_OPTIONS if options.get(k) not in (None, [], "", False)}
    data["saved_at"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    return data


def write_session(path: str, payload: dict) -> None:
    write_text(path, json.dumps(payload, indent=1))


def read_session(path: str) -> dict:
    """A saved session file, or ValueError with the reason."""
    try:  # a regular file of a bounded size only: a FIFO, a device or a loop is refused at once
        data = read_json(path, limit=MAX_OPTION_FILE)
    except OSError as e:
        raise ValueError(f"{path}: {e.strerror or e}") from None
    except ValueError as e:
        raise ValueError(f"{path}: not a JSON file ({e})") from None
    if not isinstance(data, dict) or not isinstance(data.get("steps"), list):
        raise ValueError(f"{path}: not a dumptui session (no list of steps)")
    return data


def session_mismatch(data: dict, ref_path: str, target_path: str) -> str | None:
    """Why a session saved for other dumps is not resumed here (marks of another pair would judge ops they were
    never made for); None when it was saved for these."""
    dumps = data.get("dumps")
    if not isinstance(dumps, dict):
        return None
    saved = (dumps.get("ref"), dumps.get("target"))
    now = (os.path.abspath(ref_path), os.path.abspath(target_path))
    if saved != now:
        return (
            f"it was saved for {saved[0]} vs {saved[1]}, not {now[0]} vs {now[1]}: open those dumps with it, "
            "or start over here"
        )
    return None
