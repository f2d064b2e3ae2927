"""Generated pairs whose target is compiled as an Ascend310 graph is: fp16 throughout, a chain of ops fused into
one vendor kernel, a framework op replaced by a renamed vendor kernel in a branch that runs at another place in
the execution order, Casts around a kernel that runs in float32. Written as real MindSpore 2.x dumps
(dumpwriter.py) with a text IR, so alignment sees the dataflow a device's graph gives it.

    x ─ fc1 MatMul ─ BiasAdd ─ GeLU ─ fc2 MatMul ─ Add(x) = h
        the reference's GeLU is erf-GeLU in five ops: Mul(·, 0.5), RealDiv(·, √2), Erf, Add(·, 1), Mul;
        the target's is one tanh-GeLU kernel in float32 between two Casts (Erf and the Cast before the kernel
        have the same scope and shapes: they must not be paired)
    h ─ ReduceMean ─ Sub(h, ·) ─ Mul(·, 1/8) = centred                           branch A
    h ─ Mul(h, h) ─ ReduceSum ─ Sqrt ─ RealDiv(h, ·) = unit                     branch B: on the target the
        ReduceSum is a vendor `Custom` kernel, and the whole branch runs before branch A
    Concat(centred, unit) ─ out MatMul = y

Targets (`VARIANTS`):
- `compiled`: only what the compilation does (benign);
- `gelu-bug`: the fused GeLU kernel uses 0.01 for tanh-GeLU's 0.044715;
- `moved-bug`: the moved vendor kernel sums 2 % too much;
- `concat-swap`: the Concat takes its two inputs in the wrong order (a wiring bug: it computes exactly what it
  should from what it gets);
- `extra-op`: the target scales fc2's output by 1.03 in an op the reference does not have (it cannot be
  paired, so it cannot be judged: the answer is incomplete, never benign).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from dumptui.core.demo.dumpwriter import SIDES, PairWriter, f16, scalar

VARIANTS = ("compiled", "gelu-bug", "moved-bug", "concat-swap", "extra-op")
TOKENS, HIDDEN, FFN = 16, 32, 64
GELU_REF = "Default/ffn-FFN/act-GELU"
_GELU_GROUP = f"{GELU_REF}/Mul-op0+RealDiv-op0+Erf-op0+Add-op0+Mul-op1"  # the reference's five ops as one group
_CULPRITS: dict[str, tuple[str, str] | None] = {
    "compiled": None,
    "gelu-bug": (_GELU_GROUP, f"{GELU_REF}/GeLU-op0"),
    "moved-bug": ("Default/head-Head/l2-L2Norm/ReduceSum-op0", "Default/head-Head/l2-L2Norm/Custom-op0"),
    "concat-swap": ("Default/head-Head/Concat-op0", "Default/head-Head/Concat-op0"),
    "extra-op": None,
}
EXTRA_OP = "Default/ffn-FFN/fc2-Dense/Mul-op0"  # the target-only op of `extra-op`


@dataclass
class CompiledDemo:
    root: str
    ref: str
    target: str
    variant: str
    culprit: tuple[str, str] | None  # (reference op, target op); None when benign or when no pair can be judged
    incomplete: bool  # the answer must be "incomplete" (an op that changes values exists on one side only)


def gelu_tanh(x: np.ndarray, c: float = 0.044715) -> np.ndarray:
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + c * x**3)))


def _erf(x: np.ndarray) -> np.ndarray:
    return np.vectorize(math.erf, otypes=[np.float64])(x)


class _Side:
    """The network on one side: each call writes one kernel and returns (value, IR argument)."""

    def __init__(self, io: PairWriter, side: str, variant: str):
        self.io, self.side, self.v = io, side, variant

    def store(self, v: np.ndarray) -> np.ndarray:
        return f16(v) if self.side == "target" else np.asarray(v, dtype=np.float32)

    def const(self, v: float) -> tuple[np.ndarray, str]:
        return scalar(v, np.float16 if self.side == "target" else np.float32)

    def op(self, op_type: str, full: str, ins: list, value: np.ndarray, attrs: dict | None = None) -> tuple:
        return self.io.op(self.side, op_type, full, ins, value, attrs)

    def compute(
        self, op_type: str, full: str, ins: list, fn: Callable[..., np.ndarray], attrs: dict | None = None
    ) -> tuple:
        vals = [np.asarray(v, dtype=np.float64) for v, _a in ins]
        return self.op(op_type, full, ins, self.store(fn(*vals)), attrs)

    def param(self, name: str, value: np.ndarray, is_weight: bool = True) -> tuple:
        v = f16(value) if self.side == "target" and is_weight else value
        return v, self.io.param(self.side, name, v, is_weight)


def write_compiled_demo(root: str, variant: str = "compiled", seed: int = 20261205) -> CompiledDemo:
    """Write `root/ref` and `root/target` for one variant."""
    if variant not in VARIANTS:
        raise ValueError(f"variant one of {VARIANTS}")
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((TOKENS, HIDDEN)) * 1.5).astype(np.float32)
    w1 = (rng.standard_normal((HIDDEN, FFN)) / math.sqrt(HIDDEN) * 1.5).astype(np.float32)
    b1 = (rng.standard_normal(FFN) * 0.3).astype(np.float32)
    w2 = (rng.standard_normal((FFN, HIDDEN)) / math.sqrt(FFN)).astype(np.float32)
    w3 = (rng.standard_normal((HIDDEN, 8)) / math.sqrt(HIDDEN)).astype(np.float32)
    io = PairWriter(root)
    for side in SIDES:
        _network(_Side(io, side, variant), x, w1, b1, w2, w3)
    io.finish()
    return CompiledDemo(
        root,
        os.path.join(root, "ref"),
        os.path.join(root, "target"),
        variant,
        _CULPRITS[variant],
        incomplete=variant == "extra-op",
    )


def _network(s: _Side, x: np.ndarray, w1: np.ndarray, b1: np.ndarray, w2: np.ndarray, w3: np.ndarray) -> None:
    target = s.side == "target"
    h0 = s.param("x", x, is_weight=False)
    if target:
        h0 = s.op("Cast", "Default/Cast-op0", [h0], x.astype(np.float16), {"dst_type": "F16"})
    fc1 = "Default/ffn-FFN/fc1-Dense"
    m = s.compute("MatMul", f"{fc1}/MatMul-op0", [h0, s.param("ffn.fc1.weight", w1)], lambda a, b: a @ b)
    b = s.compute("BiasAdd", f"{fc1}/BiasAdd-op0", [m, s.param("ffn.fc1.bias", b1)], lambda a, c: a + c)
    g = _gelu(s, b)
    fc2 = "Default/ffn-FFN/fc2-Dense"
    m2 = s.compute("MatMul", f"{fc2}/MatMul-op0", [g, s.param("ffn.fc2.weight", w2)], lambda a, c: a @ c)
    if target and s.v == "extra-op":
        m2 = s.compute("Mul", EXTRA_OP, [m2, s.const(1.03)], lambda a, c: a * c)
    h = s.compute("Add", "Default/ffn-FFN/Add-op0", [m2, h0], lambda a, c: a + c)
    # the target runs branch B (the L2 norm with its vendor kernel) before branch A
    branches = (_branch_b, _branch_a) if target else (_branch_a, _branch_b)
    outs = {f.__name__: f(s, h) for f in branches}
    cat = [outs["_branch_a"], outs["_branch_b"]]
    if target and s.v == "concat-swap":
        cat = cat[::-1]
    c = s.compute(
        "Concat", "Default/head-Head/Concat-op0", cat, lambda a, d: np.concatenate([a, d], axis=0), {"axis": "I64(0)"}
    )
    s.compute(
        "MatMul", "Default/head-Head/out-Dense/MatMul-op0", [c, s.param("head.out.weight", w3)], lambda a, d: a @ d
    )


def _gelu(s: _Side, b: tuple) -> tuple:
    if s.side == "ref":  # erf-GeLU as MindSpore writes it out: five kernels
        half = s.compute("Mul", f"{GELU_REF}/Mul-op0", [b, s.const(0.5)], lambda a, c: a * c)
        d = s.compute("RealDiv", f"{GELU_REF}/RealDiv-op0", [b, s.const(math.sqrt(2.0))], lambda a, c: a / c)
        e = s.compute("Erf", f"{GELU_REF}/Erf-op0", [d], _erf)
        p = s.compute("Add", f"{GELU_REF}/Add-op0", [e, s.const(1.0)], lambda a, c: a + c)
        return s.compute("Mul", f"{GELU_REF}/Mul-op1", [half, p], lambda a, c: a * c)
    # the target: one tanh-GeLU vendor kernel that runs in float32, between Casts
    c32 = s.op("Cast", f"{GELU_REF}/Cast-op0", [b], b[0].astype(np.float32), {"dst_type": "F32"})
    k = 0.01 if s.v == "gelu-bug" else 0.044715
    y = s.op("GeLU", f"{GELU_REF}/GeLU-op0", [c32], gelu_tanh(c32[0].astype(np.float64), k).astype(np.float32))
    return s.op("Cast", f"{GELU_REF}/Cast-op1", [y], f16(y[0]), {"dst_type": "F16"})


def _branch_a(s: _Side, h: tuple) -> tuple:
    scope = "Default/head-Head/centre-Centre"
    axis = (np.array([1], dtype=np.int64), "(I64(1))")
    keep = (np.array(True), "Bool(1)")
    mean = s.compute("ReduceMean", f"{scope}/ReduceMean-op0", [h, axis, keep], lambda a, *_: a.mean(1, keepdims=True))
    centred = s.compute("Sub", f"{scope}/Sub-op0", [h, mean], lambda a, c: a - c)
    return s.compute("Mul", f"{scope}/Mul-op0", [centred, s.const(0.125)], lambda a, c: a * c)


def _branch_b(s: _Side, h: tuple) -> tuple:
    scope = "Default/head-Head/l2-L2Norm"
    sq = s.compute("Mul", f"{scope}/Mul-op0", [h, h], lambda a, c: a * c)
    axis = (np.array([1], dtype=np.int64), "(I64(1))")
    keep = (np.array(True), "Bool(1)")
    if s.side == "target":  # the vendor kernel: sums in float32, at the reference op's scope with its slots
        scale = 1.02 if s.v == "moved-bug" else 1.0
        total = s.compute(
            "Custom", f"{scope}/Custom-op0", [sq, axis, keep], lambda a, *_: a.sum(1, keepdims=True) * scale
        )
    else:
        total = s.compute(
            "ReduceSum", f"{scope}/ReduceSum-op0", [sq, axis, keep], lambda a, *_: a.sum(1, keepdims=True)
        )
    n = s.compute("Sqrt", f"{scope}/Sqrt-op0", [total], np.sqrt)
    return s.compute("RealDiv", f"{scope}/RealDiv-op0", [h, n], lambda a, c: a / c)
