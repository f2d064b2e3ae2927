"""Fused target ops and the reference groups they pair with, on ops built by hand."""

from __future__ import annotations

from dumptui.core.graph.fusion import fused_groups, group_name
from dumptui.core.model.dump import KERNEL, PARAMETER, InputSource, Op, TensorRef


def kernel(name: str, order: int) -> Op:
    op = Op(name=name, op_type=name.rsplit("/", 1)[-1].split("-op", maxsplit=1)[0], kind=KERNEL, order=order)
    op.inputs[0] = TensorRef(f"{name}.in", "input", 0)
    op.outputs[0] = TensorRef(f"{name}.out", "output", 0)
    op.sources[0] = InputSource("op", f"producer-of-{name}")
    return op


def test_groups_replace_their_members_in_the_reference_order():
    ref = [
        kernel("S/a-A/Conv2D-op0", 0),
        kernel("S/a-A/BiasAdd-op0", 1),
        kernel("S/ReLU-op0", 2),
        kernel("S/Add-op0", 3),
        Op(name="w", op_type="Parameter", kind=PARAMETER),
    ]
    fused = Op(
        name="S_a-A_Conv2D-op0_fused",
        op_type="Conv2D",
        kind=KERNEL,
        fused=("S/ReLU-op0", "S_a-A_Conv2D-op0", "s/a-a/biasadd-op0", "S/Missing-op9"),
    )  # any order, any spelling
    renamed = Op(name="S_add_renamed", op_type="Add", kind=KERNEL, fused=("S/Add-op0",))
    ops, pairs = fused_groups(ref, [fused, renamed])
    group = pairs[0][0]
    assert [op.name for op in ops] == ["S/Conv2D-op0+BiasAdd-op0+ReLU-op0", "S/Add-op0", "w"]
    assert group.fused == ("S/a-A/Conv2D-op0", "S/a-A/BiasAdd-op0", "S/ReLU-op0")
    assert group.op_type == "Conv2D+BiasAdd+ReLU" and group.key == "S/ReLU-op0" and group.order == 2
    assert group.inputs[0] is ref[0].inputs[0] and group.outputs[0] is ref[2].outputs[0]
    assert group.sources[0] == InputSource("op", "producer-of-S/a-A/Conv2D-op0")
    assert pairs[0][1] is fused and pairs[1] == (ref[3], renamed)  # one named op: paired with it as it is


def test_without_fused_target_ops_nothing_changes():
    ref = [kernel("S/ReLU-op0", 0)]
    assert fused_groups(ref, [kernel("S_ReLU-op0", 0)]) == (ref, [])


def test_group_name_without_a_common_scope():
    assert group_name([kernel("A/x-op0", 0), kernel("B/y-op0", 1)]) == "x-op0+y-op0"
