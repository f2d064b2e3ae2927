"""`dumptui compare`: every aligned tensor pair judged in context, the same roots as bisect; --csv, --xlsx, --json, --dask."""

from __future__ import annotations

import argparse
from typing import Any

from dumptui.cli.common import ALL, console, refuse_inside
from dumptui.cli.options import REF_HELP, TARGET_HELP, compare_options, output_options, worker_count
from dumptui.core.io.errors import UsageError
from dumptui.headless import (
    exit_code,
    open_session,
    print_compare,
    verbosity_of,
    write_csv_output,
)
from dumptui.options.pair import PairOptions

NAME = "compare"
DESCRIPTION = "Compare every aligned tensor pair, in execution order."


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("ref", help=REF_HELP)
    p.add_argument("target", help=TARGET_HELP)
    p.add_argument("--only-diverged", action="store_true", help="only tensors whose verdict is bad")
    p.add_argument(
        "--csv",
        metavar="FILE",
        help="write every compared tensor pair as CSV ('-': stdout): msprobe's columns, then dumptui's",
    )
    p.add_argument(
        "--csv-profile",
        choices=("msprobe", "full"),
        default="msprobe",
        help="msprobe: msprobe 26.x's columns, order and meanings (default); full: dumptui's own richer table",
    )
    p.add_argument(
        "--xlsx", metavar="FILE", help="msprobe's table as .xlsx with its red/yellow rows (needs dumptui[xlsx])"
    )
    output_options(p)
    p.add_argument(
        "--kl",
        action="store_true",
        help="also compute the KL divergence (its logarithms make a compare about 1.5x slower)",
    )
    p.add_argument("--workers", type=worker_count, help="worker processes (default: the number of CPUs)")
    p.add_argument(
        "--dask",
        metavar="SCHEDULER",
        help="compute the tensor pairs as Dask distributed tasks: a scheduler address (tcp://host:8786) "
        "or local:N for N local worker processes (needs: pip install 'dumptui[dask]')",
    )
    p.add_argument(
        "--worker-path",
        action="append",
        default=[],
        metavar="LOCAL=REMOTE",
        help="with --dask: files under LOCAL here are under REMOTE on the workers (repeatable)",
    )
    compare_options(p, every=True)


def _executor(args: argparse.Namespace) -> Any:
    """Where the run's work runs (closed at its end, a `with`): the Dask cluster `--dask` asks for, else the
    command's worker processes (`--workers`, default one per CPU)."""
    if not args.dask:
        if args.worker_path:
            raise UsageError("--worker-path goes with --dask")
        import os

        from dumptui.core.io import executor

        return executor.command_processes(args.workers or os.cpu_count() or 1)
    from dumptui.core.compare.daskexec import DaskCluster, parse_path_map

    return DaskCluster(args.dask, parse_path_map(args.worker_path))


def _compare_one(args: argparse.Namespace, executor: Any) -> int:
    import time

    from dumptui.core.model.dump import no_cyclic_gc
    from dumptui.core.search.compare_all import compare_pair
    from dumptui.report import jsonout
    from dumptui.report.console import detail, note, progress_bar
    from dumptui.report.documents import compare_document, compare_skipped
    from dumptui.report.documents import incomplete as compare_incomplete

    verbosity = verbosity_of(args)
    if args.csv == jsonout.STDOUT and args.json == jsonout.STDOUT:
        raise UsageError("--csv - and --json - both want stdout: send one of them to a file")
    if args.xlsx == jsonout.STDOUT:
        raise UsageError("--xlsx writes a file: give its name (a spreadsheet is binary; --csv - writes to stdout)")
    if args.xlsx:
        from dumptui.report.msprobe_xlsx import require_openpyxl

        require_openpyxl(args.xlsx)  # before the compare, not after minutes of it
    # no cyclic GC for the command's life (its workers' too): see no_cyclic_gc
    with no_cyclic_gc():
        # the worker processes of every batch, started (forked) before the index is read and before any thread
        # of ours (core/io/executor.py); a Dask cluster is running already
        executor.start()
        ref, target, session = open_session(args, kl=args.kl, command="compare", executor=executor)
        for path in (args.csv, args.json, args.xlsx):
            if path not in (None, jsonout.STDOUT):
                refuse_inside(path, (ref, target))
        t0 = time.perf_counter()
        with progress_bar("comparing", verbosity) as progress:
            comparison = compare_pair(session, progress=progress)
    detail(f"compared in {time.perf_counter() - t0:.2f} s, {session.tensors_read} tensor pairs read", verbosity)
    results = comparison.results
    diverged = bool(comparison.roots)
    incomplete = compare_incomplete(comparison, compare_skipped(session, comparison))
    code = exit_code(diverged, incomplete)
    table = None
    if args.csv or args.xlsx:
        from dumptui.report.msprobe_csv import build_table

        if args.xlsx or args.csv_profile == "msprobe":
            with progress_bar("computing msprobe's columns", verbosity) as progress:
                table = build_table(ref, target, results, comparison.judgement, args.only_diverged, progress)
    if args.csv:
        n = write_csv_output(args.csv, args.csv_profile, results, comparison, table, args.only_diverged)
        where = "stdout" if args.csv == jsonout.STDOUT else args.csv
        mode = f", msprobe mode {table.mode}" if table is not None and args.csv_profile == "msprobe" else ""
        note(f"wrote {n} rows ({args.csv_profile} profile{mode}) to {where}", verbosity)
    if args.xlsx:
        from dumptui.report.msprobe_xlsx import write_xlsx

        assert table is not None
        hl = write_xlsx(table, args.xlsx)
        note(f"wrote {len(table.rows)} rows to {args.xlsx} ({len(hl.red)} red, {len(hl.yellow)} yellow)", verbosity)
    if args.json is not None:
        body = compare_document(session, comparison, args.only_diverged)
        jsonout.write(jsonout.document("compare", body, code), args.json)
    if jsonout.STDOUT in (args.csv, args.json):
        return code  # stdout carries the CSV or the JSON
    print_compare(console(), ref, target, session, comparison, verbosity, args.only_diverged, incomplete)
    return code


def run(args: argparse.Namespace) -> int:
    options = PairOptions.from_namespace(args)
    with _executor(args) as executor:
        if ALL in (options.rank, options.iteration):
            from dumptui.cli.every_unit import run_every_unit

            return run_every_unit(args, options, "compare", executor)
        return _compare_one(args, executor)
