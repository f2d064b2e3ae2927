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
                 NonMaxSuppressionV5 (hard NMS) NonMaxSuppression NonMaxSuppressionV6
                 BatchMultiClassNonMaxSuppression BatchMultiClassNMS CombinedNonMaxSuppression GatherD GatherNd
                 Unique MaskedSelect OneHot
  (msprobe)      topk sort argsort argmax argmin nms npu_batch_nms gather index_select unique masked_select where one_hot
                 gt ge lt le eq ne greater greater_equal less less_equal not_equal (bool outputs)
                 __gt__ __ge__ __lt__ __le__ __eq__ __ne__ (as Tensor operators) sum mean (reductions)
                 add sub subtract mul multiply div divide true_divide clamp clip and in place: add_ sub_
                 subtract_ mul_ multiply_ div_ divide_ true_divide_ clamp_ clip_ __add__ __sub__ __mul__
                 __truediv__ __radd__ __rsub__ __rmul__ __rtruediv__ __iadd__ __isub__ __imul__ __itruediv__
                 (torchcalls.py: an in-place call's recorded input is its input before the call)
                 max_pool2d avg_pool2d adaptive_avg_pool2d (no ceil_mode)
                 linear matmul mm bmm __matmul__ conv2d (a float16/bfloat16 output: inputs rounded to it, as
                 autocast does) layer_norm batch_norm (eval) embedding dropout (eval) softmax log_softmax
                 gelu relu silu sigmoid tanh exp log sqrt rsqrt erf neg abs and in place: gelu_ relu_ silu_
                 sigmoid_ tanh_ exp_ log_ sqrt_ rsqrt_ erf_ neg_ abs_ (torchfunctional.py)
                 (selection.py: ties in index order, NaN the greatest)

Deliberately not replayed (ReplayUnsupported says so):
  - BatchNorm outputs 1-4 (in inference they are uninitialised memory) and training-mode BatchNorm;
  - NHWC convolution and pooling, pooling with explicit padding, DepthwiseConv2dNative (its weight layout
    for channel_multiplier > 1 is not established), Swish (no MindSpore kernel of that name was seen);
  - torch's dropout and batch_norm in training, embedding with max_norm, softmax without dim;
  - integer division (Div/RealDiv of two integer tensors), integer division by zero, casts of NaN, inf or
    out-of-range values to integers, Gather indices out of range: all device-dependent;
  - every op type not listed above.

Results are float64 for floating ops (float16/bfloat16/float32 inputs are widened exactly), bool for
comparisons, int64 for indices and for integer arithmetic. Each output is reshaped to its dumped shape in
`out_shapes` when the sizes agree. The replay is the exact float64 result: an op that overflowed to inf in
float32 replays as a large finite number, so compare after rounding the replay to the dumped dtype when
that matters.
"""

from dumptui.core.search.replay.irvalues import parse_value
from dumptui.core.search.replay.run import SUPPORTED, replay, replay_at, supported
from dumptui.core.search.replay.spec import ReplayInputs, ReplayUnsupported

__all__ = ["ReplayInputs", "ReplayUnsupported", "SUPPORTED", "parse_value", "replay", "replay_at", "supported"]
