"""Generated msprobe API-level dumps (PyTorch, task `tensor`, level `mix`) of a small torch model that ranks its
scores with `torch.topk` and `torch.sort`, the target computing in float16: its noisy scores flip near-ties.
Written as msprobe 26.x writes them (step0/rank0/dump.json, construct.json, stack.json, dump_tensor_data/*.pt
in torch.save's zip format), without torch: the pickle of each tensor is written opcode by opcode.

    x (1, 32) ─ Functional.linear.0 (W1) ─ Torch.sigmoid.0 = scores (1, 64)
    scores ─ Torch.topk.0 (k = 8) ─ values, indices ─ Torch.gather.0 (feats, 1, indices) ─ Functional.linear.1 (W2)
    scores ─ Torch.sort.0 (descending) ─ values, indices ─ Torch.gather.1 (feats, 1, indices) ─ Torch.sum.0

    scores ─ Tensor.__gt__.0 (t) ─ mask ─ Torch.where.0 (mask, scores, zeros)     (the threshold variants only)
                                         └ Torch.masked_select.0 (scores, mask) ─ Torch.mean.0
                                                                                └ Torch.cumsum.0

    in the inplace variants, in place after each gather: Torch.gather.0 ─ Tensor.mul_.0 (2.0) ─ Functional.linear.1,
                                                         Torch.gather.1 ─ Tensor.clamp_.0 (min -1) ─ Torch.mul.0

Targets (`VARIANTS`): `noisy` (float16, nothing else: benign), `topk-wrong` (its topk returns the element ranked
k + RANK_SLIP at the last rank: a root, named by its replay), `gather-bug` (the gather after the topk takes the
indices shifted by one: a bug after the flip), `threshold` (benign: `scores > t`, t a float16 number strictly
between one score's two sides, flips there; the where and the masked_select it feeds carry it, the mean of
one element more or less too, and the cumsum of them, which no replay checks, follows the flip's change of
size), `mean-bug` (the same, the target's mean dividing by one too many: a bug after
the flip, named by its replay on its own, shorter, input), `inplace` (benign: what each gather took by the flipped
indices modified in place, `picked.mul_(2.0)` and `sorted_feats.clamp_(min=-1.0)`, recorded as msprobe records an
in-place call: its input before the call, its output after), `inplace-bug` (the same, the target's mul_
multiplying by 2.5: a bug after the flip, in an in-place call).
"""

from __future__ import annotations

import json
import os
import struct
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dumptui.core.demo.detector import pick_threshold

VARIANTS = ("noisy", "topk-wrong", "gather-bug", "threshold", "mean-bug", "inplace", "inplace-bug")
THRESHOLD_VARIANTS = ("threshold", "mean-bug")
INPLACE_VARIANTS = ("inplace", "inplace-bug")
K = 8
N = 64
RANK_SLIP = 6
MAX_SEEDS = 64
_CULPRITS: dict[str, str | None] = {
    "noisy": None,
    "topk-wrong": "Torch.topk.0.forward",
    "gather-bug": "Torch.gather.0.forward",
    "threshold": None,
    "mean-bug": "Torch.mean.0.forward",
    "inplace": None,
    "inplace-bug": "Tensor.mul_.0.forward",
}
INPLACE_OPS = ("Tensor.mul_.0.forward", "Tensor.clamp_.0.forward")  # the inplace variants' in-place calls
THRESHOLD_OP = "Tensor.__gt__.0.forward"  # where the threshold variants' comparison flips
MASKED_OP = "Torch.masked_select.0.forward"  # ... and the masked_select it feeds keeps one more or one less
UNREPLAYED_OP = "Torch.cumsum.0.forward"  # ... an op of what it kept that has no replay
FLIP_OPS = ("Torch.topk.0.forward", "Torch.sort.0.forward")

_STORAGE = {
    "float32": ("FloatStorage", "torch.float32"),
    "float16": ("HalfStorage", "torch.float16"),
    "int64": ("LongStorage", "torch.int64"),
    "bool": ("BoolStorage", "torch.bool"),
}


@dataclass
class MsprobeSelectionDemo:
    root: str
    ref: str
    target: str
    variant: str
    culprit: str | None  # the API call of the planted bug (the same name on both sides); None when benign
    seed: int
    topk_flips: int  # ranks of the topk whose element differs between the sides
    sort_flips: int


# ------------------------------------------------------------------------------------------------ torch.save


def _unicode(text: str) -> bytes:
    data = text.encode("utf-8")
    return b"X" + struct.pack("<I", len(data)) + data


def _int(v: int) -> bytes:
    return b"J" + struct.pack("<i", v)


def _ints(values: tuple[int, ...]) -> bytes:
    return b"(" + b"".join(_int(v) for v in values) + b"t"


