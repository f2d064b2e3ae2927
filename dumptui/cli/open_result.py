"""`dumptui open-result`: msprobe's compare result in the terminal app."""

from __future__ import annotations

import argparse

NAME = "open-result"
DESCRIPTION = (
    "Open a result msprobe wrote (compare_result_*.csv or .xlsx) in the terminal app: its rows as a tree "
    "by name, sortable, with the first failing row in execution order."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("result", help="msprobe's compare_result_*.csv or .xlsx")
    p.add_argument("--dump", metavar="DIR", help="the NPU dump, to order API rows by its dump.json")


def run(args: argparse.Namespace) -> int:
    from dumptui.report.msprobe_read import read_result

    result = read_result(args.result, dump=args.dump)  # bad input: exit 2 before any screen
    from dumptui.tui.result_app import run_result_app

    return run_result_app(result)
