"""MindSpore native dumps, r1.3 and later (`.npy` per tensor, or `statistic.csv` only).

    {path}/rank_{R}/.dump_metadata/config.json          {"device_target": ..., "ms_version": ...}
    {path}/rank_{R}/{net}/{graph_id}/{iteration}/{op_type}.{op_name}.{task}.{stream}.{ts}.{io}.{slot}.{fmt}[.{dtype}].npy
    {path}/rank_{R}/{net}/{graph_id}/constants/Parameter.data-{N}...npy
    {path}/rank_{R}/graphs/ms_output_trace_code_graph_{g}.ir|.pb
    {path}/rank_{R}/execution_order/ms_execution_order_graph_{g}.csv

The path given may be the dump root, a rank folder, a net/graph folder or an iteration folder. Only file names,
small csv/json files and the graph files are read here; tensor headers are read on demand.
"""
from __future__ import annotations

import csv
import json
import os
import re
from collections import defaultdict
from dataclasses import dataclass, field

import networkx as nx

from .. import dtypes
from ..graph import attach_ir
from ..model import CONSTANT, KERNEL, PARAMETER, Dump, DumpError, Op, Problem, TensorRef
from ..ir import IRGraph
from .names import file_form, resolve_names

NPY_NAME = re.compile(
    r"^(?P<type>[^.]+)\.(?P<name>.+)\.(?P<task>\d+)\.(?P<stream>\d+)\.(?P<ts>\d+)\."
    r"(?P<io>input|output)\.(?P<slot>\d+)(?:\.(?P<fmt>[A-Za-z][A-Za-z0-9_]*))?(?:\.(?P<dtype>[A-Za-z][A-Za-z0-9]*))?\.npy$")
RANK_DIR = re.compile(r"^rank_(\d+)$")
SPECIAL_DIRS = {"graphs", "execution_order", ".dump_metadata"}
STAT_FILE = "statistic.csv"
SHORT_NAME = re.compile(r"^[A-Za-z0-9]+-op\d+$")


@dataclass
class Selection:
    rank: str | None = None
    graph: str | None = None
    iteration: str | None = None


@dataclass
class _Layout:
    """Where things are for one rank."""

    rank_dir: str | None
    rank: str | None
    data_dirs: dict[str, dict[str, str]] = field(default_factory=dict)  # graph -> iteration -> dir
    constants: dict[str, str] = field(default_factory=dict)              # graph -> constants dir
    fixed_graph: str | None = None
    fixed_iteration: str | None = None


def looks_like(path: str) -> bool:
    """Cheap test used by format detection."""
    try:
        names = os.listdir(path)
    except OSError:
        return False
    if any(RANK_DIR.match(n) for n in names) or any(n in SPECIAL_DIRS for n in names):
        return True
    if STAT_FILE in names or any(NPY_NAME.match(n) for n in names[:200]):
        return True
    # net or graph level: look one or two levels down
    for n in names[:8]:
        sub = os.path.join(path, n)
        if os.path.isdir(sub):
            try:
                sn = os.listdir(sub)
            except OSError:
                continue
            if STAT_FILE in sn or any(NPY_NAME.match(x) for x in sn[:50]):
                return True
            for m in sn[:4]:
                ss = os.path.join(sub, m)
                if os.path.isdir(ss):
                    try:
                        if any(NPY_NAME.match(x) for x in os.listdir(ss)[:50]):
                            return True
                    except OSError:
                        pass
    return False


def _ls(path: str) -> list[str]:
    try:
        return sorted(os.listdir(path))
    except OSError:
        return []


def _is_data_dir(path: str) -> bool:
    names = _ls(path)
    return STAT_FILE in names or any(n.endswith(".npy") for n in names)


def _scan_rank(rank_dir: str) -> _Layout:
    lay = _Layout(rank_dir=rank_dir, rank=None)
    m = RANK_DIR.match(os.path.basename(os.path.normpath(rank_dir)))
    lay.rank = m.group(1) if m else None
    nets = [n for n in _ls(rank_dir) if n not in SPECIAL_DIRS and os.path.isdir(os.path.join(rank_dir, n))]
    for net in nets:
        net_dir = os.path.join(rank_dir, net)
        for gid in _ls(net_dir):
            gdir = os.path.join(net_dir, gid)
            if not os.path.isdir(gdir):
                continue
            for it in _ls(gdir):
                idir = os.path.join(gdir, it)
                if not os.path.isdir(idir):
                    continue
                if it == "constants":
                    lay.constants[gid] = idir
                elif _is_data_dir(idir):
                    lay.data_dirs.setdefault(gid, {})[it] = idir
    return lay


