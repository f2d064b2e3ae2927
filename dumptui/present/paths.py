"""Where the app writes by default (sessions, re-dump configs, the next run's dump folder) and why a path
is refused. Dumps are evidence: nothing is ever written inside one."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence

from dumptui.core.model.dump import Dump
from dumptui.core.tools.redump import inside_any


def cache_dir(env: Mapping[str, str] | None = None) -> str:
    """`$XDG_CACHE_HOME/dumptui` or `~/.cache/dumptui`: files that can be made again (a re-dump config
    written when the working folder is inside a dump)."""
    env = os.environ if env is None else env
    base = env.get("XDG_CACHE_HOME") or os.path.join(env.get("HOME") or os.path.expanduser("~"), ".cache")
    return os.path.join(base, "dumptui")


def state_dir(env: Mapping[str, str] | None = None) -> str:
    """`$XDG_STATE_HOME/dumptui` or `~/.local/state/dumptui` (the XDG base-directory rule, as platformdirs
    applies it on Linux): where saved sessions go, state worth keeping but not config, never beside a dump."""
    env = os.environ if env is None else env
    base = env.get("XDG_STATE_HOME") or os.path.join(env.get("HOME") or os.path.expanduser("~"), ".local", "state")
    return os.path.join(base, "dumptui")


def default_session_path(
    dumps: Sequence[Dump], now: float | None = None, env: Mapping[str, str] | None = None, cwd: str | None = None
) -> str:
    name = time.strftime("session-%Y%m%d-%H%M%S.json", time.localtime(time.time() if now is None else now))
    path = os.path.join(state_dir(env), name)
    if inside_any(path, list(dumps)) is not None:
        path = os.path.join(cwd or os.getcwd(), name)
    return path


def default_export_path(dumps: Sequence[Dump], cwd: str | None = None, env: Mapping[str, str] | None = None) -> str:
    """`./data_dump.json`, unless the working directory is inside a dump: then the cache folder."""
    path = os.path.join(cwd or os.getcwd(), "data_dump.json")
    if inside_any(path, list(dumps)) is not None:
        path = os.path.join(cache_dir(env), "data_dump.json")
    return path


def default_redump_dir(dumps: Sequence[Dump], cwd: str | None = None, env: Mapping[str, str] | None = None) -> str:
    """Where the next MindSpore run should dump (absolute, as MindSpore requires), not inside a dump."""
    path = os.path.join(os.path.abspath(cwd or os.getcwd()), "dump_interval")
    if inside_any(path, list(dumps)) is not None:
        env = os.environ if env is None else env
        path = os.path.join(env.get("HOME") or os.path.expanduser("~"), "dump_interval")
    return path


def refuse_output(path: str, dumps: Sequence[Dump]) -> str | None:
    """Why a file cannot be written at `path`, or None. Dumps are evidence: never written inside."""
    if not path.strip():
        return "give a file path"
    full = os.path.abspath(os.path.expanduser(path.strip()))
    if os.path.isdir(full):
        return f"{full} is a folder: give a file name"
    root = inside_any(full, list(dumps))
    if root is not None:
        return f"{full} is inside the dump folder {root}: dumps are evidence, choose a path outside"
    return None


def refuse_dump_dir(path: str) -> str | None:
    """Why `path` cannot be the `path` of a MindSpore data_dump.json, or None."""
    if not path.strip():
        return "give the folder MindSpore should dump into"
    if not os.path.isabs(os.path.expanduser(path.strip())):
        return f"{path.strip()}: MindSpore needs an absolute dump path"
    return None


def shown_pair(ref: str, target: str) -> tuple[str, str]:
    """The two dumps as the title shows them: what they share left out but its last folder (`demo0/ref`,
    `demo0/target` for two folders deep in /tmp/...), so the part that differs stays in sight."""
    a, b = os.path.abspath(ref).rstrip("/"), os.path.abspath(target).rstrip("/")
    if a == b:
        return os.path.basename(a) or a, os.path.basename(b) or b
    common = os.path.commonpath([a, b])
    if common == os.path.dirname(common):  # nothing shared but the root: the whole paths
        return a, b
    base = os.path.dirname(common)  # the shared folder itself stays, for context
    return os.path.relpath(a, base), os.path.relpath(b, base)
