"""Replay one operator in float64 from its own dumped inputs and graph attributes.

`replay(ReplayInputs(...))` recomputes an op with numpy, so that a culprit can be proved: given its own
inputs, the target's output is off by X from what the op computes, the reference's by Y.

Supported op types (MindSpore kernel names and conventions):
  element-wise   Add AddV2 Sub Mul RealDiv Div Maximum Minimum Pow FloorMod Mod FloorDiv
                 Neg Abs Square Sign Sqrt Rsqrt Reciprocal Exp Log Floor Ceil Round Trunc Cast Select BiasAdd
                 Equal NotEqual Greater GreaterEqual Less LessEqual (bool outputs)
  activations    ReLU ReLU6 LeakyReLU Sigmoid Tanh GeLU (tanh form) FastGeLU SiLU Softplus Erf
  matrix         MatMul BatchMatMul Dense
  conv/pool      Conv2D MaxPool AvgPool (NCHW)
  normalisation  BatchNorm (inference, output.0) LayerNorm Softmax LogSoftmax L2Normalize
  reductions     ReduceSum ReduceMean ReduceMax ReduceMin ReduceProd ArgMax ArgMin ArgMaxWithValue ArgMinWithValue
  shape          Reshape Flatten Transpose ExpandDims Squeeze Concat Split StridedSlice Gather GatherV2 Tile
                 BroadcastTo OnesLike ZerosLike Identity Depend TensorMove
  selection      TopK TopkExt Sort SortExt ArgSort NMSWithMask NonMaxSuppressionV3 NonMaxSuppressionV4
                 NonMaxSuppression NonMaxSuppressionV6 GatherD GatherNd Unique MaskedSelect OneHot
  (msprobe)      topk sort argsort argmax argmin nms gather index_select unique masked_select where one_hot
                 (selection.py: ties in index order, NaN the greatest)

Deliberately not replayed (ReplayUnsupported says so):
  - BatchNorm outputs 1-4 (in inference they are uninitialised memory) and training-mode BatchNorm;
  - NHWC convolution and pooling, pooling with explicit padding, DepthwiseConv2dNative (its weight layout
    for channel_multiplier > 1 is not established), Swish (no MindSpore kernel of that name was seen);
  - integer division (Div/RealDiv of two integer tensors), integer division by zero, casts of NaN, inf or
    out-of-range values to integers, Gather indices out of range: all device-dependent;
  - every op type not listed above.

Results are float64 for floating ops (float16/bfloat16/float32 inputs are widened exactly), bool for
comparisons, int64 for indices and for integer arithmetic. Each output is reshaped to its dumped shape in
`out_shapes` when the sizes agree. The replay is the exact float64 result: an op that overflowed to inf in
float32 replays as a large finite number, so compare after rounding the replay to the dumped dtype when
that matters.
"""

from __future__ import annotations

import warnings
from typing import Callable, TypeVar

import numpy as np

from dumptui.core.search.replay import activations, conv, elementwise, linalg, norm, reduce, selection, shape
from dumptui.core.search.replay.args import Kernel, OpArgs, SampledKernel
from dumptui.core.search.replay.irvalues import parse_value
from dumptui.core.search.replay.spec import ReplayInputs, ReplayUnsupported

__all__ = ["ReplayInputs", "ReplayUnsupported", "SUPPORTED", "parse_value", "replay", "replay_at", "supported"]

_KERNELS: dict[str, Kernel] = {}
for _module in (elementwise, activations, linalg, conv, norm, reduce, shape, selection):
    _KERNELS.update(_module.kernels())
_SAMPLED: dict[str, SampledKernel] = linalg.sampled_kernels()

SUPPORTED: frozenset[str] = frozenset(_KERNELS)


def supported(op_type: str) -> bool:
    """Whether `replay` implements this op type (some attribute variants may still be refused)."""
    return op_type in _KERNELS


def replay(spec: ReplayInputs) -> dict[int, np.ndarray]:
    """Recompute `spec`'s op: output slot -> array (float64, or bool/int64 where the op is such).

    Raises ReplayUnsupported when the op type or one of its attribute variants is not implemented, or when
    the inputs it needs are missing.
    """
    kernel = _KERNELS.get(spec.op_type)
    if kernel is None:
        raise ReplayUnsupported(f"no replay for op type {spec.op_type!r}")
    outputs = _as_computed(lambda: kernel(OpArgs(spec)))
    result: dict[int, np.ndarray] = {}
    for slot, value in outputs.items():
        value = np.array(value)  # a fresh array: a pass-through or reshape must not alias a dumped input
        want = spec.out_shapes.get(slot)
        if want is not None and tuple(value.shape) != tuple(want) and value.size == int(np.prod(want, dtype=np.int64)):
            value = value.reshape(want)
        result[slot] = value
    return result


def replay_at(spec: ReplayInputs, positions: np.ndarray, dumped: int) -> np.ndarray | None:
    """`spec`'s output.0 recomputed at `positions` (flat, C order) only, for a dumped output of `dumped`
    elements: the products (MatMul, BatchMatMul, Dense) cost positions x K there, whatever their size. None
    when the op is computed whole instead (`replay`). Raises as `replay` does, and ValueError when the
    product's size is not the dump's."""
    kernel = _SAMPLED.get(spec.op_type)
    if kernel is None:
        return None
    return _as_computed(lambda: kernel(OpArgs(spec), positions, dumped))


T = TypeVar("T")


def _as_computed(compute: Callable[[], T]) -> T:
    """Overflow, 0/0 and log(0) are part of what an op computes: inf and NaN are the answer, not an error."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return compute()
