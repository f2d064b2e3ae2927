"""`dumptui completion`: a shell completion script."""

from __future__ import annotations

import argparse
import sys

from dumptui.headless import (
    EXIT_OK,
)

NAME = "completion"
SHELLS = ("bash", "zsh", "tcsh")
DESCRIPTION = 'Print a shell completion script: eval "$(dumptui completion bash)" (or zsh, tcsh).'


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("shell", choices=SHELLS)


def run(args: argparse.Namespace) -> int:
    import shtab

    # the parser of every command, handed over by main (this module is one of the commands it is built from)
    sys.stdout.write(shtab.complete(args.every_parser(), shell=args.shell))
    return EXIT_OK
