"""Generated msprobe API-level dumps (PyTorch, task `tensor`, level `mix`) of a small transformer block, the
target run under float16 autocast, written without torch (demo/msprobe_selection.py's writer).

    ids (2, 8) ─ Functional.embedding.0 ─ Functional.layer_norm.0 = h ─ Functional.linear.0 ─ Functional.gelu.0
    ─ Functional.linear.1 ─ Tensor.__add__.0 (h + it) ─ Functional.layer_norm.1 ─ Functional.linear.2
    ─ Functional.softmax.0 (dim = -1)

Autocast as PyTorch does it: the products (linear) are handed float32 tensors, which msprobe records, and
compute in float16 (inputs rounded to float16, products accumulated wider, the output float16); gelu takes and
gives float16; the addition promotes to float32; layer_norm and softmax run in float32. So every tensor after
the first product differs a little, and no op is wrong.

Targets (`VARIANTS`): `autocast` (that alone: benign), `gelu-bug` (the target's gelu is x * sigmoid(1.702 x),
a common approximation off by up to 0.02: a root), `ln-eps` (the target's second layer_norm computes with
eps 0.1 where it records 1e-05, a kernel that ignores its argument: a root).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

import numpy as np

from dumptui.core.demo.msprobe_selection import ApiDump

VARIANTS = ("autocast", "gelu-bug", "ln-eps")
CULPRITS: dict[str, str | None] = {
    "autocast": None,
    "gelu-bug": "Functional.gelu.0.forward",
    "ln-eps": "Functional.layer_norm.1.forward",
}
EPS = 1e-5
WRONG_EPS = 0.1
VOCAB, WIDTH, HIDDEN = 20, 16, 32
_erf = np.frompyfunc(math.erf, 1, 1)


@dataclass
class MsprobeBlockDemo:
    root: str
    ref: str
    target: str
    variant: str
    culprit: str | None  # the API call of the planted bug (the same name on both sides); None when benign


def _layer_norm(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float) -> np.ndarray:
    x = x.astype(np.float64)
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return np.asarray((x - mean) / np.sqrt(var + eps) * w + b)


def _block(d: ApiDump, target: bool, variant: str, seed: int) -> None:
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, VOCAB, (2, 8)).astype(np.int64)
    emb = rng.standard_normal((VOCAB, WIDTH)).astype(np.float32)
    ln = [
        (
            (1 + 0.1 * rng.standard_normal(WIDTH)).astype(np.float32),
            (0.1 * rng.standard_normal(WIDTH)).astype(np.float32),
        )
        for _ in range(2)
    ]
    w1 = (rng.standard_normal((HIDDEN, WIDTH)) / math.sqrt(WIDTH)).astype(np.float32)
    b1 = (0.1 * rng.standard_normal(HIDDEN)).astype(np.float32)
    w2 = (rng.standard_normal((WIDTH, HIDDEN)) / math.sqrt(HIDDEN)).astype(np.float32)
    b2 = (0.1 * rng.standard_normal(WIDTH)).astype(np.float32)
    wh = (rng.standard_normal((VOCAB, WIDTH)) / math.sqrt(WIDTH)).astype(np.float32)
    bh = (0.1 * rng.standard_normal(VOCAB)).astype(np.float32)
    low = np.float16 if target else np.float32  # the autocast dtype of the products and of gelu

    def linear(name: str, x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
        xs, ws, bs = (a.astype(low).astype(np.float64) for a in (x, w, b))  # autocast rounds its inputs
        (out,) = d.call(name, [x, w, b], {}, [(xs @ ws.T + bs).astype(low)])
        return out

    (e,) = d.call("Functional.embedding.0", [ids, emb], {}, [emb[ids]])
    shape = (WIDTH,)
    (h,) = d.call(
        "Functional.layer_norm.0", [e, shape, *ln[0], EPS], {}, [_layer_norm(e, *ln[0], EPS).astype(np.float32)]
    )
    z = linear("Functional.linear.0", h, w1, b1).astype(np.float64)
    if target and variant == "gelu-bug":
        g = z / (1.0 + np.exp(-1.702 * z))
    else:
        g = 0.5 * z * (1.0 + np.asarray(_erf(z / math.sqrt(2.0)), dtype=np.float64))
    (g,) = d.call("Functional.gelu.0", [z.astype(low)], {}, [g.astype(low)])
    y = linear("Functional.linear.1", g, w2, b2)
    (r,) = d.call("Tensor.__add__.0", [h, y], {}, [(h.astype(np.float64) + y.astype(np.float64)).astype(np.float32)])
    computed_eps = WRONG_EPS if target and variant == "ln-eps" else EPS  # recorded as EPS either way
    (h2,) = d.call(
        "Functional.layer_norm.1",
        [r, shape, *ln[1], EPS],
        {},
        [_layer_norm(r, *ln[1], computed_eps).astype(np.float32)],
    )
    o = linear("Functional.linear.2", h2, wh, bh).astype(np.float64)
    p = np.exp(o - o.max(axis=-1, keepdims=True))
    d.call(
        "Functional.softmax.0", [o.astype(low)], {"dim": -1}, [(p / p.sum(axis=-1, keepdims=True)).astype(np.float32)]
    )


def write_msprobe_block_demo(root: str, variant: str = "autocast", seed: int = 20261205) -> MsprobeBlockDemo:
    """The reference (float32) and the target (float16 autocast, `variant`'s bug) under `root`."""
    if variant not in VARIANTS:
        raise ValueError(f"variant {variant!r}: one of {', '.join(VARIANTS)}")
    for side in ("ref", "target"):
        d = ApiDump(os.path.join(root, side))
        _block(d, side == "target", variant, seed)
        d.finish()
    return MsprobeBlockDemo(root, os.path.join(root, "ref"), os.path.join(root, "target"), variant, CULPRITS[variant])
