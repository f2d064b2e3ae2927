"""A generated multi-rank, multi-step pair of dumps with communication ops between the ranks, and one rank
that diverges first (in one step). Written as real MindSpore 2.x dumps (dumpwriter.py): `rank_R/Net/0/S/`
for every rank R and step (iteration) S, each rank with its own graph file and execution order.

Each rank runs the same network on its own input (data parallel), and the collectives mix the ranks:

    MatMul(x, w0) -> BiasAdd -> ReLU -> AllReduce(sum) -> Mul(1/R)               (ranks agree from here)
    -> MatMul(w1) -> AllGather(rows) -> ReduceScatter(sum) -> Send(r+1) / Receive(r-1)
    -> Add(own, received) -> Broadcast(from rank 0) -> Tanh

The planted bug: on the target, at `bug_step`, rank `bug_rank`'s `MatMul(w1)` multiplies by w1 transposed.
That rank diverges there first; every other rank then diverges at the AllGather (its own inputs agree, its
output carries the bad rank's rows), and later ops carry it. Values are computed with numpy, never written
by hand; the tests recompute them independently.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from dumptui.core.demo.dumpwriter import TS0, DumpWriter

SIDES = ("ref", "target")
GROUP = '"hccl_world_group"'
MATMUL1 = "Default/layer1-Dense/MatMul-op1"
ALLGATHER = "Default/shard-Gather/AllGather-op0"


@dataclass
class RanksDemo:
    root: str
    ref: str
    target: str
    ranks: int
    steps: int
    bug_rank: int
    bug_step: int
    planted: str  # the op where the bug is, on rank bug_rank, step bug_step
    carried_at: str  # where every other rank diverges in that step (the communication op that brings it)
    n_kernels: int  # kernels per rank and step


class _Rank:
    """One rank of one side at one step: its writer, and the IR reference of each value it produced."""

    def __init__(self, side_root: str, rank: int, step: int):
        self.w = DumpWriter(
            os.path.join(side_root, f"rank_{rank}"), iteration=str(step), ts0=TS0 + step * 10_000_000 + rank * 1000
        )
        self.rank = rank

    def op(
        self,
        op_type: str,
        full: str,
        ins: list[tuple[np.ndarray, str]],
        out: np.ndarray,
        attrs: dict[str, str] | None = None,
    ) -> tuple[np.ndarray, str]:
        """Dump one kernel (inputs, output, IR node); returns (output, its IR reference)."""
        out = np.ascontiguousarray(out, dtype=np.float32)
        for slot, (v, _ref) in enumerate(ins):
            self.w.tensor(op_type, full, "input", slot, v, "Float32")
        self.w.tensor(op_type, full, "output", 0, out, "Float32")
        ir_ins = [("Float32", tuple(np.shape(v))) for v, _ in ins]
        ref = self.w.node(op_type, full, [r for _, r in ins], ir_ins, [("Float32", tuple(out.shape))], attrs)
        return out, ref


def _const(value: float) -> tuple[np.ndarray, str]:
    return np.array(value, dtype=np.float32), f"Tensor(shape=[], dtype=Float32, value={value:g})"


def write_ranks_demo(
    root: str,
    ranks: int = 4,
    steps: int = 2,
    rows: int = 8,
    features: int | None = None,
    bug_rank: int = 2,
    bug_step: int = 1,
    seed: int = 20261203,
) -> RanksDemo:
    """Write `root/ref` and `root/target` (see the module docstring); `bug_step` < 0: no bug (a clean pair).
    `features` (default 4 per rank) must be a multiple of `ranks`: the ReduceScatter splits them."""
    f = features or 4 * ranks
    if f % ranks:
        raise ValueError(f"features ({f}) must be a multiple of ranks ({ranks})")
    rng = np.random.default_rng(seed)
    w0 = (rng.standard_normal((f, f)) / np.sqrt(f)).astype(np.float32)
    b0 = (rng.standard_normal(f) * 0.1).astype(np.float32)
    w1 = (rng.standard_normal((f, f)) / np.sqrt(f)).astype(np.float32)
    inputs = rng.standard_normal((steps, ranks, rows, f)).astype(np.float32)
    paths = {side: os.path.join(root, side) for side in SIDES}
    n_kernels = 0
    for step in range(steps):
        for side in SIDES:
            rs = [_Rank(paths[side], r, step) for r in range(ranks)]
            n_kernels = _forward(rs, inputs[step], w0, b0, w1, side == "target" and step == bug_step, bug_rank)
            for r in rs:
                r.w.finish()
    return RanksDemo(
        root, paths["ref"], paths["target"], ranks, steps, bug_rank, bug_step, MATMUL1, ALLGATHER, n_kernels
    )


def _forward(
    rs: list[_Rank], x: np.ndarray, w0: np.ndarray, b0: np.ndarray, w1: np.ndarray, bug: bool, bug_rank: int
) -> int:
    """One step of every rank of one side; returns the number of kernels per rank."""
    n = len(rs)
    h: list[tuple[np.ndarray, str]] = []
    for r, rank in enumerate(rs):
        xin = rank.w.parameter("x", x[r], "Float32", is_weight=False)
        pw0 = rank.w.parameter("layer0.weight", w0, "Float32")
        pb0 = rank.w.parameter("layer0.bias", b0, "Float32")
        mm = rank.op("MatMul", "Default/layer0-Dense/MatMul-op0", [(x[r], xin), (w0, pw0)], x[r] @ w0)
        ba = rank.op("BiasAdd", "Default/layer0-Dense/BiasAdd-op0", [mm, (b0, pb0)], mm[0] + b0)
        h.append(rank.op("ReLU", "Default/layer0-Dense/ReLU-op0", [ba], np.maximum(ba[0], 0)))
    total = np.stack([v for v, _ in h]).sum(axis=0, dtype=np.float32)
    means = []
    for r, rank in enumerate(rs):
        ar = rank.op("AllReduce", "Default/grad-Sync/AllReduce-op0", [h[r]], total, {"group": GROUP, "op": '"sum"'})
        means.append(rank.op("Mul", "Default/grad-Sync/Mul-op0", [ar, _const(1.0 / n)], ar[0] * np.float32(1.0 / n)))
    h = []
    for r, rank in enumerate(rs):
        pw1 = rank.w.parameter("layer1.weight", w1, "Float32")
        weight = w1.T if bug and r == bug_rank else w1  # the planted bug: the weight read transposed
        h.append(rank.op("MatMul", MATMUL1, [means[r], (w1, pw1)], means[r][0] @ weight))
    gathered = np.concatenate([v for v, _ in h], axis=0)
    rows = h[0][0].shape[0]
    scattered = []
    for r, rank in enumerate(rs):
        ag = rank.op("AllGather", ALLGATHER, [h[r]], gathered, {"group": GROUP, "rank_size": f"I64({n})"})
        summed = ag[0].reshape(n, rows, -1).sum(axis=0, dtype=np.float32)
        width = summed.shape[1] // n
        chunk = summed[:, r * width : (r + 1) * width]
        attrs = {"group": GROUP, "op": '"sum"', "rank_size": f"I64({n})"}
        scattered.append(rank.op("ReduceScatter", "Default/shard-Gather/ReduceScatter-op0", [ag], chunk, attrs))
    received = []
    for r, rank in enumerate(rs):
        rank.op("Send", "Default/pipe-Pipe/Send-op0", [scattered[r]], scattered[r][0], _p2p("dest_rank", (r + 1) % n))
        src = (r - 1) % n
        received.append(
            rank.op("Receive", "Default/pipe-Pipe/Receive-op0", [], scattered[src][0], _p2p("src_rank", src))
        )
    added = [
        rank.op("Add", "Default/head-Dense/Add-op0", [scattered[r], received[r]], scattered[r][0] + received[r][0])
        for r, rank in enumerate(rs)
    ]
    for r, rank in enumerate(rs):
        bc = rank.op("Broadcast", "Default/head-Dense/Broadcast-op0", [added[r]], added[0][0], {"root_rank": "I64(0)"})
        rank.op("Tanh", "Default/head-Dense/Tanh-op0", [bc], np.tanh(bc[0]))
    return len(rs[0].w.order)


def _p2p(peer: str, rank: int) -> dict[str, str]:
    return {peer: f"I64({rank})", "sr_tag": "I64(0)", "group": GROUP}
