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
    report,
    serve,
)
from dumptui.cli.options import compare_options
from dumptui.core.io.errors import UsageError

COMMANDS: dict[str, ModuleType] = {
    m.NAME: m
    for m in (
        bisect,
        compare,
        remedy,
        report,
        info,
        inspect_file,
        demo,
        convert,
        config,
        open_result,
        completion,
        serve,
    )
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


# What each positional argument names, for shell completion: dump folders complete as folders, files as files.
FOLDERS = ("ref", "target", "dump", "dir")
FILES = ("file", "raw", "result")


def completion_parser() -> argparse.ArgumentParser:
    """One parser with every subcommand, for shtab: the real parsers are built one at a time (`build_parser`),
    so `dumptui REF TARGET` needs no subcommand. For completion the first word is a subcommand or the reference
    dump (folders complete beside the subcommands), and each command's positionals complete as what they name."""
    import shtab

    p = build_parser(None)
    for action in [a for a in p._actions if not a.option_strings]:  # REF TARGET: the first word completes below
        p._remove_action(action)
        p._positionals._group_actions.remove(action)
    # the first word: a subcommand; when none matches, the shell's own completion offers the folders of
    # `dumptui REF TARGET` (bash: -o bashdefault). shtab does not descend into subcommands whose action has a
    # completion of its own, so none is set here.
    subs = p.add_subparsers(dest="subcommand", metavar="SUBCOMMAND")
    for sub in SUBCOMMANDS:
        one = build_parser(sub)
        child = subs.add_parser(sub, help=one.description, parents=[one], add_help=False, conflict_handler="resolve")
        for action in child._actions:
            if not action.option_strings and action.dest in FOLDERS:
                action.complete = shtab.DIRECTORY  # type: ignore[attr-defined]
            elif not action.option_strings and action.dest in FILES:
                action.complete = shtab.FILE  # type: ignore[attr-defined]
    return p
