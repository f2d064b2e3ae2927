"""A MindSpore dump (the 910 side) against the same network as CANN raw files (the 310 side: fp16 cube ops,
NC1HWC0 convolution tensors, FRACTAL_Z weights, FRACTAL_NZ matrix products, names with `/` written `_`):
`dumptui bisect` finds the planted op, and reports no divergence without it; the same with a GE graph that
fuses two ops; and the real MindSpore 2.10 dump of ../shared as the 910 side."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from helpers.cann_encode import ge_graph_text, reencode
from helpers.common import MS_DUMPS, need_shared, run_here

from dumptui.core.demo.noisy import write_noisy_demo
from dumptui.core.formats import open_dump
from dumptui.core.graph.align import align
from dumptui.core.graph.fusion import FUSED
from dumptui.report.reasons import say

pytestmark = pytest.mark.usefixtures("commands_share_one_pool")  # the module's commands run in this process

BLOCK5 = "Default/stage0-Stage/block5-Block"
FUSE = [[f"{BLOCK5}/conv-Conv1x1/BiasAdd-op0", f"{BLOCK5}/ReLU-op0"]]


def mixed_pair(root, bug: str | None, fuse: list[list[str]] | None = None):
    """(demo, path of the 310 side): the noisy demo's fp32 reference, and its fp16 target re-encoded as CANN
    raw files in an ACL tree below root/work/dump (the GE graph, when fusing, in root/work as GE writes it)."""
    demo = write_noisy_demo(str(root), precision="fp16", bug=bug)
    target = open_dump(demo.target)
    acl = os.path.join(str(root), "work", "dump")
    node_of = reencode(target, acl, fuse=fuse)
    if fuse:
        with open(os.path.join(str(root), "work", "ge_onnx_00000001_graph_0_Build.pbtxt"), "w") as fh:
            fh.write(ge_graph_text(target, node_of, fuse))
    return demo, acl


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """`mixed_pair` for the module: each (bug, fuse) made once (the tests only read the dumps)."""
    pairs: dict[tuple[str | None, bool], tuple] = {}

    def pair(bug: str | None, fuse: list[list[str]] | None):
        key = (bug, fuse is not None)
        if key not in pairs:
            pairs[key] = mixed_pair(tmp_path_factory.mktemp(f"mixed-{bug}-{key[1]}"), bug, fuse)
        return pairs[key]

    return pair


def bisect_json(ref: str, target: str) -> tuple[int, dict]:
    """`dumptui bisect --json` in this process (the answer about the dumps is the question here)."""
    code, out, err = run_here("bisect", ref, target, "--json")
    assert code in (0, 1), err
    return code, json.loads(out)


@pytest.mark.parametrize("fuse", [None, FUSE], ids=["file-names", "ge-graph-fused"])
def test_bisects_to_the_planted_op(made, fuse):
    demo, acl = made("main", fuse)
    code, out = bisect_json(demo.ref, acl)
    assert code == 1
    assert out["culprit"]["ref"] == demo.planted
    assert out["culprit"]["target"] == (demo.planted if fuse else demo.planted.replace("/", "_"))
    assert [r["ref"] for r in out["roots"]] == [demo.planted]
    assert out["alignment"].get(say(FUSED), 0) == (1 if fuse else 0)


@pytest.mark.parametrize("fuse", [None, FUSE], ids=["file-names", "ge-graph-fused"])
def test_no_bug_no_divergence(made, fuse):
    demo, acl = made(None, fuse)
    code, out = bisect_json(demo.ref, acl)
    assert code == 0 and out["culprit"] is None and out["roots"] == []
    # raw dumps hold weights only as their consumers' inputs: the preconditions check them there, and the
    # fp16 copies the 310 computes with differ from the 910's only by fp16 rounding
    pre = out["preconditions"]
    assert pre["checked"] == 74 and set(pre["by_status"]) == {"equal", "benign"}
    assert all("float16 rounding" in c["detail"] for c in pre["not_equal"])


def test_the_310_side_reads_as_the_values_it_was_made_from(made):
    demo, acl = made(None, FUSE)
    target, raw = open_dump(demo.target), open_dump(acl)
    assert raw.format == "cann-raw" and raw.graph is not None and raw.graph.number_of_edges() > 0
    by_name = {op.name: op for op in raw.ops}
    conv = by_name[f"{BLOCK5}/conv-Conv1x1/Conv2D-op0"]
    assert [conv.inputs[0].fmt, conv.inputs[1].fmt, conv.outputs[0].fmt] == ["NC1HWC0", "FRACTAL_Z", "NC1HWC0"]
    assert conv.outputs[0].dtype == "float16"
    for op in target.kernels:
        if op.name in by_name:
            for slot, t in op.outputs.items():
                assert np.array_equal(by_name[op.name].outputs[slot].array(), t.array()), op.name
    matmul = by_name["Default/head-Head/fc-Linear/MatMul-op0"]
    assert matmul.outputs[0].fmt == "FRACTAL_NZ" and matmul.outputs[0].shape == (1, 6)
    # the fused op: its inputs are BiasAdd's, its output is ReLU's; the reference group stands for both
    pair = next(p for p in align(open_dump(demo.ref), raw).pairs if p.how == FUSED)
    ref = open_dump(demo.ref)
    bias, relu = ref.op(FUSE[0][0]), ref.op(FUSE[0][1])
    assert pair.ref.op_type == "BiasAdd+ReLU" and pair.ref.fused == tuple(FUSE[0])
    assert pair.ref.name == f"{BLOCK5}/BiasAdd-op0+ReLU-op0" and pair.target.fused == tuple(FUSE[0])
    assert pair.ref.key == FUSE[0][1]  # the last member's key: the graph's edges reach the group
    assert np.array_equal(pair.ref.inputs[0].array(), bias.inputs[0].array())
    assert np.array_equal(pair.ref.outputs[0].array(), relu.outputs[0].array())
    assert np.array_equal(pair.target.outputs[0].array(), open_dump(demo.target).op(FUSE[0][1]).outputs[0].array())


FC_BIAS = "Default/fc-Dense/BiasAdd-op0"
SIGMOID = "Default/sigmoid-Sigmoid/Sigmoid-op0"


def _like_a_310(bug: bool):
    """Convolution outputs rounded to fp16; with `bug`, fc's BiasAdd adds 1.25x and Sigmoid carries it on."""

    def transform(op, io: str, slot: int, value: np.ndarray) -> np.ndarray:
        if op.op_type == "Conv2D" and io == "output":
            return value.astype(np.float16)
        if bug and op.name == FC_BIAS and io == "output":
            return (value * np.float32(1.25)).astype(value.dtype)
        if bug and op.name == SIGMOID:
            wrong_in = (np.asarray(op.inputs[0].array()) * np.float32(1.25)).astype(np.float32)
            if io == "input":
                return wrong_in
            return (1 / (1 + np.exp(-wrong_in.astype(np.float64)))).astype(np.float32)
        return value

    return transform


@pytest.mark.parametrize("bug", [True, False], ids=["planted", "clean"])
def test_real_mindspore_dump_against_its_raw_310_encoding(tmp_path, bug):
    need_shared()
    ref = str(MS_DUMPS / "A")
    source = open_dump(ref)
    acl = str(tmp_path / "dump")
    reencode(source, acl, transform=_like_a_310(bug))
    code, out = bisect_json(ref, acl)
    if bug:
        assert code == 1 and out["culprit"]["ref"] == FC_BIAS
    else:
        assert code == 0 and out["culprit"] is None
