"""`--rank all` / `--step all` for bisect and compare: every (rank, step) on its own, one report."""

from __future__ import annotations

import argparse
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
    from dumptui.core.search.bisect import Root
    from dumptui.options.pair import search_unit
    from dumptui.report import jsonout
    from dumptui.report.cause import why
    from dumptui.report.documents import bisect_document, compare_document, compare_skipped, incomplete
    from dumptui.report.ranks import allranks_json, print_allranks
    from dumptui.report.reasons import say_all

    if getattr(args, "csv", None) or getattr(args, "xlsx", None):
        raise UsageError("--csv and --xlsx write one rank and step: choose them with --rank N --step N")
    common, only_ref, only_target = pair_units(
        units(options.ref, options.rank, options.iteration), units(options.target, options.rank, options.iteration)
    )
    reports: dict = {}
    reads: dict = {}
    checks: dict = {}  # unit -> its preconditions: a root's why as its own report words it (report/cause.py)
    undecided: dict = {}  # unit -> why its answer is hidden (damage, every op ignored): exit 2 unless one diverged

    def run(unit: Unit, carried_from_step: tuple[str, float] | None) -> tuple[Session, list[Root]]:
        # the one search a single unit's run makes too (options/pair.search_unit): the same answer per unit
        session, search, roots = search_unit(
            options,
            unit,
            carried_from_step,
            command,
            kl=getattr(args, "kl", False),
            use_graph=not getattr(args, "no_graph", False),
            executor=executor,
        )
        checks[unit] = (search.checks if command == "bisect" else search.bisection.checks) or []
        if command == "bisect":
            reports[unit] = bisect_document(search)
            if search.undecided and not roots:
                undecided[unit] = "; ".join(say_all(search.undecided))
        else:
            if incomplete(search, compare_skipped(session, search)):
                undecided[unit] = "; ".join(say_all(search.bisection.undecided)) or "not everything could be read"
            reports[unit] = compare_document(session, search)
        return session, roots

    def seen(unit: Unit, session: Session, roots: list[Root]) -> None:
        reads[unit] = session.tensors_read

    result = run_units(common, run, seen, why_of=lambda unit, root: why(root, checks[unit]))
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
    print_allranks(con, result, reads, undecided)
    return code
