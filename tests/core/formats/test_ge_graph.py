"""GE graph dumps (ge_onnx_*_Build.pbtxt): what the reader takes from the text GE writes, and a damaged one."""

from __future__ import annotations

import numpy as np
from helpers.cann_encode import RawOp, Tensor, step_folder, write

from dumptui.core.formats import open_dump
from dumptui.core.formats.ge_graph import read_ge_graph, to_ir
from dumptui.core.model.dump import NameSource
from dumptui.report.reasons import say

# As GE's OnnxUtils writes it: "ge:" types, "src:index" inputs, ":-1" control edges, "" for an absent input,
# attributes sorted by name, and fields this reader does not declare (they are skipped).
GE_TEXT = r"""
ir_version: 3
producer_name: "GE"
graph {
  node { name: "x" op_type: "ge:Data" output: "x:0" }
  node { name: "w" op_type: "ge:Const" output: "w:0" }
  node {
    input: "x:0"
    input: "w:0"
    input: ""
    name: "Default/conv1-Conv2d/Conv2D-op5"
    op_type: "ge:Conv2D"
    attribute { name: "_datadump_original_op_names" strings: "Default/conv1-Conv2d/Conv2D-op0"
                strings: "Default/conv1-Conv2d/BiasAdd-op0" type: STRINGS }
    attribute { name: "input_desc_origin_layout:0" s: "NHWC" type: STRING }
    attribute { name: "output_desc_origin_shape:0" ints: 1 ints: 4 ints: 4 ints: 3 type: INTS }
    attribute { name: "some_new_attribute_kind" i: 3 type: INT }
  }
  node {
    input: "Default/conv1-Conv2d/Conv2D-op5:0"
    input: "x:-1"
    name: "Default/relu/ReLU-op6"
    op_type: "ge:ReLU"
    an_unknown_field: 7
  }
  node { input: "Default/relu/ReLU-op6:1" name: "out" op_type: "ge:NetOutput" }
  name: "graph_0"
}
"""


def test_what_the_reader_takes(tmp_path):
    path = tmp_path / "ge_onnx_00000070_graph_0_Build.pbtxt"
    path.write_text(GE_TEXT)
    graph = read_ge_graph(str(path))
    conv = graph.nodes["Default/conv1-Conv2d/Conv2D-op5"]
    assert conv.op_type == "Conv2D" and conv.inputs == [("x", 0), ("w", 0)]
    assert conv.fused == ("Default/conv1-Conv2d/Conv2D-op0", "Default/conv1-Conv2d/BiasAdd-op0")
    assert conv.origin_layouts == {("input", 0): "NHWC"} and conv.origin_shapes == {("output", 0): (1, 4, 4, 3)}
    assert graph.nodes["Default/relu/ReLU-op6"].inputs == [("Default/conv1-Conv2d/Conv2D-op5", 0)]
    assert graph.by_file_form()["Default_relu_ReLU-op6"] == "Default/relu/ReLU-op6"
    ir = to_ir(graph)
    assert [a.kind for a in ir.nodes["Default/conv1-Conv2d/Conv2D-op5"].args] == ["param", "const"]
    getter = ir.nodes["out"].args[0]  # output 1 of ReLU, through a TupleGetItem as in MindSpore graphs
    assert ir.nodes[getter.ref].op_type == "TupleGetItem" and ir.nodes[getter.ref].args[1].ref == "1"


def test_origin_layout_and_shape_decide_how_nc1hwc0_is_read(tmp_path):
    """input_desc_origin_layout NHWC: the (1, 4, 4, 3) input is NHWC; the output's header has no original
    shape, and output_desc_origin_shape gives it."""
    x = np.arange(48, dtype=np.float32).reshape(1, 4, 4, 3)
    folder = step_folder(tmp_path / "dump")
    write(
        folder,
        RawOp(
            "Conv2D",
            "Default_conv1-Conv2d_Conv2D-op5",
            [Tensor(x, "float32", "NC1HWC0", c0=4, original_format="NHWC")],
            [Tensor(x, "float32", "NC1HWC0", c0=4, original_format="NHWC", original_shape=())],
            timestamp=1,
        ),
    )
    (tmp_path / "ge_onnx_00000070_graph_0_Build.pbtxt").write_text(GE_TEXT)
    dump = open_dump(str(tmp_path / "dump"))
    op = dump.ops[0]
    assert op.name == "Default/conv1-Conv2d/Conv2D-op5" and op.name_source is NameSource.GE_GRAPH
    assert op.fused == ("Default/conv1-Conv2d/Conv2D-op0", "Default/conv1-Conv2d/BiasAdd-op0")
    assert np.array_equal(op.inputs[0].array(), x) and np.array_equal(op.outputs[0].array(), x)


