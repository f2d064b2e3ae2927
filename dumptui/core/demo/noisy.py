"""Generated network pairs for the local-error rule: a reference in fp32 against a target that runs like an
Ascend310 (or under bf16), with one small planted bug or none. Written as real MindSpore 2.x dumps
(dumpwriter.py) with graph attributes, so every reader, the replay and the scan see what they see on a device.

    x -> 36 residual blocks -> ReduceMean -> MatMul -> Softmax           (about 230 kernels)
    block i:    h += Mul(ReLU(BiasAdd(Conv2D_1x1(h))), eps)                                      main path
    i % 4 == 1: h += Mul(Mul(Floor(Mul(h, 64)), 1/64), 0.02)   a quantisation branch: Floor jumps on noise
    i % 4 == 3: h += Mul(Tanh(h), 0.01)                           a parallel branch, diluted 100x at the merge

Target precisions: `fp32` (same as the reference), `fp16` (Conv2D and MatMul in fp16 with a Cast before and
after, fp16-rounded weights: a 310 under allow_fp32_to_fp16), `bf16-input` (the network input rounded to
bf16; everything else fp32) and `bf16-autocast` (every op's output rounded to bf16, dumped as BFloat16).
Bugs (silent kernel bugs: no attribute or constant differs, only the computation):
`main` (an Add on the main path adds 1.25x its update), `branch` (a Tanh of the diluted branch computes
tanh(1.3 x)), `discontinuous` (the Mul right behind a Floor multiplies by 1.2/64 instead of 1/64); and one
bug in a weight, as a bad checkpoint conversion makes it: `weight` (every block scales its update by a
per-channel weight `block<i>.scale`, a layer scale as in ConvNeXt, instead of the constant eps; one block's
is off by 0.5 % on the target, ten times fp16 rounding: its Mul, fed straight into the residual Add, is the
root, found through the weight).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from dumptui.core.demo.dumpwriter import LABEL, DumpWriter

PRECISIONS = ("fp32", "fp16", "bf16-input", "bf16-autocast")
BUGS = ("main", "branch", "discontinuous", "weight")
SIDES = ("ref", "target")


@dataclass
class NoisyDemo:
    root: str
    ref: str
    target: str
    precision: str
    bug: str | None
    planted: str | None  # full name of the op where the bug is (the same on both sides)
    n_kernels: int


def bf16_round(a: np.ndarray) -> np.ndarray:
    """float32 values rounded to the nearest bfloat16 (ties to even), kept as float32."""
    bits = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    return (((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16).astype(np.uint32).view(np.float32)


class _Net:
    """Runs the network on both sides at once and writes every kernel the way MindSpore dumps it."""

    def __init__(self, root: str, precision: str):
        self.precision = precision
        self.w = {s: DumpWriter(os.path.join(root, s, "rank_0")) for s in SIDES}
        self.kernels = 0

    def _label(self, side: str, arr: np.ndarray) -> str:
        if side == "target" and self.precision == "bf16-autocast" and arr.dtype == np.float32:
            return "BFloat16"
        return LABEL[str(arr.dtype)]

    def _finish_value(self, side: str, v: np.ndarray) -> np.ndarray:
        """What the side stores as the op's output (bf16 autocast rounds every float output)."""
        v = v.astype(v.dtype if v.dtype != np.float64 else np.float32)
        if side == "target" and self.precision == "bf16-autocast" and v.dtype == np.float32:
            return bf16_round(v)
        return v

    def kernel(
        self,
        op_type: str,
        full: str,
        ins: dict[str, list],
        compute: Callable[[str, list[np.ndarray]], np.ndarray],
        attrs: dict[str, str] | None = None,
        target_only: bool = False,
        sides: tuple[str, ...] = SIDES,
    ) -> dict[str, tuple[np.ndarray, str]]:
        """`ins[side]`: a list of (value, IR argument, dumped?) per input slot; `compute(side, values)`.
        Returns side -> (output value, IR reference)."""
        out = {}
        for side in sides:
            args = ins[side]
            values = [a[0] for a in args]
            y = self._finish_value(side, np.asarray(compute(side, values)))
            w = self.w[side]
            for slot, (v, _ref, dumped) in enumerate(args):
                if dumped:
                    w.tensor(op_type, full, "input", slot, v, self._label(side, v))
            w.tensor(op_type, full, "output", 0, y, self._label(side, y))
            ir_ins = [(self._label(side, v), tuple(np.shape(v))) for v, _r, _d in args]
            ref = w.node(op_type, full, [a[1] for a in args], ir_ins, [(self._label(side, y), tuple(y.shape))], attrs)
            out[side] = (y, ref)
        if not target_only:
            self.kernels += 1
        return out

    def target_cast(self, full: str, value: tuple[np.ndarray, str], dtype: type) -> tuple[np.ndarray, str]:
        """A Cast the target inserts around an fp16 op (a kernel of the target only)."""
        dst = "F16" if dtype is np.float16 else "F32"
        out = self.kernel(
            "Cast",
            full,
            {"target": [(value[0], value[1], True)]},
            lambda _s, v: v[0].astype(dtype),
            {"dst_type": dst},
            target_only=True,
            sides=("target",),
        )
        return out["target"]


