"""msprobe dumps (MindStudio probe, PyTorch or MindSpore API level), FORMATS.md §3.

    {dump_path}/step{N}/rank{R}/ (or proc{PID}/) dump.json, construct.json, stack.json, dump_tensor_data/*.pt|*.npy

Each `dump.json` entry is an API call (`Functional.linear.0.forward`) or a module call
(`Module.fc1.Linear.forward.0`), with records for its inputs, outputs and, for modules, parameters. API calls
become ops in the order of the file; module calls are containers: their parameters become parameter ops
(`fc1.weight`). Task `statistics` gives records without data: compared on their Max/Min/Mean/Norm.

There is no graph file. Dataflow is inferred from the records: an input whose dtype, shape and statistics
are those of an earlier output was produced by that op; an input matching a module parameter is that
parameter; anything else is an input no op produced (the network input, a weight, a constant).
"""
from __future__ import annotations

import json
import os
import re
from functools import partial

import networkx as nx

from .. import dtypes
from ..model import KERNEL, PARAMETER, Dump, DumpError, InputSource, Op, Problem, TensorRef
from ..npy import npy_layout
from .torchpt import pt_layout

STEP_DIR = re.compile(r"^step(\d+)$")
RANK_DIR = re.compile(r"^(rank\d*|proc\d+)$")


def looks_like(path: str) -> bool:
    return _find_dump_json(path, depth=3) is not None


def _find_dump_json(path: str, depth: int) -> str | None:
    if os.path.isfile(os.path.join(path, "dump.json")):
        return path
    if depth == 0:
        return None
    try:
        subs = sorted(os.listdir(path))
    except OSError:
        return None
    for s in subs[:16]:
        p = os.path.join(path, s)
        if os.path.isdir(p):
            found = _find_dump_json(p, depth - 1)
            if found:
                return found
    return None


def _choose_dir(path: str, rank: str | None, iteration: str | None) -> str:
    if os.path.isfile(os.path.join(path, "dump.json")):
        return path
    steps = sorted((s for s in _ls(path) if STEP_DIR.match(s)), key=lambda s: int(s[4:]))
    base = path
    if steps:
        if iteration is not None:
            want = f"step{iteration}"
            if want not in steps:
                raise DumpError(path, f"no step {iteration}; steps here: {', '.join(s[4:] for s in steps)}")
            steps = [want]
        elif len(steps) > 1:
            raise DumpError(path, f"several steps ({', '.join(s[4:] for s in steps)}): choose one with --iteration N")
        base = os.path.join(path, steps[0])
    ranks = sorted(s for s in _ls(base) if RANK_DIR.match(s) and os.path.isfile(os.path.join(base, s, "dump.json")))
    if not ranks:
        raise DumpError(path, "no msprobe dump.json found")
    if rank is not None:
        want = [r for r in ranks if r in (f"rank{rank}", f"proc{rank}")]
        if not want:
            raise DumpError(path, f"no rank {rank}; here: {', '.join(ranks)}")
        ranks = want
    elif len(ranks) > 1:
        raise DumpError(path, f"several ranks ({', '.join(ranks)}): choose one with --rank N")
    return os.path.join(base, ranks[0])


def _ls(path: str) -> list[str]:
    try:
        return sorted(os.listdir(path))
    except OSError:
        return []


def _tensor_records(value, prefix: str):
    """(label, record) for every tensor record in an args list/dict, nested lists flattened in order."""
    if isinstance(value, dict):
        if "type" in value and ("shape" in value or "dtype" in value):
            yield prefix, value
            return
        for k, v in value.items():
            yield from _tensor_records(v, f"{prefix}.{k}" if prefix else k)
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            yield from _tensor_records(v, f"{prefix}.{i}" if prefix else str(i))


def _is_tensor(rec: dict) -> bool:
    return "Tensor" in str(rec.get("type", "")) or "shape" in rec and rec.get("dtype") is not None


def _stats(rec: dict) -> dict:
    out = {"max": rec.get("Max"), "min": rec.get("Min"), "mean": rec.get("Mean"), "l2": rec.get("Norm")}
    return {k: (float(v) if isinstance(v, (int, float)) else None) for k, v in out.items()}


def _signature(rec: dict):
    s = _stats(rec)
    if any(v is None for v in s.values()):
        return None
    return (str(rec.get("dtype")), tuple(rec.get("shape") or ()), s["max"], s["min"], s["mean"], s["l2"])


def _tref(rec: dict, io: str, slot: int, data_dir: str, problems: list[Problem]) -> TensorRef:
    shape = tuple(int(x) for x in rec.get("shape") or ())
    dt = dtypes.canonical(rec.get("dtype"))
    name = rec.get("data_name")
    if not name:
        return TensorRef(os.path.join(data_dir, "dump.json"), io, slot, dtype=dt, shape=shape, stats=_stats(rec))
    path = os.path.join(data_dir, "dump_tensor_data", name)
    if name.endswith(".pt"):
        def layout(path=path):
            lay, _dt = pt_layout(path)
            return lay
        return TensorRef(path, io, slot, dtype=dt, shape=shape, layout_fn=layout)
    return TensorRef(path, io, slot, dtype=dt, shape=shape, layout_fn=partial(npy_layout, path))


