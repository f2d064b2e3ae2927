"""Small MindSpore dumps written file by file (npy and .bin layouts, statistic.csv), with their graph files."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from helpers.common import write_npy

CONV = "Default/conv1-Conv2d/Conv2D-op5"


CAST = "Default/Cast-op7"


MOD = "Default/decode-DetectionDecode/gather_topk-GatherTopK/Mod-op1608"


TRANS = "Default/TransData-op9"


RELU = "Default/ReLU-op11"


CSV_ORDER = [CONV, MOD, CAST, TRANS, RELU]


TINY_IR = """\
# IR entry: @kernel_graph0
# Params:
%para1_x: <Tensor[Float32], (1, 3, 4, 4)> : [1, 3, 4, 4]  :  IsWeight: false
%para2_conv1.weight: <Ref[Tensor[Float32]], (2, 3, 1, 1), ref_key=conv1.weight, is_parameter>  :  has_default  :  IsWeight: true

subgraph @kernel_graph0() {
  %0(y) = Conv2D(%para1_x, %para2_conv1.weight) {instance name: conv2d} primitive_attrs: {pad_mode: "valid"}
      : (<Tensor[Float32], (1, 3, 4, 4)>, <Tensor[Float32], (2, 3, 1, 1)>) -> (<Tensor[Float16], (1, 2, 4, 4)>)
      # Fullname with scope: (Default/conv1-Conv2d/Conv2D-op5)
  %1(c) = Cast(%0)
      : (<Tensor[Float16], (1, 2, 4, 4)>) -> (<Tensor[BFloat16], (1, 2, 4, 4)>)
      # Fullname with scope: (Default/Cast-op7)
  %2(m) = Mod(%para1_x, I32(3))
      : (<Tensor[Int32], (1, 8, 10)>, <Int32, NoShape>) -> (<Tensor[Int32], (1, 8, 10)>)
      # Fullname with scope: (Default/decode-DetectionDecode/gather_topk-GatherTopK/Mod-op1608)
  %3(d) = Depend(%1, %2)
      : (<Tensor[BFloat16], (1, 2, 4, 4)>, <Tensor[Int32], (1, 8, 10)>) -> (<Tensor[BFloat16], (1, 2, 4, 4)>)
      # Fullname with scope: (Default/Depend-op2)
  %4(t) = TransData(%3)
      : (<Tensor[BFloat16], (1, 2, 4, 4)>) -> (<Tensor[Float16], (1, 1, 16, 16)>)
      # Fullname with scope: (Default/TransData-op9)
  %5(r) = ReLU(%4)
      : (<Tensor[Float16], (1, 1, 16, 16)>) -> (<Tensor[Float32], (2, 8)>)
      # Fullname with scope: (Default/ReLU-op11)
  Return(%5)
      # Fullname with scope: (Default/Return-op12)
}
"""


def bf16_bits(values: np.ndarray) -> np.ndarray:
    """bfloat16 bit patterns of float32 values (truncated), as MindSpore writes them."""
    return (values.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)


def write_tensor(
    folder: Path,
    op: str,
    io: str,
    slot: int,
    arr: np.ndarray,
    label: str,
    fmt: str = "DefaultFormat",
    payload: bytes | None = None,
) -> Path:
    dims = "_".join(str(d) for d in arr.shape) or "0"
    path = folder / f"{op.replace('/', '--')}_{io}_{slot}_shape_{dims}_{label}_{fmt}.bin"
    path.write_bytes(arr.tobytes() if payload is None else payload)
    return path


def make_dump(device_dir: Path, with_csv: bool = True, with_ir: bool = True, iterations=("0",)) -> dict:
    """A 1.x dump below `device_dir`; returns what was written, by (op, io, slot)."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((1, 3, 4, 4)).astype(np.float32)
    w = rng.standard_normal((2, 3, 1, 1)).astype(np.float32)
    conv_out = rng.standard_normal((1, 2, 4, 4)).astype(np.float16)
    bf16 = bf16_bits(np.array([0.1, -2.5, 3.3, 1e-3, 65504.0, -0.0, 7.0, 1e30] * 4, np.float32).reshape(1, 2, 4, 4))
    mod_in = rng.integers(-50, 50, (1, 8, 10), dtype=np.int32)
    mod_div = np.array(3, dtype=np.int32)
    fractal = rng.standard_normal((1, 1, 16, 16)).astype(np.float16)
    written = {
        (CONV, "input", 0): (x, "Float32"),
        (CONV, "input", 1): (w, "Float32"),
        (CONV, "output", 0): (conv_out, "Float16"),
        (CAST, "input", 0): (conv_out, "Float16"),
        (CAST, "output", 0): (bf16, "BFloat16"),
        (MOD, "input", 0): (mod_in, "Int32"),
        (MOD, "input", 1): (mod_div, "Int32"),
        (MOD, "output", 0): (np.mod(mod_in, 3).astype(np.int32), "Int32"),
        (TRANS, "input", 0): (bf16, "BFloat16"),
        ("x", "output", 0): (x, "Float32"),
        ("conv1.weight", "output", 0): (w, "Float32"),
        ("cst3", "output", 0): (np.array(0.75, np.float32), "Float32"),
    }
    for it in iterations:
        data = device_dir / f"iteration_{it}"
        data.mkdir(parents=True)
        for (op, io, slot), (arr, label) in written.items():
            write_tensor(data, op, io, slot, arr, label)
        write_tensor(data, TRANS, "output", 0, fractal, "Float16", fmt="FRACTAL_Z")
        # 10 bytes of the 64 a float32[2, 8] needs
        write_tensor(data, RELU, "output", 0, np.zeros((2, 8), np.float32), "Float32", payload=b"\0" * 10)
    written[(TRANS, "output", 0)] = (fractal, "Float16")
    if with_csv:
        (device_dir / "execution_order").mkdir()
        (device_dir / "execution_order" / "ms_execution_order_graph_0.csv").write_text("\n".join(CSV_ORDER) + "\n")
    if with_ir:
        (device_dir / "graphs").mkdir()
        (device_dir / "graphs" / "ms_output_trace_code_graph_0.ir").write_text(TINY_IR)
    return written


