"""The many-small-tensors shape of issue 34: a MindSpore 2.10 e2e dump of a deep MLP, generated.

`layers` Cells of Dense 64->64 + ReLU (kernels MatMul, BiasAdd, ReLU: 3 per layer), batch 1, written in
MindSpore's file naming and layout by the demo's `PairWriter` (as `dumptui/core/demo/noisy.py` writes its
pairs). MindSpore 2.x dumps an op's scalar arguments as inputs of their own: MatMul's transpose flags (inputs 2
and 3), BiasAdd's data format (input 2). So a layer is 11 kernel files and 2 Parameter files: 13,000 files a
side for 1,000 layers, 64 to 4,096 elements each.

The reference computes in float32; the target in float16 throughout (weights stored in float16), with the bias
of one layer off by a little (2 %). Every value is deterministic from `seed`.
"""

from __future__ import annotations

import math
import os

import numpy as np
from generated import generated_once

from dumptui.core.demo.dumpwriter import SIDES, PairWriter, f16

WIDTH = 64


def _layer_weights(rng: np.random.Generator, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """An orthogonal 64x64 weight and a bias, scaled so that ReLU(x W^T + b) has unit RMS on the reference's
    `x`: a thousand layers neither overflow float16 nor fade out."""
    q, r = np.linalg.qr(rng.standard_normal((WIDTH, WIDTH)))
    w = q * np.sign(np.diag(r)) * math.sqrt(2.0)
    b = rng.standard_normal(WIDTH) * 0.1
    y = np.maximum(x.astype(np.float64) @ w.T + b, 0.0)
    rms = float(np.sqrt(np.mean(y * y))) or 1.0
    return (w / rms).astype(np.float32), (b / rms).astype(np.float32)


def write_mlp(root: str, layers: int = 1000, bug_layer: int | None = None, seed: int = 20261205) -> dict:
    """Write `root/ref` and `root/target`; returns the pair's description (paths, the planted op, counts)."""
    rng = np.random.default_rng(seed)
    bug_layer = int(layers * 0.6) if bug_layer is None else bug_layer
    pw = PairWriter(root)
    x = rng.standard_normal((1, WIDTH)).astype(np.float32)
    h = {
        "ref": (x, pw.param("ref", "x", x, is_weight=False)),
        "target": (f16(x), pw.param("target", "x", f16(x), is_weight=False)),
    }
    no, yes, fmt = (np.array(False), "Bool(0)"), (np.array(True), "Bool(1)"), (np.array(0, np.int64), "I64(0)")
    planted = ""
    op = 0
    for i in range(layers):
        w, b = _layer_weights(rng, h["ref"][0])
        scope = f"Default/network-MLP/layer{i}-Layer"
        dense = f"{scope}/dense-Dense"
        for side in SIDES:
            v, ref = h[side]
            wv, bv = (w, b) if side == "ref" else (f16(w), f16(b * 1.02 if i == bug_layer else b))
            pwr = pw.param(side, f"layer{i}.dense.weight", wv)
            pbr = pw.param(side, f"layer{i}.dense.bias", bv)
            mm = (v.astype(np.float32) @ wv.astype(np.float32).T).astype(v.dtype)
            mm_t = pw.op(side, "MatMul", f"{dense}/MatMul-op{op}", [(v, ref), (wv, pwr), no, yes], mm)
            ba = (mm.astype(np.float32) + bv.astype(np.float32)).astype(v.dtype)
            ba_t = pw.op(side, "BiasAdd", f"{dense}/BiasAdd-op{op + 1}", [mm_t, (bv, pbr), fmt], ba)
            h[side] = pw.op(side, "ReLU", f"{scope}/relu-ReLU/ReLU-op{op + 2}", [ba_t], np.maximum(ba, 0))
        if i == bug_layer:
            planted = f"{dense}/BiasAdd-op{op + 1}"
        op += 3
    pw.finish()
    return {
        "ref": os.path.join(root, "ref"),
        "target": os.path.join(root, "target"),
        "planted": planted,
        "layers": layers,
        "kernels": 3 * layers,
        "files": pw.w["ref"].files,
    }


def mlp(out: str, name: str = "mlp-1000", layers: int = 1000) -> dict:
    """The pair under `out/name`, generated once (kept while its description matches)."""
    return generated_once(os.path.join(out, name), layers, write_mlp)
