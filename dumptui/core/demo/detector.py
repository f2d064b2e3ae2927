"""Generated pairs of a small detector whose head ends in selection (TopK, NMS), the target transformed as an
Ascend310 graph is: fp16 throughout, BatchNorm folded into the backbone's convolution and its weight int8 with
per-channel scales (its input fake-quantised), all at once. Written as real MindSpore 2.x dumps
(dumpwriter.py) with a text IR.

    x ─ backbone conv 1x1 (16) + BatchNorm ─ ReLU ─┬ cls conv (4 anchors) ─ Sigmoid ─ Reshape = scores (1, 256)
                                                   └ box conv (4 x 4 deltas) ─ Reshape ─ Transpose ─ Reshape = deltas (256, 4)
    scores ─ TopK(k = 32) ─ values, indices ─ Reshape ─ Gather(deltas), Gather(anchors)
        ─ StridedSlice x4 ─ Mul, Add (centres) ─ Exp, Mul (sizes) ─ Mul 0.5 ─ Sub, Add ─ Concat = top boxes (32, 4)
    deltas ─ Mul 0.2 ─ Add(anchor corners) ─ Concat(scores) = proposals (256, 5) ─ NMSWithMask(0.5)

The target's kernels break exact ties by the larger index first (a device's sort need not be stable).
Near-tied scores swap places on the target: at the TopK (ranks near 32) and in the NMS (overlapping boxes whose
scores or overlap nearly tie). The generator takes the first seed from `seed` on where both flip.

Targets (`VARIANTS`):
- `flips`: nothing else (benign: the flips are why the outputs differ);
- `fold-var`: the backbone's channel `BUG_CHANNEL` folded with channel+1's running variance (a bug before the
  TopK: the backbone's Conv2D is the root);
- `concat-swap`: the box decoder's Concat takes its inputs in the wrong order (a wiring bug after the TopK);
- `slice-off`: the decoder's size slice starts one element early (`[1:3]` for `[2:4]`, after the TopK);
- `topk-wrong`: the TopK kernel returns the wrong k-th element (the element ranked k + RANK_SLIP): named by its
  replay;
- `threshold`: a score threshold besides, `Select(Greater(scores, t), scores, ZerosLike(scores))`, t an fp16 value
  between a score's two sides (benign: the comparison flips at that element, and the Select carries it);
- `select-swap`: the same with the target's Select taking its two branches in the wrong order (a wiring bug fed
  by the flipped comparison: the Select is the root).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from dumptui.core.demo.dumpwriter import LABEL, SIDES, PairWriter, f16, scalar

VARIANTS = ("flips", "fold-var", "concat-swap", "slice-off", "topk-wrong", "threshold", "select-swap")
THRESHOLD_VARIANTS = ("threshold", "select-swap")
BUG_CHANNEL = 5
K = 32
ANCHORS, HW = 4, 8  # anchors per cell, cells per side
N = ANCHORS * HW * HW  # 256 scores
RANK_SLIP = 9  # topk-wrong: the last rank holds the element ranked K + RANK_SLIP
NMS_IOU = 0.5
MAX_SEEDS = 64

_TOPK = "Default/head-Head/topk-TopK/TopK-op0"
_NMS = "Default/head-Head/nms-NMS/NMSWithMask-op0"
_BACKBONE = "Default/backbone-Backbone/conv-Conv2d/Conv2D-op0"
_DECODE = "Default/head-Head/decode-BoxDecode"
_THRESHOLD = "Default/head-Head/threshold-ScoreThreshold"
GREATER_OP = f"{_THRESHOLD}/Greater-op0"  # where the threshold variants' comparison flips
_CULPRITS: dict[str, tuple[str, str] | None] = {
    "flips": None,
    "fold-var": (_BACKBONE, _BACKBONE),
    "concat-swap": (f"{_DECODE}/Concat-op0", f"{_DECODE}/Concat-op0"),
    "slice-off": (f"{_DECODE}/StridedSlice-op1", f"{_DECODE}/StridedSlice-op1"),
    "topk-wrong": (_TOPK, _TOPK),
    "threshold": None,
    "select-swap": (f"{_THRESHOLD}/Select-op0", f"{_THRESHOLD}/Select-op0"),
}
FLIP_OPS = (_TOPK, _NMS)  # where the flips are (every variant has them)


@dataclass
class DetectorDemo:
    root: str
    ref: str
    target: str
    variant: str
    culprit: tuple[str, str] | None  # (reference op, target op) of the planted bug; None when benign
    seed: int  # the seed the pair was made from (the first from the one asked where both selections flip)
    topk_flips: int  # ranks of the TopK whose element differs between the sides
    nms_flips: int  # boxes the NMS keeps on one side only
    threshold: float | None = None  # the threshold variants' t (a float16 value)
    threshold_flips: int = 0  # scores on the other side of t on the target


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


def anchors() -> np.ndarray:
    """(N, 4) anchors as (cx, cy, w, h), anchor-major (index = anchor * 64 + cell), four shapes per cell."""
    shapes = [(1.5, 1.5), (2.5, 2.5), (2.0, 1.0), (1.0, 2.0)]
    out = []
    for w, h in shapes:
        for i in range(HW):
            for j in range(HW):
                out.append((j + 0.5, i + 0.5, w, h))
    return np.array(out, dtype=np.float32)


def corners(a: np.ndarray) -> np.ndarray:
    a = a.astype(np.float64)
    return np.concatenate([a[:, :2] - a[:, 2:] / 2, a[:, :2] + a[:, 2:] / 2], axis=1).astype(np.float32)


@dataclass
class _Weights:
    x: np.ndarray
    w: np.ndarray
    gamma: np.ndarray
    beta: np.ndarray
    mean: np.ndarray
    var: np.ndarray
    w_cls: np.ndarray
    w_box: np.ndarray


def _weights(rng: np.random.Generator) -> _Weights:
    c_in, c_mid = 8, 16
    return _Weights(
        x=rng.standard_normal((1, c_in, HW, HW)).astype(np.float32),
        w=(rng.standard_normal((c_mid, c_in, 1, 1)) / math.sqrt(c_in)).astype(np.float32),
        gamma=rng.uniform(0.5, 1.5, c_mid).astype(np.float32),
        beta=(rng.standard_normal(c_mid) * 0.2).astype(np.float32),
        mean=(rng.standard_normal(c_mid) * 0.3).astype(np.float32),
        var=rng.uniform(0.7, 1.1, c_mid).astype(np.float32),
        w_cls=(rng.standard_normal((ANCHORS, c_mid, 1, 1)) / math.sqrt(c_mid) * 1.5).astype(np.float32),
        w_box=(rng.standard_normal((ANCHORS * 4, c_mid, 1, 1)) / math.sqrt(c_mid) * 0.5).astype(np.float32),
    )


class _Side:
    """The network on one side: each call writes one kernel and returns (value, IR argument)."""

    def __init__(self, io: PairWriter, side: str, variant: str, threshold: float | None = None):
        self.io, self.side, self.v = io, side, variant
        self.target = side == "target"
        self.threshold = threshold

    def store(self, v: np.ndarray) -> np.ndarray:
        return f16(v) if self.target else np.asarray(v, dtype=np.float32)

    def const(self, v: float) -> tuple[np.ndarray, str]:
        return scalar(v, np.float16 if self.target else np.float32)

    def ints(self, values: tuple[int, ...]) -> tuple[np.ndarray, str]:
        return np.array(values, dtype=np.int64), "(" + ", ".join(f"I64({v})" for v in values) + ")"

    def op(self, op_type: str, full: str, ins: list, value: np.ndarray, attrs: dict | None = None) -> tuple:
        return self.io.op(self.side, op_type, full, ins, value, attrs)

    def compute(
        self, op_type: str, full: str, ins: list, fn: Callable[..., np.ndarray], attrs: dict | None = None
    ) -> tuple:
        vals = [np.asarray(v, dtype=np.float64) if np.asarray(v).dtype.kind == "f" else np.asarray(v) for v, _a in ins]
        return self.op(op_type, full, ins, self.store(fn(*vals)), attrs)

    def param(self, name: str, value: np.ndarray, is_weight: bool = True) -> tuple:
        v = f16(value) if self.target and value.dtype.kind == "f" and is_weight else value
        return v, self.io.param(self.side, name, v, is_weight)

    def multi(self, op_type: str, full: str, ins: list, outs: list[np.ndarray], attrs: dict | None = None) -> list:
        """A kernel of several outputs: each output as (value, the IR argument of its TupleGetItem)."""
        w = self.io.w[self.side]
        for slot, (v, _a) in enumerate(ins):
            w.tensor(op_type, full, "input", slot, np.asarray(v), LABEL[str(np.asarray(v).dtype)])
        for slot, v in enumerate(outs):
            w.tensor(op_type, full, "output", slot, np.asarray(v), LABEL[str(np.asarray(v).dtype)])
        ir_ins = [(LABEL[str(np.asarray(v).dtype)], tuple(np.shape(v))) for v, _a in ins]
        ir_outs = [(LABEL[str(v.dtype)], tuple(v.shape)) for v in outs]
        ref = w.node(op_type, full, [a for _v, a in ins], ir_ins, ir_outs, attrs)
        got = []
        for slot, (v, shape) in enumerate(zip(outs, ir_outs)):
            item = w.node("TupleGetItem", f"{full}_getitem{slot}", [ref, f"I64({slot})"], [], [shape], kernel=False)
            got.append((v, item))
        return got


def _backbone(s: _Side, wt: _Weights) -> tuple:
    """Conv2D 1x1 + BatchNorm + ReLU; the target's conv is folded (weight W s, bias b - m s) and int8."""
    scope = "Default/backbone-Backbone"
    conv = f"{scope}/conv-Conv2d"
    x = s.param("x", wt.x, is_weight=False)
    eps = 1e-5
    if not s.target:
        w = s.param("backbone.conv.weight", wt.w)
        y = s.compute("Conv2D", f"{conv}/Conv2D-op0", [x, w], _conv, {**CONV_ATTRS, "out_channel": "I64(16)"})
        names = ("gamma", "beta", "moving_mean", "moving_variance")
        params = (wt.gamma, wt.beta, wt.mean, wt.var)
        ins = [y] + [s.param(f"backbone.bn.{n}", p) for p, n in zip(params, names)]
        ins += [(np.array(False), "Bool(0)"), scalar(eps)]
        g, b, m, v = (np.asarray(p, dtype=np.float64)[None, :, None, None] for p in params)
        bn = s.compute(
            "BatchNorm", f"{scope}/bn-BatchNorm2d/BatchNorm-op0", ins, lambda z, *_r: (z - m) / np.sqrt(v + eps) * g + b
        )
        return s.compute("ReLU", f"{scope}/ReLU-op0", [bn], lambda a: np.maximum(a, 0))
    x = s.op("Cast", "Default/Cast-op0", [x], wt.x.astype(np.float16), {"dst_type": "F16"})
    scale = wt.gamma.astype(np.float64) / np.sqrt(wt.var.astype(np.float64) + eps)
    if s.v == "fold-var":
        scale[BUG_CHANNEL] = wt.gamma[BUG_CHANNEL] / math.sqrt(float(wt.var[BUG_CHANNEL + 1]) + eps)
    folded = wt.w.astype(np.float64) * scale[:, None, None, None]
    # the input fake-quantised per tensor (AMCT: x/s, round, clamp, x s)
    xv = x[0]
    qs = float(np.abs(xv.astype(np.float64)).max() / 127.0) or 1.0
    a = s.op("Mul", f"{conv}/Mul-op0", [x, scalar(1.0 / qs, np.float16)], f16(xv * np.float16(1.0 / qs)))
    r = s.op("Round", f"{conv}/Round-op0", [a], np.round(a[0]).astype(np.float16))
    lo = s.op("Maximum", f"{conv}/Maximum-op0", [r, scalar(-128.0, np.float16)], np.maximum(r[0], np.float16(-128)))
    hi = s.op("Minimum", f"{conv}/Minimum-op0", [lo, scalar(127.0, np.float16)], np.minimum(lo[0], np.float16(127)))
    xq = s.op("Mul", f"{conv}/Mul-op1", [hi, scalar(qs, np.float16)], f16(hi[0].astype(np.float64) * np.float16(qs)))
    # the folded weight int8 per output channel
    c_out = folded.shape[0]
    wscale = np.abs(folded).reshape(c_out, -1).max(axis=1) / 127.0
    q = np.clip(np.round(folded.reshape(c_out, -1) / wscale[:, None]), -127, 127).astype(np.int8).reshape(folded.shape)
    stored = wscale.astype(np.float32).reshape(c_out, 1, 1, 1)
    qa = s.io.param("target", "backbone.conv.weight", q)
    sa = s.io.param("target", "backbone.conv.wscale", stored)
    qc = s.op("Cast", f"{conv}/Cast-op1", [(q, qa)], q.astype(np.float16), {"dst_type": "F16"})
    wv = s.op("Mul", f"{conv}/Mul-op2", [qc, (stored, sa)], f16(qc[0].astype(np.float64) * stored))
    y = s.compute("Conv2D", f"{conv}/Conv2D-op0", [xq, wv], _conv, {**CONV_ATTRS, "out_channel": "I64(16)"})
    bias = f16(wt.beta.astype(np.float64) - wt.mean.astype(np.float64) * scale)
    ba = s.io.param("target", "backbone.conv.bias", bias)
    fmt = (np.array(0, dtype=np.int64), "I64(0)")
    yb = s.compute("BiasAdd", f"{conv}/BiasAdd-op0", [y, (bias, ba), fmt], lambda z, c, _f: z + c[None, :, None, None])
    return s.compute("ReLU", f"{scope}/ReLU-op0", [yb], lambda a: np.maximum(a, 0))