RNG = np.random.default_rng(7)


def ms_file(d, op_type, op_name, ts, io, slot, arr, dtype_label="Float32", fmt="DefaultFormat"):
    suffix = f".{dtype_label}" if dtype_label else ""
    return write_npy(os.path.join(d, f"{op_type}.{op_name}.0.0.{ts}.{io}.{slot}.{fmt}{suffix}.npy"), arr)


def small_dump(root, dtype_label="Float32", short=False, iteration="0", rank="0", graph="0", extra=None):
    """conv -> relu, with a weight parameter, in the 2.x layout (or 1.3-2.3 short names)."""
    rank_dir = os.path.join(root, f"rank_{rank}")
    d = os.path.join(rank_dir, "Net", graph, iteration)
    os.makedirs(d, exist_ok=True)
    x = RNG.standard_normal((1, 2, 4, 4)).astype(np.float32)
    w = RNG.standard_normal((3, 2, 1, 1)).astype(np.float32)
    y = np.einsum("oc,bchw->bohw", w[:, :, 0, 0], x).astype(np.float32)
    conv = "Conv2D-op12" if short else "Default_conv1-Conv_Conv2D-op0"
    relu = "ReLU-op13" if short else "Default_relu-ReLU_ReLU-op0"
    ms_file(d, "Conv2D", conv, 100, "input", 0, x, dtype_label)
    ms_file(d, "Conv2D", conv, 101, "input", 1, w, dtype_label)
    ms_file(d, "Conv2D", conv, 102, "output", 0, y, dtype_label)
    ms_file(d, "ReLU", relu, 103, "input", 0, y, dtype_label)
    ms_file(d, "ReLU", relu, 104, "output", 0, np.maximum(y, 0), dtype_label)
    ms_file(d, "Parameter", "conv1_weight", 200, "output", 0, w, dtype_label)
    eo = os.path.join(rank_dir, "execution_order")
    os.makedirs(eo, exist_ok=True)
    with open(os.path.join(eo, f"ms_execution_order_graph_{graph}.csv"), "w") as fh:
        names = (
            ["Default/net/Conv2D-op12", "Default/net/ReLU-op13"]
            if short
            else ["Default/conv1-Conv/Conv2D-op0", "Default/relu-ReLU/ReLU-op0"]
        )
        fh.write("NodeExecutionOrder-FullNameWithScope\n" + "\n".join(names) + "\n")
    if extra:
        extra(d)
    return root


STAT_HEADERS = {
    "1.6-2.2": "Op Type,Op Name,Task ID,Stream ID,Timestamp,IO,Slot,Data Size,Data Type,Shape,Max Value,Min Value,"
    "Avg Value,Count,Negative Zero Count,Positive Zero Count,NaN Count,Negative Inf Count,"
    "Positive Inf Count,Zero Count",
    "1.6+ with L2 Value/MD5": "Op Type,Op Name,Task ID,Stream ID,Timestamp,IO,Slot,Data Size,Data Type,Shape,Max Value,"
    "Min Value,Avg Value,Count,Negative Zero Count,Positive Zero Count,NaN Count,"
    "Negative Inf Count,Positive Inf Count,Zero Count,L2 Value,MD5",
    "2.4+ configurable statistic_category": "Op Type,Op Name,Task ID,Stream ID,Timestamp,IO,Slot,Data Size,Data Type,"
    "Shape,Max Value,Min Value,L2Norm Value",
}


