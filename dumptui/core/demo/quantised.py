"""Generated pairs of a small detector whose target is transformed as an Ascend310 inference graph is: fp16
throughout, BatchNorm folded into its convolution, int8 weights with per-channel scales, vendor kernels that
saturate, an op of another definition. Written as real MindSpore 2.x dumps (dumpwriter.py) with a text IR,
so the readers, the preconditions, the replay and the scan see what they see on a device.

    x ─ stem conv 1x1 (8) ─ BatchNorm ─ ReLU ─ down conv 1x1 (16) ─ BatchNorm ─ ReLU ─ Mul ─ ReduceSum(c) ─ Sqrt ─ Div  emb
                          └ FloorMod(·, 1) ─ Mul 0.01 ─ Add(ReLU) frac          └ Add 100 ─ Sub 100  centred (fp16 cancels)
    priors ─ Softmax(c)  scores

Targets (`VARIANTS`; every one fp16 with fp16 weights, a Cast of each network input):
- `fp16`: nothing else (benign);
- `fold`: every BatchNorm folded into its conv: Conv2D + BiasAdd with the folded weight and a new bias (benign);
- `fold-var`: like `fold`, but the down conv's channel `BUG_CHANNEL` folded with channel+1's running variance;
- `int8`: every conv's weight int8 with a per-channel scale (`<conv>.wscale`, a Cast and a Mul dequantise it),
  its input fake-quantised per tensor (Mul, Round, Maximum, Minimum, Mul) as AMCT does (benign);
- `int8-scale`: like `int8`, but the down conv's channel `BUG_CHANNEL` scale stored 25 % too large;
- `softmax-sat`: the Softmax computes exp(x) in fp16 without subtracting the maximum: 4 of 256 positions
  saturate at 65504, 1.6 % of its elements wrong by about 12 % (a sparse error the trimmed mean hides);
- `softmax-sat1`: the same on one position only (0.4 %: benign by default, found with `--max-off 0.002`);
- `precision`: the embedding's ReduceSum accumulates in fp16, element after element (fp32 fixes it);
- `precision-fixed`: `precision` re-dumped with the remedy: that ReduceSum in float32 between Casts;
- `mod`: the frac branch runs Mod where the reference runs FloorMod (another definition: not precision).
The `centred` output loses precision by cancellation (x + 100 - 100 in fp16, cos about 0.997) in every
variant: benign by default, a root with `--cos 0.999`.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from dumptui.core.demo.dumpwriter import SIDES, PairWriter, f16, scalar

VARIANTS = (
    "fp16",
    "fold",
    "fold-var",
    "int8",
    "int8-scale",
    "softmax-sat",
    "softmax-sat1",
    "precision",
    "precision-fixed",
    "mod",
)
BUG_CHANNEL = 12

# where each variant's culprit is (reference name, target name), None for the benign ones
_DOWN = "Default/down-Down/conv-Conv2d/Conv2D-op0"  # scopes are MindSpore's: `attribute-CellClass` per level
_CULPRITS: dict[str, tuple[str, str] | None] = {
    "fp16": None,
    "fold": None,
    "fold-var": (_DOWN, _DOWN),
    "int8": None,
    "int8-scale": (_DOWN, _DOWN),
    "softmax-sat": ("Default/head-Head/Softmax-op0", "Default/head-Head/Softmax-op0"),
    "softmax-sat1": None,
    "precision": ("Default/emb-L2Norm/ReduceSum-op0", "Default/emb-L2Norm/ReduceSum-op0"),
    "precision-fixed": None,
    "mod": ("Default/frac-Frac/FloorMod-op0", "Default/frac-Frac/Mod-op0"),
}
CAUSES = {"softmax-sat": "precision", "precision": "precision", "mod": "semantics"}


@dataclass
class QuantisedDemo:
    root: str
    ref: str
    target: str
    variant: str
    culprit: tuple[str, str] | None  # (reference op, target op) where the bug is; None when benign
    cause: str | None  # "precision" | "semantics" for a culprit the remedy can name, else None


CONV_ATTRS = {
    "kernel_size": "(1, 1)",
    "mode": "I64(1)",
    "pad": "(0, 0, 0, 0)",
    "pad_mode": '"pad"',
    "format": '"NCHW"',
    "pad_list": "(0, 0, 0, 0)",
    "groups": "I64(1)",
    "stride": "(1, 1, 1, 1)",
    "group": "I64(1)",
    "dilation": "(1, 1, 1, 1)",
}


def _conv(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    return np.einsum("oc,nchw->nohw", w.reshape(w.shape[0], -1).astype(np.float64), x.astype(np.float64))


class _Net:
    """The network on both sides; the target transformed as the variant says."""

    def __init__(self, root: str, variant: str, rng: np.random.Generator):
        self.io = PairWriter(root)
        self.v = variant
        self.rng = rng

    # -------------------------------------------------------------------------------- convolutions
    def conv_bn(self, scope: str, h: dict, c_in: int, c_out: int, bug: bool) -> dict:
        """`scope` is the cell's (`Default/down-Down`); its parameters are named `down.conv.weight` ..."""
        prefix = scope.rsplit("/", maxsplit=1)[-1].split("-", maxsplit=1)[0]
        """Conv2D 1x1 + BatchNorm (+ the target's transformation of them), then ReLU; returns (bn, relu)."""
        rng = self.rng
        w = (rng.standard_normal((c_out, c_in, 1, 1)) / math.sqrt(c_in)).astype(np.float32)
        gamma = rng.uniform(0.5, 1.5, c_out).astype(np.float32)
        beta = (rng.standard_normal(c_out) * 0.2).astype(np.float32)
        mean = (rng.standard_normal(c_out) * 0.3).astype(np.float32)
        var = rng.uniform(0.7, 1.1, c_out).astype(np.float32)
        eps = 1e-5
        conv_name, bn_scope = f"{scope}/conv-Conv2d", f"{scope}/bn-BatchNorm2d"
        attrs = {**CONV_ATTRS, "out_channel": f"I64({c_out})"}
        out: dict = {}
        # the reference: Conv2D, BatchNorm, float32
        x, xa = h["ref"]
        wa = self.io.param("ref", f"{prefix}.conv.weight", w)
        y, ya = self.io.op(
            "ref", "Conv2D", f"{conv_name}/Conv2D-op0", [(x, xa), (w, wa)], _conv(x, w).astype(np.float32), attrs
        )
        out["ref"] = self._batchnorm("ref", bn_scope, prefix, (y, ya), (gamma, beta, mean, var), eps)
        # the target
        x, xa = h["target"]
        folded = self.v in ("fold", "fold-var")
        quant = self.v in ("int8", "int8-scale")
        s = gamma.astype(np.float64) / np.sqrt(var.astype(np.float64) + eps)
        if folded and bug:
            s_bug = s.copy()
            s_bug[BUG_CHANNEL] = gamma[BUG_CHANNEL] / math.sqrt(float(var[BUG_CHANNEL + 1]) + eps)
        else:
            s_bug = s
        w_t = w.astype(np.float64) * s_bug[:, None, None, None] if folded else w.astype(np.float64)
        if quant:
            x, xa = self._fake_quant(scope, (x, xa))
            scale = np.abs(w_t).reshape(c_out, -1).max(axis=1) / 127.0
            q = np.clip(np.round(w_t.reshape(c_out, -1) / scale[:, None]), -127, 127).astype(np.int8)
            stored = scale.copy()
            if bug:
                stored[BUG_CHANNEL] *= 1.25
            q = q.reshape(w.shape)
            stored_t = stored.astype(np.float32).reshape(c_out, 1, 1, 1)
            qa = self.io.param("target", f"{prefix}.conv.weight", q)
            sa = self.io.param("target", f"{prefix}.conv.wscale", stored_t)
            qc, qca = self.io.op(
                "target", "Cast", f"{conv_name}/Cast-op1", [(q, qa)], q.astype(np.float16), {"dst_type": "F16"}
            )
            wv, wva = self.io.op(
                "target",
                "Mul",
                f"{conv_name}/Mul-op2",
                [(qc, qca), (stored_t, sa)],
                f16(qc.astype(np.float64) * stored_t),
            )
        else:
            wv = f16(w_t)
            wva = self.io.param("target", f"{prefix}.conv.weight", wv)
        y = f16(_conv(x, wv))
        y, ya = self.io.op("target", "Conv2D", f"{conv_name}/Conv2D-op0", [(x, xa), (wv, wva)], y, attrs)
        if folded:
            bias = f16(beta.astype(np.float64) - mean.astype(np.float64) * s_bug)
            ba = self.io.param("target", f"{prefix}.conv.bias", bias)
            fmt = (np.array(0, dtype=np.int64), "I64(0)")
            b = f16(y.astype(np.float64) + bias.astype(np.float64)[None, :, None, None])
            out["target"] = self.io.op("target", "BiasAdd", f"{conv_name}/BiasAdd-op0", [(y, ya), (bias, ba), fmt], b)
        else:
            params = tuple(f16(p) for p in (gamma, beta, mean, var))
            out["target"] = self._batchnorm("target", bn_scope, prefix, (y, ya), params, eps)
        relu = {
            side: self.io.op(
                side, "ReLU", f"{scope}/ReLU-op0", [out[side]], self._store(side, np.maximum(out[side][0], 0))
            )
            for side in SIDES
        }
        return {"bn": out, "relu": relu}

    def _batchnorm(self, side: str, bn_scope: str, prefix: str, y: tuple, params: tuple, eps: float) -> tuple:
        gamma, beta, mean, var = params
        names = ("gamma", "beta", "moving_mean", "moving_variance")
        ins = [y] + [(p, self.io.param(side, f"{prefix}.bn.{n}", p)) for p, n in zip(params, names)]
        ins += [(np.array(False), "Bool(0)"), scalar(eps)]
        g, b, m, v = (np.asarray(p, dtype=np.float64)[None, :, None, None] for p in params)
        z = (y[0].astype(np.float64) - m) / np.sqrt(v + eps) * g + b
        return self.io.op(side, "BatchNorm", f"{bn_scope}/BatchNorm-op0", ins, self._store(side, z))

    def _fake_quant(self, scope: str, x: tuple) -> tuple:
        """AMCT's per-tensor activation quantisation, target-only kernels: x/s, round, clamp, x s."""
        xv, xa = x
        s = float(np.abs(xv.astype(np.float64)).max() / 127.0) or 1.0
        name = f"{scope}/conv-Conv2d"
        a = self.io.op(
            "target", "Mul", f"{name}/Mul-op0", [x, scalar(1.0 / s, np.float16)], f16(xv * np.float16(1.0 / s))
        )
        r = self.io.op("target", "Round", f"{name}/Round-op0", [a], np.round(a[0]).astype(np.float16))
        lo = self.io.op(
            "target",
            "Maximum",
            f"{name}/Maximum-op0",
            [r, scalar(-128.0, np.float16)],
            np.maximum(r[0], np.float16(-128)),
        )
        hi = self.io.op(
            "target",
            "Minimum",
            f"{name}/Minimum-op0",
            [lo, scalar(127.0, np.float16)],
            np.minimum(lo[0], np.float16(127)),
        )
        return self.io.op(
            "target",
            "Mul",
            f"{name}/Mul-op1",
            [hi, scalar(s, np.float16)],
            f16(hi[0].astype(np.float64) * np.float16(s)),
        )

    def _store(self, side: str, v: np.ndarray) -> np.ndarray:
        return f16(v) if side == "target" else np.asarray(v, dtype=np.float32)

    def both(
        self,
        op_type: str,
        full: str,
        ins: dict,
        fn: Callable[[str, list[np.ndarray]], np.ndarray],
        attrs: dict | None = None,
    ) -> dict:
        return {
            side: self.io.op(
                side,
                op_type,
                full,
                ins[side],
                self._store(side, fn(side, [np.asarray(v, dtype=np.float64) for v, _a in ins[side]])),
                attrs,
            )
            for side in SIDES
        }


