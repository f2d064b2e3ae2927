"""`dumptui convert`: CANN raw dump files to .npy."""

from __future__ import annotations

import argparse

from dumptui.cli.options import dump_options, output_options
from dumptui.headless import (
    EXIT_OK,
    EXIT_USAGE,
)

NAME = "convert"
DESCRIPTION = (
    "CANN raw dump files (Ascend310, or MindSpore on Ascend) to .npy files that np.load reads, "
    "in their original shape; no CANN needed. Exit 2 when some tensor could not be converted."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("raw", help="the raw dump folder (dump_path, or any folder below it)")
    p.add_argument("-o", "--out", required=True, help="folder for the .npy files (not inside RAW)")
    output_options(p, "the summary as JSON")
    dump_options(p)


def run(args: argparse.Namespace) -> int:
    from dumptui.core.tools.convert import convert

    report = convert(args.raw, args.out, rank=args.rank, graph=args.graph, iteration=args.iteration)
    code = EXIT_OK if report.complete else EXIT_USAGE
    if args.json is not None:
        from dumptui.report import jsonout

        body = {
            "out": report.out,
            "written": len(report.written),
            "layouts": dict(report.layouts),
            "not_converted": [{"what": w, "reason": r} for w, r in report.not_converted],
            "overflow": report.overflow,
        }
        jsonout.write(jsonout.document("convert", body, code), args.json)
    else:
        from dumptui.report.fmt import clean

        print("\n".join(clean(line) for line in report.summary_lines()))
    return code