def tensor_pickle(shape: tuple[int, ...], storage: str, numel: int) -> bytes:
    """What torch.save pickles for a contiguous tensor (protocol 2): _rebuild_tensor_v2(storage, 0, size,
    stride, False, OrderedDict()), the storage a persistent id ('storage', torch.<Storage>, '0', 'cpu', numel)."""
    stride = tuple(int(np.prod(shape[i + 1 :], dtype=np.int64)) for i in range(len(shape)))
    pid = b"(" + _unicode("storage") + f"ctorch\n{storage}\n".encode() + _unicode("0") + _unicode("cpu")
    pid += _int(numel) + b"tQ"
    args = b"(" + pid + _int(0) + _ints(shape) + _ints(stride) + b"\x89" + b"ccollections\nOrderedDict\n)R" + b"t"
    return b"\x80\x02" + b"ctorch._utils\n_rebuild_tensor_v2\n" + args + b"R."


def torch_save(path: str, a: np.ndarray) -> None:
    """`a` as torch.save writes a tensor (the zip layout; no torch needed)."""
    a = np.ascontiguousarray(a)
    storage, _name = _STORAGE[str(a.dtype)]
    base = os.path.splitext(os.path.basename(path))[0]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        z.writestr(f"{base}/data.pkl", tensor_pickle(tuple(a.shape), storage, int(a.size)))
        z.writestr(f"{base}/byteorder", "little")
        z.writestr(f"{base}/data/0", a.tobytes())
        z.writestr(f"{base}/version", "3\n")


# ------------------------------------------------------------------------------------------------ the dump


# one entry of dump.json as msprobe writes it: a tensor's type, dtype, shape, statistics and file, an API's
# input_args, input_kwargs and output (JSON values of several types)
_Record = dict[str, Any]


class ApiDump:
    """One side's msprobe dump: API calls in order, each tensor saved and recorded with its statistics."""

    def __init__(self, root: str):
        self.dir = os.path.join(root, "step0", "rank0")
        self.data_dir = os.path.join(self.dir, "dump_tensor_data")
        os.makedirs(self.data_dir, exist_ok=True)
        self.data: dict[str, _Record] = {}
        self.construct: dict[str, str | None] = {}

    def record(self, name: str, a: np.ndarray) -> _Record:
        a = np.asarray(a)
        torch_save(os.path.join(self.data_dir, f"{name}.pt"), a)
        f = a.astype(np.float64)
        return {
            "type": "torch.Tensor",
            "dtype": _STORAGE[str(a.dtype)][1],
            "shape": list(a.shape),
            "Max": float(f.max()),
            "Min": float(f.min()),
            "Mean": float(f.mean()),
            "Norm": float(np.linalg.norm(f)),
            "requires_grad": False,
            "data_name": f"{name}.pt",
        }

    def call(
        self, api: str, args: Sequence[object], kwargs: Mapping[str, object], outputs: list[np.ndarray]
    ) -> list[np.ndarray]:
        """One API call: tensors (numpy arrays) and numbers as msprobe records them."""
        name = f"{api}.forward"

        def arg(v: object, label: str) -> Any:
            if isinstance(v, np.ndarray):
                return self.record(f"{name}.{label}", v)
            if isinstance(v, tuple):  # a shape or a pair, recorded as a list of numbers
                return [arg(item, label) for item in v]
            kind = "bool" if isinstance(v, bool) else "int" if isinstance(v, int) else "float"
            return {"type": kind, "value": v}

        self.data[name] = {
            "input_args": [arg(v, f"input.{i}") for i, v in enumerate(args)],
            "input_kwargs": {k: arg(v, f"input.{k}") for k, v in kwargs.items()},
            "output": [self.record(f"{name}.output.{i}", o) for i, o in enumerate(outputs)],
        }
        self.construct[name] = None
        return outputs

    def finish(self) -> None:
        doc = {"task": "tensor", "level": "mix", "framework": "pytorch", "dump_data_dir": None, "data": self.data}
        with open(os.path.join(self.dir, "dump.json"), "w") as fh:
            json.dump(doc, fh)
        with open(os.path.join(self.dir, "construct.json"), "w") as fh:
            json.dump(self.construct, fh)
        with open(os.path.join(self.dir, "stack.json"), "w") as fh:
            json.dump({}, fh)


def _ranked(v: np.ndarray, target: bool) -> np.ndarray:
    """Highest first; exact ties in index order on the reference, the other way on the target (a device's
    sort need not be stable)."""
    if target:
        return np.lexsort((-np.arange(v.size), -v))
    return np.argsort(-v, kind="stable")


