"""`dumptui REF TARGET` (or `--demo`): the terminal app."""

from __future__ import annotations

import argparse
import os
import sys

from dumptui.core.io.errors import UsageError
from dumptui.options.pair import PairOptions, validate_thresholds


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("ref", nargs="?", help="reference dump (e.g. the Ascend910 run)")
    p.add_argument("target", nargs="?", help="target dump (e.g. the Ascend310 run)")
    p.add_argument("--demo", action="store_true", help="make a demo pair in a temporary folder and open it")
    p.add_argument("--session", metavar="FILE", help="resume a saved bisection session")


def run(args: argparse.Namespace) -> int:
    if not args.demo and (not args.ref or not args.target):
        raise UsageError("give REF and TARGET dumps (or --demo); headless: dumptui bisect|compare|info|inspect|demo")
    if not args.demo:
        for path in (args.ref, args.target):
            if not os.path.exists(path):
                raise UsageError(f"{path}: no such file or folder")
    # a threshold out of range is a usage error before the screen opens (exit 2), not a panel after
    validate_thresholds(PairOptions.from_namespace(args))
    if not sys.stdout.isatty() and not os.environ.get("TEXTUAL_DRIVER"):  # textual-serve's browser is one
        # escape codes into a pipe or a file, and a screen nobody sees waiting for keys
        raise UsageError("the app needs a terminal and stdout is not one: for scripts use dumptui bisect REF TARGET")
    from dumptui.tui.app import end_process, run_app

    if not args.demo:
        end_process(run_app(PairOptions.from_namespace(args), session_file=args.session))
    import shutil
    import tempfile

    from dumptui.core.demo.residual import write_demo

    tmp = tempfile.mkdtemp(prefix="dumptui-demo-")
    try:
        info = write_demo(tmp)
        args.ref, args.target = info.ref, info.target
        code = run_app(PairOptions.from_namespace(args), session_file=args.session)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    end_process(code)
