"""The remedy of each culprit (core/search/remedy.py) as JSON data, as text, and as files in a folder."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console

from dumptui.core.search.remedy import Remedy
from dumptui.core.search.selection import FlipSite
from dumptui.report.reasons import remedy_sentence
from dumptui.report.remedyfiles import remedy_files
from dumptui.report.selection import site_sentence
from dumptui.report.tables import name


def print_remedies(con: Console, found: list[Remedy], written: list[str]) -> None:
    if not found:
        con.print("[bold green]No culprit[/bold green]: nothing to remedy")
    for r in found:
        style = {"precision": "bold yellow", "semantics": "bold red"}.get(r.cause, "bold")
        con.print(f"[{style}]{r.cause}[/] {name(r.target_name)} ({name(r.target_type)})")
        con.print(f"  {name(remedy_sentence(r))}")
    for path in written:
        con.print(f"wrote {name(path)}")
    files = remedy_files(found)
    if not written:
        for fname in ("keep_dtype.cfg", "op_precision.ini", "converter_ascend.cfg", "to_float32.py"):
            if fname in files:
                con.print(f"[bold]{fname}[/bold]")
                for line in files[fname].rstrip("\n").split("\n"):  # line by line: a newline is not escaped
                    con.print(name(line), highlight=False)


def print_near_ties(con: Console, sites: Sequence[FlipSite], written: Sequence[str] = ()) -> None:
    """The flips of a pair with no root, and the ops whose precision feeds them (`dumptui remedy`)."""
    con.print("[bold green]No culprit[/bold green]: no op computes anything wrong; selections flipped on near-ties:")
    for s in sites:
        con.print(f"  {name(site_sentence(s))}")
    feeding = list(dict.fromkeys(n for s in sites for n in s.feeding_target))
    if feeding:
        con.print(f"To keep the reference's selections, keep in float32: {name(', '.join(feeding))}")
    for path in written:
        con.print(f"wrote {name(path)}")
