"""A demo pair of dumps in the MindSpore 2.x layout, computed with numpy by a small residual network.

    x -> [stage s / block i: h + eps * ReLU(BiasAdd(Conv2D_1x1(h)))] x N -> Sigmoid
         (kernels per block: Conv2D, BiasAdd, ReLU, Mul by eps, Add to the residual stream)

A residual stream with small updates (eps = 2 / blocks) carries information to the output whatever the depth;
deep random networks without it forget their input, and so would forget a planted divergence.
The reference ("Ascend910") runs everything in float32. The target ("Ascend310") differs in two places:
- a benign fp16 region: in some blocks the convolution runs in float16, with a Cast to fp16 before it and one
  back after (target-only ops, as a 310 inserts them); every later tensor differs slightly but stays close;
- one planted divergence: later, one Add reads its residual input in the wrong layout (NHWC instead of NCHW:
  the channels reversed); its inputs agree, its output diverges, and so does everything after.

Used by `make run`, the tests and the benchmarks (20,000 ops and more). Values are real computations, never
hard-coded: the tests recompute them independently.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Callable

import numpy as np

BLOCK_OPS = 5
BLOCKS_PER_STAGE = 50
TS0 = 1796214300000000


@dataclass
class DemoInfo:
    root: str
    ref: str
    target: str
    n_kernels: int
    n_files: int
    planted: str  # full name of the op where the divergence starts
    planted_index: int  # its position in the reference's execution order
    fp16_first: str
    fp16_last: str
    shape: tuple[int, ...]


def _act_shape(size: int) -> tuple[int, int, int, int]:
    c = 8 if size % 8 == 0 and size >= 8 else 1
    hw = size // c
    h = max(d for d in range(1, int(math.isqrt(hw)) + 1) if hw % d == 0)
    return (1, c, h, hw // h)


def _npy_header(dtype: np.dtype, shape: tuple[int, ...]) -> bytes:
    d = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (dtype.str, repr(tuple(shape)))
    pad = 64 - (10 + len(d) + 1) % 64
    h = d + " " * pad + "\n"
    return b"\x93NUMPY\x01\x00" + len(h).to_bytes(2, "little") + h.encode("latin1")


class _Writer:
    """Writes one side's files: names, timestamps, npy payloads; remembers what it wrote for the IR."""

    def __init__(self, rank_dir: str):
        self.rank_dir = rank_dir
        self.data_dir = os.path.join(rank_dir, "Net", "0", "0")
        os.makedirs(self.data_dir, exist_ok=True)
        self.ts = TS0
        self.files = 0
        self._headers: dict = {}

    def tensor(self, op_type: str, full_name: str, io: str, slot: int, arr: np.ndarray, label: str) -> None:
        self.ts += 7
        file_op = full_name.replace("/", "_").replace(".", "_")
        name = f"{op_type}.{file_op}.0.0.{self.ts}.{io}.{slot}.DefaultFormat.{label}.npy"
        arr = np.ascontiguousarray(arr)
        key = (arr.dtype.str, arr.shape)
        head = self._headers.get(key)
        if head is None:
            head = self._headers[key] = _npy_header(arr.dtype, arr.shape)
        with open(os.path.join(self.data_dir, name), "wb") as fh:
            fh.write(head)
            fh.write(arr.tobytes())
        self.files += 1


_LABEL = {np.dtype(np.float32): "Float32", np.dtype(np.float16): "Float16", np.dtype(np.int64): "Int64"}


def _lab(a: np.ndarray) -> str:
    return _LABEL[a.dtype]


def _t(dt: str, shape: tuple[int, ...]) -> str:
    return f"<Tensor[{dt}], ({', '.join(str(s) for s in shape)})>"


def _d(dt: str, shape: tuple[int, ...]) -> str:
    return f"<{dt}xDefaultFormat[const vector]{{{', '.join(str(s) for s in shape)}}}>"


