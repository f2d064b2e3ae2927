"""The steps both MindSpore readers (r1.3+ `.npy`/statistic.csv, and 1.x `.bin`) share.

Each reader runs: locate (which folder, as selected) -> list files and parse their names -> build ops, and
between and after those, these shared steps: read the execution orders and graph files, give the ops unique
keys, put the kernels in order, and finish (dataflow from the graph files, notes, problems). What differs
between the two (folder layout, file names, how calls and parameters are told apart) stays in each reader.
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from dumptui.core.formats.files import execution_order_csv, list_dir, read_execution_order
from dumptui.core.graph.build import dataflow_graph
from dumptui.core.io.fault import Fault, Flaw, NamePattern
from dumptui.core.model.dump import KERNEL, Dump, Op, Problem, Severity
from dumptui.core.model.ir import IRGraph
from dumptui.core.model.reason import Why, because

GRAPH_TEXT_FILES = (
    "ms_output_trace_code_graph_{g}.ir",
    "ms_output_trace_code_graph_{g}_0.ir",
    "ms_output_trace_code_graph_{g}.dat",
)
GRAPH_PROTOBUF_FILE = "ms_output_trace_code_graph_{g}.pb"
NO_GRAPH_NOTE = because(Why.NO_GRAPH_FILE)


def foreign_file(path: str) -> Problem:
    """A file in a tensor folder that is no dump tensor: listed, never read."""
    return Problem(path, Fault(Flaw.FOREIGN_FILE), Severity.WARNING)


def misnamed_file(path: str, pattern: NamePattern) -> Problem:
    """A tensor file whose name does not follow `pattern`: without its name it cannot be placed."""
    return Problem(path, Fault(Flaw.MISNAMED, (pattern,)))


def read_orders(folder: str, graphs: Iterable[str]) -> dict[str, list[str]]:
    """{graph: kernel full names in execution order} for the graphs whose execution-order csv is there."""
    orders = {}
    for g in graphs:
        path = execution_order_csv(folder, g)
        if os.path.exists(path):
            orders[g] = read_execution_order(path)
    return orders


def load_graph_file(folder: str, graph: str, problems: list[Problem]) -> tuple[IRGraph | None, str | None]:
    """(IR, its path) of graph `graph` from `folder`/graphs: the text IR when there is one, else the protobuf;
    (None, None) when neither is there or readable (said in `problems`)."""
    gdir = os.path.join(folder, "graphs")
    names = list_dir(gdir)
    for candidate in GRAPH_TEXT_FILES:
        name = candidate.format(g=graph)
        if name in names:
            path = os.path.join(gdir, name)
            try:
                from dumptui.core.formats.irtext import parse_ir_text

                return parse_ir_text(path), path
            except (OSError, ValueError) as e:
                problems.append(Problem(path, Fault(Flaw.GRAPH_FILE_UNREADABLE, (str(e),)), Severity.WARNING))
    name = GRAPH_PROTOBUF_FILE.format(g=graph)
    if name in names:
        path = os.path.join(gdir, name)
        try:
            from dumptui.core.formats.anf_pb import parse_anf_pb  # imports protobuf: only for dumps that need it

            return parse_anf_pb(path), path
        except ImportError:
            problems.append(Problem(path, Fault(Flaw.GRAPH_PB_NO_PROTOBUF), Severity.WARNING))
        except Exception as e:  # a damaged protobuf must not stop the dump from loading
            problems.append(Problem(path, Fault(Flaw.GRAPH_PB_UNREADABLE, (str(e),)), Severity.WARNING))
    return None, None


def read_graphs(dump: Dump, folder: str, graphs: Iterable[str]) -> dict[str, IRGraph]:
    """{graph: IR} for the graphs with a readable graph file in `folder`/graphs; says which in `graph_source`."""
    irs = {}
    for g in graphs:
        ir, path = load_graph_file(folder, g, dump.problems)
        if ir is not None and path is not None:
            irs[g] = ir
            dump.graph_source = os.path.relpath(path, folder) if dump.graph_source is None else "graphs/ (several)"
    return irs


def assign_keys(ops: list[Op]) -> None:
    """Keys unique in the dump: the full name, plus #k for the k-th call of a kernel that ran several times in
    the iteration, plus `graph:` in front when two graphs share a name."""
    count: dict[str, int] = defaultdict(int)
    for op in ops:
        op.key = op.name + (f"#{op.call}" if op.call > 1 else "")
        count[op.key] += 1
    for op in ops:
        if count[op.key] > 1:
            op.key = f"{op.graph}:{op.key}"


def listed_positions(listed: Iterable[tuple[str, str]]) -> dict[tuple[str, str], int]:
    """{(graph, full name): position} from a listing in execution order (the first listing of a name counts)."""
    position: dict[tuple[str, str], int] = {}
    for entry in listed:
        position.setdefault(entry, len(position))
    return position


def number_in_order(
    kernels: list[Op], position: Mapping[tuple[str, str], int], tiebreak: Callable[[Op], tuple[Any, ...]]
) -> None:
    """Sort the kernels by their listed position (unlisted ones last), then by `tiebreak`, and number them."""
    unlisted = len(position)
    kernels.sort(key=lambda op: (position.get((op.graph, op.name), unlisted), tiebreak(op)))
    for i, op in enumerate(kernels):
        op.order = i


def link_dataflow(dump: Dump, irs: Mapping[str, IRGraph], param_key: Callable[[str, str], str | None]) -> list[Op]:
    """The dump's graph from its graph files; returns the kernels with inputs that no graph file knows.
    Without a graph file, a note says that inputs cannot be traced."""
    if not irs:
        if any(op.kind == KERNEL for op in dump.ops):
            dump.notes.append(NO_GRAPH_NOTE)
        return []
    dump.graph = dataflow_graph(dump, irs, param_key)
    return [op for op in dump.ops if op.kind == KERNEL and not op.sources and op.inputs]
