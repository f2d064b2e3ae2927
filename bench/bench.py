#!/usr/bin/env python3
"""Engine benchmarks, all figures from one run on this machine (ratios only within the run).

1. index time for a dump of ~60,000 files (open_dump: file names, execution order, graph file);
2. full compare throughput vs a plain numpy loop over the same files (np.load + cosine + max abs), on a pair
   of ~0.5 GB dumps, page cache warm for both;
3. tensors read by bisection vs n (goal: at most 2*ceil(log2 n) + 4 pairs, preconditions counted apart);
4. `dumptui bisect` end to end (process start to answer) on a pair of ~3,000-kernel dumps (goal < 2 s).

Usage: python bench/bench.py [--quick] [--out DIR]   (data is generated under DIR, default bench/out)
"""
from __future__ import annotations

import argparse
import glob
import json
import math
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from dumptui.cli import single_threaded_blas  # noqa: E402

if sys.argv[1:2] != ["--naive"]:
    single_threaded_blas()      # as the dumptui command does, before numpy is imported

import numpy as np  # noqa: E402

from dumptui.core.bisect import Bisection  # noqa: E402
from dumptui.core.batch import evaluate_all
from dumptui.core.session import Session  # noqa: E402
from dumptui.core.demo import write_demo  # noqa: E402
from dumptui.core.formats import open_dump  # noqa: E402


def demo(out: str, name: str, n_ops: int, size: int):
    d = os.path.join(out, name)
    marker = os.path.join(d, "info.json")
    if os.path.exists(marker):
        info = json.load(open(marker))
        if info.get("n_ops") == n_ops and info.get("size") == size:
            return info
        shutil.rmtree(d)
    t = time.perf_counter()
    i = write_demo(d, n_ops=n_ops, size=size)
    info = {"ref": i.ref, "target": i.target, "planted": i.planted, "n_ops": n_ops, "size": size,
            "files": i.n_files, "kernels": i.n_kernels, "write_s": time.perf_counter() - t}
    json.dump(info, open(marker, "w"))
    return info


def dir_bytes(path: str) -> int:
    return sum(os.path.getsize(f) for f in glob.glob(os.path.join(path, "rank_0", "Net", "*", "*", "*.npy")))


def bench_index(out: str, quick: bool) -> dict:
    n_ops = 4000 if quick else 17600
    info = demo(out, "index", n_ops, 16)
    files = len(os.listdir(os.path.join(info["ref"], "rank_0", "Net", "0", "0")))
    times = []
    for _ in range(3):
        t = time.perf_counter()
        d = open_dump(info["ref"])
        times.append(time.perf_counter() - t)
    return {"files": files, "kernels": len(d.kernels), "ops": len(d.ops), "first_s": times[0],
            "best_s": min(times), "files_per_s": files / min(times)}


def naive_loop(ref: str, target: str) -> tuple[float, int]:
    """What one writes by hand: match files by name without the timestamp, np.load, cosine, max abs."""
    def key(f):
        b = os.path.basename(f).split(".")
        return tuple(b[:2] + b[5:])
    r = {key(f): f for f in glob.glob(os.path.join(ref, "rank_0", "Net", "*", "*", "*.npy"))}
    t = {key(f): f for f in glob.glob(os.path.join(target, "rank_0", "Net", "*", "*", "*.npy"))}
    n = 0
    for k in r.keys() & t.keys():
        a, b = np.load(r[k]), np.load(t[k])
        if a.shape != b.shape:
            continue
        a, b = a.ravel(), b.ravel()
        na, nb = np.linalg.norm(a), np.linalg.norm(b)
        _cos = float(np.dot(a, b) / (na * nb)) if na and nb else float("nan")
        _mx = float(np.max(np.abs(a.astype(np.float32) - b.astype(np.float32)))) if a.size else 0.0
        n += 1
    return 0.0, n


def ours(ref: str, target: str, kl: bool, workers: int | None) -> int:
    s = Session(open_dump(ref), open_dump(target), kl=kl)
    res = evaluate_all(s, workers=workers)
    return sum(len(r.inputs) + len(r.outputs) for r in res)


def timed(fn, *a, repeat=2):
    best = None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn(*a)
        dt = time.perf_counter() - t
        best = dt if best is None else min(best, dt)
    return best, out


def bench_compare(out: str, quick: bool) -> dict:
    size = 1 << 16 if quick else 300_000
    info = demo(out, "compare", 200, size)
    nbytes = dir_bytes(info["ref"]) + dir_bytes(info["target"])
    naive_loop(info["ref"], info["target"])          # warm the page cache for everyone
    # the plain loop runs in its own process with numpy's default threading, as a user would run it
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS",
                                                             "MKL_NUM_THREADS")}
    p = subprocess.run([sys.executable, __file__, "--naive", info["ref"], info["target"]], env=env,
                       capture_output=True, text=True, check=True)
    t_naive, n_naive = json.loads(p.stdout)
    rows = {"bytes_both_sides": nbytes, "pairs_naive": n_naive,
            "naive_s": t_naive, "naive_MBps": nbytes / t_naive / 1e6}
    for label, kl, workers in (("ours_default", False, None), ("ours_with_kl", True, None),
                               ("ours_1_process", False, 1)):
        t, n = timed(ours, info["ref"], info["target"], kl, workers)
        rows[label + "_s"] = t
        rows[label + "_MBps"] = nbytes / t / 1e6
        rows[label + "_vs_naive"] = t_naive / t
        rows["pairs_ours"] = n
    return rows