def write_demo(
    root: str,
    n_ops: int = 60,
    size: int = 4096,
    seed: int = 20261202,
    planted_at: float = 0.6,
    fp16_region: tuple[float, float] | None = (0.2, 0.35),
    progress: Callable[[int, int], None] | None = None,
) -> DemoInfo:
    """Write `root/ref` and `root/target`. `n_ops` kernels in the reference (the target adds Casts).
    `fp16_region=None`: no fp16 region, a clean pair but for the planted divergence. `progress(done, total)`
    is called after each block of ops."""
    n_blocks = max(2, (n_ops - 1) // BLOCK_OPS)
    shape = _act_shape(size)
    c = shape[1]
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(np.float32)
    weights = (rng.standard_normal((n_blocks, c, c)) / math.sqrt(c) * 0.9).astype(np.float32)
    biases = (rng.standard_normal((n_blocks, c)) * 0.1).astype(np.float32)
    if fp16_region is None:
        f0 = f1 = 0
    else:
        f0 = min(n_blocks - 2, int(n_blocks * fp16_region[0]))
        f1 = max(f0 + 1, min(n_blocks - 1, int(n_blocks * fp16_region[1])))
    planted = max(f1, min(n_blocks - 1, int(n_blocks * planted_at)))

    ref_dir, tgt_dir = os.path.join(root, "ref"), os.path.join(root, "target")
    sides = {"ref": _Writer(os.path.join(ref_dir, "rank_0")), "target": _Writer(os.path.join(tgt_dir, "rank_0"))}
    irs: dict[str, list[str]] = {k: [] for k in sides}
    orders: dict[str, list[str]] = {k: [] for k in sides}
    params: dict[str, list[str]] = {k: [] for k in sides}
    h = {"ref": x, "target": x}
    prev = {"ref": "%para1_x", "target": "%para1_x"}
    nid = {"ref": 0, "target": 0}
    data_format = np.array(0, dtype=np.int64)
    eps = np.float32(min(0.5, 2.0 / n_blocks))
    eps_arr = np.array(eps, dtype=np.float32)
    fp16_names = []

    def node(
        side: str,
        op: str,
        full: str,
        args: list[str],
        ins: list[tuple[str, tuple[int, ...]]],
        outs: list[tuple[str, tuple[int, ...]]],
        attrs: str = "",
        code: str = "",
    ) -> str:
        n = nid[side]
        nid[side] += 1
        dev_in = ", ".join(_d(dt, s) for dt, s in ins)
        dev_out = ", ".join(_d(dt, s) for dt, s in outs)
        irs[side].append(
            f"  %{n}(CNode_{n}) = {op}({', '.join(args)}){attrs}\n"
            f"      : ({', '.join(_t(dt, s) for dt, s in ins)}) -> ({', '.join(_t(dt, s) for dt, s in outs)})\n"
            f"      : ({dev_in}) -> ({dev_out})\n"
            f"      # Fullname with scope: ({full})\n" + (f"      # In file demo_net.py:{code}\n" if code else "")
        )
        if op not in ("Load",):
            orders[side].append(full)
        return f"%{n}"

    pnum = 1
    for side in sides:
        params[side].append(f"%para1_x: {_t('Float32', shape)} : [{', '.join(map(str, shape))}]  :  IsWeight: false")
    for i in range(n_blocks):
        if progress is not None:
            progress(i, n_blocks)
        s = i // BLOCKS_PER_STAGE
        scope = f"Default/stage{s}-Stage/block{i}-ResidualBlock"
        wname, bname = f"stage{s}.block{i}.conv.weight", f"stage{s}.block{i}.conv.bias"
        w4 = weights[i].reshape(c, c, 1, 1)
        for side, wr in sides.items():
            pnum_w, pnum_b = pnum + 1, pnum + 2
            params[side].append(
                f"%para{pnum_w}_{wname}: <Ref[Tensor[Float32]], ({c}, {c}, 1, 1), ref_key={wname}, "
                f"is_parameter>  :  has_default  :  IsWeight: true"
            )
            params[side].append(
                f"%para{pnum_b}_{bname}: <Ref[Tensor[Float32]], ({c}), ref_key={bname}, "
                f"is_parameter>  :  has_default  :  IsWeight: true"
            )
            hin = h[side]
            in_ref = prev[side]
            lw = node(
                side,
                "Load",
                f"{scope}/conv-Conv1x1/Load-op0",
                [f"%para{pnum_w}_{wname}", "UMonad[U]"],
                [("Float32", w4.shape)],
                [("Float32", w4.shape)],
            )
            fp16 = side == "target" and f0 <= i < f1
            conv_in = hin
            if fp16:
                # 310 style: Cast to fp16 before the conv, run it in fp16, Cast back after
                conv_in = hin.astype(np.float16)
                full = f"{scope}/conv-Conv1x1/Cast-op0"
                wr.tensor("Cast", full, "input", 0, hin, "Float32")
                wr.tensor("Cast", full, "output", 0, conv_in, "Float16")
                in_ref = node(
                    side,
                    "Cast",
                    full,
                    [in_ref],
                    [("Float32", shape)],
                    [("Float16", shape)],
                    " primitive_attrs: {dst_type: F16}",
                )
            if fp16:
                y = np.einsum(
                    "oc,bchw->bohw", weights[i].astype(np.float16).astype(np.float32), conv_in.astype(np.float32)
                ).astype(np.float16)
            else:
                y = np.einsum("oc,bchw->bohw", weights[i], conv_in).astype(np.float32)
            conv = f"{scope}/conv-Conv1x1/Conv2D-op0"
            wr.tensor("Conv2D", conv, "input", 0, conv_in, _lab(conv_in))
            wr.tensor("Conv2D", conv, "input", 1, w4, "Float32")
            wr.tensor("Conv2D", conv, "output", 0, y, _lab(y))
            dt = "Float16" if fp16 else "Float32"
            in_ref = node(
                side,
                "Conv2D",
                conv,
                [in_ref, lw],
                [(dt, shape), ("Float32", w4.shape)],
                [(dt, shape)],
                f" {{instance name: conv2d}} primitive_attrs: {{kernel_size: I64(1), pad_list: (0, 0, 0, 0), "
                f'format: "NCHW", out_channel: I64({c})}}',
                f"{20 + i % 7}~{21 + i % 7}, self.conv(x)",
            )
            if fp16:
                fp16_names.append(conv)
                back = y.astype(np.float32)
                full = f"{scope}/conv-Conv1x1/Cast-op1"
                wr.tensor("Cast", full, "input", 0, y, "Float16")
                wr.tensor("Cast", full, "output", 0, back, "Float32")
                in_ref = node(
                    side,
                    "Cast",
                    full,
                    [in_ref],
                    [("Float16", shape)],
                    [("Float32", shape)],
                    " primitive_attrs: {dst_type: F32}",
                )
                y = back
            lb = node(
                side,
                "Load",
                f"{scope}/conv-Conv1x1/Load-op1",
                [f"%para{pnum_b}_{bname}", "UMonad[U]"],
                [("Float32", (c,))],
                [("Float32", (c,))],
            )
            yb = (y + biases[i][None, :, None, None]).astype(np.float32)
            full = f"{scope}/conv-Conv1x1/BiasAdd-op0"
            wr.tensor("BiasAdd", full, "input", 0, y, "Float32")
            wr.tensor("BiasAdd", full, "input", 1, biases[i], "Float32")
            wr.tensor("BiasAdd", full, "input", 2, data_format, "Int64")
            wr.tensor("BiasAdd", full, "output", 0, yb, "Float32")
            in_ref = node(
                side,
                "BiasAdd",
                full,
                [in_ref, lb, "I64(0)"],
                [("Float32", shape), ("Float32", (c,)), ("Int64", ())],
                [("Float32", shape)],
            )
            r = np.maximum(yb, np.float32(0))
            full = f"{scope}/relu-ReLU/ReLU-op0"
            wr.tensor("ReLU", full, "input", 0, yb, "Float32")
            wr.tensor("ReLU", full, "output", 0, r, "Float32")
            relu = node(side, "ReLU", full, [in_ref], [("Float32", shape)], [("Float32", shape)])
            u = (r * eps).astype(np.float32)
            full = f"{scope}/Mul-op0"
            wr.tensor("Mul", full, "input", 0, r, "Float32")
            wr.tensor("Mul", full, "input", 1, eps_arr, "Float32")
            wr.tensor("Mul", full, "output", 0, u, "Float32")
            mul = node(
                side,
                "Mul",
                full,
                [relu, f"Tensor(shape=[], dtype=Float32, value={float(eps):.6g})"],
                [("Float32", shape), ("Float32", ())],
                [("Float32", shape)],
            )
            wrong_layout = side == "target" and i == planted
            # the planted bug: the residual read with its channels reversed (NHWC data taken as NCHW)
            m = ((hin[:, ::-1] if wrong_layout else hin) + u).astype(np.float32)
            full = f"{scope}/Add-op0"
            wr.tensor("Add", full, "input", 0, hin, "Float32")
            wr.tensor("Add", full, "input", 1, u, "Float32")
            wr.tensor("Add", full, "output", 0, m, "Float32")
            fmt_attr = '"NHWC"' if wrong_layout else '"NCHW"'
            prev[side] = node(
                side,
                "Add",
                full,
                [prev[side], mul],
                [("Float32", shape)] * 2,
                [("Float32", shape)],
                f" primitive_attrs: {{format: {fmt_attr}}}",
                f"{30 + i % 5}, x + self.scale * y",
            )
            h[side] = m
        pnum += 2
    for side, wr in sides.items():
        out = (1.0 / (1.0 + np.exp(-h[side].astype(np.float64)))).astype(np.float32)
        full = "Default/head-Sigmoid/Sigmoid-op0"
        wr.tensor("Sigmoid", full, "input", 0, h[side], "Float32")
        wr.tensor("Sigmoid", full, "output", 0, out, "Float32")
        node(side, "Sigmoid", full, [prev[side]], [("Float32", shape)], [("Float32", shape)])
        # parameters are dumped once each, after every kernel (as MindSpore does)
        wr.tensor("Parameter", "x", "output", 0, x, "Float32")
        for i in range(n_blocks):
            s = i // BLOCKS_PER_STAGE
            wr.tensor(
                "Parameter", f"stage{s}.block{i}.conv.weight", "output", 0, weights[i].reshape(c, c, 1, 1), "Float32"
            )
            wr.tensor("Parameter", f"stage{s}.block{i}.conv.bias", "output", 0, biases[i], "Float32")
        _write_side_files(wr.rank_dir, irs[side], orders[side], params[side])
    n_kernels = n_blocks * BLOCK_OPS + 1
    planted_name = f"Default/stage{planted // BLOCKS_PER_STAGE}-Stage/block{planted}-ResidualBlock/Add-op0"
    return DemoInfo(
        root=root,
        ref=ref_dir,
        target=tgt_dir,
        n_kernels=n_kernels,
        n_files=sides["ref"].files,
        planted=planted_name,
        planted_index=planted * BLOCK_OPS + BLOCK_OPS - 1,
        fp16_first=fp16_names[0] if fp16_names else "",
        fp16_last=fp16_names[-1] if fp16_names else "",
        shape=shape,
    )


def _write_side_files(rank_dir: str, ir_nodes: list[str], order: list[str], params: list[str]) -> None:
    os.makedirs(os.path.join(rank_dir, ".dump_metadata"), exist_ok=True)
    with open(os.path.join(rank_dir, ".dump_metadata", "config.json"), "w") as fh:
        fh.write('{"device_target":"CPU","ms_version":"2.10.0"}')
    os.makedirs(os.path.join(rank_dir, "execution_order"), exist_ok=True)
    with open(os.path.join(rank_dir, "execution_order", "ms_execution_order_graph_0.csv"), "w") as fh:
        fh.write("NodeExecutionOrder-FullNameWithScope\n")
        fh.write("\n".join(order) + "\n")
    with open(os.path.join(rank_dir, "execution_order", "ms_global_execution_order_graph_0.csv"), "w") as fh:
        fh.write("0\n")
    os.makedirs(os.path.join(rank_dir, "graphs"), exist_ok=True)
    with open(os.path.join(rank_dir, "graphs", "ms_output_trace_code_graph_0.ir"), "w") as fh:
        fh.write("# IR entry: @kernel_graph0\n# Total subgraphs: 1\n\n")
        fh.write(f"# Total params: {len(params)}\n# Params:\n")
        fh.write("\n".join(params) + "\n\n")
        fh.write("subgraph @kernel_graph0() {\n")
        fh.writelines(ir_nodes)
        fh.write("}\n")