def _find_rank_dir(path: str) -> tuple[str | None, str | None, str | None]:
    """For a path below a rank folder: (rank_dir, graph, iteration) fixed by the path."""
    p = os.path.normpath(os.path.abspath(path))
    parts = []
    cur = p
    for _ in range(4):
        names = set(_ls(cur))
        if RANK_DIR.match(os.path.basename(cur)) or names & SPECIAL_DIRS:
            graph = iteration = None
            if len(parts) >= 3:
                # parts: [iteration, graph, net] (innermost first)
                iteration, graph = parts[0], parts[1]
            elif len(parts) == 2:
                graph = parts[0]
            return cur, graph, iteration
        parts.append(os.path.basename(cur))
        parent = os.path.dirname(cur)
        if parent == cur:
            break
        cur = parent
    return None, None, None


def _resolve(path: str, sel: Selection) -> _Layout:
    if not os.path.isdir(path):
        raise DumpError(path, "not a folder" if os.path.exists(path) else "no such folder")
    names = _ls(path)
    ranks = sorted((n for n in names if RANK_DIR.match(n) and os.path.isdir(os.path.join(path, n))),
                   key=lambda n: int(n[5:]))
    if ranks:
        if sel.rank is not None:
            want = f"rank_{sel.rank}"
            if want not in ranks:
                raise DumpError(path, f"no rank {sel.rank}; ranks here: {', '.join(r[5:] for r in ranks)}")
            ranks = [want]
        elif len(ranks) > 1:
            raise DumpError(path, f"{len(ranks)} ranks ({', '.join(r[5:] for r in ranks)}): choose one with --rank N")
        return _scan_rank(os.path.join(path, ranks[0]))
    rank_dir, graph, iteration = _find_rank_dir(path)
    if rank_dir is not None:
        lay = _scan_rank(rank_dir)
        if os.path.normpath(os.path.abspath(path)) != os.path.normpath(rank_dir):
            if graph is None and iteration is None:
                # a net folder: keep every graph in it
                pass
            lay.fixed_graph, lay.fixed_iteration = graph, iteration
        if _is_data_dir(path) and graph is None:
            lay.data_dirs = {"0": {"0": path}}
        return lay
    if _is_data_dir(path):
        return _Layout(rank_dir=None, rank=None, data_dirs={"": {"": path}})
    # a net or graph folder without a recognisable rank folder above it
    lay = _Layout(rank_dir=None, rank=None)
    for gid in names:
        gdir = os.path.join(path, gid)
        if not os.path.isdir(gdir):
            continue
        if _is_data_dir(gdir):
            lay.data_dirs.setdefault("", {})[gid] = gdir
            continue
        for it in _ls(gdir):
            idir = os.path.join(gdir, it)
            if os.path.isdir(idir) and it != "constants" and _is_data_dir(idir):
                lay.data_dirs.setdefault(gid, {})[it] = idir
    if not lay.data_dirs:
        raise DumpError(path, "no MindSpore dump files (.npy or statistic.csv) found here")
    return lay


