"""A text graph file (.ir) is read a line at a time; a line past MAX_GRAPH_LINE (the issue's 200 MB line, made
small through the same knob) makes the graph file unreadable, named with its path and the limit, and the dump
still loads, without the graph: never gigabytes, never a traceback."""

from __future__ import annotations

import glob
import os

from dumptui.core.demo.residual import write_demo
from dumptui.core.formats import open_dump
from dumptui.core.io import limits
from dumptui.report.reasons import say


def test_a_graph_line_past_the_limit_drops_the_graph_file_with_its_path_and_the_limit(tmp_path, monkeypatch):
    info = write_demo(str(tmp_path), n_ops=8, size=64, fp16_region=None)
    whole = open_dump(info.target)
    assert whole.graph_source.endswith(".ir") and whole.graph is not None
    (ir,) = glob.glob(os.path.join(info.target, "rank_0", "graphs", "*.ir"))
    with open(ir, "a") as fh:
        fh.write("  %9999(big) = Add(%1, %1) primitive_attrs: {note: " + "x" * 5000 + "}\n")
    assert open_dump(info.target).graph_source.endswith(".ir")  # far below the limit: still read
    monkeypatch.setattr(limits, "MAX_GRAPH_LINE", 4096)
    dump = open_dump(info.target)
    (problem,) = [p for p in dump.problems if p.path == ir]
    assert "longer than 4 KiB" in say(problem.reason)
    assert problem.severity == "warning" and "without this graph file" in say(problem.reason)
    kernels = [op.key for op in whole.ops if op.kind == "kernel"]
    assert [op.key for op in dump.ops if op.kind == "kernel"] == kernels  # the rest loads, without the graph
    assert dump.graph_source != whole.graph_source