def _heads(s: _Side, h: tuple, wt: _Weights) -> tuple[tuple, tuple]:
    """scores (1, N) and deltas (N, 4), anchor-major."""
    scope = "Default/head-Head"
    wc = s.param("head.cls.weight", wt.w_cls)
    c = s.compute("Conv2D", f"{scope}/cls-Conv2d/Conv2D-op0", [h, wc], _conv, {**CONV_ATTRS, "out_channel": "I64(4)"})
    sig = s.compute("Sigmoid", f"{scope}/Sigmoid-op0", [c], lambda a: 1.0 / (1.0 + np.exp(-a)))
    scores = s.op("Reshape", f"{scope}/Reshape-op0", [sig, s.ints((1, N))], sig[0].reshape(1, N))
    wb = s.param("head.box.weight", wt.w_box)
    bx = s.compute("Conv2D", f"{scope}/box-Conv2d/Conv2D-op0", [h, wb], _conv, {**CONV_ATTRS, "out_channel": "I64(16)"})
    r1 = s.op(
        "Reshape", f"{scope}/Reshape-op1", [bx, s.ints((ANCHORS, 4, HW * HW))], bx[0].reshape(ANCHORS, 4, HW * HW)
    )
    tr = s.op("Transpose", f"{scope}/Transpose-op0", [r1, s.ints((0, 2, 1))], r1[0].transpose(0, 2, 1).copy())
    deltas = s.op("Reshape", f"{scope}/Reshape-op2", [tr, s.ints((N, 4))], tr[0].reshape(N, 4))
    return scores, deltas


