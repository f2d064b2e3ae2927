"""`dumptui remedy`: precision or semantics for each culprit, and the files that keep it in float32."""

from __future__ import annotations

import argparse

from dumptui.cli.common import console, refuse_inside
from dumptui.cli.options import REF_HELP, TARGET_HELP, compare_options, output_options
from dumptui.headless import (
    exit_code,
    open_session,
)

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
    from dumptui.core.search.bisect import Bisection
    from dumptui.core.search.remedy import remedies, write_files
    from dumptui.report import jsonout
    from dumptui.report.remedy import print_remedies, remedy_section

    ref, target, session = open_session(args, kl=False)
    for path in (args.out, args.json):
        if path not in (None, jsonout.STDOUT):
            refuse_inside(path, (ref, target))
    bi = Bisection(session)
    bi.run()
    found = remedies(session, bi.roots())
    written = write_files(args.out, found) if args.out else []
    code = exit_code(bool(found), bool(bi.undecided))
    if args.json is not None:
        jsonout.write(
            jsonout.document("remedy", {"remedy": remedy_section(found), "written": written}, code), args.json
        )
    if args.json != jsonout.STDOUT:
        print_remedies(console(), found, written)
    return code
