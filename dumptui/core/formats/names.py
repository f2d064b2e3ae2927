"""Mapping op names as spelled in dump file names back to the full scope names of the graph.

File names replace `/`, `\\`, `.` and space by `_`, which is not reversible (`Expand/_Muls/Mul-op0` ->
`Expand__Muls_Mul-op0`), older releases keep only the last scope element (`Conv2D-op12`), and the `-opN` in a
file name can differ from the graph's for the same kernel (inserted Casts: dump `Cast-op0` = graph `Cast-op3`).
We map through the execution-order csv / graph node names and say, per op, how the name was found.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable

from dumptui.core.model.dump import NameSource

_OPN = re.compile(r"^(.*)-op(\d+)$")
_UNSAFE = re.compile(r"[/\\. ]")


def file_form(full_name: str) -> str:
    """The spelling MindSpore uses for a full scope name inside a dump file name."""
    return _UNSAFE.sub("_", full_name)


def split_opn(name: str) -> tuple[str, int | None]:
    m = _OPN.match(name)
    return (m.group(1), int(m.group(2))) if m else (name, None)


EXACT, SHORT = NameSource.GRAPH, NameSource.GRAPH_SHORT

# A name's counter and the name it belongs to, per name without its counter: {base: [(N, name), ...]}
_Counted = dict[str, list[tuple[int, str]]]


def _by_counter(names: list[str], form: Callable[[str], str]) -> tuple[_Counted, list[str]]:
    """The names grouped by their spelling (`form`) without the -opN counter, and those without a counter."""
    groups: _Counted = defaultdict(list)
    unnumbered: list[str] = []
    for name in names:
        base, n = split_opn(form(name))
        if n is None:
            unnumbered.append(name)
        else:
            groups[base].append((n, name))
    return groups, unnumbered


def _pair_counters(files: list[tuple[int, str]], graph: list[tuple[int, str]]) -> dict[str, tuple[str, NameSource]]:
    """Pair the file names and graph names of one base name by their counters (both lists sorted)."""
    file_ns = [n for n, _ in files]
    by_n = dict(graph)
    if set(file_ns) <= set(by_n):
        return {f: (by_n[n], EXACT) for n, f in files}
    if len(files) == len(graph):
        # Same kernels, counters offset (seen with inserted Casts): pair them in counter order.
        return {f: (g, EXACT if n == gn else NameSource.GRAPH_COUNTER_ORDER) for (n, f), (gn, g) in zip(files, graph)}
    return {f: (by_n[n], NameSource.GRAPH_COUNTER_ONLY) for n, f in files if n in by_n}


def _only(candidates: list[str] | None) -> str | None:
    return candidates[0] if candidates is not None and len(candidates) == 1 else None


def resolve_names(file_names: list[str], graph_names: list[str]) -> dict[str, tuple[str, NameSource]]:
    """{file op name: (full name, how)} for every file op name that the graph names explain.

    `graph_names` are the full scope names of the graph's kernels (execution order csv or graph file).
    """
    result: dict[str, tuple[str, NameSource]] = {}
    if not graph_names:
        return result
    by_form: dict[str, list[str]] = defaultdict(list)
    by_leaf: dict[str, list[str]] = defaultdict(list)
    for g in graph_names:
        by_form[file_form(g)].append(g)
        by_leaf[g.rsplit("/", 1)[-1]].append(g)
    # Group both sides by the name without its -opN counter; within a group the counters may be offset.
    file_groups, unnumbered = _by_counter(file_names, lambda f: f)
    graph_groups, _ = _by_counter(graph_names, file_form)

    for f in unnumbered:
        exact, short = _only(by_form.get(f)), _only(by_leaf.get(f))
        if exact is not None:
            result[f] = (exact, EXACT)
        elif short is not None:
            result[f] = (short, SHORT)
    for base, files in file_groups.items():
        files.sort()
        if base in graph_groups:
            result.update(_pair_counters(files, sorted(graph_groups[base])))
            continue
        # Older releases: the file holds only the last scope element, e.g. Conv2D-op12.
        for _n, f in files:
            short = _only(by_leaf.get(f))
            if short is not None:
                result[f] = (short, SHORT)
    return result
