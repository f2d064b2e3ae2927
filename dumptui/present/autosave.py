"""What the app keeps between runs, in the user's own folders (never beside a dump):

- the bisection of a pair, saved after every mark to `$XDG_STATE_HOME/dumptui/bisections/` (one file per pair
  of dumps and options), so `q` never loses a manual bisection and the next launch of the same pair offers to
  resume it;
- the settings (the theme) in `$XDG_CONFIG_HOME/dumptui/settings.json`.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import time
from collections.abc import Mapping

from dumptui.core.index.cache import protected
from dumptui.core.io.limits import MAX_OPTION_FILE
from dumptui.core.io.safeio import read_json, write_text
from dumptui.core.search.bisect.sessionfile import SESSION_OPTIONS, read_session, session_payload
from dumptui.report.fmt import clean

SETTINGS = ("theme",)


def _home(env: Mapping[str, str]) -> str:
    return env.get("HOME") or os.path.expanduser("~")


def state_dir(env: Mapping[str, str] | None = None) -> str:
    env = os.environ if env is None else env
    return os.path.join(env.get("XDG_STATE_HOME") or os.path.join(_home(env), ".local", "state"), "dumptui")


def config_dir(env: Mapping[str, str] | None = None) -> str:
    env = os.environ if env is None else env
    return os.path.join(env.get("XDG_CONFIG_HOME") or os.path.join(_home(env), ".config"), "dumptui")


def pair_key(ref: str, target: str, options: Mapping[str, object]) -> str:
    """The same dumps opened with the same options: one autosave."""
    chosen = {k: options.get(k) for k in SESSION_OPTIONS if options.get(k) not in (None, [], "", False)}
    text = json.dumps([os.path.abspath(ref), os.path.abspath(target), chosen], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def autosave_path(ref: str, target: str, options: Mapping[str, object], env: Mapping[str, str] | None = None) -> str:
    return os.path.join(state_dir(env), "bisections", pair_key(ref, target, options) + ".json")


def autosave(path: str, bisection_json: dict, ref: str, target: str, options: Mapping[str, object]) -> None:
    """Write the marks (atomically: a crash mid-write leaves the previous save); no marks: no file."""
    if not bisection_json.get("steps"):
        forget(path)
        return
    if protected(os.path.dirname(path)):
        return  # a state folder inside a dump (XDG_STATE_HOME set there): nothing is written in a dump
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(session_payload(bisection_json, ref, target, options), fh, indent=1)
    os.replace(tmp, path)


def forget(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.remove(path)


def resumable(path: str) -> dict | None:
    """The autosaved bisection of this pair, if it holds marks (a damaged file is no offer)."""
    if not os.path.isfile(path):
        return None
    try:
        data = read_session(path)
    except ValueError:
        set_aside(path)  # damaged or hand-edited: kept beside for a look, never offered again; the app opens fresh
        return None
    return data if data.get("steps") else None


def set_aside(path: str) -> str | None:
    """An autosave that does not validate, renamed `NAME.invalid` in its own folder (the user's state folder,
    never a dump's); where it went, or None when it could not be moved."""
    aside = path + ".invalid"
    try:
        os.replace(path, aside)
    except OSError:
        return None
    return aside


def prune(folder: str) -> list[str]:
    """Forget the autosaves of pairs whose dumps are gone (deleted or moved): the offer could never be taken.
    A file that cannot be read as a session is left alone (not ours to judge). The files removed."""
    removed: list[str] = []
    try:
        names = sorted(n for n in os.listdir(folder) if n.endswith(".json"))
    except OSError:
        return removed
    for name in names:
        path = os.path.join(folder, name)
        try:
            dumps = read_session(path).get("dumps")
        except ValueError:
            continue
        if isinstance(dumps, dict) and any(isinstance(p, str) and not os.path.isdir(p) for p in dumps.values()):
            forget(path)
            removed.append(path)
    return removed


def resume_question(data: dict) -> str:
    n = len(data.get("steps") or [])
    when = clean(str(data.get("saved_at") or "earlier"))  # from the file: escaped (an OSC sequence was obeyed)
    return f"You left a bisection of this pair ({n} mark{'s' if n != 1 else ''}, saved {when}). Resume it?"


def read_settings(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The saved settings; none when the file is missing or not a small regular JSON file (a FIFO, a device,
    a loop of links, deep nesting: the defaults then, never a wait or a crash)."""
    path = os.path.join(config_dir(env), "settings.json")
    try:
        data = read_json(path, limit=MAX_OPTION_FILE)
    except (OSError, ValueError):
        return {}
    return {k: str(v) for k, v in data.items() if k in SETTINGS} if isinstance(data, dict) else {}


def write_settings(settings: Mapping[str, str], env: Mapping[str, str] | None = None) -> str:
    path = os.path.join(config_dir(env), "settings.json")
    if protected(os.path.dirname(path)):
        raise OSError(errno.EACCES, "the settings folder is inside a dump folder: not written", path)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    merged = {**read_settings(env), **{k: v for k, v in settings.items() if k in SETTINGS}}
    merged["saved_at"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    write_text(path, json.dumps(merged, indent=1))
    return path
