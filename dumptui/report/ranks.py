"""The report of a run over every rank and step (`--rank all`, `--step all`): one line per unit, then where the
divergence was born first across ranks and steps, and how it reached the other ranks. As a table, or as
plain data for `--json` (each unit's own report inside)."""

from __future__ import annotations

import math
from collections.abc import Mapping

from rich.console import Console
from rich.table import Table

from dumptui.core.ranks.allunits import AllUnits, StepVerdict, UnitOutcome
from dumptui.core.ranks.units import Unit
from dumptui.report.reasons import say, say_all
from dumptui.report.tables import name
from dumptui.report.unitwords import UNDECIDED, UNREADABLE, outcome_words


def unit_json(unit: Unit) -> dict:
    return {"rank": unit.rank, "step": unit.step}


def first_divergence(result: AllUnits) -> dict | None:
    """The first step with a divergence, the rank (or concurrent ranks) where it was born, the op, and how
    each other rank's divergence is explained."""
    verdict = result.first
    if verdict is None or verdict.cross is None:
        return None
    cross = verdict.cross
    firsts = [
        {
            "rank": verdict.units[r].rank,
            "op": verdict.first_roots[r].name,
            "op_type": verdict.first_roots[r].op_type,
            "position": verdict.first_roots[r].position + 1,
            "why": say(verdict.first_roots[r].why),
        }
        for r in cross.first
    ]
    carried = [
        {
            "rank": verdict.units[r].rank,
            "op": verdict.first_roots[r].name,
            "reached_at": reach.via,
            "position": math.ceil(reach.position) + 1,
            "from_rank": verdict.units[reach.from_rank].rank if reach.from_rank in verdict.units else reach.from_rank,
        }
        for r, reach in sorted(cross.explained.items())
    ]
    return {
        "step": verdict.step,
        "first": firsts,
        "concurrent": cross.concurrent,
        "carried": carried,
        "notes": say_all(cross.notes),
    }


def allranks_json(result: AllUnits, per_unit: dict[Unit, dict]) -> dict:
    """`per_unit`: each unit's own report (the single-unit JSON of the command)."""
    units = []
    for o in result.outcomes:
        entry = unit_json(o.unit)
        if o.error is not None:
            entry["error"] = o.error
        else:
            entry["report"] = per_unit.get(o.unit)
        units.append(entry)
    return {
        "units": units,
        "first_divergence": first_divergence(result),
        "only_ref": [unit_json(u) for u in result.only_ref],
        "only_target": [unit_json(u) for u in result.only_target],
    }


def _outcome_cells(o: UnitOutcome, reads: dict[Unit, int], undecided: Mapping[Unit, str]) -> list[str]:
    state, first, why = outcome_words(o, undecided)
    if state == UNREADABLE:
        return [o.unit.label, "[magenta]unreadable[/magenta]", name(why), ""]
    n = str(reads.get(o.unit, ""))
    if state == UNDECIDED:
        return [o.unit.label, "-", "[magenta]undecided[/magenta]: " + name(why), n]
    return [o.unit.label, name(first), name(why), n]


def print_allranks(
    console: Console, result: AllUnits, reads: dict[Unit, int], undecided: Mapping[Unit, str] | None = None
) -> None:
    """One line per unit (`reads`: tensor pairs read per unit), then the first divergence. `undecided`: the
    units whose answer is hidden (damage, every op ignored) and why: never said to be "no divergence"."""
    undecided = undecided or {}
    table = Table(show_edge=False, pad_edge=False, box=None, header_style="bold")
    for col in ("unit", "first root (position in execution order)", "why", "pairs read"):
        table.add_column(col, overflow="fold")
    for o in result.outcomes:
        table.add_row(*_outcome_cells(o, reads, undecided))
    console.print(table)
    for side, units in (("reference", result.only_ref), ("target", result.only_target)):
        if units:
            console.print(f"only in the {side}: " + "; ".join(u.label for u in units))
    verdict = result.first
    if (verdict is None or verdict.cross is None) and undecided:
        console.print(
            f"[bold magenta]Undecided[/bold magenta] (exit code 2): {len(undecided)} of {len(result.outcomes)} "
            "units could not be judged whole (said above), and no unit has a root of divergence"
        )
        return
    if verdict is None or verdict.cross is None:
        console.print("[bold green]No divergence[/bold green] in any rank or step")
        return
    _print_first(console, verdict)


def _print_first(console: Console, verdict: StepVerdict) -> None:
    cross = verdict.cross
    assert cross is not None
    step = f"step {verdict.step}, " if verdict.step else ""
    heads = []
    for r in cross.first:
        root = verdict.first_roots[r]
        rank = verdict.units[r].rank
        heads.append(f"{step}rank {rank}: {name(root.name)} ({name(root.op_type)}), position {root.position + 1}")
    if cross.concurrent:
        console.print(
            "[bold red]First divergence[/bold red] (concurrent: no communication orders these ranks): "
            + "; ".join(heads)
        )
    else:
        console.print(f"[bold red]First divergence[/bold red]: {heads[0]}")
    for r, reach in sorted(cross.explained.items()):
        src = verdict.units.get(reach.from_rank)
        root = verdict.first_roots[r]
        origin = f"rank {src.rank if src else reach.from_rank}'s divergence"
        if reach.position == root.position:
            how = f"brings in {origin}"
        else:
            how = f"after {origin} came in by {name(reach.via)} (position {math.ceil(reach.position) + 1})"
        console.print(f"  rank {verdict.units[r].rank}: {name(root.name)} (position {root.position + 1}) {how}")
    for note in cross.notes:
        console.print(f"  note: {name(say(note))}")
