"""Writes one side of a dump in the MindSpore 2.x layout: npy files named as MindSpore names them, the
execution-order csv, `.dump_metadata/config.json` and a text IR with dataflow, attributes and shapes.

Used by the generated demo networks (`residual.py`, `noisy.py`): the readers then see exactly what a real
MindSpore dump gives them. Timestamps increase per file, as MindSpore's do.
"""

from __future__ import annotations

import os

import numpy as np

TS0 = 1796214300000000
LABEL = {
    "float32": "Float32",
    "float16": "Float16",
    "bfloat16": "BFloat16",
    "int64": "Int64",
    "int32": "Int32",
    "int8": "Int8",
    "bool": "Bool",
    "float64": "Float64",
}


def npy_header(dtype: np.dtype, shape: tuple[int, ...]) -> bytes:
    d = f"{{'descr': '{dtype.str}', 'fortran_order': False, 'shape': {tuple(shape)!r}, }}"
    pad = 64 - (10 + len(d) + 1) % 64
    h = d + " " * pad + "\n"
    return b"\x93NUMPY\x01\x00" + len(h).to_bytes(2, "little") + h.encode("latin1")


def ir_type(label: str, shape: tuple[int, ...]) -> str:
    return f"<Tensor[{label}], ({', '.join(str(s) for s in shape)})>"


def _device_type(label: str, shape: tuple[int, ...]) -> str:
    return f"<{label}xDefaultFormat[const vector]{{{', '.join(str(s) for s in shape)}}}>"


class DumpWriter:
    """One side (`rank_dir` = .../rank_0) of a dump, graph 0, one iteration (0 unless given). Several writers
    of one rank folder, one per iteration, write the same graph file and execution order."""

    def __init__(self, rank_dir: str, device: str = "CPU", iteration: str = "0", ts0: int = TS0):
        self.rank_dir = rank_dir
        self.data_dir = os.path.join(rank_dir, "Net", "0", iteration)
        os.makedirs(self.data_dir, exist_ok=True)
        self.device = device
        self.ts = ts0
        self.files = 0
        self.ir_nodes: list[str] = []
        self.order: list[str] = []
        self.params: list[str] = []
        self.param_values: list[tuple[str, np.ndarray, str]] = []
        self._next_node = 0
        self._headers: dict[tuple[str, tuple[int, ...]], bytes] = {}

    # -------------------------------------------------------------------------------------- files
    def tensor(self, op_type: str, full_name: str, io: str, slot: int, arr: np.ndarray, label: str) -> None:
        """One tensor file. `label` is the dtype written in the name; bfloat16 values are stored widened to
        float32 (as MindSpore stores them)."""
        self.ts += 7
        file_op = full_name.replace("/", "_").replace(".", "_")
        name = f"{op_type}.{file_op}.0.0.{self.ts}.{io}.{slot}.DefaultFormat.{label}.npy"
        arr = np.ascontiguousarray(arr)
        key = (arr.dtype.str, arr.shape)
        head = self._headers.get(key)
        if head is None:
            head = self._headers[key] = npy_header(arr.dtype, arr.shape)
        with open(os.path.join(self.data_dir, name), "wb") as fh:
            fh.write(head)
            fh.write(arr.tobytes())
        self.files += 1

    # -------------------------------------------------------------------------------------- graph
    def parameter(self, name: str, arr: np.ndarray, label: str, is_weight: bool = True) -> str:
        """A graph parameter (weight or network input), dumped after every kernel; returns its IR name."""
        ref = f"%para{len(self.params) + 1}_{name}"
        shape = tuple(arr.shape)
        if is_weight:
            self.params.append(
                f"{ref}: <Ref[Tensor[{label}]], ({', '.join(map(str, shape))}), ref_key={name}, "
                f"is_parameter>  :  has_default  :  IsWeight: true"
            )
        else:
            self.params.append(f"{ref}: {ir_type(label, shape)} : [{', '.join(map(str, shape))}]  :  IsWeight: false")
        self.param_values.append((name, arr, label))
        return ref

    def node(
        self,
        op_type: str,
        full_name: str,
        args: list[str],
        ins: list[tuple[str, tuple[int, ...]]],
        outs: list[tuple[str, tuple[int, ...]]],
        attrs: dict[str, str] | None = None,
        code: str = "",
        kernel: bool = True,
    ) -> str:
        """One IR node (a kernel in the execution order unless `kernel` is false); returns `%N`."""
        n = self._next_node
        self._next_node += 1
        attr_text = ""
        if attrs:
            attr_text = " primitive_attrs: {" + ", ".join(f"{k}: {v}" for k, v in attrs.items()) + "}"
        self.ir_nodes.append(
            f"  %{n}(CNode_{n}) = {op_type}({', '.join(args)}){attr_text}\n"
            f"      : ({', '.join(ir_type(dt, s) for dt, s in ins)}) -> ({', '.join(ir_type(dt, s) for dt, s in outs)})\n"
            f"      : ({', '.join(_device_type(dt, s) for dt, s in ins)}) -> "
            f"({', '.join(_device_type(dt, s) for dt, s in outs)})\n"
            f"      # Fullname with scope: ({full_name})\n" + (f"      # In file demo_net.py:{code}\n" if code else "")
        )
        if kernel:
            self.order.append(full_name)
        return f"%{n}"

    def finish(self) -> None:
        """Parameters (after every kernel, as MindSpore dumps them), the csv, the IR, the metadata."""
        for name, arr, label in self.param_values:
            self.tensor("Parameter", name, "output", 0, arr, label)
        meta = os.path.join(self.rank_dir, ".dump_metadata")
        os.makedirs(meta, exist_ok=True)
        with open(os.path.join(meta, "config.json"), "w") as fh:
            fh.write(f'{{"device_target":"{self.device}","ms_version":"2.10.0"}}')
        order_dir = os.path.join(self.rank_dir, "execution_order")
        os.makedirs(order_dir, exist_ok=True)
        with open(os.path.join(order_dir, "ms_execution_order_graph_0.csv"), "w") as fh:
            fh.write("NodeExecutionOrder-FullNameWithScope\n")
            fh.write("\n".join(self.order) + "\n")
        with open(os.path.join(order_dir, "ms_global_execution_order_graph_0.csv"), "w") as fh:
            fh.write("0\n")
        graphs = os.path.join(self.rank_dir, "graphs")
        os.makedirs(graphs, exist_ok=True)
        with open(os.path.join(graphs, "ms_output_trace_code_graph_0.ir"), "w") as fh:
            fh.write("# IR entry: @kernel_graph0\n# Total subgraphs: 1\n\n")
            fh.write(f"# Total params: {len(self.params)}\n# Params:\n")
            fh.write("\n".join(self.params) + "\n\n")
            fh.write("subgraph @kernel_graph0() {\n")
            fh.writelines(self.ir_nodes)
            fh.write("}\n")


