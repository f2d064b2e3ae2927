"""A GE graph (.pbtxt) within bounds (issue 23.3): read a node at a time, so what it costs is what the dump keeps
of each node, not the text parsed whole; a line past MAX_GRAPH_LINE or a file past MAX_TEXT_FILE (made small
through the same knobs) drops the graph with a warning naming the path and the limit, and the dump loads
without it. Memory is asserted (tracemalloc), never time."""

from __future__ import annotations

import tracemalloc

import numpy as np
from helpers.cann_encode import RawOp, Tensor, step_folder, write

from dumptui.core.formats import open_dump
from dumptui.core.formats.ge_graph import read_ge_graph
from dumptui.core.io import limits
from dumptui.report.reasons import say

GRAPH_NAME = "ge_onnx_00000070_graph_0_Build.pbtxt"


def _write_graph(path, n: int, long_attribute: str = "") -> None:
    """A chain of n Add nodes after a Data node, one field a line as GE's OnnxUtils writes them."""
    with open(path, "w") as fh:
        fh.write('ir_version: 3\nproducer_name: "GE"\ngraph {\n  node {\n    name: "x"\n    op_type: "ge:Data"\n  }\n')
        prev = "x"
        for i in range(n):
            name = f"Default/block{i // 100}/Add-op{i}"
            fh.write(
                f'  node {{\n    input: "{prev}:0"\n    input: "x:0"\n    name: "{name}"\n    op_type: "ge:Add"\n'
                '    attribute {\n      name: "output_desc_origin_shape:0"\n      ints: 1\n      ints: 64\n'
                "      type: INTS\n    }\n"
            )
            if long_attribute and i == n // 2:
                fh.write(f'    attribute {{ name: "note" s: "{long_attribute}" type: STRING }}\n')
            fh.write("  }\n")
            prev = name
        fh.write('  name: "graph_0"\n}\n')


def test_a_big_graph_costs_what_its_nodes_keep(tmp_path):
    """10,000 nodes (2.4 MB of text): about 0.8 KB a node kept, and the peak no higher (a node at a time); parsed
    whole the protobuf objects took about 3.4 KB a node."""
    n = 10_000
    path = tmp_path / GRAPH_NAME
    _write_graph(path, n)
    tracemalloc.start()
    try:
        graph = read_ge_graph(str(path))
        kept, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(graph.nodes) == n + 1
    last = graph.nodes[f"Default/block{(n - 1) // 100}/Add-op{n - 1}"]
    assert last.inputs == [(f"Default/block{(n - 2) // 100}/Add-op{n - 2}", 0), ("x", 0)]
    assert last.origin_shapes == {("output", 0): (1, 64)}
    assert kept / n < 1_200, f"{kept / n:.0f} bytes kept a node"
    assert peak - kept < 2 << 20, f"{(peak - kept) / 1e6:.1f} MB above what is kept"


def _raw_dump(tmp_path):
    folder = step_folder(tmp_path / "dump")
    write(folder, RawOp("Add", "Default_block0_Add-op0", [Tensor(np.ones(3, np.float32))], timestamp=1))
    return str(tmp_path / "dump")


def test_a_graph_line_past_the_limit_drops_the_graph_with_its_path_and_the_limit(tmp_path, monkeypatch):
    dump_path = _raw_dump(tmp_path)
    graph = tmp_path / GRAPH_NAME
    _write_graph(graph, 10, long_attribute="y" * 5000)
    assert open_dump(dump_path).graph_source == GRAPH_NAME  # far below the limit: read
    monkeypatch.setattr(limits, "MAX_GRAPH_LINE", 4096)
    dump = open_dump(dump_path)
    (problem,) = [p for p in dump.problems if p.path == str(graph)]
    assert problem.severity == "warning" and "longer than 4 KiB" in say(problem.reason)
    assert "without this graph file" in say(problem.reason)
    assert [op.name for op in dump.ops] == ["Default_block0_Add-op0"] and dump.graph_source != GRAPH_NAME


def test_a_graph_file_past_the_limit_is_not_read_and_named(tmp_path, monkeypatch):
    dump_path = _raw_dump(tmp_path)
    graph = tmp_path / GRAPH_NAME
    _write_graph(graph, 50)
    monkeypatch.setattr(limits, "MAX_TEXT_FILE", 2048)
    dump = open_dump(dump_path)
    (problem,) = [p for p in dump.problems if p.path == str(graph)]
    assert problem.severity == "warning" and "more than the 2048 B a graph file may have" in say(problem.reason)
    assert [op.name for op in dump.ops] == ["Default_block0_Add-op0"] and dump.graph_source != GRAPH_NAME
