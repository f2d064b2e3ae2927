"""The user's config file: thresholds, ignore rules and maps they always want, in TOML, so a team can keep its
verdict settings in one place instead of on every command line.

    $XDG_CONFIG_HOME/dumptui/config.toml   (~/.config/dumptui/config.toml; `DUMPTUI_CONFIG=FILE` names another)

    gain = 10.0                 # --gain
    floor = {float16 = 2e-3}    # --floor float16=2e-3 (a table, or a list of "DTYPE=E" strings)
    floor_scale = 1.5           # --floor-scale
    max_off = 0.1               # --max-off
    cos = 0.99                  # --cos
    replay = false              # --no-replay
    ignore = ["*Dropout*", "*BatchNorm*:output.1"]   # --ignore (flags add to these)
    ignore_file = "ignores.txt" # --ignore-file (relative paths are relative to the config file)
    map = "pairs.csv"           # --map (CSV, or an msprobe mapping yaml)

Flags win over the file: a scalar given on the command line replaces the file's value, `--ignore` adds to
the file's patterns, and `--no-config` ignores the file. A file that cannot be read or holds an unknown key
or a value of the wrong type stops the command with the file's path and the reason (exit 2).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Any

from dumptui.core.io.errors import DumptuiError
from dumptui.core.io.limits import MAX_CONFIG_FILE
from dumptui.core.io.safeio import read_text

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised by the Python 3.10 run of the test matrix
    import tomli as tomllib

APP = "dumptui"
ENV_FILE = "DUMPTUI_CONFIG"

_FLOAT_KEYS = ("gain", "floor_scale", "max_off", "cos")
_PATH_KEYS = ("ignore_file", "map")
KNOWN_KEYS = (*_FLOAT_KEYS, "floor", "replay", "ignore", *_PATH_KEYS)


class ConfigError(DumptuiError):
    """The config file cannot be used: its path and why."""


def config_dir(env: Mapping[str, str] | None = None) -> str:
    """`$XDG_CONFIG_HOME/dumptui`, else the platform's user config folder (`~/.config/dumptui` on Linux)."""
    env = os.environ if env is None else env
    if env.get("XDG_CONFIG_HOME"):
        return os.path.join(env["XDG_CONFIG_HOME"], APP)
    if env is os.environ:
        import platformdirs

        return str(platformdirs.user_config_dir(APP, appauthor=False))
    return os.path.join(env.get("HOME") or os.path.expanduser("~"), ".config", APP)


def config_path(env: Mapping[str, str] | None = None) -> str:
    env = os.environ if env is None else env
    return env.get(ENV_FILE) or os.path.join(config_dir(env), "config.toml")


def load(path: str | None = None, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The file's settings as command-line defaults (argparse `dest` names); {} when there is no file.
    A file named by `DUMPTUI_CONFIG` must exist; the default one may be absent."""
    env = os.environ if env is None else env
    named = path or env.get(ENV_FILE)
    path = named or config_path(env)
    if not os.path.exists(path):
        if named:
            raise ConfigError(path, "config file not found")
        return {}
    try:
        doc = tomllib.loads(read_text(path, MAX_CONFIG_FILE))  # regular, bounded: never a FIFO or /dev/zero
    except RecursionError:
        raise ConfigError(path, "not valid TOML: nested too deep") from None
    except OSError as e:
        raise ConfigError(path, e.strerror or str(e)) from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise ConfigError(path, f"not valid TOML: {e}") from None
    return _defaults(path, doc)


def _defaults(path: str, doc: dict[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(doc) - set(KNOWN_KEYS))
    if unknown:
        raise ConfigError(path, f"unknown setting {', '.join(unknown)} (known: {', '.join(KNOWN_KEYS)})")
    out: dict[str, Any] = {}
    for key in _FLOAT_KEYS:
        if key in doc:
            v = doc[key]
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise ConfigError(path, f"{key} must be a number, not {v!r}")
            out[key] = float(v)
    if "replay" in doc:
        if not isinstance(doc["replay"], bool):
            raise ConfigError(path, f"replay must be true or false, not {doc['replay']!r}")
        out["no_replay"] = not doc["replay"]
    if "floor" in doc:
        out["floor"] = _floors(path, doc["floor"])
    if "ignore" in doc:
        ignore = doc["ignore"]
        if not isinstance(ignore, list) or not all(isinstance(s, str) for s in ignore):
            raise ConfigError(path, "ignore must be a list of GLOB[:io.slot] strings")
        out["ignore"] = list(ignore)
    base = os.path.dirname(os.path.abspath(path))
    for key in _PATH_KEYS:
        if key in doc:
            v = doc[key]
            if not isinstance(v, str) or not v:
                raise ConfigError(path, f"{key} must be a file path")
            out[key] = os.path.join(base, os.path.expanduser(v))
    return out


def _floors(path: str, value: object) -> list[str]:
    """`{float16 = 2e-3}` or `["float16=2e-3"]` -> the `--floor` items."""
    if isinstance(value, dict):
        items = []
        for dtype, e in value.items():
            if isinstance(e, bool) or not isinstance(e, (int, float)):
                raise ConfigError(path, f"floor.{dtype} must be a number, not {e!r}")
            items.append(f"{dtype}={e}")
        return items
    if isinstance(value, list) and all(isinstance(s, str) for s in value):
        return list(value)
    raise ConfigError(path, 'floor must be a table (floor = {float16 = 2e-3}) or a list of "DTYPE=E" strings')
