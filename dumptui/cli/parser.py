"""The command line's parsers: one per subcommand, each built by its module's `add_arguments`, and the options
the commands share (dump selection, verdicts, output)."""

from __future__ import annotations

import argparse
import sys
from types import ModuleType
from typing import NoReturn

from dumptui import __version__
from dumptui.cli import (
    app,
    bisect,
    compare,
    completion,
    config,
    convert,
    demo,
    info,
    inspect_file,
    open_result,
    remedy,
    serve,
)
from dumptui.cli.options import compare_options
from dumptui.core.io.errors import UsageError

COMMANDS: dict[str, ModuleType] = {
    m.NAME: m
    for m in (bisect, compare, remedy, info, inspect_file, demo, convert, config, open_result, completion, serve)
}
SUBCOMMANDS = tuple(COMMANDS)


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of exiting, so a usage error can be reported as JSON with `--json`."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        raise UsageError(f"{self.prog}: {message}")


def build_parser(sub: str | None) -> argparse.ArgumentParser:
    """The parser of one subcommand (None: `dumptui REF TARGET`, the app)."""
    if sub is None:
        p = _Parser(
            prog="dumptui",
            description="Find the first operator where two tensor dumps diverge "
            "(e.g. Ascend910 vs Ascend310). Opens the terminal app; see the subcommands for headless use.",
            epilog=f"subcommands: {', '.join(SUBCOMMANDS)} (dumptui SUBCOMMAND --help)",
        )
        app.add_arguments(p)
        p.add_argument("--version", action="version", version=f"dumptui {__version__}")
        compare_options(p)
        return p
    command = COMMANDS[sub]
    p = _Parser(prog=f"dumptui {sub}", description=command.DESCRIPTION)
    command.add_arguments(p)
    return p


def completion_parser() -> argparse.ArgumentParser:
    """One parser with every subcommand, for shtab: the real parsers are built one at a time (`build_parser`),
    so `dumptui REF TARGET` needs no subcommand; completion sees them all."""
    p = build_parser(None)
    subs = p.add_subparsers(dest="subcommand", metavar="SUBCOMMAND")
    for sub in SUBCOMMANDS:
        one = build_parser(sub)
        subs.add_parser(sub, help=one.description, parents=[one], add_help=False, conflict_handler="resolve")
    return p
