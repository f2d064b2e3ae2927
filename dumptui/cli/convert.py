"""`dumptui convert`: CANN raw dump files to .npy."""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING

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


if TYPE_CHECKING:
    from dumptui.core.tools.convert import ConvertReport


def run(args: argparse.Namespace) -> int:
    from dumptui.core.tools.convert import convert
    from dumptui.report.reasons import say

    report = convert(args.raw, args.out, rank=args.rank, graph=args.graph, iteration=args.iteration)
    code = EXIT_OK if report.complete else EXIT_USAGE
    if args.json is not None:
        from dumptui.report import jsonout

        body = {
            "out": report.out,
            "written": len(report.written),
            "layouts": dict(report.layouts),
            "not_converted": [{"what": w, "reason": say(r)} for w, r in report.not_converted],
            "overflow": report.overflow,
        }
        jsonout.write(jsonout.document("convert", body, code), args.json)
    else:
        from dumptui.report.fmt import clean

        print("\n".join(clean(line) for line in summary_lines(report)))
    return code


def summary_lines(report: ConvertReport) -> list[str]:
    """What `dumptui convert` did, in words."""
    from dumptui.report.reasons import say

    lines = [
        f"converted {len(report.written)} tensors of {report.ops} ops from {report.source} to {report.out} "
        f"({report.bytes_written} B)"
    ]
    if report.layouts:
        lines.append(
            "  put back from device layouts into the original shape: "
            + ", ".join(f"{fmt} {n}" for fmt, n in sorted(report.layouts.items()))
        )
    if report.widened_bf16:
        lines.append(
            f"  bfloat16 saved as float32 (numpy has no bfloat16; the name says bfloat16): {report.widened_bf16}"
        )
    if report.numbered:
        lines.append(
            f"  {report.numbered} names too long for a file: numbered, see {os.path.join(report.out, 'mapping.csv')}"
        )
    if report.not_converted:
        lines.append(f"not converted: {len(report.not_converted)}")
        lines += [f"  {what}: {say(why)}" for what, why in report.not_converted]
    if report.overflow:
        lines.append(f"overflow records (Opdebug; not tensors of an op, not converted): {len(report.overflow)}")
        lines += [f"  {path}" for path in report.overflow]
    return lines