def _model(d: ApiDump | None, side: str, variant: str, seed: int, t: float | None = None) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((1, 32)).astype(np.float32)
    w1 = (rng.standard_normal((N, 32)) / np.sqrt(32) * 2.0).astype(np.float32)
    feats = rng.standard_normal((1, N)).astype(np.float32)
    w2 = (rng.standard_normal((4, K)) / np.sqrt(K)).astype(np.float32)
    target = side == "target"
    dt = np.float16 if target else np.float32

    def store(v: np.ndarray) -> np.ndarray:
        return np.asarray(v, dtype=np.float64).astype(dt)

    call = d.call if d is not None else (lambda api, args, kwargs, outputs: outputs)
    xs, w1s, fs, w2s = store(x), store(w1), store(feats), store(w2)
    (h,) = call("Functional.linear.0", [xs, w1s], {}, [store(xs.astype(np.float64) @ w1s.astype(np.float64).T)])
    (scores,) = call("Torch.sigmoid.0", [h], {}, [store(1.0 / (1.0 + np.exp(-h.astype(np.float64))))])
    order = _ranked(scores[0].astype(np.float64), target)
    top = order[:K].copy()
    if target and variant == "topk-wrong":
        top[K - 1] = order[K - 1 + RANK_SLIP]
    values, idx = call(
        "Torch.topk.0",
        [scores, K],
        {"dim": -1, "largest": True, "sorted": True},
        [scores[:, top], top.astype(np.int64)[None]],
    )
    take = idx.copy()
    if target and variant == "gather-bug":
        take = (take + 1) % N
    (picked,) = call("Torch.gather.0", [fs, 1, idx], {}, [np.take_along_axis(fs, take, axis=1)])
    inplace = variant in INPLACE_VARIANTS  # in place: the input recorded before the call, the output after it
    if inplace:
        factor = 2.5 if target and variant == "inplace-bug" else 2.0  # the bug: the wrong factor
        (picked,) = call("Tensor.mul_.0", [picked, 2.0], {}, [store(picked.astype(np.float64) * factor)])
    call("Functional.linear.1", [picked, w2s], {}, [store(picked.astype(np.float64) @ w2s.astype(np.float64).T)])
    s_values, s_idx = call(
        "Torch.sort.0", [scores], {"dim": -1, "descending": True}, [scores[:, order], order.astype(np.int64)[None]]
    )
    (sorted_feats,) = call("Torch.gather.1", [fs, 1, s_idx], {}, [np.take_along_axis(fs, s_idx, axis=1)])
    if inplace:
        (sorted_feats,) = call("Tensor.clamp_.0", [sorted_feats], {"min": -1.0}, [np.maximum(sorted_feats, dt(-1.0))])
    weights = store(np.linspace(1.0, 0.0, N))[None]
    (weighted,) = call("Torch.mul.0", [sorted_feats, weights], {}, [store(sorted_feats.astype(np.float64) * weights)])
    call("Torch.sum.0", [weighted], {}, [store(weighted.astype(np.float64).sum(keepdims=True)).reshape(())])
    if t is not None:  # after the sort, whose sorted copy has the scores' statistics
        (mask,) = call("Tensor.__gt__.0", [scores, t], {}, [scores > dt(t)])
        zeros = np.zeros_like(scores)
        call("Torch.where.0", [mask, scores, zeros], {}, [np.where(mask, scores, zeros)])
        (kept,) = call("Torch.masked_select.0", [scores, mask], {}, [scores[mask]])
        n = kept.size + (1 if target and variant == "mean-bug" else 0)  # the bug: one too many in the divisor
        call("Torch.mean.0", [kept], {}, [store(kept.astype(np.float64).sum() / n).reshape(())])
        call("Torch.cumsum.0", [kept], {"dim": 0}, [store(np.cumsum(kept.astype(np.float64)))])  # (no replay)
    return {"topk": idx[0], "sort": s_idx[0], "scores": scores[0]}


def write_msprobe_selection_demo(root: str, variant: str = "noisy", seed: int = 20261133) -> MsprobeSelectionDemo:
    """Write `root/ref` and `root/target` (msprobe dumps) for one variant, from the first seed at or after
    `seed` whose benign target flips both the topk and the sort."""
    if variant not in VARIANTS:
        raise ValueError(f"variant one of {VARIANTS}")
    for s in range(seed, seed + MAX_SEEDS):
        got = {side: _model(None, side, "noisy", s) for side in ("ref", "target")}
        topk = int((got["ref"]["topk"] != got["target"]["topk"]).sum())
        sort = int((got["ref"]["sort"] != got["target"]["sort"]).sum())
        if topk and sort:
            break
    else:
        raise RuntimeError(f"no seed in [{seed}, {seed + MAX_SEEDS}) flips both selections")
    t = pick_threshold(got["ref"]["scores"], got["target"]["scores"])[0] if variant in THRESHOLD_VARIANTS else None
    for side in ("ref", "target"):
        d = ApiDump(os.path.join(root, side))
        _model(d, side, variant, s, t)
        d.finish()
    return MsprobeSelectionDemo(
        root, os.path.join(root, "ref"), os.path.join(root, "target"), variant, _CULPRITS[variant], s, topk, sort
    )


__all__ = [
    "VARIANTS",
    "FLIP_OPS",
    "THRESHOLD_OP",
    "MASKED_OP",
    "UNREPLAYED_OP",
    "MsprobeSelectionDemo",
    "write_msprobe_selection_demo",
    "torch_save",
]