def _topk(s: _Side, scores: tuple) -> tuple[tuple, tuple]:
    idx = _ranked(s, scores[0].astype(np.float64).reshape(-1))
    chosen = idx[:K].copy()
    if s.target and s.v == "topk-wrong":
        chosen[K - 1] = idx[K - 1 + RANK_SLIP]  # the wrong k-th element
    values = scores[0].reshape(-1)[chosen].reshape(1, K)
    k = (np.array(K, dtype=np.int64), f"I64({K})")
    out = s.multi("TopK", _TOPK, [scores, k], [values, chosen.astype(np.int32).reshape(1, K)], {"sorted": "Bool(1)"})
    return out[0], out[1]


def _decode(s: _Side, idx: tuple, deltas: tuple, anc: tuple) -> tuple:
    """The top K boxes: centre = d_xy * a_wh + a_xy, size = exp(d_wh) * a_wh, corners = centre -/+ size / 2."""
    scope = _DECODE
    flat = s.op("Reshape", f"{scope}/Reshape-op0", [idx, s.ints((K,))], idx[0].reshape(K))
    axis0 = (np.array(0, dtype=np.int64), "I64(0)")
    d = s.op("Gather", f"{scope}/Gather-op0", [deltas, flat, axis0], np.take(deltas[0], flat[0].astype(np.int64), 0))
    a = s.op("Gather", f"{scope}/Gather-op1", [anc, flat, axis0], np.take(anc[0], flat[0].astype(np.int64), 0))

    def sl(name: str, src: tuple, begin: int) -> tuple:
        b, e = (0, begin), (K, begin + 2)
        return s.op(
            "StridedSlice",
            f"{scope}/{name}",
            [src, s.ints(b), s.ints(e), s.ints((1, 1))],
            src[0][:, begin : begin + 2].copy(),
        )

    size_from = 1 if s.target and s.v == "slice-off" else 2
    dxy = sl("StridedSlice-op0", d, 0)
    dwh = sl("StridedSlice-op1", d, size_from)
    axy = sl("StridedSlice-op2", a, 0)
    awh = sl("StridedSlice-op3", a, 2)
    m = s.compute("Mul", f"{scope}/Mul-op0", [dxy, awh], lambda p, q: p * q)
    centre = s.compute("Add", f"{scope}/Add-op0", [m, axy], lambda p, q: p + q)
    e = s.compute("Exp", f"{scope}/Exp-op0", [dwh], np.exp)
    size = s.compute("Mul", f"{scope}/Mul-op1", [e, awh], lambda p, q: p * q)
    half = s.compute("Mul", f"{scope}/Mul-op2", [size, s.const(0.5)], lambda p, q: p * q)
    p0 = s.compute("Sub", f"{scope}/Sub-op0", [centre, half], lambda p, q: p - q)
    p1 = s.compute("Add", f"{scope}/Add-op1", [centre, half], lambda p, q: p + q)
    pieces = [p1, p0] if s.target and s.v == "concat-swap" else [p0, p1]
    return s.compute(
        "Concat", f"{scope}/Concat-op0", pieces, lambda p, q: np.concatenate([p, q], axis=1), {"axis": "I64(1)"}
    )


