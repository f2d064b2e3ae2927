"""A demo pair of dumps in the MindSpore 2.x layout, computed with numpy by a small residual network.

    x -> [stage s / block i: h + eps * ReLU(BiasAdd(Conv2D_1x1(h)))] x N -> Sigmoid
         (kernels per block: Conv2D, BiasAdd, ReLU, Mul by eps, Add to the residual stream)

A residual stream with small updates (eps = 2 / blocks) carries information to the output whatever the depth;
deep random networks without it forget their input, and so would forget a planted divergence.
The reference ("Ascend910") runs everything in float32. The target ("Ascend310") differs in two places:
- a benign fp16 region: in some blocks the convolution runs in float16, with a Cast to fp16 before it and one
  back after (target-only ops, as a 310 inserts them); every later tensor differs slightly but stays close;
- one planted divergence: later, one Add reads its residual input in the wrong layout (NHWC instead of NCHW:
  the channels reversed); its inputs agree, its output diverges, and so does everything after.

Used by `make run`, the tests and the benchmarks (20,000 ops and more). Values are real computations, never
hard-coded: the tests recompute them independently.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from dumptui.core.demo.dumpwriter import LABEL, DumpWriter

BLOCK_OPS = 5
BLOCKS_PER_STAGE = 50


@dataclass
class DemoInfo:
    root: str
    ref: str
    target: str
    n_kernels: int
    n_files: int
    planted: str  # full name of the op where the divergence starts
    planted_index: int  # its position in the reference's execution order
    fp16_first: str
    fp16_last: str
    shape: tuple[int, ...]


def _act_shape(size: int) -> tuple[int, int, int, int]:
    c = 8 if size % 8 == 0 and size >= 8 else 1
    hw = size // c
    h = max(d for d in range(1, int(math.isqrt(hw)) + 1) if hw % d == 0)
    return (1, c, h, hw // h)


def _lab(a: np.ndarray) -> str:
    return LABEL[str(a.dtype)]


Arg = tuple[np.ndarray, str]  # a dumped input: its value and its IR argument


def _kernel(
    w: DumpWriter,
    op_type: str,
    full: str,
    ins: list[Arg],
    outs: list[np.ndarray],
    attrs: dict[str, str] | None = None,
    code: str = "",
    extra_args: tuple[str, ...] = (),
) -> str:
    """One kernel: its input and output files, then its IR node; returns its IR reference."""
    for slot, (v, _arg) in enumerate(ins):
        w.tensor(op_type, full, "input", slot, v, _lab(v))
    for slot, v in enumerate(outs):
        w.tensor(op_type, full, "output", slot, v, _lab(v))
    return w.node(
        op_type,
        full,
        [arg for _v, arg in ins] + list(extra_args),
        [(_lab(v), tuple(v.shape)) for v, _a in ins],
        [(_lab(v), tuple(v.shape)) for v in outs],
        attrs,
        code,
    )


def write_demo(
    root: str,
    n_ops: int = 60,
    size: int = 4096,
    seed: int = 20261202,
    planted_at: float = 0.6,
    fp16_region: tuple[float, float] | None = (0.2, 0.35),
    progress: Callable[[int, int], None] | None = None,
) -> DemoInfo:
    """Write `root/ref` and `root/target`. `n_ops` kernels in the reference (the target adds Casts).
    `fp16_region=None`: no fp16 region, a clean pair but for the planted divergence. `progress(done, total)`
    is called after each block of ops."""
    n_blocks = max(2, (n_ops - 1) // BLOCK_OPS)
    shape = _act_shape(size)
    c = shape[1]
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(np.float32)
    weights = (rng.standard_normal((n_blocks, c, c)) / math.sqrt(c) * 0.9).astype(np.float32)
    biases = (rng.standard_normal((n_blocks, c)) * 0.1).astype(np.float32)
    if fp16_region is None:
        f0 = f1 = 0
    else:
        f0 = min(n_blocks - 2, int(n_blocks * fp16_region[0]))
        f1 = max(f0 + 1, min(n_blocks - 1, int(n_blocks * fp16_region[1])))
    planted = max(f1, min(n_blocks - 1, int(n_blocks * planted_at)))

    ref_dir, tgt_dir = os.path.join(root, "ref"), os.path.join(root, "target")
    sides = {"ref": DumpWriter(os.path.join(ref_dir, "rank_0")), "target": DumpWriter(os.path.join(tgt_dir, "rank_0"))}
    h = {"ref": x, "target": x}
    prev = {side: w.parameter("x", x, "Float32", is_weight=False) for side, w in sides.items()}
    data_format = (np.array(0, dtype=np.int64), "I64(0)")
    eps = np.float32(min(0.5, 2.0 / n_blocks))
    eps_arg = (np.array(eps, dtype=np.float32), f"Tensor(shape=[], dtype=Float32, value={float(eps):.6g})")
    fp16_names = []
    for i in range(n_blocks):
        if progress is not None:
            progress(i, n_blocks)
        s = i // BLOCKS_PER_STAGE
        scope = f"Default/stage{s}-Stage/block{i}-ResidualBlock"
        w4 = weights[i].reshape(c, c, 1, 1)
        for side, wr in sides.items():
            wref = wr.parameter(f"stage{s}.block{i}.conv.weight", w4, "Float32")
            bref = wr.parameter(f"stage{s}.block{i}.conv.bias", biases[i], "Float32")
            hin = h[side]
            lw = wr.node(
                "Load",
                f"{scope}/conv-Conv1x1/Load-op0",
                [wref, "UMonad[U]"],
                [("Float32", w4.shape)],
                [("Float32", w4.shape)],
                kernel=False,
            )
            fp16 = side == "target" and f0 <= i < f1
            conv_in, in_ref = hin, prev[side]
            if fp16:
                # 310 style: Cast to fp16 before the conv, run it in fp16, Cast back after
                conv_in = hin.astype(np.float16)
                in_ref = _kernel(
                    wr, "Cast", f"{scope}/conv-Conv1x1/Cast-op0", [(hin, in_ref)], [conv_in], {"dst_type": "F16"}
                )
                y = np.einsum(
                    "oc,bchw->bohw", weights[i].astype(np.float16).astype(np.float32), conv_in.astype(np.float32)
                ).astype(np.float16)
            else:
                y = np.einsum("oc,bchw->bohw", weights[i], conv_in).astype(np.float32)
            conv = f"{scope}/conv-Conv1x1/Conv2D-op0"
            attrs = {
                "kernel_size": "I64(1)",
                "pad_list": "(0, 0, 0, 0)",
                "format": '"NCHW"',
                "out_channel": f"I64({c})",
            }
            in_ref = _kernel(
                wr,
                "Conv2D",
                conv,
                [(conv_in, in_ref), (w4, lw)],
                [y],
                attrs,
                f"{20 + i % 7}~{21 + i % 7}, self.conv(x)",
            )
            if fp16:
                fp16_names.append(conv)
                back = y.astype(np.float32)
                in_ref = _kernel(
                    wr, "Cast", f"{scope}/conv-Conv1x1/Cast-op1", [(y, in_ref)], [back], {"dst_type": "F32"}
                )
                y = back
            lb = wr.node(
                "Load",
                f"{scope}/conv-Conv1x1/Load-op1",
                [bref, "UMonad[U]"],
                [("Float32", (c,))],
                [("Float32", (c,))],
                kernel=False,
            )
            yb = (y + biases[i][None, :, None, None]).astype(np.float32)
            in_ref = _kernel(
                wr, "BiasAdd", f"{scope}/conv-Conv1x1/BiasAdd-op0", [(y, in_ref), (biases[i], lb), data_format], [yb]
            )
            r = np.maximum(yb, np.float32(0))
            relu = _kernel(wr, "ReLU", f"{scope}/relu-ReLU/ReLU-op0", [(yb, in_ref)], [r])
            u = (r * eps).astype(np.float32)
            mul = _kernel(wr, "Mul", f"{scope}/Mul-op0", [(r, relu), eps_arg], [u])
            wrong_layout = side == "target" and i == planted
            # the planted bug: the residual read with its channels reversed (NHWC data taken as NCHW)
            m = ((hin[:, ::-1] if wrong_layout else hin) + u).astype(np.float32)
            prev[side] = _kernel(
                wr,
                "Add",
                f"{scope}/Add-op0",
                [(hin, prev[side]), (u, mul)],
                [m],
                {"format": '"NHWC"' if wrong_layout else '"NCHW"'},
                f"{30 + i % 5}, x + self.scale * y",
            )
            h[side] = m
    for side, wr in sides.items():
        out = (1.0 / (1.0 + np.exp(-h[side].astype(np.float64)))).astype(np.float32)
        _kernel(wr, "Sigmoid", "Default/head-Sigmoid/Sigmoid-op0", [(h[side], prev[side])], [out])
        wr.finish()  # parameters are dumped once each, after every kernel (as MindSpore does)
    n_kernels = n_blocks * BLOCK_OPS + 1
    planted_name = f"Default/stage{planted // BLOCKS_PER_STAGE}-Stage/block{planted}-ResidualBlock/Add-op0"
    return DemoInfo(
        root=root,
        ref=ref_dir,
        target=tgt_dir,
        n_kernels=n_kernels,
        n_files=sides["ref"].files,
        planted=planted_name,
        planted_index=planted * BLOCK_OPS + BLOCK_OPS - 1,
        fp16_first=fp16_names[0] if fp16_names else "",
        fp16_last=fp16_names[-1] if fp16_names else "",
        shape=shape,
    )