def _choose(lay: _Layout, sel: Selection, path: str) -> dict[str, tuple[str, str]]:
    """graph -> (iteration, dir) to read, or DumpError listing the choices."""
    data = lay.data_dirs
    if lay.fixed_graph is not None:
        data = {g: its for g, its in data.items() if g == lay.fixed_graph}
        if lay.fixed_iteration is not None:
            data = {g: {i: d for i, d in its.items() if i == lay.fixed_iteration} for g, its in data.items()}
    if sel.graph is not None:
        if sel.graph not in data:
            raise DumpError(path, f"no data for graph {sel.graph}; graphs with data: {', '.join(sorted(data, key=_num)) or 'none'}")
        data = {sel.graph: data[sel.graph]}
    if not data or not any(data.values()):
        raise DumpError(path, "no tensor files found (dump folders are empty)")
    chosen: dict[str, tuple[str, str]] = {}
    if sel.iteration is not None:
        for g, its in data.items():
            if sel.iteration in its:
                chosen[g] = (sel.iteration, its[sel.iteration])
        if not chosen:
            listing = "; ".join(f"graph {g}: {', '.join(sorted(its, key=_num))}" for g, its in sorted(data.items()))
            raise DumpError(path, f"no iteration {sel.iteration}; iterations here: {listing}")
        return chosen
    multi = {g: its for g, its in data.items() if len(its) > 1}
    if multi:
        listing = "; ".join(f"graph {g}: {', '.join(sorted(its, key=_num))}" for g, its in sorted(multi.items()))
        raise DumpError(path, f"several iterations ({listing}): choose one with --iteration N"
                        + (" (and --graph G)" if len(data) > 1 else ""))
    for g, its in data.items():
        (it, d), = its.items()
        chosen[g] = (it, d)
    return chosen


def _num(s: str):
    return (0, int(s)) if s.isdigit() else (1, s)


def read_json_object(path: str) -> dict:
    """A JSON object from a small file, or {} when it is missing or not an object."""
    try:
        with open(path, "r", encoding="utf-8") as fh:
            d = json.load(fh)
        return d if isinstance(d, dict) else {}
    except (OSError, ValueError):
        return {}


def read_execution_order(path: str) -> list[str]:
    out = []
    try:
        with open(path, "r", encoding="utf-8", errors="replace") as fh:
            for i, line in enumerate(fh):
                s = line.strip().strip(",")
                if not s or (i == 0 and ("FullName" in s or "NodeExecutionOrder" in s)):
                    continue
                out.append(s.split(",")[-1].strip() if "," in s and "/" in s.split(",")[-1] else s)
    except OSError:
        pass
    return out


def read_mapping_csv(path: str) -> dict[str, str]:
    out = {}
    try:
        with open(path, "r", encoding="utf-8", errors="replace", newline="") as fh:
            for row in csv.reader(fh):
                if len(row) >= 2 and row[0].strip().isdigit():
                    out[row[0].strip()] = row[1].strip()
    except OSError:
        pass
    return out


def load_graph_file(rank_dir: str, gid: str, problems: list[Problem]) -> tuple[IRGraph | None, str | None]:
    gdir = os.path.join(rank_dir, "graphs")
    names = _ls(gdir)
    cands = [f"ms_output_trace_code_graph_{gid}.ir", f"ms_output_trace_code_graph_{gid}_0.ir",
             f"ms_output_trace_code_graph_{gid}.dat"]
    for c in cands:
        if c in names:
            p = os.path.join(gdir, c)
            try:
                from .irtext import parse_ir_text
                return parse_ir_text(p), p
            except (OSError, ValueError) as e:
                problems.append(Problem(p, f"unreadable graph file: {e}", "warning"))
    pb = f"ms_output_trace_code_graph_{gid}.pb"
    if pb in names:
        p = os.path.join(gdir, pb)
        try:
            from .anf_pb import parse_anf_pb
            return parse_anf_pb(p), p
        except ImportError:
            problems.append(Problem(p, "graph protobuf not readable (protobuf not installed)", "warning"))
        except Exception as e:  # a damaged protobuf must not stop the dump from loading
            problems.append(Problem(p, f"unreadable graph protobuf: {e}", "warning"))
    return None, None


def _parse_name(fname: str, mapping: dict[str, str]):
    stem = fname[:-4] if fname.endswith(".npy") else fname
    if stem.isdigit() and stem in mapping:
        orig = mapping[stem]
        fname = orig if orig.endswith(".npy") else orig + ".npy"
    m = NPY_NAME.match(fname)
    if not m:
        return None
    d = m.groupdict()
    if d["name"].isdigit() and d["name"] in mapping:
        d["name"] = mapping[d["name"]]
    return d


def _stat_float(v: str | None):
    if v is None:
        return None
    v = v.strip()
    if v == "" or v.lower() in ("null", "none", "nan"):
        return None if v.lower() != "nan" else float("nan")
    try:
        return float(v)
    except ValueError:
        return v


