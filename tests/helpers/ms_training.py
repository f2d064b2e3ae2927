"""A small MindSpore training run dumped as MindSpore 2.x writes it (npy layout, one folder per iteration), with
the values computed here with numpy: two Dense layers (fc1 4->3 with ReLU, fc2 3->2), a mean-squared loss,
SGD with momentum. Each iteration holds the forward kernels, the optimizer's Gather of the learning rate from
the learning-rate list by the global step, one ApplyMomentum per parameter (input 0 the parameter, 1 its
accumulation, 2 the learning rate, 3 the gradient, 4 the momentum; output 0 the updated parameter), and the
Parameter files MindSpore writes at the end of the iteration: the parameters after their update, their
`moments_*` accumulations, `learning_rate` and `global_step`.

`lr_target` lets the target's learning-rate list differ from the reference's: with only its entry 2 changed,
iterations 0 and 1 compute the same numbers and iteration 2's Gather is where the runs part.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from helpers.common import write_npy

PARAMS = ("fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias")
LR = (0.1, 0.1, 0.1)
MOMENTUM = 0.9
GATHER = "Default_optimizer-Momentum_Gather-op0"
APPLY = {name: f"Default_optimizer-Momentum_ApplyMomentum-op{i}" for i, name in enumerate(PARAMS)}
ORDER_FORWARD = [
    ("MatMul", "Default/fc1-Dense/MatMul-op0"),
    ("BiasAdd", "Default/fc1-Dense/BiasAdd-op0"),
    ("ReLU", "Default/relu-ReLU/ReLU-op0"),
    ("MatMul", "Default/fc2-Dense/MatMul-op0"),
    ("BiasAdd", "Default/fc2-Dense/BiasAdd-op0"),
]


class _Writer:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.ts = 1796215322960000

    def tensor(self, op_type: str, op_name: str, io: str, slot: int, arr: np.ndarray) -> None:
        self.ts += 7
        label = {np.dtype(np.float32): "Float32", np.dtype(np.int32): "Int32"}[arr.dtype]
        name = f"{op_type}.{op_name}.0.0.{self.ts}.{io}.{slot}.DefaultFormat.{label}.npy"
        write_npy(os.path.join(self.folder, name), arr)


def training_run(root: str | os.PathLike, lr: tuple[float, ...] = LR, steps: int = 3) -> Path:
    """Write `steps` iterations of the run below `root` (rank_0/Net/0/<iteration>); returns `root`."""
    rng = np.random.default_rng(32)
    x = rng.standard_normal((2, 4)).astype(np.float32)
    label = rng.standard_normal((2, 2)).astype(np.float32)
    params = {
        "fc1.weight": rng.standard_normal((3, 4)).astype(np.float32),
        "fc1.bias": rng.standard_normal(3).astype(np.float32),
        "fc2.weight": rng.standard_normal((2, 3)).astype(np.float32),
        "fc2.bias": rng.standard_normal(2).astype(np.float32),
    }
    moments = {k: np.zeros_like(v) for k, v in params.items()}
    lr_list = np.asarray(lr, np.float32)
    momentum = np.array(MOMENTUM, np.float32)
    rank_dir = Path(root) / "rank_0"
    for step in range(steps):
        w = _Writer(rank_dir / "Net" / "0" / str(step))
        w1, b1, w2, b2 = (params[k] for k in PARAMS)
        mm1 = (x @ w1.T).astype(np.float32)
        h = (mm1 + b1).astype(np.float32)
        r = np.maximum(h, 0).astype(np.float32)
        mm2 = (r @ w2.T).astype(np.float32)
        y = (mm2 + b2).astype(np.float32)
        w.tensor("MatMul", "Default_fc1-Dense_MatMul-op0", "input", 0, x)
        w.tensor("MatMul", "Default_fc1-Dense_MatMul-op0", "input", 1, w1)
        w.tensor("MatMul", "Default_fc1-Dense_MatMul-op0", "output", 0, mm1)
        w.tensor("BiasAdd", "Default_fc1-Dense_BiasAdd-op0", "input", 0, mm1)
        w.tensor("BiasAdd", "Default_fc1-Dense_BiasAdd-op0", "input", 1, b1)
        w.tensor("BiasAdd", "Default_fc1-Dense_BiasAdd-op0", "output", 0, h)
        w.tensor("ReLU", "Default_relu-ReLU_ReLU-op0", "input", 0, h)
        w.tensor("ReLU", "Default_relu-ReLU_ReLU-op0", "output", 0, r)
        w.tensor("MatMul", "Default_fc2-Dense_MatMul-op0", "input", 0, r)
        w.tensor("MatMul", "Default_fc2-Dense_MatMul-op0", "input", 1, w2)
        w.tensor("MatMul", "Default_fc2-Dense_MatMul-op0", "output", 0, mm2)
        w.tensor("BiasAdd", "Default_fc2-Dense_BiasAdd-op0", "input", 0, mm2)
        w.tensor("BiasAdd", "Default_fc2-Dense_BiasAdd-op0", "input", 1, b2)
        w.tensor("BiasAdd", "Default_fc2-Dense_BiasAdd-op0", "output", 0, y)
        # gradients of 0.5 * mean((y - label)^2), computed here; the backward kernels are not dumped
        dy = ((y - label) / y.size).astype(np.float32)
        dr = (dy @ w2) * (h > 0)
        grads = {
            "fc1.weight": (dr.T @ x).astype(np.float32),
            "fc1.bias": dr.sum(axis=0).astype(np.float32),
            "fc2.weight": (dy.T @ r).astype(np.float32),
            "fc2.bias": dy.sum(axis=0).astype(np.float32),
        }
        global_step = np.array([step], np.int32)
        lr_now = lr_list[global_step].astype(np.float32)
        w.tensor("Gather", GATHER, "input", 0, lr_list)
        w.tensor("Gather", GATHER, "input", 1, global_step)
        w.tensor("Gather", GATHER, "output", 0, lr_now)
        for name in PARAMS:
            op = APPLY[name]
            var, acc, grad = params[name], moments[name], grads[name]
            new_acc = (acc * momentum + grad).astype(np.float32)
            new_var = (var - lr_now[0] * new_acc).astype(np.float32)
            w.tensor("ApplyMomentum", op, "input", 0, var)
            w.tensor("ApplyMomentum", op, "input", 1, acc)
            w.tensor("ApplyMomentum", op, "input", 2, lr_now)
            w.tensor("ApplyMomentum", op, "input", 3, grad)
            w.tensor("ApplyMomentum", op, "input", 4, momentum)
            w.tensor("ApplyMomentum", op, "output", 0, new_var)
            params[name], moments[name] = new_var, new_acc
        # Parameter files are written at the end of the iteration: the values after the update
        for name in PARAMS:
            w.tensor("Parameter", name.replace(".", "_"), "output", 0, params[name])
            w.tensor("Parameter", "moments_" + name.replace(".", "_"), "output", 0, moments[name])
        w.tensor("Parameter", "learning_rate", "output", 0, lr_list)
        w.tensor("Parameter", "global_step", "output", 0, np.array([step + 1], np.int32))
    order = [full for _, full in ORDER_FORWARD] + ["Default/optimizer-Momentum/Gather-op0"]
    order += [f"Default/optimizer-Momentum/ApplyMomentum-op{i}" for i in range(len(PARAMS))]
    eo = rank_dir / "execution_order"
    eo.mkdir(parents=True, exist_ok=True)
    (eo / "ms_execution_order_graph_0.csv").write_text(
        "NodeExecutionOrder-FullNameWithScope\n" + "\n".join(order) + "\n"
    )
    return Path(root)


def lr_changed_at_step_2(tmp: str | os.PathLike) -> tuple[Path, Path]:
    """Variant (a): the same run twice, the target's learning-rate list differing only in its entry 2."""
    ref = training_run(Path(tmp) / "ref")
    target = training_run(Path(tmp) / "target", lr=(0.1, 0.1, 0.05))
    return ref, target


def one_step(tmp: str | os.PathLike, lr_target: float = 0.05) -> tuple[Path, Path]:
    """Variant (b): one iteration, the target's learning rate differing: every update differs."""
    ref = training_run(Path(tmp) / "ref1", lr=(0.1,), steps=1)
    target = training_run(Path(tmp) / "target1", lr=(lr_target,), steps=1)
    return ref, target
