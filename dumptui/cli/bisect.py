"""`dumptui bisect`: the automatic bisection to the first op whose inputs agree and outputs diverge."""

from __future__ import annotations

import argparse

from dumptui.cli.common import ALL, console, refuse_inside
from dumptui.cli.options import REF_HELP, TARGET_HELP, compare_options, output_options
from dumptui.headless import (
    exit_code,
    open_session,
    verbosity_of,
)
from dumptui.options.pair import PairOptions

NAME = "bisect"
DESCRIPTION = "Bisect automatically to the first op whose inputs agree and outputs diverge."


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("ref", help=REF_HELP)
    p.add_argument("target", help=TARGET_HELP)
    p.add_argument("--no-graph", action="store_true", help="bisect over the execution order only")
    output_options(p)
    compare_options(p, every=True)


def run(args: argparse.Namespace) -> int:
    import os
    import time

    from dumptui.core.io import executor
    from dumptui.core.model.dump import no_cyclic_gc
    from dumptui.core.search.bisect import Bisection
    from dumptui.report import jsonout
    from dumptui.report.console import detail, progress_bar

    verbosity = verbosity_of(args)
    options = PairOptions.from_namespace(args)
    # the worker processes a noisy pair's scan reads with (spread.py); a clean pair's bisection leaves them idle
    ex = executor.command_processes(os.cpu_count() or 1)
    with ex:  # closed (ctrl+c: killed) at the end
        if ALL in (options.rank, options.iteration):
            from dumptui.cli.every_unit import run_every_unit

            return run_every_unit(args, options, "bisect", ex)
        # no cyclic GC for the command's life (its workers' too): see no_cyclic_gc
        with no_cyclic_gc():
            ex.start()  # forked before the index is read and before any thread of ours
            ref, target, session = open_session(args, kl=False, executor=ex)
            if args.json not in (None, jsonout.STDOUT):
                refuse_inside(args.json, (ref, target))
            bi = Bisection(session, use_graph=not args.no_graph)
            t0 = time.perf_counter()
            with progress_bar("judging every op", verbosity) as progress:
                bi.prepare(progress)
            bi.run()
        detail(f"bisected in {time.perf_counter() - t0:.2f} s, {session.tensors_read} tensor pairs read", verbosity)
        culprit = bi.first_root()
        code = exit_code(culprit is not None, bool(bi.undecided))
        if args.json is not None:
            from dumptui.report.documents import bisect_document

            body = bisect_document(bi)
            jsonout.write(jsonout.document("bisect", body, code), args.json)
        if args.json == jsonout.STDOUT:
            return code
        con = console()
        if verbosity.quiet:
            from dumptui.report.reasons import say_all
            from dumptui.report.tables import name

            con.print(
                f"culprit: #{culprit.pair.index + 1} {name(culprit.pair.label)} ({name(culprit.pair.op_type)})"
                if culprit is not None
                else "undecided: " + name("; ".join(say_all(bi.undecided)))
                if bi.undecided
                else "no root of divergence"
            )
            if culprit is not None and bi.undecided:
                con.print("incomplete: " + name("; ".join(say_all(bi.undecided))))
        else:
            from dumptui.report.tables import print_bisect

            print_bisect(con, bi)
        return code
