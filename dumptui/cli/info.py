"""`dumptui info`: what a dump holds."""

from __future__ import annotations

import argparse
import contextlib
from typing import TYPE_CHECKING

from dumptui.cli.common import console
from dumptui.cli.options import dump_options, output_options
from dumptui.headless import (
    EXIT_OK,
)

if TYPE_CHECKING:
    from rich.console import Console

    from dumptui.core.model.dump import Dump

NAME = "info"
DESCRIPTION = "What a dump holds: format, version, ranks/graphs/iterations, counts, unreadable files."


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("dump")
    output_options(p)
    dump_options(p)


def run(args: argparse.Namespace) -> int:
    from dumptui.core.formats import detect
    from dumptui.core.formats.survey import survey
    from dumptui.core.model.dump import MSPROBE_FORMATS, FormatName
    from dumptui.core.ranks.units import layout as rank_steps

    fmt_name = detect(args.dump)
    layout = survey(args.dump) if fmt_name in (FormatName.MINDSPORE_NPY, FormatName.MINDSPORE_STATISTIC) else None
    if fmt_name in MSPROBE_FORMATS:
        # step{S}/rank{R}/: the same shape as MindSpore's (rank -> graph -> step -> files); msprobe has no graphs
        layout = {rank: {"-": dict.fromkeys(steps, 1)} for rank, steps in rank_steps(args.dump).items()} or None
    dump, chosen_note = _opened(args, fmt_name, layout)
    unreadable, repaired, total = _files(dump)
    if args.json is not None:
        from dumptui.report import data, jsonout

        out = data.dump_summary(dump)
        out.update(
            {
                "bytes": total,
                "layout": layout,
                "choice": chosen_note,
                "unreadable": [{"path": p, "reason": r} for p, r in unreadable],
                "repaired": [{"path": p, "reason": r} for p, r in repaired],
            }
        )
        jsonout.write(jsonout.document("info", out, EXIT_OK), args.json)
        return EXIT_OK
    from dumptui.report.reasons import say
    from dumptui.report.tables import name

    con = console()
    con.print(f"[bold]{name(dump.path)}[/bold]")
    con.print(f"  format:      {dump.format} ({name(say(dump.variant))})")
    con.print(
        f"  version:     {name('MindSpore ' + dump.version) if dump.version else 'unknown'}"
        f"{'  device: ' + name(dump.device) if dump.device else ''}"
    )
    if layout:
        _print_layout(con, layout)
    if chosen_note:
        con.print(f"  [yellow]choose:[/yellow]      {name(chosen_note)}")
    _print_read(con, dump, total)
    _print_files(con, dump, unreadable, repaired)
    return EXIT_OK


def _opened(args: argparse.Namespace, fmt_name: str | None, layout: dict | None) -> tuple[Dump, str | None]:
    """The dump asked for; with several ranks/iterations and none chosen, the first (and the note saying so)."""
    from dumptui.core.formats import open_dump
    from dumptui.core.io.errors import DumpError

    chosen_note = None
    try:
        dump = open_dump(args.dump, rank=args.rank, graph=args.graph, iteration=args.iteration, fmt=fmt_name)
    except DumpError as e:
        if not layout:
            raise
        # Several ranks/iterations: show them all, and count the first choice (saying so).
        rank = args.rank or next(iter(layout))
        graphs = layout.get(rank, {})
        its = sorted({it for g in graphs.values() for it in g}, key=lambda v: (len(v), v))
        iteration = args.iteration or (its[0] if its else None)
        dump = open_dump(
            args.dump, rank=None if rank == "-" else rank, graph=args.graph, iteration=iteration, fmt=fmt_name
        )
        chosen_note = f"{e.reason}; counts below are for rank {rank}, step {iteration}"
    return dump, chosen_note


