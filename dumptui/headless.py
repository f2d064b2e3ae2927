"""What the headless commands of cli/ share: the exit codes and their one rule, opening a pair with its
indexing progress and -v timings, writing `--csv` (either profile, `-` = stdout), the compare text report, and
the one way a command fails (exit 2, the message on stderr, and an error document when JSON was asked for)."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from typing import IO, TYPE_CHECKING

from dumptui.core.io.errors import UsageError
from dumptui.core.model.dump import Severity
from dumptui.options.pair import SIDES, PairOptions, make_session, many_files, open_pair
from dumptui.report import jsonout
from dumptui.report.console import NORMAL, QUIET, VERBOSE, Verbosity, detail, stage_bars
from dumptui.report.documents import EXIT_DIVERGED, EXIT_OK, EXIT_USAGE, exit_code  # noqa: F401  (the one rule)
from dumptui.report.reasons import say, say_all

if TYPE_CHECKING:
    from rich.console import Console

    from dumptui.core.compare.results import OpResult
    from dumptui.core.compare.session import Session
    from dumptui.core.io.executor import Executor
    from dumptui.core.model.dump import Dump
    from dumptui.core.search.compare_all import Comparison
    from dumptui.report.msprobe_csv import MsprobeTable

EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what a shell reports for a tool whose reader closed the pipe
EXIT_INTERRUPTED = 130  # 128 + SIGINT: ctrl+c, as a shell reports it


def verbosity_of(args: argparse.Namespace) -> Verbosity:
    quiet, verbose = getattr(args, "quiet", False), getattr(args, "verbose", False)
    if quiet and verbose:
        raise UsageError("-q (only the answer) and -v (more detail) ask for opposite things: give one of them")
    return Verbosity(QUIET if quiet else VERBOSE if verbose else NORMAL)


def open_session(
    args: argparse.Namespace, kl: bool, command: str = "bisect", executor: Executor | None = None
) -> tuple[Dump, Dump, Session]:
    """Index both dumps (on a terminal: each dump's stage and count as it is indexed) and align them; -v says
    how long it took. A training step's earlier steps are searched as `command` searches (make_session).
    `executor`: the command's, where the session's work runs (the earlier steps' searches too)."""
    verbosity = verbosity_of(args)
    options = PairOptions.from_namespace(args)
    t0 = time.perf_counter()
    with stage_bars("indexing the dumps", verbosity) as stages:
        # a big dump missing from the index cache is indexed by a process of its own, both at once
        ref, target = open_pair(
            options,
            in_processes=any(many_files(options.path(s)) for s in SIDES),
            indexing=(lambda side, *rest: stages(f"indexing {side}", *rest)) if stages else None,
        )
        session = make_session(options, ref, target, kl=kl, command=command, executor=executor)
    counts = ", ".join(f"{n} {say(how)}" for how, n in session.alignment.counts().items())
    detail(f"indexed and aligned in {time.perf_counter() - t0:.2f} s: {counts}", verbosity)
    for d in (ref, target):
        for n in say_all(d.notes):
            detail(f"{d.path}: {n}", verbosity)
    return ref, target, session


def write_csv_output(
    target: str,
    profile: str,
    results: list[OpResult],
    comparison: Comparison,
    table: MsprobeTable | None,
    only_bad: bool,
) -> int:
    """`--csv FILE|-` in the chosen profile; the number of rows written."""

    from dumptui.report.csvprofiles import write_profile

    def write(fh: IO[str]) -> int:
        session = comparison.bisection.session
        return write_profile(fh, profile, session.ref, session.target, results, comparison.judgement, only_bad, table)

    if target == jsonout.STDOUT:
        n = write(sys.stdout)
        sys.stdout.flush()
        return n
    from dumptui.core.io.safeio import open_output

    with open_output(target, newline="") as fh:
        return write(fh)


def print_compare(
    con: Console,
    ref: Dump,
    target: Dump,
    session: Session,
    comparison: Comparison,
    verbosity: Verbosity,
    only_bad: bool,
    incomplete: bool = False,
) -> None:
    """The compare text report; with -q only its last line (the roots, or why there are none). `incomplete`:
    not everything could be read or judged (with no root: Undecided, exit 2; with roots, said beside them)."""
    from dumptui.report import data
    from dumptui.report.tables import compare_summary, compare_table, dump_line, name, print_skipped

    roots = comparison.roots
    benign = data.benign_evidence(comparison.bisection)
    if roots:
        conclusion = "[bold red]Roots of divergence[/bold red] (where error is born, in execution order): " + "; ".join(
            f"#{r.pair.index + 1} {name(r.pair.label)}" for r in roots
        )
        if incomplete:
            why = "; ".join(say_all(comparison.bisection.undecided)) or "not everything could be read"
            conclusion += f"\n[bold magenta]Incomplete[/bold magenta] (a root may lie there too): {name(why)}"
    elif incomplete:
        why = "; ".join(say_all(comparison.bisection.undecided)) or (
            "no root of divergence among what could be read, but not everything could be read"
        )
        conclusion = f"[bold magenta]Undecided[/bold magenta] (exit code 2): {name(why)}"
    else:
        conclusion = "[bold green]No root of divergence[/bold green]" + (
            ": " + name("; ".join(benign)) if benign else ""
        )
    if verbosity.quiet:
        con.print(conclusion)
        return
    con.print(f"[bold]ref[/bold]:    {dump_line(ref)}")
    con.print(f"[bold]target[/bold]: {dump_line(target)}")
    con.print(compare_table(comparison.results, only_bad=only_bad, judgement=comparison.judgement))
    con.print(compare_summary(comparison.results))
    con.print(conclusion)
    for warning in session.alignment.warnings:
        con.print(f"[yellow]note:[/yellow] {name(say(warning))}")
    damaged = data.damaged_tensors(session)
    for d in damaged:
        con.print(
            f"[magenta]{'unreadable' if d['problem'] else 'repaired'}[/magenta] ({d['side']}) "
            f"{name(d['path'])}: {name(d['problem'] or d['repaired'])}"
        )
    shown = {d["path"] for d in damaged}
    for side, dump in (("ref", ref), ("target", target)):
        for p in dump.problems:
            if p.severity == Severity.ERROR and p.path not in shown:
                shown.add(p.path)
                con.print(f"[magenta]unreadable[/magenta] ({side}) {name(p.path)}: {name(say(p.reason))}")
    if any(d["repaired"] and not d["problem"] for d in damaged):
        con.print("(* = compared as repaired data: the payload read with the dtype its size implies)")
    print_skipped(con, session, [t for r in comparison.results for t in r.inputs + r.outputs])


def fail(sub: str | None, args: argparse.Namespace | None, rest: list[str], path: str, reason: str, text: str) -> int:
    """Exit 2 with the message on stderr and, when JSON was asked for, an error document where it was to go
    (stdout when the arguments could not even be parsed, or the file cannot be written)."""
    from dumptui.report.fmt import clean

    print(f"dumptui: {clean(text)}", file=sys.stderr)  # the JSON error document keeps path and reason raw
    target = getattr(args, "json", None) if args is not None else ("-" if "--json" in rest else None)
    if target is not None and target != jsonout.STDOUT and _inside_given_dumps(target, args):
        target = jsonout.STDOUT  # the refusal itself is not written where it refused to write
    if target is not None:
        doc = jsonout.error_document(sub or "app", path, reason, EXIT_USAGE)
        try:
            jsonout.write(doc, target)
        except OSError:
            with contextlib.suppress(
                OSError
            ):  # standard output failing too (/dev/full): the message on stderr says it all
                jsonout.write(doc, jsonout.STDOUT)
    return EXIT_USAGE


def _inside_given_dumps(path: str, args: argparse.Namespace | None) -> bool:
    """Whether `path` is inside a dump folder named on the command line (the dumps may not have opened)."""
    from dumptui.core.index.cache import inside

    for given in (getattr(args, name, None) for name in ("ref", "target", "dump")):
        if isinstance(given, str) and given:
            root = given if os.path.isdir(given) else os.path.dirname(os.path.abspath(given))
            if inside(path, root):
                return True
    return False