_STAT_KEYS = {
    "max value": "max", "min value": "min", "avg value": "mean", "count": "count", "negative zero count": "neg_zero",
    "positive zero count": "pos_zero", "nan count": "nan", "negative inf count": "neg_inf",
    "positive inf count": "pos_inf", "zero count": "zero", "l2 value": "l2", "l2norm value": "l2", "md5": "md5",
}


def read_statistic_csv(path: str) -> tuple[list[dict], str]:
    """Rows of a statistic.csv as dicts, and the header variant it uses."""
    rows = []
    with open(path, "r", encoding="utf-8", errors="replace", newline="") as fh:
        reader = csv.reader(fh)
        header = next(reader, None)
        if not header:
            return [], "empty"
        header = [h.strip() for h in header]
        if header[:10] != ["Op Type", "Op Name", "Task ID", "Stream ID", "Timestamp", "IO", "Slot", "Data Size",
                           "Data Type", "Shape"]:
            raise ValueError(f"unknown statistic.csv header: {','.join(header[:10])}")
        rest = [h.lower() for h in header[10:]]
        if "l2 value" in rest:
            variant = "1.6+ with L2 Value/MD5"
        elif "negative zero count" in rest and "l2norm value" not in rest:
            variant = "1.6-2.2"
        else:
            variant = "2.4+ configurable statistic_category"
        for row in reader:
            if len(row) < 10:
                continue
            rec = dict(zip(header, row))
            stats = {}
            for h, v in zip(header[10:], row[10:]):
                k = _STAT_KEYS.get(h.lower())
                if k:
                    stats[k] = v.strip() if k == "md5" else _stat_float(v)
            shape_txt = rec["Shape"].strip().strip('"').strip("()[] ")
            try:
                shape = tuple(int(x) for x in shape_txt.split(",") if x.strip()) if shape_txt else ()
            except ValueError:
                shape = None
            rows.append(dict(op_type=rec["Op Type"], name=rec["Op Name"], ts=int(rec["Timestamp"] or 0),
                             io=rec["IO"].strip().lower(), slot=int(rec["Slot"] or 0),
                             dtype=dtypes.canonical(rec["Data Type"]) or rec["Data Type"].strip().lower(),
                             shape=shape, stats=stats,
                             size=int(rec["Data Size"]) if rec["Data Size"].strip().isdigit() else None))
    return rows, variant


