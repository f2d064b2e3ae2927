"""`--json [FILE]`: one JSON document per run, versioned, for scripts.

Every document carries `schema_version`, the `command` that wrote it and the `exit` code the command
returns; a run that fails writes an error document (`error.path`, `error.reason`) instead, with exit 2.
The schemas are kept beside this module (`schemas/*.schema.json`, JSON Schema draft 2020-12) and the test
suite validates real output against them.

Conventions, the same in every document and in the text output:
- positions are 1-based: `position` N is the Nth op pair in execution order, as `#N` in the text output;
- numbers are JSON numbers; a value that is undefined or not finite (NaN, infinity) is `null`, and the
  reason is given in words beside it where dumptui knows one (`undefined`, `why`, `notes`).
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from dumptui.core.io.safeio import write_text

SCHEMA_VERSION = 1
SCHEMA_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "schemas")
STDOUT = "-"


def document(command: str, body: dict[str, Any], exit_code: int) -> dict[str, Any]:
    return {"schema_version": SCHEMA_VERSION, "command": command, **body, "exit": exit_code}


def error_document(command: str, path: str, reason: str, exit_code: int) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "command": command,
        "error": {"path": path, "reason": reason},
        "exit": exit_code,
    }


def dumps(doc: dict[str, Any]) -> str:
    """JSON text; allow_nan=False: a NaN that slipped through is a bug, not a `NaN` token scripts choke on."""
    return json.dumps(doc, indent=1, allow_nan=False)


def write(doc: dict[str, Any], target: str | None) -> None:
    """To stdout for `-` (or no file), else to the file."""
    text = dumps(doc) + "\n"
    if target in (None, STDOUT):
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    assert target is not None
    write_text(target, text)
