"""MindSpore graph protobuf (.pb, mindspore.irpb): the real 2.10 files against their .ir, and a file made here."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from helpers.common import SHARED

from dumptui.core.formats import open_dump
from dumptui.core.formats.anf_pb import MESSAGES, ModelProto, parse_anf_pb
from dumptui.core.formats.irtext import parse_ir_text
from dumptui.core.graph.build import resolve_source
from dumptui.core.model.dump import InputSource
from dumptui.core.model.ir import IRArg
from dumptui.report.reasons import say

FIXTURES = SHARED
DUMPS = FIXTURES / "mindspore-2.10-cpu" / "dumps"


def fixture_graph(variant: str) -> Path:
    graph = DUMPS / variant / "rank_0" / "graphs" / "ms_output_trace_code_graph_0.pb"
    if not graph.is_file():
        pytest.skip(f"shared fixtures absent: {graph}")
    return graph


def producers(graph, node) -> list[InputSource]:
    return [resolve_source(graph, arg, {}) for arg in node.args]


@pytest.mark.parametrize("variant", ["A", "C_fp16"])
def test_pb_matches_ir(variant):
    pb_path = fixture_graph(variant)
    ir = parse_ir_text(str(pb_path.with_suffix(".ir")))
    pb = parse_anf_pb(str(pb_path))
    assert pb.name == ir.name == "kernel_graph0"
    assert [n.full_name for n in pb.nodes.values() if not n.virtual] == [
        n.full_name for n in ir.nodes.values() if not n.virtual
    ]
    assert [n.op_type for n in pb.nodes.values()] == [n.op_type for n in ir.nodes.values()]
    assert {p.name: (p.dtype, p.shape, p.is_weight) for p in pb.params.values()} == {
        p.name: (p.dtype, p.shape, p.is_weight) for p in ir.params.values()
    }
    pb_by_name = pb.by_full_name()
    for node in ir.nodes.values():
        if node.virtual:
            continue
        pb_node = pb_by_name[node.full_name]
        from_ir, from_pb = producers(ir, node), producers(pb, pb_node)
        assert [(s.kind, s.ref, s.slot) for s in from_pb if s.produced or s.kind == "parameter"] == [
            (s.kind, s.ref, s.slot) for s in from_ir if s.produced or s.kind == "parameter"
        ], node.full_name
        assert [s.kind for s in from_pb] == [s.kind for s in from_ir], node.full_name
        # Scalar constants carry their value, in the text IR's spelling; tensor constants are exported empty.
        for a, b in zip(from_ir, from_pb):
            if b.kind == "constant" and not b.ref.startswith("cst"):
                assert a.ref == b.ref, node.full_name
        # The exporter writes a width-less Float for dst_type (the .ir says F32/F16); all else is spelled alike.
        assert {k: v for k, v in pb_node.attrs.items() if k != "dst_type"} == {
            k: v for k, v in node.attrs.items() if k != "dst_type"
        }, node.full_name


def test_dump_with_only_the_pb_gets_the_same_dataflow(tmp_path):
    pb_path = fixture_graph("A")
    src = pb_path.parents[2]
    copy = tmp_path / "A"
    shutil.copytree(src, copy, copy_function=shutil.copyfile)
    graphs = copy / "rank_0" / "graphs"
    graphs.chmod(0o755)
    (graphs / "ms_output_trace_code_graph_0.ir").unlink()
    with_ir, with_pb = open_dump(str(src)), open_dump(str(copy))
    assert with_pb.graph_source.endswith(".pb") and with_ir.graph_source.endswith(".ir")
    assert not [p for p in with_pb.problems if "graph" in say(p.reason)]
    for op in with_ir.kernels:
        other = with_pb.op(op.key)
        assert {s: (v.kind, v.ref, v.slot) for s, v in other.sources.items() if v.kind != "constant"} == {
            s: (v.kind, v.ref, v.slot) for s, v in op.sources.items() if v.kind != "constant"
        }, op.key
    assert sorted(with_pb.graph.edges) == sorted(with_ir.graph.edges)


def _tensor_type(type_proto, elem_type: int, dims=None):
    type_proto.data_type = 14  # DT_TENSOR
    type_proto.tensor_type.elem_type = elem_type
    for d in dims or ():
        type_proto.tensor_type.shape.dim.add(size=d)


def _node(graph, name, op_type, inputs, full_name="", scope="Default"):
    node = graph.node.add(name=name, op_type=op_type, scope=scope, full_name=full_name)
    for inp in inputs:
        edge, _, ref = inp.rpartition(":")
        node.input.add(name=ref, type=1 if edge == "control" else 0)
    return node


def make_model():
    float32, float16 = 11, 10
    model = ModelProto(ir_version=1)
    graph = model.graph
    graph.name = "kernel_graph7"
    _tensor_type(graph.parameters.add(name="x").type, float32, (1, 3, 8, 8))
    _tensor_type(graph.parameters.add(name="conv.weight").type, float16, (4, 3, 3, 3))
    graph.const_vals.add(key="cst1")  # the U monad: an empty value, as 2.x writes it
    index = graph.const_vals.add(key="cst2")
    index.value.dtype, index.value.int_val = 5, 1  # DT_INT64
    _node(graph, "1", "Load", ["conv.weight", "cst1"], "Default/Load-op0")
    conv = _node(graph, "2", "PrimFunc_Conv2D", ["x", "1"], "Default/conv-Conv2d/Conv2D-op3", "Default/conv-Conv2d")
    pad_list = conv.attribute.add(name="pad_list").value
    pad_list.dtype = 31  # DT_TUPLE
    for v in (0, 1, 0, 1):
        pad_list.values.add(dtype=5, int_val=v)
    conv.attribute.add(name="pad_mode").value.str_val = "pad"
    conv.attribute[-1].value.dtype = 13  # DT_STRING
    kernel_size = conv.attribute.add(name="kernel_size").value
    kernel_size.dtype, kernel_size.int_val = 5, 3
    _tensor_type(conv.output_type, float32, (1, 4, 8, 8))
    split = _node(graph, "3", "Split", ["2"], "Default/Split-op4")
    split.output_type.data_type = 31
    for _ in range(2):
        _tensor_type(split.output_type.sequence_type.elem_types.add(), float32)
    _node(graph, "4", "TupleGetItem", ["3", "cst2"], "Default/TupleGetItem-op5")
    # no full name: scope/op_type stands in; the control edge is not data
    _node(graph, "5", "ReLU", ["4", "control:2"], "", "Default/act")
    _node(graph, "6", "UpdateState", ["cst1", "5"], "Default/UpdateState-op6")
    graph.outputs.add(name="5")
    return model


def test_self_made_pb_round_trip(tmp_path):
    path = tmp_path / "ms_output_trace_code_graph_7.pb"
    path.write_bytes(make_model().SerializeToString())
    g = parse_anf_pb(str(path))
    assert g.name == "kernel_graph7" and g.source == str(path)
    assert list(g.nodes) == ["1", "2", "3", "4", "5", "6"]
    assert [n.op_type for n in g.nodes.values()] == ["Load", "Conv2D", "Split", "TupleGetItem", "ReLU", "UpdateState"]
    assert {(p.name, p.dtype, p.shape, p.is_weight) for p in g.params.values()} == {
        ("x", "float32", (1, 3, 8, 8), False),
        ("conv.weight", "float16", (4, 3, 3, 3), True),
    }
    conv, relu = g.nodes["2"], g.nodes["5"]
    assert g.nodes["1"].args == [IRArg("param", "conv.weight")]  # the monad is dropped, as in the .ir
    assert g.nodes["6"].args == [IRArg("node", "5")]
    assert conv.args == [IRArg("param", "x"), IRArg("node", "1")]
    assert conv.full_name == "Default/conv-Conv2d/Conv2D-op3"
    assert conv.attrs == {"pad_list": "(0, 1, 0, 1)", "pad_mode": '"pad"', "kernel_size": "I64(3)"}
    assert conv.out_types == [("float32", (1, 4, 8, 8))]
    assert g.nodes["3"].out_types == [("float32", None), ("float32", None)]  # tuple elements carry no shape
    assert g.nodes["4"].args == [IRArg("node", "3"), IRArg("const", "I64(1)")]
    assert relu.args == [IRArg("node", "4")] and relu.full_name == "Default/act/ReLU"
    assert resolve_source(g, relu.args[0], {}) == InputSource("op", "Default/Split-op4", 1)
    assert [resolve_source(g, a, {}) for a in conv.args] == [
        InputSource("parameter", "x"),
        InputSource("parameter", "conv.weight"),
    ]


def test_message_classes_follow_anf_ir_proto():
    fields = {f.name: f.number for f in MESSAGES["NodeProto"].DESCRIPTOR.fields}
    assert fields == {
        "input": 1,
        "name": 2,
        "op_type": 3,
        "scope": 4,
        "attribute": 5,
        "output_type": 6,
        "output_i": 7,
        "full_name": 8,
        "instance_name": 10,
    }
    assert MESSAGES["InputProto"].DESCRIPTOR.enum_types_by_name["EdgeType"].values_by_name["CONTROL_EDGE"].number == 1
    assert MESSAGES["ModelProto"].DESCRIPTOR.file.package == "mindspore.irpb"


@pytest.mark.parametrize("payload", [b"\xff\xff\xff\xff", b""])
def test_damaged_pb_is_a_value_error(tmp_path, payload):
    path = tmp_path / "ms_output_trace_code_graph_0.pb"
    path.write_bytes(payload)
    with pytest.raises(ValueError, match="not a MindSpore graph protobuf"):
        parse_anf_pb(str(path))
