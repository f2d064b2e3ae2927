"""What the commands share beyond headless.py: the console, refusing to write inside a dump, JSON numbers."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from dumptui.core.io.errors import UsageError

if TYPE_CHECKING:  # rich and the engine are imported by the subcommand that needs them
    from rich.console import Console

    from dumptui.core.model.dump import Dump

ALL = "all"  # --rank all / --step all


def console() -> Console:
    from dumptui.report.console import stdout_console

    return stdout_console()


def refuse_inside(path: str, dumps: Iterable[Dump]) -> None:
    """Dumps are evidence: never write inside one."""
    from dumptui.core.tools.redump import inside_any

    root = inside_any(path, list(dumps))
    if root is not None:
        raise UsageError(f"{path}: refusing to write inside the dump folder {root}")


def jnum(v: object) -> object:
    from dumptui.report.data import num

    return num(v)