def _priors(rng: np.random.Generator, saturated: int, c: int = 8, hw: int = 16) -> np.ndarray:
    """Logits for the Softmax, fp16-representable: every position below exp's fp16 limit (11.09) but
    `saturated` positions, whose top two logits exceed it (exp clamps at 65504 there)."""
    p = rng.uniform(4.0, 10.6, (1, c, hw, hw))
    rows = rng.choice(hw * hw, size=saturated, replace=False)
    for k in rows:
        i, j = divmod(int(k), hw)
        p[0, :, i, j] = np.array([11.4, 11.2, 10.5, 10.0, 9.5, 9.0, 8.5, 8.0])[:c] + rng.uniform(-0.05, 0.05, c)
    return p.astype(np.float16).astype(np.float32)


def write_quantised_demo(root: str, variant: str = "fp16", seed: int = 20261204) -> QuantisedDemo:
    """Write `root/ref` and `root/target` for one variant."""
    if variant not in VARIANTS:
        raise ValueError(f"variant one of {VARIANTS}")
    rng = np.random.default_rng(seed)
    net = _Net(root, variant, rng)
    io = net.io
    x = rng.standard_normal((1, 8, 16, 16)).astype(np.float32)
    saturated = {"softmax-sat": 4, "softmax-sat1": 1}.get(variant, 0)
    priors = _priors(np.random.default_rng(seed + 1), saturated)
    h: dict = {}
    pr: dict = {}
    for side in SIDES:
        xa = io.param(side, "x", x, is_weight=False)
        pa = io.param(side, "priors", priors, is_weight=False)
        if side == "target":
            h[side] = io.op(side, "Cast", "Default/Cast-op0", [(x, xa)], x.astype(np.float16), {"dst_type": "F16"})
            pr[side] = io.op(
                side, "Cast", "Default/Cast-op1", [(priors, pa)], priors.astype(np.float16), {"dst_type": "F16"}
            )
        else:
            h[side], pr[side] = (x, xa), (priors, pa)
    stem = net.conv_bn("Default/stem-Stem", h, 8, 8, bug=False)
    _frac(net, stem)
    _centred(net, stem["relu"])
    down = net.conv_bn("Default/down-Down", stem["relu"], 8, 16, bug=variant in ("fold-var", "int8-scale"))
    _embedding(net, down["relu"])
    _scores(net, pr)
    io.finish()
    return QuantisedDemo(
        root, os.path.join(root, "ref"), os.path.join(root, "target"), variant, _CULPRITS[variant], CAUSES.get(variant)
    )


