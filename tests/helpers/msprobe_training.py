"""A small data-parallel training run dumped as msprobe 26.x writes it for PyTorch at level L1, task `statistics`:
every rank, every step, forward and backward calls, scalars, collectives with their process group. The values
are computed here with numpy (a two-layer network, only the second layer trained), so every recorded statistic
is the statistic of a real tensor, and a planted change moves exactly the records it would move in a real run.

World of 4 ranks in two data-parallel groups, {0, 1} and {2, 3}: each group's all_reduce sums its members'
gradients, and nothing crosses between the groups. What msprobe does not record is not written either: the
view that reshapes the first linear's input, the `.to(bfloat16)` / `.to(float32)` casts around the GeLU of the
`bf16` variant. The planted changes (`Change`):

- `mul_scale`: rank R's `torch.mul(h, 0.5)` gets 0.25 at step S (a scalar argument, equal tensors going in);
- `reduce_max`: the gradient all_reduce of rank R's group uses op MAX at step S (both members: concurrent);
- `grad_seed`: rank R's loss-scale seed (the gradient msprobe records as the mse_loss backward's input) doubled;
- `bf16`: the GeLU computed in bfloat16 on every rank and step (benign: no root, though every step differs).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

WORLD = 4
GROUPS = ([0, 1], [2, 3])
STEPS = 3
LR = 1.0


@dataclass(frozen=True)
class Change:
    kind: str = ""  # "", "mul_scale", "reduce_max", "grad_seed", "bf16"
    rank: int = -1
    step: int = -1

    def at(self, kind: str, rank: int, step: int) -> bool:
        return self.kind == kind and self.rank in (rank, -1) and self.step in (step, -1)


def to_bf16(a: np.ndarray) -> np.ndarray:
    """float32 values rounded to bfloat16 (nearest, ties to even), kept as float32."""
    arr = np.array(a, dtype=np.float32)
    bits = arr.reshape(-1).view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
    return rounded.astype(np.uint32).view(np.float32).reshape(arr.shape)


def record(a: np.ndarray, dtype: str = "torch.float32", shape: tuple[int, ...] | None = None) -> dict:
    """A tensor record with the statistics msprobe writes (computed in the tensor's own dtype: bf16 ones
    rounded to bf16)."""
    v = np.asarray(a, dtype=np.float64)
    stats = [float(v.max()), float(v.min()), float(v.mean()), float(np.sqrt((v * v).sum()))]
    if dtype == "torch.bfloat16":
        stats = [float(to_bf16(np.float32(s))) for s in stats]
    return {
        "type": "torch.Tensor",
        "dtype": dtype,
        "shape": list(shape if shape is not None else v.shape),
        "Max": stats[0],
        "Min": stats[1],
        "Mean": stats[2],
        "Norm": stats[3],
        "requires_grad": False,
    }


def scalar(value: float) -> dict:
    return {"type": "float", "value": value}


def gelu(x: np.ndarray) -> np.ndarray:
    return (0.5 * x * (1 + np.tanh(0.7978845608 * (x + 0.044715 * x**3)))).astype(np.float32)


def write_training(root: Path, change: Change = Change(), seed: int = 7) -> str:
    """The dump of the run under root/step{S}/rank{R}/dump.json; returns root."""
    rng = np.random.default_rng(seed)
    w1 = (rng.standard_normal((8, 8)) * 0.4).astype(np.float32)
    w2 = (rng.standard_normal((4, 8)) * 0.4).astype(np.float32)
    weights = {r: w2.copy() for r in range(WORLD)}
    batches = {(s, r): rng.standard_normal((4, 8)).astype(np.float32) + 0.5 for s in range(STEPS) for r in range(WORLD)}
    labels = {(s, r): rng.standard_normal((2, 2, 4)).astype(np.float32) for s in range(STEPS) for r in range(WORLD)}
    for s in range(STEPS):
        calls: dict[int, dict] = {}
        grads: dict[int, np.ndarray] = {}
        for r in range(WORLD):
            calls[r], grads[r] = _forward_backward(r, s, w1, weights[r], batches[s, r], labels[s, r], change)
        for r in range(WORLD):
            group = next(g for g in GROUPS if r in g)
            op = "MAX" if change.at("reduce_max", group[0], s) or change.at("reduce_max", group[1], s) else "SUM"
            stacked = np.stack([grads[m] for m in group])
            reduced = (stacked.max(axis=0) if op == "MAX" else stacked.sum(axis=0)).astype(np.float32)
            calls[r]["Distributed.all_reduce.0.forward"] = {
                "input_args": [record(grads[r])],
                "input_kwargs": {
                    "op": {"type": "torch.distributed.ReduceOp", "value": f"RedOpType.{op}"},
                    "group": {"type": "torch.ProcessGroup", "group_ranks": group, "group_id": f"g{group[0]}"},
                },
                "output": [record(reduced)],
            }
            update = (reduced * np.float32(LR)).astype(np.float32)
            calls[r]["Tensor.__rmul__.0.forward"] = {
                "input_args": [record(reduced), scalar(LR)],
                "input_kwargs": {},
                "output": [record(update)],
            }
            weights[r] = (weights[r] - update).astype(np.float32)
            folder = root / f"step{s}" / f"rank{r}"
            folder.mkdir(parents=True)
            doc = {"task": "statistics", "level": "L1", "framework": "pytorch", "dump_data_dir": None, "data": calls[r]}
            (folder / "dump.json").write_text(json.dumps(doc))
            (folder / "construct.json").write_text(json.dumps({name: None for name in calls[r]}))
            (folder / "stack.json").write_text("{}")
    return str(root)


def _forward_backward(r, s, w1, w2, x_raw, label, change):
    calls: dict[str, dict] = {}
    calls["Module.fc1.Linear.forward.0"] = {
        "input_args": [],
        "input_kwargs": {},
        "output": [],
        "parameters": {"weight": record(w1)},
    }
    calls["Module.fc2.Linear.forward.0"] = {
        "input_args": [],
        "input_kwargs": {},
        "output": [],
        "parameters": {"weight": record(w2)},
    }
    x = (x_raw - np.float32(0.5)).astype(np.float32)
    calls["Tensor.__sub__.0.forward"] = {
        "input_args": [record(x_raw), scalar(0.5)],
        "input_kwargs": {},
        "output": [record(x)],
    }
    xv = x.reshape(2, 2, 8)  # a view msprobe does not record
    h = (xv @ w1.T).astype(np.float32)
    calls["Functional.linear.0.forward"] = {
        "input_args": [record(xv), record(w1)],
        "input_kwargs": {},
        "output": [record(h)],
    }
    factor = 0.25 if change.at("mul_scale", r, s) else 0.5
    h2 = (h * np.float32(factor)).astype(np.float32)
    calls["Torch.mul.0.forward"] = {
        "input_args": [record(h), scalar(factor)],
        "input_kwargs": {},
        "output": [record(h2)],
    }
    if change.kind == "bf16":
        gin = to_bf16(h2)
        g = to_bf16(gelu(gin))
        calls["Functional.gelu.0.forward"] = {
            "input_args": [record(gin, "torch.bfloat16")],
            "input_kwargs": {},
            "output": [record(g, "torch.bfloat16")],
        }
    else:
        g = gelu(h2)
        calls["Functional.gelu.0.forward"] = {"input_args": [record(h2)], "input_kwargs": {}, "output": [record(g)]}
    y = (g @ w2.T).astype(np.float32)
    calls["Functional.linear.1.forward"] = {
        "input_args": [record(g), record(w2)],
        "input_kwargs": {},
        "output": [record(y)],
    }
    diff = (y - label).astype(np.float32)
    loss = np.float32((diff.astype(np.float64) ** 2).mean())
    calls["Functional.mse_loss.0.forward"] = {
        "input_args": [record(y), record(label)],
        "input_kwargs": {},
        "output": [record(np.array(loss), shape=())],
    }
    seed = np.float32(2.0 if change.at("grad_seed", r, s) else 1.0)
    dy = (diff * np.float32(2.0 / diff.size) * seed).astype(np.float32)
    calls["Functional.mse_loss.0.backward"] = {
        "input": [record(np.array(seed), shape=())],
        "output": [record(dy), None],
    }
    dg = (dy @ w2).astype(np.float32)
    dw2 = np.einsum("bto,bti->oi", dy, g).astype(np.float32)
    calls["Functional.linear.1.backward"] = {"input": [record(dy)], "output": [record(dg), record(dw2)]}
    return calls, dw2