def _const(value: float) -> tuple[np.ndarray, str, bool]:
    return np.array(value, dtype=np.float32), f"Tensor(shape=[], dtype=Float32, value={value:g})", True


def write_noisy_demo(
    root: str,
    precision: str = "fp16",
    bug: str | None = "main",
    blocks: int = 36,
    channels: int = 8,
    size: int = 256,
    seed: int = 20261203,
    planted_at: float = 0.6,
) -> NoisyDemo:
    """Write `root/ref` and `root/target`; `size` elements per activation."""
    if precision not in PRECISIONS or (bug is not None and bug not in BUGS):
        raise ValueError(f"precision one of {PRECISIONS}, bug one of {BUGS} or None")
    rng = np.random.default_rng(seed)
    c, hw = channels, size // channels
    h_, w_ = next((d, hw // d) for d in range(int(math.isqrt(hw)), 0, -1) if hw % d == 0)
    shape = (1, c, h_, w_)
    net = _Net(root, precision)
    x = rng.standard_normal(shape).astype(np.float32)
    eps = np.float32(2.0 / blocks)
    p = min(blocks - 1, int(blocks * planted_at))
    bug_block = {"main": p, "branch": p - (p % 4) + 3, "discontinuous": p - (p % 4) + 1, "weight": p}.get(bug or "", -1)
    if bug_block >= blocks:
        bug_block -= 4
    planted = None
    h = {}
    for side in SIDES:
        xv = bf16_round(x) if side == "target" and precision in ("bf16-input", "bf16-autocast") else x
        h[side] = (xv, net.w[side].parameter("x", xv, "Float32", is_weight=False))
    fmt = (np.array(0, dtype=np.int64), "I64(0)", True)
    for i in range(blocks):
        scope = f"Default/stage{i // 12}-Stage/block{i}-Block"
        wgt = (rng.standard_normal((c, c, 1, 1)) / math.sqrt(c) * 0.9).astype(np.float32)
        bias = (rng.standard_normal(c) * 0.1).astype(np.float32)
        conv = _cube_conv(net, f"{scope}/conv-Conv1x1", h, wgt, f"block{i}.conv.weight")
        b = net.kernel(
            "BiasAdd",
            f"{scope}/conv-Conv1x1/BiasAdd-op0",
            {
                s: [(conv[s][0], conv[s][1], True), (bias, _param(net, s, f"block{i}.conv.bias", bias), True), fmt]
                for s in SIDES
            },
            lambda s, v: v[0] + v[1][None, :, None, None],
        )
        r = net.kernel(
            "ReLU",
            f"{scope}/ReLU-op0",
            {s: [(b[s][0], b[s][1], True)] for s in SIDES},
            lambda s, v: np.maximum(v[0], 0),
        )
        if bug == "weight":
            layer_scale = (eps * (1 + 0.1 * rng.standard_normal((1, c, 1, 1)))).astype(np.float32)
            scales = {"ref": layer_scale, "target": layer_scale}
            if i == bug_block:
                off = 1 + 0.005 * rng.standard_normal(layer_scale.shape)
                scales["target"] = (layer_scale * off).astype(np.float32)
                planted = f"{scope}/Mul-op0"
            factor = {s: (scales[s], _param(net, s, f"block{i}.scale", scales[s]), True) for s in SIDES}
        else:
            factor = {s: _const(float(eps)) for s in SIDES}
        u = net.kernel(
            "Mul",
            f"{scope}/Mul-op0",
            {s: [(r[s][0], r[s][1], True), factor[s]] for s in SIDES},
            lambda s, v: v[0] * v[1],
        )
        add = f"{scope}/Add-op0"
        scale = 1.25 if bug == "main" and i == bug_block else 1.0
        if scale != 1.0:
            planted = add

        def residual_add(s: str, v: list[np.ndarray], k: float = scale) -> np.ndarray:  # a typed lambda s, v, k=scale
            return v[0] + (k if s == "target" else 1.0) * v[1]

        h = net.kernel(
            "Add", add, {s: [(h[s][0], h[s][1], True), (u[s][0], u[s][1], True)] for s in SIDES}, residual_add
        )
        if i % 4 == 1:
            h, name = _quant_branch(net, f"{scope}/quant-Quant", h, bug == "discontinuous" and i == bug_block)
            planted = name or planted
        elif i % 4 == 3:
            h, name = _tanh_branch(net, f"{scope}/side-Side", h, bug == "branch" and i == bug_block)
            planted = name or planted
    _head(net, h, rng, c)
    for w in net.w.values():
        w.finish()
    return NoisyDemo(
        root, os.path.join(root, "ref"), os.path.join(root, "target"), precision, bug, planted, net.kernels
    )


def _param(net: _Net, side: str, name: str, value: np.ndarray) -> str:
    """A weight parameter, registered once per side (returns its IR name)."""
    w = net.w[side]
    for k, (pname, _v, _l) in enumerate(w.param_values):
        if pname == name:
            return f"%para{k + 1}_{name}"
    return w.parameter(name, value, "Float32")


def _cube_conv(net: _Net, scope: str, h: dict, wgt: np.ndarray, wname: str) -> dict:
    """Conv2D 1x1; on an fp16 target with a Cast to fp16 before it and back after (target-only kernels)."""
    attrs = {
        "kernel_size": "(1, 1)",
        "mode": "I64(1)",
        "out_channel": f"I64({wgt.shape[0]})",
        "pad": "(0, 0, 0, 0)",
        "pad_mode": '"pad"',
        "format": '"NCHW"',
        "pad_list": "(0, 0, 0, 0)",
        "groups": "I64(1)",
        "stride": "(1, 1, 1, 1)",
        "group": "I64(1)",
        "dilation": "(1, 1, 1, 1)",
    }
    fp16 = net.precision == "fp16"
    ins = {}
    for s in SIDES:
        xv, xr = h[s]
        wv = wgt.astype(np.float16).astype(np.float32) if s == "target" and fp16 else wgt
        wref = _param(net, s, wname, wv)
        if s == "target" and fp16:
            cast = net.target_cast(f"{scope}/Cast-op0", (xv, xr), np.float16)
            ins[s] = [(cast[0], cast[1], True), (wv.astype(np.float16), wref, True)]
        else:
            ins[s] = [(xv, xr, True), (wv, wref, True)]

    def conv(side: str, v: list) -> np.ndarray:
        y = np.einsum("oc,bchw->bohw", v[1].reshape(v[1].shape[0], -1).astype(np.float32), v[0].astype(np.float32))
        return y.astype(v[0].dtype)

    y = net.kernel("Conv2D", f"{scope}/Conv2D-op0", ins, conv, attrs)
    if fp16:
        y = {"ref": y["ref"], "target": net.target_cast(f"{scope}/Cast-op1", y["target"], np.float32)}
    return y


def _quant_branch(net: _Net, scope: str, h: dict, bug: bool) -> tuple[dict, str | None]:
    f = net.kernel(
        "Mul",
        f"{scope}/Mul-op0",
        {s: [(h[s][0], h[s][1], True), _const(64.0)] for s in SIDES},
        lambda s, v: v[0] * v[1],
    )
    q = net.kernel(
        "Floor", f"{scope}/Floor-op0", {s: [(f[s][0], f[s][1], True)] for s in SIDES}, lambda s, v: np.floor(v[0])
    )
    k = 1.2 if bug else 1.0
    name = f"{scope}/Mul-op1"
    sc = net.kernel(
        "Mul",
        name,
        {s: [(q[s][0], q[s][1], True), _const(0.015625)] for s in SIDES},
        lambda s, v: v[0] * v[1] * (k if s == "target" else 1.0),
    )
    g = net.kernel(
        "Mul",
        f"{scope}/Mul-op2",
        {s: [(sc[s][0], sc[s][1], True), _const(0.02)] for s in SIDES},
        lambda s, v: v[0] * v[1],
    )
    out = net.kernel(
        "Add",
        f"{scope}/Add-op0",
        {s: [(h[s][0], h[s][1], True), (g[s][0], g[s][1], True)] for s in SIDES},
        lambda s, v: v[0] + v[1],
    )
    return out, (name if bug else None)


def _tanh_branch(net: _Net, scope: str, h: dict, bug: bool) -> tuple[dict, str | None]:
    name = f"{scope}/Tanh-op0"
    t = net.kernel(
        "Tanh",
        name,
        {s: [(h[s][0], h[s][1], True)] for s in SIDES},
        lambda s, v: np.tanh(v[0] * (1.3 if bug and s == "target" else 1.0)),
    )
    m = net.kernel(
        "Mul",
        f"{scope}/Mul-op0",
        {s: [(t[s][0], t[s][1], True), _const(0.01)] for s in SIDES},
        lambda s, v: v[0] * v[1],
    )
    out = net.kernel(
        "Add",
        f"{scope}/Add-op0",
        {s: [(h[s][0], h[s][1], True), (m[s][0], m[s][1], True)] for s in SIDES},
        lambda s, v: v[0] + v[1],
    )
    return out, (name if bug else None)


def _head(net: _Net, h: dict, rng: np.random.Generator, c: int, classes: int = 6) -> None:
    axis = (np.array([2, 3], dtype=np.int64), "(I64(2), I64(3))", True)
    keep = (np.array(False), "Bool(0)", True)
    m = net.kernel(
        "ReduceMean",
        "Default/head-Head/ReduceMean-op0",
        {s: [(h[s][0], h[s][1], True), axis, keep] for s in SIDES},
        lambda s, v: v[0].astype(np.float64).mean(axis=(2, 3)).astype(np.float32),
    )
    wfc = (rng.standard_normal((classes, c)) / math.sqrt(c) * 3).astype(np.float32)
    fp16 = net.precision == "fp16"
    ins = {}
    for s in SIDES:
        wv = wfc.astype(np.float16).astype(np.float32) if s == "target" and fp16 else wfc
        wref = _param(net, s, "head.fc.weight", wv)
        ta, tb = (np.array(False), "Bool(0)", True), (np.array(True), "Bool(1)", True)
        if s == "target" and fp16:
            cast = net.target_cast("Default/head-Head/fc-Linear/Cast-op0", m[s], np.float16)
            ins[s] = [(cast[0], cast[1], True), (wv.astype(np.float16), wref, True), ta, tb]
        else:
            ins[s] = [(m[s][0], m[s][1], True), (wv, wref, True), ta, tb]
    z = net.kernel(
        "MatMul",
        "Default/head-Head/fc-Linear/MatMul-op0",
        ins,
        lambda s, v: (v[0].astype(np.float32) @ v[1].astype(np.float32).T).astype(v[0].dtype),
    )
    if fp16:
        z = {
            "ref": z["ref"],
            "target": net.target_cast("Default/head-Head/fc-Linear/Cast-op1", z["target"], np.float32),
        }
    axis1 = (np.array([-1], dtype=np.int64), "(I64(-1))", True)

    def softmax(side: str, v: list) -> np.ndarray:
        e = np.exp(v[0].astype(np.float64) - v[0].max(axis=-1, keepdims=True))
        return (e / e.sum(axis=-1, keepdims=True)).astype(np.float32)

    net.kernel(
        "Softmax", "Default/head-Head/Softmax-op0", {s: [(z[s][0], z[s][1], True), axis1] for s in SIDES}, softmax
    )