def _frac(net: _Net, stem: dict) -> None:
    """frac = ReLU + 0.01 * FloorMod(BatchNorm, 1): the target's `mod` variant runs Mod (truncated) instead."""
    scope = "Default/frac-Frac"
    one = scalar(1.0)
    out = {}
    for side in SIDES:
        kind = "Mod" if side == "target" and net.v == "mod" else "FloorMod"
        v, a = stem["bn"][side]
        one_s = one if side == "ref" else scalar(1.0, np.float16)
        val = np.fmod(v.astype(np.float64), 1.0) if kind == "Mod" else np.mod(v.astype(np.float64), 1.0)
        out[side] = net.io.op(side, kind, f"{scope}/{kind}-op0", [(v, a), one_s], net._store(side, val))
    small = {s: [out[s], scalar(0.01) if s == "ref" else scalar(0.01, np.float16)] for s in SIDES}
    m = net.both("Mul", f"{scope}/Mul-op0", small, lambda s, v: v[0] * v[1])
    net.both("Add", f"{scope}/Add-op0", {s: [stem["relu"][s], m[s]] for s in SIDES}, lambda s, v: v[0] + v[1])


def _centred(net: _Net, h: dict) -> None:
    """(0.17 h + 100) - 100: in fp16 the offset takes the low bits (cos about 0.997); exact on the reference."""
    scope = "Default/centre-Centre"
    k = {s: scalar(0.17) if s == "ref" else scalar(0.17, np.float16) for s in SIDES}
    c = {s: scalar(100.0) if s == "ref" else scalar(100.0, np.float16) for s in SIDES}
    m = net.both("Mul", f"{scope}/Mul-op0", {s: [h[s], k[s]] for s in SIDES}, lambda s, v: v[0] * v[1])
    a = net.both("Add", f"{scope}/Add-op0", {s: [m[s], c[s]] for s in SIDES}, lambda s, v: v[0] + v[1])
    net.both("Sub", f"{scope}/Sub-op0", {s: [a[s], c[s]] for s in SIDES}, lambda s, v: v[0] - v[1])


