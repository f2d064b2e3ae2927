"""Conv2D, MaxPool and AvgPool on NCHW tensors, in float64.

Padding: Conv2D uses its `pad_list` (top, bottom, left, right) when the IR has it, since MindSpore's shape
inference writes the padding the kernel really applies there for every pad mode; otherwise it derives the
padding from `pad_mode` ("pad" with `pad`, "same", "valid"). Pooling supports VALID and SAME.
SAME puts the odd pixel at the bottom/right (pad_before = total // 2), as MindSpore and TensorFlow do.
AvgPool with SAME padding divides by the number of real (unpadded) elements in each window.
"""

from __future__ import annotations

import numpy as np

from dumptui.core.search.replay import spec
from dumptui.core.search.replay.args import Kernel, OpArgs, SampledKernel
from dumptui.core.search.replay.spec import ReplayUnsupported, within_budget

_PAD_MODES = {0: "pad", 1: "same", 2: "valid"}  # MindSpore's PadMode enum, when 2.x passes it as an int
MAX_PADDED_ELEMENTS = 1 << 26  # the padded input, float64: 512 MB (the replay budget: spec.py)


def _pad_mode(args: OpArgs, default: str) -> str:
    mode = args.option(None, ("pad_mode", "padding"), default)
    if isinstance(mode, (int, np.integer)) and not isinstance(mode, bool) and int(mode) in _PAD_MODES:
        return _PAD_MODES[int(mode)]
    if isinstance(mode, str) and mode.lower() in ("pad", "same", "valid"):
        return mode.lower()
    raise ReplayUnsupported(f"{args.op_type} pad_mode {mode!r} is not replayed")


def _hw_pair(values: tuple[int, ...], what: str, op_type: str) -> tuple[int, int]:
    """(h, w) from an NCHW 4-tuple `(1, 1, h, w)`, a pair `(h, w)` or a single int."""
    if len(values) == 4:
        return values[2], values[3]
    if len(values) == 2:
        return values[0], values[1]
    if len(values) == 1:
        return values[0], values[0]
    raise ReplayUnsupported(f"{op_type} {what} {values} is not (h, w) or (1, 1, h, w)")


def _require_nchw(args: OpArgs, x: np.ndarray) -> None:
    fmt = args.option(None, ("format", "data_format"), "NCHW")
    if fmt not in ("NCHW", 0):
        raise ReplayUnsupported(f"{args.op_type} in format {fmt!r}: only NCHW is replayed")
    if x.ndim != 4:
        raise ReplayUnsupported(f"{args.op_type} input of rank {x.ndim}: expected NCHW (rank 4)")