def _files(dump: Dump) -> tuple[list[tuple[str, str]], list[tuple[str, str]], int]:
    """(unreadable files and why, repaired files and how, bytes on disk) of the dump's tensors."""
    from dumptui.core.io.safeio import regular_size
    from dumptui.report.reasons import say

    unreadable: list[tuple[str, str]] = []
    repaired: list[tuple[str, str]] = []
    total = 0
    for op in dump.ops:
        for t in op.tensors():
            if not t.has_data:
                continue
            lay = t.layout()
            with contextlib.suppress(OSError):
                total += t.size_on_disk if t.size_on_disk is not None else regular_size(t.path)
            if lay.problem:
                unreadable.append((t.path, say(lay.problem)))
            elif lay.repaired:
                repaired.append((t.path, say(lay.repaired)))
    unreadable = list(dict.fromkeys(unreadable))  # several tensors of one raw file share its problem
    repaired = list(dict.fromkeys(repaired))
    return unreadable, repaired, total


def _print_layout(con: Console, layout: dict) -> None:
    """Each rank's graphs and iterations (msprobe: its steps)."""
    from dumptui.report.tables import name

    for rank, graphs in layout.items():
        parts = []
        if list(graphs) == ["-"]:  # msprobe: steps, no graphs and no file counts per step
            listed = [s for s in graphs["-"] if s]
            word = "steps" if len(listed) > 1 else "step"
            con.print(f"  rank {name(rank)}: {word} {name(', '.join(listed) or '-')}")
            continue
        for g, files_by_iteration in graphs.items():
            parts.append(
                f"graph {name(g)}: iteration{'s' if len(files_by_iteration) > 1 else ''} "
                + ", ".join(f"{name(it)} ({n} files)" for it, n in files_by_iteration.items())
            )
        con.print(
            f"  rank {name(rank)}:" + ("\n    " if len(parts) > 1 else " ") + "\n    ".join(parts)
            if parts
            else f"  rank {name(rank)}: no data"
        )


def _print_read(con: Console, dump: Dump, total: int) -> None:
    """What was read: rank, graphs, iterations; ops, tensors, order, notes."""
    from dumptui.report import fmt
    from dumptui.report.reasons import INFERRED_FLOW, say, say_all
    from dumptui.report.tables import name

    kinds: dict[str, int] = {}
    for op in dump.ops:
        kinds[op.kind] = kinds.get(op.kind, 0) + 1
    if dump.graphs:
        con.print(
            f"  read:        rank {name(dump.rank or '-')}, graphs {name(', '.join(dump.graphs))}, "
            f"iterations {name(', '.join(f'{g}:{i}' for g, i in dump.iterations.items()) or '-')}"
        )
    else:  # msprobe: a rank folder (rank0, proc12) and a step, no graphs
        read_steps = ", ".join(dict.fromkeys(i for i in dump.iterations.values() if i))
        con.print(f"  read:        {name(dump.rank or 'rank -')}, step {name(read_steps or '-')}")
    con.print("  ops:         " + ", ".join(f"{n} {k}s" for k, n in kinds.items()))
    con.print(f"  tensors:     {dump.tensor_count()} ({fmt.nbytes(total)})")
    graph = INFERRED_FLOW if dump.flow_inferred else dump.graph_source or "none"
    con.print(f"  order:       {say(dump.order_source)}; graph: {name(graph)}")
    for n in say_all(dump.notes):
        con.print(f"  note:        {name(n)}")


def _print_files(con: Console, dump: Dump, unreadable: list[tuple[str, str]], repaired: list[tuple[str, str]]) -> None:
    """The files that could not be read, those repaired, the warnings; or that every one is readable."""
    from dumptui.core.model.dump import Severity
    from dumptui.report.reasons import say
    from dumptui.report.tables import name

    problems = list(
        dict.fromkeys([(p.path, say(p.reason)) for p in dump.problems if p.severity == Severity.ERROR] + unreadable)
    )
    for path, reason in problems:
        con.print(f"  [magenta]unreadable[/magenta] {name(path)}: {name(reason)}")
    for path, reason in repaired:
        con.print(f"  [yellow]damaged[/yellow] {name(path)}: {name(reason)}")
    for p in dump.problems:
        if p.severity != Severity.ERROR:
            con.print(f"  [dim]warning[/dim] {name(p.path)}: {name(say(p.reason))}")
    if problems:
        files = len({path for path, _reason in problems})
        con.print(f"  [magenta]{files} file{'s' if files != 1 else ''} unreadable[/magenta] (listed above)")
    elif not repaired:
        con.print("  every tensor file is readable")
