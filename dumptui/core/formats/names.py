"""Mapping op names as spelled in dump file names back to the full scope names of the graph.

File names replace `/`, `\\`, `.` and space by `_`, which is not reversible (`Expand/_Muls/Mul-op0` ->
`Expand__Muls_Mul-op0`), older releases keep only the last scope element (`Conv2D-op12`), and the `-opN` in a
file name can differ from the graph's for the same kernel (inserted Casts: dump `Cast-op0` = graph `Cast-op3`).
We map through the execution-order csv / graph node names and say, per op, how the name was found.
"""
from __future__ import annotations

import re
from collections import defaultdict

_OPN = re.compile(r"^(.*)-op(\d+)$")
_UNSAFE = re.compile(r"[/\\. ]")


def file_form(full_name: str) -> str:
    """The spelling MindSpore uses for a full scope name inside a dump file name."""
    return _UNSAFE.sub("_", full_name)


def split_opn(name: str) -> tuple[str, int | None]:
    m = _OPN.match(name)
    return (m.group(1), int(m.group(2))) if m else (name, None)


def resolve_names(file_names: list[str], graph_names: list[str]) -> dict[str, tuple[str, str]]:
    """{file op name: (full name, how)} for every file op name that the graph names explain.

    `graph_names` are the full scope names of the graph's kernels (execution order csv or graph file).
    """
    result: dict[str, tuple[str, str]] = {}
    if not graph_names:
        return result
    by_form: dict[str, list[str]] = defaultdict(list)
    by_leaf: dict[str, list[str]] = defaultdict(list)
    for g in graph_names:
        by_form[file_form(g)].append(g)
        by_leaf[g.rsplit("/", 1)[-1]].append(g)

    # Group both sides by the name without its -opN counter; within a group the counters may be offset.
    dump_groups: dict[str, list[tuple[int, str]]] = defaultdict(list)
    unnumbered: list[str] = []
    for f in file_names:
        base, n = split_opn(f)
        if n is None:
            unnumbered.append(f)
        else:
            dump_groups[base].append((n, f))
    graph_groups: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for g in graph_names:
        base, n = split_opn(file_form(g))
        if n is not None:
            graph_groups[base].append((n, g))

    for f in unnumbered:
        if len(by_form.get(f, ())) == 1:
            result[f] = (by_form[f][0], "execution order / graph")
        elif len(by_leaf.get(f, ())) == 1:
            result[f] = (by_leaf[f][0], "execution order / graph (short name)")

    for base, items in dump_groups.items():
        items.sort()
        cands = sorted(graph_groups.get(base, ()))
        if cands:
            dump_ns = [n for n, _ in items]
            graph_ns = [n for n, _ in cands]
            if dump_ns == graph_ns or set(dump_ns) <= set(graph_ns):
                by_n = dict(cands)
                for n, f in items:
                    result[f] = (by_n[n], "execution order / graph")
            elif len(items) == len(cands):
                # Same kernels, counters offset (seen with inserted Casts): pair them in counter order.
                for (n, f), (gn, g) in zip(items, cands):
                    how = "execution order / graph" if n == gn else f"graph (file says -op{n}, graph -op{gn}: paired in counter order)"
                    result[f] = (g, how)
            else:
                by_n = dict(cands)
                for n, f in items:
                    if n in by_n:
                        result[f] = (by_n[n], "execution order / graph (counter match only)")
            continue
        # Older releases: the file holds only the last scope element, e.g. Conv2D-op12.
        for _n, f in items:
            leafs = by_leaf.get(f, ())
            if len(leafs) == 1:
                result[f] = (leafs[0], "execution order / graph (short name)")
    return result