def same_padding(size: int, kernel: int, stride: int, dilation: int = 1) -> tuple[int, int]:
    """(before, after) padding so that the output has ceil(size / stride) positions."""
    out = -(-size // stride)
    total = max((out - 1) * stride + (kernel - 1) * dilation + 1 - size, 0)
    return total // 2, total - total // 2


def _within_budget(
    op_type: str, x_shape: tuple[int, ...], pads: tuple[int, int, int, int], out_elems: int, multiply_adds: int
) -> None:
    n, c, h, w = x_shape
    padded = n * c * (h + pads[0] + pads[1]) * (w + pads[2] + pads[3])
    within_budget(
        op_type,
        [
            ("padded input elements", padded, MAX_PADDED_ELEMENTS),
            ("output elements", out_elems, spec.MAX_OUTPUT_ELEMENTS),
            ("multiply-adds", multiply_adds, spec.MAX_MULTIPLY_ADDS),
        ],
    )


def _out_size(size: int, kernel: int, stride: int, dilation: int, before: int, after: int, op_type: str) -> int:
    span = (kernel - 1) * dilation + 1
    out = (size + before + after - span) // stride + 1
    if out <= 0:
        raise ReplayUnsupported(
            f"{op_type} window of {span} does not fit an input of {size} padded by {before}+{after}"
        )
    return out


MATMUL_FROM_CHANNELS = 4  # input channels per group from which a tap is a BLAS matrix product


def _windows(
    xp: np.ndarray, i: int, j: int, stride: tuple[int, int], dilation: tuple[int, int], out_hw: tuple[int, int]
) -> np.ndarray:
    """The input element under kernel tap (i, j) for every output position: shape (..., out_h, out_w)."""
    (sh, sw), (dh, dw), (ho, wo) = stride, dilation, out_hw
    return xp[..., i * dh : i * dh + sh * (ho - 1) + 1 : sh, j * dw : j * dw + sw * (wo - 1) + 1 : sw]


def conv2d_nchw(
    x: np.ndarray,
    w: np.ndarray,
    stride: tuple[int, int],
    dilation: tuple[int, int],
    pads: tuple[int, int, int, int],
    groups: int,
) -> np.ndarray:
    """Cross-correlation of x (N, C, H, W) with w (O, C/groups, kh, kw), one kernel tap at a time."""
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    if groups < 1 or c != cg * groups or o % groups:
        raise ReplayUnsupported(f"Conv2D input {x.shape} and weight {w.shape} do not fit group = {groups}")
    top, bottom, left, right = pads
    ho = _out_size(h, kh, stride[0], dilation[0], top, bottom, "Conv2D")
    wo = _out_size(wd, kw, stride[1], dilation[1], left, right, "Conv2D")
    _within_budget("Conv2D", x.shape, pads, n * o * ho * wo, n * o * ho * wo * cg * kh * kw)
    xp = np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)))
    xg = xp.reshape(n, groups, cg, xp.shape[2], xp.shape[3])
    wg = w.reshape(groups, o // groups, cg, kh, kw)
    if cg < MATMUL_FROM_CHANNELS:  # depthwise and the like: a product per tap, no matrix worth BLAS
        out = np.zeros((n, groups, o // groups, ho, wo))
        for i in range(kh):
            for j in range(kw):
                patch = _windows(xg, i, j, stride, dilation, (ho, wo))  # n, g, cg, ho, wo
                out += np.einsum("ngchw,goc->ngohw", patch, wg[:, :, :, i, j])
        return out.reshape(n, o, ho, wo)
    # Each tap one matrix product through BLAS (several times the einsum's speed): the tap's
    # window copied into one contiguous buffer, multiplied by the tap's (out, in) weights for every group.
    flat = np.zeros((n, groups, o // groups, ho * wo))
    patch = np.empty((n, groups, cg, ho, wo))
    for i in range(kh):
        for j in range(kw):
            np.copyto(patch, _windows(xg, i, j, stride, dilation, (ho, wo)))
            flat += np.matmul(np.ascontiguousarray(wg[:, :, :, i, j]), patch.reshape(n, groups, cg, ho * wo))
    return flat.reshape(n, o, ho, wo)


Geometry = tuple[tuple[int, int], tuple[int, int], tuple[int, int, int, int], int]  # stride, dilation, pads, groups


def conv2d(args: OpArgs) -> dict[int, np.ndarray]:
    """Conv2D(x, w) in NCHW with stride, dilation, group and padding from the attributes."""
    x, w, (stride, dilation, pads, groups) = _conv_operands(args)
    return {0: conv2d_nchw(x, w, stride, dilation, pads, groups)}


def _conv_operands(args: OpArgs, widen: bool = True) -> tuple[np.ndarray, np.ndarray, Geometry]:
    """(x, w, geometry); x in float64, or in its own dtype when not `widen` (for a caller that widens only
    the elements it uses: each one's float64 value is the same either way)."""
    x, w = (args.float64(0) if widen else np.asarray(args.raw(0))), args.float64(1)
    _require_nchw(args, x)
    if w.ndim != 4:
        raise ReplayUnsupported(f"Conv2D weight of rank {w.ndim}: expected (O, C/group, kh, kw)")
    mode = args.option(None, ("mode",), 1)
    if mode != 1:
        raise ReplayUnsupported(f"Conv2D mode {mode!r}: only 1 (cross-correlation) is replayed")
    stride = _hw_pair(args.ints(None, ("stride", "strides"), (1,)), "stride", "Conv2D")
    dilation = _hw_pair(args.ints(None, ("dilation", "dilations"), (1,)), "dilation", "Conv2D")
    groups = args.integer(None, ("group", "groups"), 1)
    kh, kw = w.shape[2], w.shape[3]
    pad_list = args.attr("pad_list")
    if pad_list is not None:
        pads = args.ints(None, ("pad_list",))
    else:
        mode_name = _pad_mode(args, "valid")
        if mode_name == "pad":
            pads = args.ints(None, ("pad",), (0,))
            pads = pads * 4 if len(pads) == 1 else pads
        elif mode_name == "same":
            pads = same_padding(x.shape[2], kh, stride[0], dilation[0]) + same_padding(
                x.shape[3], kw, stride[1], dilation[1]
            )
        else:
            pads = (0, 0, 0, 0)
    if len(pads) != 4 or min(pads) < 0:
        raise ReplayUnsupported(f"Conv2D padding {pads} is not (top, bottom, left, right) >= 0")
    if min(stride) < 1 or min(dilation) < 1:
        raise ReplayUnsupported(f"Conv2D stride {stride} / dilation {dilation} must be positive")
    return x, w, (stride, dilation, (pads[0], pads[1], pads[2], pads[3]), groups)


# window elements gathered at once by conv2d_at: 1 MB of float64, so that the gather's indices, the windows and
# their weights stay in the cache from one step to the next (at 8 MB each step wrote them all out to memory and
# faulted fresh pages in: 19 ms for 4,096 windows of 288 values, 6 ms now; every value the same)
AT_ONCE = 1 << 17


def conv2d_at(args: OpArgs, positions: np.ndarray, dumped: int) -> np.ndarray:
    """Conv2D's output at `positions` (flat, C order over N, O, H, W) only: each value the dot product of its
    window with its output channel's weights, in float64 (positions x C/group x kh x kw multiply-adds, whatever
    the image's size; the whole convolution sums the taps in another order: a few ulps apart)."""
    # the input padded in its own dtype, each window widened to float64 once gathered (a float32 image's
    # float64 copy and its padding were 32 MB to write for 4,096 windows of 288 values)
    x, w, (stride, dilation, pads, groups) = _conv_operands(args, widen=False)
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    if groups < 1 or c != cg * groups or o % groups:
        raise ReplayUnsupported(f"Conv2D input {x.shape} and weight {w.shape} do not fit group = {groups}")
    top, bottom, left, right = pads
    ho = _out_size(h, kh, stride[0], dilation[0], top, bottom, "Conv2D")
    wo = _out_size(wd, kw, stride[1], dilation[1], left, right, "Conv2D")
    if n * o * ho * wo != dumped:
        raise ValueError(f"replay gives {n * o * ho * wo} elements, the dump holds {dumped}")
    _within_budget("Conv2D", x.shape, pads, positions.size, positions.size * cg * kh * kw)
    xp = np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)))
    hp, wp = xp.shape[2], xp.shape[3]
    flat = xp.reshape(-1)
    # a window's elements as offsets from its first one in the padded input, flat: (kh, kw)
    taps = (np.arange(kh) * dilation[0] * wp)[:, None] + np.arange(kw) * dilation[1]
    channels = np.arange(cg)
    out = np.empty(positions.size)
    step = max(1, AT_ONCE // (cg * kh * kw))
    # the windows gathered in the order of their place in the image, whatever their output channel: a step's
    # windows then lie in a band of rows, whose lines of every input channel stay in the cache between them
    # (drawn in random order, each window missed the cache in 3 rows x C/group channels)
    order = np.argsort(positions % (ho * wo) + positions // (o * ho * wo) * (ho * wo), kind="stable")
    for start in range(0, positions.size, step):
        at = positions[order[start : start + step]]
        b, rest = np.divmod(at, o * ho * wo)
        oc, rest = np.divmod(rest, ho * wo)
        r, q = np.divmod(rest, wo)
        ci = (oc // (o // groups))[:, None] * cg + channels  # (p, cg): the group's input channels
        first = ((b[:, None] * c + ci) * hp + (r * stride[0])[:, None]) * wp + (q * stride[1])[:, None]  # (p, cg)
        # one flat gather (indexing the 4-d input by four index arrays was 4x slower)
        windows = np.take(flat, first[:, :, None, None] + taps).astype(np.float64)  # (p, cg, kh, kw)
        out[order[start : start + step]] = np.einsum("pcij,pcij->p", windows, w[oc])
    return out


def _pool_geometry(args: OpArgs, x: np.ndarray) -> tuple[tuple[int, int], tuple[int, int], tuple[int, int, int, int]]:
    _require_nchw(args, x)
    kernel = _hw_pair(args.ints(None, ("kernel_size", "ksize")), "kernel_size", args.op_type)
    stride = _hw_pair(args.ints(None, ("strides", "stride"), (1,)), "strides", args.op_type)
    if min(kernel) < 1 or min(stride) < 1:
        raise ReplayUnsupported(f"{args.op_type} kernel {kernel} / strides {stride} must be positive")
    mode = _pad_mode(args, "valid")
    if mode == "pad":
        raise ReplayUnsupported(f"{args.op_type} with explicit padding is not replayed (VALID and SAME are)")
    if mode == "same":
        pads = same_padding(x.shape[2], kernel[0], stride[0]) + same_padding(x.shape[3], kernel[1], stride[1])
    else:
        pads = (0, 0, 0, 0)
    return kernel, stride, pads


def pool_windows(
    x: np.ndarray,
    kernel: tuple[int, int],
    stride: tuple[int, int],
    pads: tuple[int, int, int, int],
    fill: float,
    combine: np.ufunc,
    op_type: str,
) -> np.ndarray:
    """Fold `combine` over every kernel tap, the padding filled with `fill`."""
    top, bottom, left, right = pads
    ho = _out_size(x.shape[2], kernel[0], stride[0], 1, top, bottom, op_type)
    wo = _out_size(x.shape[3], kernel[1], stride[1], 1, left, right, op_type)
    out_elems = x.shape[0] * x.shape[1] * ho * wo
    _within_budget(op_type, x.shape, pads, out_elems, out_elems * kernel[0] * kernel[1])
    xp = np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)), constant_values=fill)
    out: np.ndarray | None = None
    for i in range(kernel[0]):
        for j in range(kernel[1]):
            tap = _windows(xp, i, j, stride, (1, 1), (ho, wo))
            out = tap.copy() if out is None else combine(out, tap)
    assert out is not None  # kernel sizes are >= 1
    return out


def max_pool(args: OpArgs) -> dict[int, np.ndarray]:
    """MaxPool over NCHW windows (padding never wins: it is -inf). NaN propagates, as in numpy."""
    x = args.float64(0)
    kernel, stride, pads = _pool_geometry(args, x)
    return {0: pool_windows(x, kernel, stride, pads, -np.inf, np.maximum, "MaxPool")}


def avg_pool(args: OpArgs) -> dict[int, np.ndarray]:
    """AvgPool over NCHW windows; with SAME padding each window is divided by its count of real elements."""
    x = args.float64(0)
    kernel, stride, pads = _pool_geometry(args, x)
    total = pool_windows(x, kernel, stride, pads, 0.0, np.add, "AvgPool")
    ones = np.ones((1, 1, x.shape[2], x.shape[3]))
    count = pool_windows(ones, kernel, stride, pads, 0.0, np.add, "AvgPool")
    return {0: total / count}


def kernels() -> dict[str, Kernel]:
    """Every kernel of this module, by op type."""
    return {"Conv2D": conv2d, "MaxPool": max_pool, "AvgPool": avg_pool}


def sampled_kernels() -> dict[str, SampledKernel]:
    """The kernels that compute output.0 at given positions only, by op type."""
    return {"Conv2D": conv2d_at}