def _embedding(net: _Net, h: dict) -> None:
    """emb = h / sqrt(sum of h^2 over channels and space): the `precision` variant accumulates in fp16."""
    scope = "Default/emb-L2Norm"
    sq = net.both("Mul", f"{scope}/Mul-op0", {s: [h[s], h[s]] for s in SIDES}, lambda s, v: v[0] * v[1])
    axes = (np.array([1, 2, 3], dtype=np.int64), "(I64(1), I64(2), I64(3))")
    keep = (np.array(True), "Bool(1)")
    summed = {}
    for side in SIDES:
        v, a = sq[side]
        full = f"{scope}/ReduceSum-op0"
        if side == "target" and net.v == "precision-fixed":
            c32 = net.io.op(side, "Cast", f"{scope}/Cast-op0", [(v, a)], v.astype(np.float32), {"dst_type": "F32"})
            s32 = net.io.op(
                side,
                "ReduceSum",
                full,
                [c32, axes, keep],
                c32[0].astype(np.float64).sum(axis=(1, 2, 3), keepdims=True).astype(np.float32),
            )
            summed[side] = net.io.op(side, "Cast", f"{scope}/Cast-op1", [s32], f16(s32[0]), {"dst_type": "F16"})
        elif side == "target" and net.v == "precision":
            summed[side] = net.io.op(side, "ReduceSum", full, [(v, a), axes, keep], _fp16_accumulate(v))
        else:
            summed[side] = net.io.op(
                side,
                "ReduceSum",
                full,
                [(v, a), axes, keep],
                net._store(side, v.astype(np.float64).sum(axis=(1, 2, 3), keepdims=True)),
            )
    n = net.both("Sqrt", f"{scope}/Sqrt-op0", {s: [summed[s]] for s in SIDES}, lambda s, v: np.sqrt(v[0]))
    net.both("Div", f"{scope}/Div-op0", {s: [h[s], n[s]] for s in SIDES}, lambda s, v: v[0] / v[1])