def _nms(s: _Side, scores: tuple, deltas: tuple, anc_corners: tuple) -> list:
    scope = "Default/head-Head/nms-NMS"
    m = s.compute("Mul", f"{scope}/Mul-op0", [deltas, s.const(0.2)], lambda p, q: p * q)
    boxes = s.compute("Add", f"{scope}/Add-op0", [m, anc_corners], lambda p, q: p + q)
    col = s.op("Reshape", f"{scope}/Reshape-op0", [scores, s.ints((N, 1))], scores[0].reshape(N, 1))
    props = s.compute(
        "Concat", f"{scope}/Concat-op0", [boxes, col], lambda p, q: np.concatenate([p, q], axis=1), {"axis": "I64(1)"}
    )
    b = props[0].astype(np.float64)
    ranked = _ranked(s, b[:, 4])
    mask = _greedy(corners_iou(b[ranked, :4]))
    outs = [props[0][ranked].copy(), ranked.astype(np.int32), mask]
    return s.multi("NMSWithMask", _NMS, [props], outs, {"iou_threshold": f"F32({NMS_IOU})"})


def _ranked(s: _Side, v: np.ndarray) -> np.ndarray:
    """Highest first. Tied values in index order on the reference; the target's kernel breaks ties the other
    way, as a device's need not be stable: the same selection from its inputs, another tie-break."""
    if s.target:
        return np.lexsort((-np.arange(v.size), -v))
    return np.argsort(-v, kind="stable")