def test_a_damaged_graph_is_a_warning_and_the_dump_loads(tmp_path):
    folder = step_folder(tmp_path / "dump")
    write(folder, RawOp("ReLU", "Default_relu_ReLU-op6", [Tensor(np.ones(3, np.float32))], timestamp=1))
    (tmp_path / "ge_onnx_00000070_graph_0_Build.pbtxt").write_text('graph { node { name: "unterminated ')
    dump = open_dump(str(tmp_path / "dump"))
    assert [op.name for op in dump.ops] == ["Default_relu_ReLU-op6"]
    bad = [p for p in dump.problems if p.path.endswith("_Build.pbtxt")]
    assert len(bad) == 1 and bad[0].severity == "warning" and "unreadable GE graph" in say(bad[0].reason)


def _as_protobuf_reads_it(path) -> dict:
    """The nodes as protobuf's own text parser reads the whole file (what the reader did before it read a node
    at a time): an independent reading to compare with."""
    from google.protobuf import text_format

    from dumptui.core.formats import ge_graph

    model = ge_graph.ModelProto()
    text_format.Parse(path.read_text(), model, allow_unknown_field=True)
    return {p.name: ge_graph._node(p) for p in model.graph.node if p.name}


SPELLINGS = r"""
graph {
  # a comment { with a bracket
  node {
    name: "a{b}<c>"
    op_type: "ge:Data"
  }
  node <
    input: "a{b}<c>:0"
    input: "esc\"aped\\:0"
    name: "n/\303\251t\"1"
    op_type: "ge:Add"
    attribute {
      name: "output_desc_origin_shape:0"
      ints: 0x10
      ints: -1
      type: INTS
    }
    attribute {
      name: "_datadump_original_op_names"
      strings: "x/y-op1"
      strings: "x/z\tq-op2"
      type: STRINGS
      t {
        dims: 2
        name: "nested { brace"
      }
    }
  >
  node { input: ["n/\303\251t\"1:0", "a{b}<c>:0"] name: "listed" op_type: "ge:Mul" }
  node {
    name: "two" op_type: "ge:Sub"
  }
  name: "spelled"
}
"""


def test_a_node_at_a_time_reads_what_protobuf_reads_of_every_spelling(tmp_path):
    path = tmp_path / "ge_onnx_00000001_graph_0_Build.pbtxt"
    path.write_text(SPELLINGS, encoding="utf-8")
    graph = read_ge_graph(str(path))
    assert graph.name == "spelled"
    assert graph.nodes == _as_protobuf_reads_it(path)
    assert set(graph.nodes) == {"a{b}<c>", 'n/\u00e9t"1', "listed", "two"}
    assert graph.nodes['n/\u00e9t"1'].fused == ("x/y-op1", "x/z\tq-op2")


def test_a_node_named_twice_or_a_file_cut_short_is_not_a_graph(tmp_path):
    import pytest

    for text, why in (
        ('graph {\n  node {\n    name: "a"\n    name: "b"\n  }\n}\n', "not a GE graph dump"),
        ('graph {\n  node {\n    name: "a"\n', "ends inside a message"),
        ('graph {\n  node {\n    name: "a"\n  }\n}\n}\n', "closing bracket without an opening one"),
    ):
        path = tmp_path / "g.pbtxt"
        path.write_text(text)
        with pytest.raises(ValueError, match=why):
            read_ge_graph(str(path))