def bench_bisect_reads(out: str, quick: bool) -> list[dict]:
    rows = []
    for n_ops in ((100, 1000, 3000) if quick else (100, 1000, 3000, 10000, 20000)):
        info = demo(out, f"reads_{n_ops}", n_ops, 16)
        s = Session(open_dump(info["ref"]), open_dump(info["target"]), kl=False)
        bi = Bisection(s)
        bi.check_inputs()
        pre = s.tensors_read
        t = time.perf_counter()
        bi.run()
        dt = time.perf_counter() - t
        n = len(bi.order)
        reads = s.tensors_read - pre
        rows.append({"n": n, "bisection_reads": reads, "bound": 2 * math.ceil(math.log2(n)) + 4,
                     "precondition_reads": pre, "found": bi.first_root().pair.name == info["planted"],
                     "bisect_s": dt, "probes": sum(1 for st in bi.history if st.source == "computed")})
    return rows


def bench_bisect_e2e(out: str, quick: bool) -> dict:
    info = demo(out, "e2e", 3000, 256)
    cmd = [sys.executable, "-m", "dumptui", "bisect", info["ref"], info["target"], "--json"]
    env = dict(os.environ, PYTHONPATH=os.path.dirname(HERE))
    times = []
    for _ in range(3):
        t = time.perf_counter()
        p = subprocess.run(cmd, capture_output=True, text=True, env=env)
        times.append(time.perf_counter() - t)
    d = json.loads(p.stdout)
    files = len(os.listdir(os.path.join(info["ref"], "rank_0", "Net", "0", "0")))
    return {"kernels": info["kernels"], "files_per_side": files, "seconds": times, "best_s": min(times),
            "culprit_ok": d["culprit"]["ref"] == info["planted"], "tensors_read": d["tensors_read"]}


def main():
    if sys.argv[1:2] == ["--naive"]:
        t, (_, n) = timed(naive_loop, sys.argv[2], sys.argv[3])
        print(json.dumps([t, n]))
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="smaller data, for a smoke run")
    ap.add_argument("--out", default=os.path.join(HERE, "out"))
    ap.add_argument("--only", choices=["index", "compare", "reads", "e2e"])
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    print(f"machine: {os.cpu_count()} CPUs, python {sys.version.split()[0]}, numpy {np.__version__}")
    results = {}
    if a.only in (None, "index"):
        r = results["index"] = bench_index(a.out, a.quick)
        print(f"[index] {r['files']} files ({r['kernels']} kernels): first {r['first_s']:.2f} s, "
              f"best {r['best_s']:.2f} s = {r['files_per_s']:,.0f} files/s")
    if a.only in (None, "compare"):
        r = results["compare"] = bench_compare(a.out, a.quick)
        print(f"[compare] {r['bytes_both_sides'] / 1e9:.2f} GB (both sides), {r['pairs_ours']} tensor pairs")
        print(f"  plain numpy loop (np.load + cos + max abs): {r['naive_s']:.2f} s = {r['naive_MBps']:.0f} MB/s")
        for label in ("ours_default", "ours_with_kl", "ours_1_process"):
            print(f"  dumptui {label[5:]:18s}: {r[label + '_s']:.2f} s = {r[label + '_MBps']:.0f} MB/s "
                  f"= {r[label + '_vs_naive']:.0%} of the plain loop's throughput")
    if a.only in (None, "reads"):
        rows = results["reads"] = bench_bisect_reads(a.out, a.quick)
        print("[bisection reads] n, pairs read by bisection (bound 2*ceil(log2 n)+4), probes, preconditions")
        for r in rows:
            print(f"  n={r['n']:6d}: {r['bisection_reads']:3d} (bound {r['bound']}), {r['probes']} probes, "
                  f"{r['precondition_reads']} precondition pairs, {r['bisect_s']:.2f} s, culprit found: {r['found']}")
    if a.only in (None, "e2e"):
        r = results["e2e"] = bench_bisect_e2e(a.out, a.quick)
        print(f"[bisect end to end] {r['kernels']} kernels, {r['files_per_side']} files per side: "
              f"best {r['best_s']:.2f} s of {', '.join(f'{t:.2f}' for t in r['seconds'])}; "
              f"culprit found: {r['culprit_ok']}, {r['tensors_read']} tensor pairs read")
    with open(os.path.join(a.out, "results.json"), "w") as fh:
        json.dump(results, fh, indent=1)


if __name__ == "__main__":
    main()