def _fp16_accumulate(v: np.ndarray) -> np.ndarray:
    """Sum over axes 1-3, element after element in C order, each partial sum rounded to fp16 (saturating):
    4,096 squares lose about 3 % (the partial sum's rounding step grows past the increments)."""
    flat = v.astype(np.float64).reshape(v.shape[0], -1)
    total = np.zeros(flat.shape[0])
    for k in range(flat.shape[1]):
        total = f16(total + flat[:, k]).astype(np.float64)
    return f16(total).reshape(v.shape[0], 1, 1, 1)


def _scores(net: _Net, pr: dict) -> None:
    """Softmax over the channels of the priors; the target's kernel takes exp(x) in fp16 unshifted."""
    axis = (np.array([1], dtype=np.int64), "(I64(1))")
    full = "Default/head-Head/Softmax-op0"
    for side in SIDES:
        v, a = pr[side]
        x = v.astype(np.float64)
        if side == "target":
            e = f16(np.exp(x)).astype(np.float64)
            y = f16(e / e.sum(axis=1, keepdims=True))
        else:
            e = np.exp(x - x.max(axis=1, keepdims=True))
            y = (e / e.sum(axis=1, keepdims=True)).astype(np.float32)
        net.io.op(side, "Softmax", full, [(v, a), axis], y)
