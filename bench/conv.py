"""The large-tensors-with-replay shape of issue 34: a MindSpore 2.10 e2e dump of six convolution layers, generated.

`layers` Cells of Conv2D 32->32 3x3 (stride 1, padding 1) + BiasAdd + ReLU on a 1x32x256x256 activation, written
in MindSpore's file naming and layout by the demo's `PairWriter` (as `bench/mlp.py` writes its pair). Every
activation is 8 MiB in float32 and dumped twice (an op's output and the next op's input): 48 MiB a layer, 0.3 GB
a side, 0.58 GB the pair.

The reference computes in float32; the target is fp16-ish: each op computed from its inputs rounded to float16,
its output rounded to float16, stored as float32 (as a mixed-precision run dumps it). Every op is within
float16's noise, so `compare` reads every pair and the replays prove each op's local error. Deterministic from
`seed`.
"""

from __future__ import annotations

import math
import os

import numpy as np
from generated import generated_once

from dumptui.core.demo.dumpwriter import SIDES, PairWriter, f16

CHANNELS = 32
SIDE = 256
CONV_ATTRS = {
    "kernel_size": "(3, 3)",
    "mode": "I64(1)",
    "out_channel": f"I64({CHANNELS})",
    "pad": "(1, 1, 1, 1)",
    "pad_mode": '"pad"',
    "format": '"NCHW"',
    "pad_list": "(1, 1, 1, 1)",
    "groups": "I64(1)",
    "stride": "(1, 1, 1, 1)",
    "group": "I64(1)",
    "dilation": "(1, 1, 1, 1)",
}


def conv3x3(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """NCHW Conv2D, 3x3, stride 1, padding 1, in float32: one matrix product per tap."""
    n, c, h, wd = x.shape
    xp = np.pad(x.astype(np.float32), ((0, 0), (0, 0), (1, 1), (1, 1)))
    out = np.zeros((n, w.shape[0], h, wd), np.float32)
    w32 = w.astype(np.float32)
    for i in range(3):
        for j in range(3):
            tap = xp[:, :, i : i + h, j : j + wd].reshape(n, c, h * wd)
            out += np.einsum("oc,ncp->nop", w32[:, :, i, j], tap, optimize=True).reshape(out.shape)
    return out


def _fp16ish(a: np.ndarray) -> np.ndarray:
    return f16(a).astype(np.float32)


def write_conv(root: str, layers: int = 6, seed: int = 20261205) -> dict:
    """Write `root/ref` and `root/target`; returns the pair's description (paths, counts, bytes a side)."""
    rng = np.random.default_rng(seed)
    pw = PairWriter(root)
    x = rng.standard_normal((1, CHANNELS, SIDE, SIDE)).astype(np.float32)
    h = {
        "ref": (x, pw.param("ref", "x", x, is_weight=False)),
        "target": (x, pw.param("target", "x", x, is_weight=False)),
    }
    fmt = (np.array(0, np.int64), "I64(0)")
    op = 0
    for i in range(layers):
        w = (rng.standard_normal((CHANNELS, CHANNELS, 3, 3)) * math.sqrt(2.0 / (CHANNELS * 9))).astype(np.float32)
        b = (rng.standard_normal(CHANNELS) * 0.1).astype(np.float32)
        scope = f"Default/network-ConvNet/layer{i}-Layer"
        for side in SIDES:
            v, ref = h[side]
            rounded = _fp16ish if side == "target" else (lambda a: a.astype(np.float32))
            pwr = pw.param(side, f"layer{i}.conv.weight", w)
            pbr = pw.param(side, f"layer{i}.conv.bias", b)
            cv = rounded(conv3x3(rounded(v), rounded(w)))
            cv_t = pw.op(side, "Conv2D", f"{scope}/conv-Conv2d/Conv2D-op{op}", [(v, ref), (w, pwr)], cv, CONV_ATTRS)
            ba = rounded(cv + rounded(b)[None, :, None, None])
            ba_t = pw.op(side, "BiasAdd", f"{scope}/conv-Conv2d/BiasAdd-op{op + 1}", [cv_t, (b, pbr), fmt], ba)
            h[side] = pw.op(side, "ReLU", f"{scope}/relu-ReLU/ReLU-op{op + 2}", [ba_t], np.maximum(ba, 0))
        op += 3
    pw.finish()
    ref_dir = os.path.join(root, "ref", "rank_0", "Net", "0", "0")
    return {
        "ref": os.path.join(root, "ref"),
        "target": os.path.join(root, "target"),
        "layers": layers,
        "kernels": 3 * layers,
        "files": pw.w["ref"].files,
        "bytes": sum(e.stat().st_size for e in os.scandir(ref_dir)),
    }


def conv(out: str, name: str = "conv-6", layers: int = 6) -> dict:
    """The pair under `out/name`, generated once (kept while its description matches)."""
    return generated_once(os.path.join(out, name), layers, write_conv)