def corners_iou(b: np.ndarray) -> np.ndarray:
    x0, y0, x1, y1 = (b[:, i] for i in range(4))
    area = (x1 - x0) * (y1 - y0)
    w = np.clip(np.minimum(x1[:, None], x1[None, :]) - np.maximum(x0[:, None], x0[None, :]), 0, None)
    h = np.clip(np.minimum(y1[:, None], y1[None, :]) - np.maximum(y0[:, None], y0[None, :]), 0, None)
    inter = w * h
    return inter / (area[:, None] + area[None, :] - inter)


def _greedy(iou: np.ndarray) -> np.ndarray:
    keep = np.zeros(iou.shape[0], dtype=bool)
    for i in range(iou.shape[0]):
        keep[i] = not (iou[i, keep] > NMS_IOU).any()
    return keep


def _network(s: _Side, wt: _Weights) -> dict:
    h = _backbone(s, wt)
    scores, deltas = _heads(s, h, wt)
    anc = s.param("head.anchors", anchors())
    anc_c = s.param("head.anchor_corners", corners(anchors()))
    values, idx = _topk(s, scores)
    _decode(s, idx, deltas, anc)
    nms = _nms(s, scores, deltas, anc_c)
    if s.threshold is not None:
        _score_threshold(s, scores, s.threshold)
    return {"topk": idx[0].reshape(-1), "nms": nms[1][0][nms[2][0]], "scores": scores[0].reshape(-1)}