SIDES = ("ref", "target")
F16_MAX = 65504.0


def f16(a: np.ndarray) -> np.ndarray:
    """float values stored in float16, saturating at 65504 (Ascend's default overflow mode)."""
    return np.clip(np.asarray(a, dtype=np.float64), -F16_MAX, F16_MAX).astype(np.float16)


class PairWriter:
    """Both sides' dump writers of a generated pair (`root/ref`, `root/target`); one call writes an op on one side."""

    def __init__(self, root: str):
        self.w = {s: DumpWriter(os.path.join(root, s, "rank_0")) for s in SIDES}
        self.params: dict[str, dict[str, str]] = {s: {} for s in SIDES}

    def param(self, side: str, name: str, value: np.ndarray, is_weight: bool = True) -> str:
        if name not in self.params[side]:
            label = LABEL[str(value.dtype)]
            self.params[side][name] = self.w[side].parameter(name, value, label, is_weight)
        return self.params[side][name]

    def op(
        self,
        side: str,
        op_type: str,
        full: str,
        ins: list[tuple[np.ndarray, str]],
        out: np.ndarray,
        attrs: dict[str, str] | None = None,
    ) -> tuple[np.ndarray, str]:
        """One kernel: its inputs (value, IR argument) dumped, its output dumped; returns (output, %N)."""
        w = self.w[side]
        for slot, (v, _a) in enumerate(ins):
            w.tensor(op_type, full, "input", slot, np.asarray(v), LABEL[str(np.asarray(v).dtype)])
        out = np.asarray(out)
        w.tensor(op_type, full, "output", 0, out, LABEL[str(out.dtype)])
        ir_ins = [(LABEL[str(np.asarray(v).dtype)], tuple(np.shape(v))) for v, _a in ins]
        ref = w.node(op_type, full, [a for _v, a in ins], ir_ins, [(LABEL[str(out.dtype)], tuple(out.shape))], attrs)
        return out, ref

    def finish(self) -> None:
        for w in self.w.values():
            w.finish()


def scalar(v: float, dtype: type = np.float32) -> tuple[np.ndarray, str]:
    """A 0-d constant input and its IR argument text."""
    label = "F32" if dtype is np.float32 else "F16"
    return np.array(v, dtype=dtype), f"{label}({v:g})"
