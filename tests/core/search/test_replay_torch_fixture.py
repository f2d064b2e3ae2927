"""The torch layers' replays against PyTorch itself: every call of the real msprobe 26.2 / torch 2.13 dumps in
../shared/fixtures (conv2d, relu, max_pool2d, linear, softmax), replayed from its recorded inputs, gives the
recorded output to within a few steps of its dtype; under bfloat16 autocast only because a product's float32
inputs are rounded as autocast rounds them."""

from __future__ import annotations

import numpy as np
import pytest
from helpers.common import SHARED

from dumptui.core.formats.registry import open_dump
from dumptui.core.search.replay import ReplayInputs, replay
from dumptui.core.search.replay.numeric import round_to
from dumptui.core.search.replay.run import supported

TENSOR_MIX = SHARED / "msprobe-26.2-pytorch-cpu" / "dumps" / "tensor_mix"

STEP = {"float32": 2.0**-23, "bfloat16": 2.0**-7}  # one step at 1.0 of each dtype


def _calls(variant: str) -> list:
    root = TENSOR_MIX / variant
    if not root.is_dir():
        pytest.skip(f"shared fixtures absent ({root} not found): the replay against torch's own outputs is skipped")
    return [op for op in open_dump(str(root)).ops if op.outputs and op.inputs and op.name.startswith("Functional.")]


def _deviation(op, autocast: bool = True) -> float:
    """The largest |recomputed - recorded| over the output's largest magnitude, rounded to the output's dtype."""
    out = op.outputs[0]
    inputs = {s: np.asarray(t.read()).reshape(t.shape) for s, t in op.inputs.items()}
    spec = ReplayInputs(
        op.op_type,
        inputs,
        dict(op.attrs),
        out_shapes={0: tuple(out.shape)},
        out_dtypes={0: out.dtype} if autocast else {},
    )
    got = np.asarray(out.read()).astype(np.float64).reshape(out.shape)
    want = round_to(np.asarray(replay(spec)[0], dtype=np.float64).reshape(got.shape), out.dtype)
    return float(np.abs(want - got).max() / np.abs(got).max())


@pytest.mark.parametrize("variant", ["ref", "autocast_bf16"])
def test_every_call_replays_to_torchs_own_output(variant):
    calls = _calls(variant)
    assert {op.op_type for op in calls} == {"conv2d", "relu", "max_pool2d", "linear", "softmax"}
    for op in calls:
        assert supported(op.op_type), op.name
        dtype = op.outputs[0].dtype
        assert _deviation(op) <= 4 * STEP[dtype], (op.name, dtype)


def test_without_autocasts_rounding_the_products_would_not_be_torchs_bits():
    """With the rounding, the four bfloat16 products of the fixture are torch's bits exactly; without it, each is
    off (by under a step here, but a step is what the noisy rules measure in)."""
    products = [op for op in _calls("autocast_bf16") if op.op_type in ("conv2d", "linear")]
    assert len(products) == 4
    assert [_deviation(op) for op in products] == [0.0] * 4
    assert min(_deviation(op, autocast=False) for op in products) > 0
