"""`--rank all` / `--step all` for bisect and compare: every (rank, step) on its own, one report."""

from __future__ import annotations

import argparse
from dataclasses import replace
from typing import Any

from dumptui.cli.common import console
from dumptui.core.io.errors import UsageError
from dumptui.headless import (
    exit_code,
)
from dumptui.options.pair import PairOptions


def run_every_unit(args: argparse.Namespace, options: PairOptions, command: str, executor: Any = None) -> int:
    """`--rank all` / `--step all`: every (rank, step) searched on its own, one report, and where the
    divergence was born first across ranks (ordered by their communication ops) and steps."""

    from dumptui.core.compare.session import Session
    from dumptui.core.ranks.allunits import run_units
    from dumptui.core.ranks.units import Unit, pair_units, units
    from dumptui.core.search.bisect import Bisection, Root
    from dumptui.options.pair import make_session, open_pair
    from dumptui.report import jsonout
    from dumptui.report.documents import bisect_document, compare_document, compare_skipped, incomplete
    from dumptui.report.ranks import allranks_json, print_allranks

    if getattr(args, "csv", None) or getattr(args, "xlsx", None):
        raise UsageError("--csv and --xlsx write one rank and step: choose them with --rank N --step N")
    common, only_ref, only_target = pair_units(
        units(options.ref, options.rank, options.iteration), units(options.target, options.rank, options.iteration)
    )
    reports: dict = {}
    reads: dict = {}
    undecided: set = set()  # units where damage hides the answer: exit 2 unless another unit diverged

    def run(unit: Unit, carried_from_step: tuple[str, float] | None) -> tuple[Session, list[Root]]:
        chosen = replace(options, rank=unit.rank, iteration=unit.step)
        ref, target = open_pair(chosen)
        session = make_session(chosen, ref, target, kl=getattr(args, "kl", False))
        session.executor = executor
        session.carried_from_step = carried_from_step
        if command == "bisect":
            bi = Bisection(session, use_graph=not args.no_graph)
            bi.prepare()
            bi.run()
            bi.first_root()
            roots = bi.roots()
            reports[unit] = bisect_document(bi)
            if bi.undecided and not roots:
                undecided.add(unit)
        else:
            from dumptui.core.search.compare_all import compare_pair

            comparison = compare_pair(session, workers=args.workers)
            roots = comparison.roots
            if incomplete(comparison, compare_skipped(session, comparison)):
                undecided.add(unit)
            reports[unit] = compare_document(session, comparison)
        return session, roots

    def seen(unit: Unit, session: Session, roots: list[Root]) -> None:
        reads[unit] = session.tensors_read

    result = run_units(common, run, seen)
    result.only_ref, result.only_target = only_ref, only_target
    diverged = result.first is not None
    code = exit_code(diverged, bool(result.errors or undecided or not common))
    if args.json is not None:
        jsonout.write(jsonout.document(command, allranks_json(result, reports), code), args.json)
        if args.json == jsonout.STDOUT:
            return code
    con = console()
    if not common:
        con.print("no rank and step is in both dumps")
    print_allranks(con, result, reads)
    return code
