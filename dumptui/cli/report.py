"""`dumptui report`: the comparison's answer as one file to share (HTML with its plot, or Markdown)."""

from __future__ import annotations

import argparse
import os
import sys
import time

from dumptui.cli.common import refuse_inside
from dumptui.cli.options import REF_HELP, TARGET_HELP, compare_options, worker_count
from dumptui.headless import EXIT_USAGE, open_session, verbosity_of
from dumptui.report.fmt import clean

NAME = "report"
DESCRIPTION = (
    "Write the answer as one file to share: a self-contained HTML page (the verdict, the culprit and its proof, "
    "the preconditions, the roots, the error and gain along the execution order as a zoomable plot, the "
    "diverged ops) or Markdown for an issue tracker (--format md). The exit code is compare's."
)
FORMATS = ("html", "md")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("ref", help=REF_HELP)
    p.add_argument("target", help=TARGET_HELP)
    p.add_argument("-o", "--out", metavar="FILE", required=True, help="the file to write (- for stdout)")
    p.add_argument(
        "--format", choices=FORMATS, default=None, help="html or md (default: from the file's suffix, else html)"
    )
    p.add_argument("--workers", type=worker_count, default=None, help="worker processes (default: the number of CPUs)")
    p.add_argument("-q", "--quiet", action="store_true", help="print nothing but errors")
    p.add_argument("-v", "--verbose", action="store_true", help="say how long each step took")
    compare_options(p)


def run(args: argparse.Namespace) -> int:
    from dumptui.core.io import executor
    from dumptui.core.io.safeio import write_text
    from dumptui.core.search.compare_all import compare_pair
    from dumptui.report import share
    from dumptui.report.console import detail, note, progress_bar
    from dumptui.report.reasons import say_all

    fmt = args.format or ("md" if str(args.out).lower().endswith((".md", ".markdown")) else "html")
    verbosity = verbosity_of(args)
    with executor.command_processes(args.workers or os.cpu_count() or 1) as ex:
        ex.start()  # forked before the index is read and before the progress bar's thread
        ref, target, session = open_session(args, kl=False, command="compare", executor=ex)
        if args.out != "-":
            refuse_inside(args.out, (ref, target))
        t0 = time.perf_counter()
        with progress_bar("comparing", verbosity) as progress:
            comparison = compare_pair(session, progress=progress)
        detail(f"compared in {time.perf_counter() - t0:.2f} s", verbosity)
        text, code = share.report_text(session, comparison, fmt)
        if args.out == "-":
            print(text, end="")
        else:
            write_text(args.out, text)
            note(f"wrote {args.out} ({fmt}, {len(text.encode()):,} bytes)", verbosity)
        if code == EXIT_USAGE:  # the report says why; the exit code alone would leave a script guessing
            why = "; ".join(say_all(comparison.bisection.undecided)) or "not everything could be read"
            print(f"dumptui: undecided (exit code 2): {clean(why)}", file=sys.stderr)
    return code