def open_mindspore(path: str, rank: str | None = None, graph: str | None = None,
                   iteration: str | None = None) -> Dump:
    sel = Selection(rank, graph, iteration)
    lay = _resolve(path, sel)
    chosen = _choose(lay, sel, path)
    problems: list[Problem] = []
    meta = read_json_object(os.path.join(lay.rank_dir, ".dump_metadata", "config.json")) if lay.rank_dir else {}
    dump = Dump(path=path, root=lay.rank_dir or os.path.abspath(path), format="mindspore-npy",
                version=meta.get("ms_version"), device=meta.get("device_target"), rank=lay.rank)
    dump.graphs = sorted(chosen, key=_num)
    dump.iterations = {g: it for g, (it, _) in chosen.items()}
    for g in sorted(set(lay.data_dirs) - set(chosen), key=_num):
        dump.notes.append(f"graph {g} not read (choose it with --graph {g})")

    raw: dict[tuple[str, str], list] = defaultdict(list)  # (graph, file op name) -> records
    types: dict[tuple[str, str], str] = {}
    spellings = {"dtype": 0, "nodtype": 0}
    stat_variant = None
    n_npy = n_stat = 0
    for g, (_it, d) in chosen.items():
        names = _ls(d)
        mapping = read_mapping_csv(os.path.join(d, "mapping.csv")) if "mapping.csv" in names else {}
        npys = [n for n in names if n.endswith(".npy")]
        d_sep = os.path.join(d, "")
        if not npys and STAT_FILE in names:
            sp = os.path.join(d, STAT_FILE)
            try:
                rows, stat_variant = read_statistic_csv(sp)
            except (OSError, ValueError) as e:
                problems.append(Problem(sp, str(e)))
                continue
            for r in rows:
                tref = TensorRef(sp, r["io"], r["slot"], dtype=r["dtype"], shape=r["shape"], timestamp=r["ts"],
                                 stats=r["stats"], size_on_disk=r["size"])
                raw[(g, r["name"])].append((r["ts"], r["io"], r["slot"], tref))
                types[(g, r["name"])] = r["op_type"]
                n_stat += 1
            continue
        for n in names:
            if n in ("mapping.csv", STAT_FILE) or not n.endswith(".npy"):
                if n not in ("mapping.csv", STAT_FILE):
                    problems.append(Problem(os.path.join(d, n), "not a dump tensor file (ignored)", "warning"))
                continue
            rec = _parse_name(n, mapping)
            fp = d_sep + n
            if rec is None:
                problems.append(Problem(fp, "file name does not follow the MindSpore dump pattern "
                                            "{op_type}.{op_name}.{task}.{stream}.{timestamp}.{input|output}.{slot}.{format}[.{dtype}].npy"))
                continue
            n_npy += 1
            spellings["dtype" if rec["dtype"] else "nodtype"] += 1
            name_dt = dtypes.canonical(rec["dtype"]) if rec["dtype"] else None
            ts = int(rec["ts"])
            tref = TensorRef(fp, rec["io"], int(rec["slot"]), dtype=name_dt, fmt=rec["fmt"] or "", timestamp=ts)
            raw[(g, rec["name"])].append((ts, rec["io"], int(rec["slot"]), tref))
            types[(g, rec["name"])] = rec["type"]
        cdir = lay.constants.get(g)
        if cdir:
            for n in _ls(cdir):
                rec = _parse_name(n, {})
                if rec is None:
                    continue
                tref = TensorRef(os.path.join(cdir, n), "output", int(rec["slot"]),
                                 dtype=dtypes.canonical(rec["dtype"]) if rec["dtype"] else None,
                                 fmt=rec["fmt"] or "", timestamp=int(rec["ts"]))
                raw[(g, "constants/" + rec["name"])].append((int(rec["ts"]), "output", int(rec["slot"]), tref))
                types[(g, "constants/" + rec["name"])] = "Constant"
    dump.statistics_only = n_npy == 0 and n_stat > 0
    if dump.statistics_only:
        dump.format = "mindspore-statistic"

    # graph files and execution order per graph
    irs: dict[str, IRGraph] = {}
    exec_orders: dict[str, list[str]] = {}
    if lay.rank_dir:
        for g in dump.graphs:
            eo = os.path.join(lay.rank_dir, "execution_order", f"ms_execution_order_graph_{g}.csv")
            if os.path.exists(eo):
                exec_orders[g] = read_execution_order(eo)
            ir, src = load_graph_file(lay.rank_dir, g, problems)
            if ir is not None:
                irs[g] = ir
                dump.parameters.update({name: prm.is_weight for name, prm in ir.params.items()})
                dump.graph_source = os.path.relpath(src, lay.rank_dir) if dump.graph_source is None else "graphs/ (several)"

    # build ops
    ops: list[Op] = []
    for (g, fname), recs in raw.items():
        op_type = types[(g, fname)]
        kind = PARAMETER if op_type == "Parameter" and not fname.startswith("constants/") else KERNEL
        if fname.startswith("constants/"):
            kind = CONSTANT
        recs.sort(key=lambda r: r[0])
        instances: list[Op] = []
        for ts, io, slot, tref in recs:
            for inst in instances:
                side = inst.inputs if io == "input" else inst.outputs
                if slot not in side:
                    break
            else:
                inst = Op(name=fname, op_type=op_type, kind=kind, graph=g, file_name=fname)
                instances.append(inst)
                side = inst.inputs if io == "input" else inst.outputs
            side[slot] = tref
            if inst.timestamp is None or (ts is not None and ts < inst.timestamp):
                inst.timestamp = ts
        for i, inst in enumerate(instances):
            inst.call = i + 1
        ops.extend(instances)

    # full names: execution order csv first, then graph nodes
    for g in dump.graphs:
        graph_names = list(exec_orders.get(g, []))
        if g in irs:
            known = set(graph_names)
            graph_names += [n.full_name for n in irs[g].nodes.values()
                            if n.full_name and not n.virtual and n.full_name not in known]
        kern = [op for op in ops if op.graph == g and op.kind == KERNEL]
        resolved = resolve_names(sorted({op.file_name for op in kern}), graph_names)
        for op in kern:
            if op.file_name in resolved:
                op.name, op.name_source = resolved[op.file_name]
        params = {file_form(p): prm for p, prm in (irs[g].params.items() if g in irs else ())}
        for op in ops:
            if op.graph == g and op.kind == PARAMETER and op.file_name in params:
                prm = params[op.file_name]
                op.name, op.name_source = prm.name, "graph parameter"
                op.attrs = {"is_weight": "true" if prm.is_weight else "false"}

    # spelling variant
    kern_all = [op for op in ops if op.kind == KERNEL]
    short_style = sum(1 for op in kern_all if SHORT_NAME.match(op.file_name))
    if dump.statistics_only:
        parts = [f"statistic.csv only ({stat_variant})"]
    else:
        parts = ["short op names in file names (r1.3-2.3 style)" if short_style > len(kern_all) / 2
                 else "full scope names in file names"]
        if spellings["dtype"] and spellings["nodtype"]:
            parts.append("mixed .{dtype} suffix")
        else:
            parts.append("with .{dtype} suffix" if spellings["dtype"] else "without .{dtype} suffix")
    dump.variant = ", ".join(parts)

    # keys: the full name, plus #k for repeated calls, plus graph: when two graphs share a name
    base_count: dict[str, int] = defaultdict(int)
    for op in ops:
        op.key = op.name + (f"#{op.call}" if op.call > 1 else "")
        base_count[op.key] += 1
    for op in ops:
        if base_count[op.key] > 1:
            op.key = f"{op.graph}:{op.key}"

    # execution order: timestamps within a dump are the real order
    kernels = [op for op in ops if op.kind == KERNEL]
    others = [op for op in ops if op.kind != KERNEL]
    have_ts = all(op.timestamp for op in kernels) and len({op.timestamp for op in kernels}) == len(kernels)
    if have_ts and kernels:
        kernels.sort(key=lambda op: (op.timestamp, op.key))
        dump.order_source = "file timestamps"
    elif exec_orders:
        pos = {}
        for g in dump.graphs:
            for i, n in enumerate(exec_orders.get(g, [])):
                pos.setdefault((g, n), (int(g) if g.isdigit() else 0, i))
        kernels.sort(key=lambda op: (pos.get((op.graph, op.name), (1 << 30, 0)), op.timestamp or 0, op.key))
        dump.order_source = "execution order csv"
    elif irs:
        # the graph file lists nodes in a topological order: the last resort that still respects dataflow
        pos = {}
        for g, ir in irs.items():
            for i, node in enumerate(ir.nodes.values()):
                if node.full_name:
                    pos.setdefault((g, node.full_name), (int(g) if g.isdigit() else 0, i))
        kernels.sort(key=lambda op: (pos.get((op.graph, op.name), (1 << 30, 0)), op.key))
        dump.order_source = "graph topological order"
    else:
        kernels.sort(key=lambda op: (op.timestamp or 0, op.key))
    for i, op in enumerate(kernels):
        op.order = i
    others.sort(key=lambda op: (op.kind, op.timestamp or 0, op.key))
    dump.ops = kernels + others

    # graph
    if irs:
        g_all = nx.DiGraph()
        for op in dump.ops:
            g_all.add_node(op.key, dumped=True, op_type=op.op_type, kind=op.kind)
        for g, ir in irs.items():
            pkeys = {op.name: op.key for op in dump.ops if op.kind == PARAMETER and op.graph == g}
            attach_ir(dump, ir, g, g_all, lambda name, pkeys=pkeys: pkeys.get(name))
        dump.graph = g_all
        unmapped = [op for op in kernels if not op.sources and op.inputs]
        if unmapped and len(unmapped) < len(kernels):
            dump.notes.append(f"{len(unmapped)} kernels not found in the graph file (kept their file names)")
    elif kernels:
        dump.notes.append("no graph file: inputs cannot be traced to their producers")
    if not exec_orders and not have_ts:
        dump.notes.append("no timestamps and no execution-order csv: order follows file names")
    dump.problems = problems
    dump._by_key = None
    return dump