def open_msprobe(path: str, rank: str | None = None, graph: str | None = None, iteration: str | None = None) -> Dump:
    d = _choose_dir(path, rank, iteration)
    dj = os.path.join(d, "dump.json")
    try:
        with open(dj, "r", encoding="utf-8") as fh:
            doc = json.load(fh)
    except (OSError, ValueError) as e:
        raise DumpError(dj, f"unreadable dump.json: {e}") from None
    data = doc.get("data") or {}
    problems: list[Problem] = []
    task = doc.get("task", "?")
    statistics = task == "statistics"
    dump = Dump(path=path, root=d, format="msprobe-statistics" if statistics else "msprobe",
                variant=f"msprobe task {task}, level {doc.get('level', '?')}, framework {doc.get('framework', '?')}",
                device=None, rank=os.path.basename(d))
    dump.statistics_only = statistics
    m = re.search(r"step(\d+)", d)
    dump.iterations = {"": m.group(1)} if m else {}

    ops: list[Op] = []
    record_of: dict[int, dict] = {}      # id(TensorRef) -> its dump.json record (for the dataflow inference)
    params: dict[str, Op] = {}
    param_sigs: dict[tuple, str] = {}
    for name, entry in data.items():
        if not isinstance(entry, dict):
            problems.append(Problem(dj, f"entry {name} is not an object (ignored)", "warning"))
            continue
        if name.startswith("Module.") or name.startswith("Cell."):
            # containers: their parameters are the graph's weights
            scope = name.split(".")[1]
            for pname, rec in (entry.get("parameters") or {}).items():
                full = f"{scope}.{pname}"
                if full in params or not isinstance(rec, dict):
                    continue
                op = Op(name=full, op_type="Parameter", kind=PARAMETER, file_name=full, name_source="module parameter")
                op.outputs[0] = _tref(rec, "output", 0, d, problems)
                op.attrs = {"is_weight": "true"}
                params[full] = op
                sig = _signature(rec)
                if sig:
                    param_sigs.setdefault(sig, full)
            continue
        parts = name.split(".")
        op = Op(name=name, op_type=parts[1] if len(parts) > 1 else name, kind=KERNEL, file_name=name,
                name_source="dump.json")
        ins = list(_tensor_records(entry.get("input_args") or [], "")) + \
            list(_tensor_records(entry.get("input_kwargs") or {}, ""))
        slot = 0
        for _label, rec in ins:
            if _is_tensor(rec):
                op.inputs[slot] = _tref(rec, "input", slot, d, problems)
                record_of[id(op.inputs[slot])] = rec
                slot += 1
        for i, (_label, rec) in enumerate(r for r in _tensor_records(entry.get("output") or [], "") if _is_tensor(r[1])):
            op.outputs[i] = _tref(rec, "output", i, d, problems)
            record_of[id(op.outputs[i])] = rec
        op.order = len(ops)
        ops.append(op)

    # dataflow inferred from matching records
    g = nx.DiGraph()
    produced: dict[tuple, tuple[str, int]] = {}
    for op in ops:
        g.add_node(op.key, dumped=True, op_type=op.op_type, kind=KERNEL)
    for p in params.values():
        g.add_node(p.key, dumped=True, op_type="Parameter", kind=PARAMETER)
    first = True
    for op in ops:
        for slot, t in op.inputs.items():
            sig = _signature(record_of[id(t)])
            if sig is not None and sig in produced:
                src_key, src_slot = produced[sig]
                op.sources[slot] = InputSource("op", src_key, src_slot)
                g.add_edge(src_key, op.key, slots=[(src_slot, slot)])
            elif sig is not None and sig in param_sigs:
                op.sources[slot] = InputSource("parameter", param_sigs[sig])
                g.add_edge(param_sigs[sig], op.key, slots=[(0, slot)])
            elif first and slot == 0:
                # nothing ran before the first call: its first input is the network input
                op.sources[slot] = InputSource("parameter", f"{op.name}.input.0")
                dump.parameters[f"{op.name}.input.0"] = False
            else:
                # produced by something not dumped (e.g. a call outside the dumped level)
                op.sources[slot] = InputSource("input", f"{op.name}.input.{slot}")
        for slot, t in op.outputs.items():
            out_sig = _signature(record_of[id(t)])
            if out_sig is not None:
                produced[out_sig] = (op.key, slot)
        first = False
    dump.ops = ops + list(params.values())
    dump.graph = g
    dump.graph_source = "inferred from matching statistics in dump.json"
    dump.order_source = "dump.json order"
    dump.parameters.update({p: True for p in params})
    dump.problems = problems
    return dump