def stat_dump(root, header_key, scale=1.0, nan_row=False):
    d = os.path.join(root, "rank_0", "Net", "0", "0")
    os.makedirs(d, exist_ok=True)
    header = STAT_HEADERS[header_key]
    cols = header.split(",")[10:]
    rows = []
    for i, (op, io, slot, mx, mn, mean, l2) in enumerate(
        [
            ("Conv2D", "input", 0, 2.0, -1.0, 0.5, 10.0),
            ("Conv2D", "output", 0, 4.0 * scale, -2.0, 1.0, 20.0),
            ("ReLU", "input", 0, 4.0 * scale, -2.0, 1.0, 20.0),
            ("ReLU", "output", 0, 4.0 * scale, 0.0, 1.5, 18.0),
        ]
    ):
        name = f"Default_{op.lower()}-X_{op}-op0"
        vals = {
            "Max Value": mx,
            "Min Value": mn,
            "Avg Value": mean,
            "Count": 32,
            "Negative Zero Count": 0,
            "Positive Zero Count": 0,
            "NaN Count": 0,
            "Negative Inf Count": 0,
            "Positive Inf Count": 0,
            "Zero Count": 0,
            "L2 Value": l2,
            "L2Norm Value": l2,
            "MD5": "abc",
        }
        if nan_row and i == 3:
            vals.update({"Max Value": "null", "Min Value": "null", "Avg Value": "null", "NaN Count": 32})
        rows.append(
            ",".join(
                [op, name, "0", "0", str(100 + i), io, str(slot), "128", "float32", '"(1,2,4,4)"']
                + [str(vals[c]) for c in cols]
            )
        )
    with open(os.path.join(d, "statistic.csv"), "w") as fh:
        fh.write(header + "\n" + "\n".join(rows) + "\n")
    return root


def _stat(v: float, md5: str | None) -> dict:
    rec = {
        "type": "torch.Tensor",
        "dtype": "torch.float32",
        "shape": [4],
        "Max": v,
        "Min": -v,
        "Mean": v / 10,
        "Norm": 2 * v,
        "requires_grad": False,
    }
    if md5 is not None:
        rec["md5"] = md5
    return rec


def write_statistics_dump(root, scale: float, md5: bool) -> str:
    """An msprobe statistics dump (task `statistics`, optionally with md5 as `summary_mode: md5` writes):
    x -> linear.0 -> relu.0 -> linear.1, dataflow matching by statistics."""
    d = root / "step0" / "rank0"
    d.mkdir(parents=True)
    h = "0123abcd" if md5 else None
    data = {
        "Functional.linear.0.forward": {
            "input_args": [_stat(1.0, h), _stat(0.5, h)],
            "input_kwargs": {},
            "output": [_stat(3.0, h)],
        },
        "Functional.relu.0.forward": {"input_args": [_stat(3.0, h)], "input_kwargs": {}, "output": [_stat(3.0, h)]},
        "Functional.linear.1.forward": {
            "input_args": [_stat(3.0, h), _stat(0.25, h)],
            "input_kwargs": {},
            "output": [_stat(7.0 * scale, h)],
        },
    }
    (d / "dump.json").write_text(
        json.dumps({"task": "statistics", "level": "L1", "framework": "pytorch", "dump_data_dir": None, "data": data})
    )
    return str(root)


def statistic_copy(src: str, dst: str) -> str:
    """The MindSpore npy dump `src` as the same run dumped with `saved_data: statistic`: every folder and side
    file copied, each iteration folder's npy files (parameters aside) replaced by one statistic.csv (1.6+
    header with L2 Value and MD5), rows in timestamp order, the statistics computed with numpy."""
    import shutil

    import numpy as np

    header = STAT_HEADERS["1.6+ with L2 Value/MD5"]
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("*.npy"))
    for folder, _dirs, files in os.walk(src):
        rows = []
        for f in sorted(f for f in files if f.endswith(".npy") and not f.startswith("Parameter.")):
            op_type, name, task, stream, ts, io, slot = f[: -len(".npy")].split(".")[:7]
            a = np.load(os.path.join(folder, f)).astype(np.float64)
            shape = '"(' + ",".join(str(d) for d in a.shape) + ')"'
            stats = [a.max(), a.min(), a.mean(), a.size, 0, 0, 0, 0, 0, int((a == 0).sum()), np.sqrt((a * a).sum())]
            cells = [op_type, name, task, stream, ts, io, slot, str(a.size * 4), "float32", shape]
            rows.append(
                (int(ts), ",".join(cells + [repr(float(v)) if isinstance(v, float) else str(v) for v in stats] + ["0"]))
            )
        if rows:
            with open(os.path.join(dst, os.path.relpath(folder, src), "statistic.csv"), "w") as fh:
                fh.write(header + "\n" + "\n".join(r for _ts, r in sorted(rows)) + "\n")
    return dst