def _score_threshold(s: _Side, scores: tuple, t: float) -> tuple:
    """Select(Greater(scores, t), scores, ZerosLike(scores)); the select-swap target's branches swapped."""
    dtype = np.float16 if s.target else np.float32
    const = (np.array(t, dtype=dtype), f"{'F16' if s.target else 'F32'}({float(t)!r})")
    mask = s.op("Greater", GREATER_OP, [scores, const], scores[0] > dtype(t))
    zeros = s.op("ZerosLike", f"{_THRESHOLD}/ZerosLike-op0", [scores], np.zeros_like(scores[0]))
    branches = [zeros, scores] if s.target and s.v == "select-swap" else [scores, zeros]
    value = np.where(mask[0], branches[0][0], branches[1][0])
    return s.op("Select", f"{_THRESHOLD}/Select-op0", [mask, *branches], value)


def pick_threshold(ref: np.ndarray, target: np.ndarray) -> tuple[float, int]:
    """A float16 threshold t nearest 0.5 strictly between one score's two sides (ref > t > target, or the other
    way), and how many scores lie on either side of it: the near-tie a comparison on the float16 target flips."""
    r, g = ref.astype(np.float64).reshape(-1), target.astype(np.float64).reshape(-1)
    g16 = target.astype(np.float16).reshape(-1)
    below = np.nextafter(g16, np.float16(-np.inf)).astype(np.float64)
    above = np.nextafter(g16, np.float16(np.inf)).astype(np.float64)
    cand = np.where(r < g, below, above)  # t the float16 value next to the target's score, towards the ref's
    valid = np.where(r < g, cand > r, (r > g) & (cand < r))  # strictly between: the margin below the error
    if not valid.any():
        raise RuntimeError("no score differs between the sides: no threshold flips")
    i = int(np.argmin(np.where(valid, np.abs(cand - 0.5), np.inf)))
    t = float(cand[i])
    return t, int(((r > t) != (g > t)).sum())


def write_detector_demo(root: str, variant: str = "flips", seed: int = 20261133) -> DetectorDemo:
    """Write `root/ref` and `root/target` for one variant, from the first seed at or after `seed` where the
    TopK and the NMS both flip on the benign target."""
    if variant not in VARIANTS:
        raise ValueError(f"variant one of {VARIANTS}")
    chosen, topk_flips, nms_flips = _flipping_seed(seed)
    wt = _weights(np.random.default_rng(chosen))
    t, t_flips = None, 0
    if variant in THRESHOLD_VARIANTS:
        sc = {side: _network(_Side(_NullWriter(), side, "flips"), wt)["scores"] for side in SIDES}  # type: ignore[arg-type]
        t, t_flips = pick_threshold(sc["ref"], sc["target"])
    io = PairWriter(root)
    for side in SIDES:
        _network(_Side(io, side, variant, t), wt)
    io.finish()
    return DetectorDemo(
        root,
        os.path.join(root, "ref"),
        os.path.join(root, "target"),
        variant,
        _CULPRITS[variant],
        chosen,
        topk_flips,
        nms_flips,
        t,
        t_flips,
    )


def _flipping_seed(seed: int) -> tuple[int, int, int]:
    """The first seed from `seed` whose benign target flips both selections (computed without writing)."""
    for s in range(seed, seed + MAX_SEEDS):
        wt = _weights(np.random.default_rng(s))
        sel = {side: _network(_Side(_NullWriter(), side, "flips"), wt) for side in SIDES}  # type: ignore[arg-type]
        topk = int((sel["ref"]["topk"] != sel["target"]["topk"]).sum())
        nms = len(set(sel["ref"]["nms"].tolist()) ^ set(sel["target"]["nms"].tolist()))
        if topk and nms:
            return s, topk, nms
    raise RuntimeError(f"no seed in [{seed}, {seed + MAX_SEEDS}) flips both selections")


class _NullWriter:
    """A PairWriter that writes nothing: the network computed only (choosing the seed)."""

    class _W:
        def tensor(self, *args: object) -> None:
            return None

        def node(self, *args: object, **kw: object) -> str:
            return "%0"

        def parameter(self, *args: object, **kw: object) -> str:
            return "%para0"

    def __init__(self) -> None:
        self.w = {s: self._W() for s in SIDES}

    def param(self, side: str, name: str, value: np.ndarray, is_weight: bool = True) -> str:
        return "%para0"

    def op(self, side: str, op_type: str, full: str, ins: list, out: np.ndarray, attrs: dict | None = None) -> tuple:
        return np.asarray(out), "%0"
