"""`dumptui remedy`: precision or semantics for each culprit, and the files that keep it in float32."""

from __future__ import annotations

import argparse
import os
import sys

from dumptui.cli.common import console, refuse_inside
from dumptui.cli.options import REF_HELP, TARGET_HELP, compare_options, output_options
from dumptui.headless import (
    EXIT_USAGE,
    exit_code,
    open_session,
)
from dumptui.report.fmt import clean

NAME = "remedy"
DESCRIPTION = (
    "For each culprit: precision (the op at the device's precision, from the reference's inputs, gives the "
    "target's output) or semantics (another function), and the files that keep it in float32: ATC "
    "--keep_dtype, the MindSpore Lite converter's [ascend_context], MindSpore's to_float."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("ref", help=REF_HELP)
    p.add_argument("target", help=TARGET_HELP)
    p.add_argument("-o", "--out", metavar="DIR", help="write the remedy files into DIR (not inside a dump)")
    output_options(p)
    compare_options(p)


def run(args: argparse.Namespace) -> int:
    from dumptui.core.io import executor
    from dumptui.core.search.bisect import Bisection
    from dumptui.core.search.remedy import remedies
    from dumptui.report import jsonout
    from dumptui.report.data import flips_of
    from dumptui.report.reasons import say_all
    from dumptui.report.remedy import print_near_ties, print_remedies
    from dumptui.report.remedyfiles import remedy_section, write_files, write_named
    from dumptui.report.selection import near_tie_files, site_json

    with executor.command_processes(os.cpu_count() or 1) as ex:
        ex.start()  # forked before the index is read
        ref, target, session = open_session(args, kl=False, executor=ex)
        for path in (args.out, args.json):
            if path not in (None, jsonout.STDOUT):
                refuse_inside(path, (ref, target))
        bi = Bisection(session)
        bi.run()
        found = remedies(session, bi.roots())
        # no root, but selections that flipped on near-ties: the ops whose precision feeds them (no bug: exit 0)
        near_ties = flips_of(bi) if not found else ()
        written = write_files(args.out, found) if args.out and (found or not near_ties) else []
        if args.out and near_ties:
            written += write_named(args.out, near_tie_files(near_ties))
        code = exit_code(bool(found), bool(bi.undecided))
        if args.json is not None:
            body = {"remedy": remedy_section(found), "written": written, "near_ties": [site_json(s) for s in near_ties]}
            jsonout.write(jsonout.document("remedy", body, code), args.json)
        if args.json != jsonout.STDOUT:
            con = console()
            if not near_ties:
                print_remedies(con, found, written)
            else:
                print_near_ties(con, near_ties, written)
            if code == EXIT_USAGE:  # no culprit because none could be found: said, not left to the exit code
                print(f"dumptui: undecided (exit code 2): {clean('; '.join(say_all(bi.undecided)))}", file=sys.stderr)
    return code
