#!/usr/bin/env python3
"""Engine benchmarks, all figures from one run on this machine (ratios only within the run).

1. index time for a dump of ~60,000 files (open_dump: file names, execution order, graph file);
2. full compare throughput vs a plain numpy loop over the same files (np.load + cosine + max abs), on a pair
   of ~0.5 GB dumps, page cache warm for both;
3. tensors read by bisection vs n on clean pairs (goal: at most 2*ceil(log2 n) + 4 pairs, preconditions counted
   apart);
4. `dumptui bisect` end to end (process start to answer) on a pair of ~3,000-kernel dumps, clean (bisection)
   and noisy (the local-error scan of every op);
5. the local-error scan of a noisy ~3,000-kernel pair against the numpy floor of a full compare of the same pair.

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
from dumptui.core.io.procs import single_threaded_blas  # noqa: E402

if sys.argv[1:2] != ["--naive"]:
    single_threaded_blas()  # as the dumptui command does, before numpy is imported

import numpy as np  # noqa: E402

from dumptui.core.compare.batch import evaluate_all  # noqa: E402
from dumptui.core.compare.session import Session  # noqa: E402
from dumptui.core.demo.residual import write_demo  # noqa: E402
from dumptui.core.formats import open_dump  # noqa: E402
from dumptui.core.search.bisect import Bisection  # noqa: E402


def demo(out: str, name: str, n_ops: int, size: int, clean: bool = False):
    """A demo pair (cached under `out`); `clean`: without the fp16 region, so a bisection, not a scan."""
    d = os.path.join(out, name)
    marker = os.path.join(d, "info.json")
    if os.path.exists(marker):
        with open(marker) as fh:
            info = json.load(fh)
        if info.get("n_ops") == n_ops and info.get("size") == size and info.get("clean", False) == clean:
            return info
        shutil.rmtree(d)
    t = time.perf_counter()
    i = write_demo(d, n_ops=n_ops, size=size, fp16_region=None if clean else (0.2, 0.35))
    info = {
        "ref": i.ref,
        "target": i.target,
        "planted": i.planted,
        "n_ops": n_ops,
        "size": size,
        "clean": clean,
        "files": i.n_files,
        "kernels": i.n_kernels,
        "write_s": time.perf_counter() - t,
    }
    with open(marker, "w") as fh:
        json.dump(info, fh)
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
    return {
        "files": files,
        "kernels": len(d.kernels),
        "ops": len(d.ops),
        "first_s": times[0],
        "best_s": min(times),
        "files_per_s": files / min(times),
    }


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
    from dumptui.core.io.executor import command_processes

    s = Session(open_dump(ref), open_dump(target), kl=kl)
    with command_processes(workers or os.cpu_count() or 1) as s.executor:
        res = evaluate_all(s)
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
    naive_loop(info["ref"], info["target"])  # warm the page cache for everyone
    # the plain loop runs in its own process with numpy's default threading, as a user would run it
    env = {
        k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
    }
    p = subprocess.run(
        [sys.executable, __file__, "--naive", info["ref"], info["target"]],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    t_naive, n_naive = json.loads(p.stdout)
    rows = {
        "bytes_both_sides": nbytes,
        "pairs_naive": n_naive,
        "naive_s": t_naive,
        "naive_MBps": nbytes / t_naive / 1e6,
    }
    for label, kl, workers in (
        ("ours_default", False, None),
        ("ours_with_kl", True, None),
        ("ours_1_process", False, 1),
    ):
        t, n = timed(ours, info["ref"], info["target"], kl, workers)
        rows[label + "_s"] = t
        rows[label + "_MBps"] = nbytes / t / 1e6
        rows[label + "_vs_naive"] = t_naive / t
        rows["pairs_ours"] = n
    return rows


def bench_bisect_reads(out: str, quick: bool) -> list[dict]:
    rows = []
    for n_ops in (100, 1000, 3000) if quick else (100, 1000, 3000, 10000, 20000):
        info = demo(out, f"reads_{n_ops}", n_ops, 16, clean=True)
        s = Session(open_dump(info["ref"]), open_dump(info["target"]), kl=False)
        bi = Bisection(s)
        bi.prepare()
        assert bi.search == "bisection", bi.search_reason
        pre = s.tensors_read
        t = time.perf_counter()
        bi.run()
        dt = time.perf_counter() - t
        n = len(bi.order)
        reads = s.tensors_read - pre
        rows.append(
            {
                "n": n,
                "bisection_reads": reads,
                "bound": 2 * math.ceil(math.log2(n)) + 4,
                "precondition_reads": pre,
                "found": bi.first_root().pair.name == info["planted"],
                "bisect_s": dt,
                "probes": sum(1 for st in bi.history if st.source == "computed"),
            }
        )
    return rows


def bench_bisect_e2e(out: str, quick: bool, clean: bool) -> dict:
    info = demo(out, "e2e_clean" if clean else "e2e", 3000, 256, clean=clean)
    cmd = [sys.executable, "-m", "dumptui", "bisect", info["ref"], info["target"], "--json"]
    # without the index cache, as before it existed (bench_scale.py measures with and without it)
    env = dict(os.environ, PYTHONPATH=os.path.dirname(HERE), DUMPTUI_NO_INDEX_CACHE="1")
    times = []
    for _ in range(3):
        t = time.perf_counter()
        p = subprocess.run(cmd, capture_output=True, text=True, env=env)
        times.append(time.perf_counter() - t)
    d = json.loads(p.stdout)
    files = len(os.listdir(os.path.join(info["ref"], "rank_0", "Net", "0", "0")))
    return {
        "kernels": info["kernels"],
        "files_per_side": files,
        "seconds": times,
        "best_s": min(times),
        "culprit_ok": d["culprit"]["ref"] == info["planted"],
        "tensors_read": d["tensors_read"],
        "search": d["search"]["kind"],
    }


def bench_scan(out: str, quick: bool) -> dict:
    """The local-error scan (every op read, judged, replayed where possible) against the plain numpy loop
    over the same files: the floor of reading everything once."""
    info = demo(out, "e2e", 3000, 256)
    naive_loop(info["ref"], info["target"])  # warm the page cache
    t_naive, (_, n_naive) = timed(naive_loop, info["ref"], info["target"])

    def scan_once() -> Bisection:
        bi = Bisection(Session(open_dump(info["ref"]), open_dump(info["target"]), kl=False))
        bi.prepare()
        return bi

    t_index, _ = timed(lambda: (open_dump(info["ref"]), open_dump(info["target"])))
    t_scan, bi = timed(scan_once)
    replayed = sum(1 for le in bi.scan_result.locals if le.replay is not None)
    return {
        "kernels": info["kernels"],
        "pairs_naive": n_naive,
        "naive_s": t_naive,
        "scan_s": t_scan,
        "index_s": t_index,
        "scan_minus_index_s": t_scan - t_index,
        "ratio": t_scan / t_naive,
        "replayed_ops": replayed,
        "roots": [le.pair.name for le in bi.scan_result.roots],
        "planted": info["planted"],
    }


def main():
    if sys.argv[1:2] == ["--naive"]:
        t, (_, n) = timed(naive_loop, sys.argv[2], sys.argv[3])
        print(json.dumps([t, n]))
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="smaller data, for a smoke run")
    ap.add_argument("--out", default=os.path.join(HERE, "out"))
    ap.add_argument("--only", choices=["index", "compare", "reads", "e2e", "scan"])
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    print(f"machine: {os.cpu_count()} CPUs, python {sys.version.split()[0]}, numpy {np.__version__}")
    results = {}
    if a.only in (None, "index"):
        r = results["index"] = bench_index(a.out, a.quick)
        print(
            f"[index] {r['files']} files ({r['kernels']} kernels): first {r['first_s']:.2f} s, "
            f"best {r['best_s']:.2f} s = {r['files_per_s']:,.0f} files/s"
        )
    if a.only in (None, "compare"):
        r = results["compare"] = bench_compare(a.out, a.quick)
        print(f"[compare] {r['bytes_both_sides'] / 1e9:.2f} GB (both sides), {r['pairs_ours']} tensor pairs")
        print(f"  plain numpy loop (np.load + cos + max abs): {r['naive_s']:.2f} s = {r['naive_MBps']:.0f} MB/s")
        for label in ("ours_default", "ours_with_kl", "ours_1_process"):
            print(
                f"  dumptui {label[5:]:18s}: {r[label + '_s']:.2f} s = {r[label + '_MBps']:.0f} MB/s "
                f"= {r[label + '_vs_naive']:.0%} of the plain loop's throughput"
            )
    if a.only in (None, "reads"):
        rows = results["reads"] = bench_bisect_reads(a.out, a.quick)
        print("[bisection reads] n, pairs read by bisection (bound 2*ceil(log2 n)+4), probes, preconditions")
        for r in rows:
            print(
                f"  n={r['n']:6d}: {r['bisection_reads']:3d} (bound {r['bound']}), {r['probes']} probes, "
                f"{r['precondition_reads']} precondition pairs, {r['bisect_s']:.2f} s, culprit found: {r['found']}"
            )
    if a.only in (None, "e2e"):
        for clean in (True, False):
            r = results["e2e_clean" if clean else "e2e_noisy"] = bench_bisect_e2e(a.out, a.quick, clean)
            print(
                f"[bisect end to end, no index cache, {'clean' if clean else 'noisy'} pair: {r['search']}] "
                f"{r['kernels']} kernels, "
                f"{r['files_per_side']} files per side: best {r['best_s']:.2f} s of "
                f"{', '.join(f'{t:.2f}' for t in r['seconds'])}; culprit found: {r['culprit_ok']}, "
                f"{r['tensors_read']} tensor pairs read"
            )
    if a.only in (None, "scan"):
        r = results["scan"] = bench_scan(a.out, a.quick)
        print(
            f"[local-error scan] {r['kernels']} kernels: scan {r['scan_s']:.2f} s (of which indexing "
            f"{r['index_s']:.2f} s), {r['replayed_ops']} ops replayed; plain numpy loop over the same files "
            f"{r['naive_s']:.2f} s ({r['pairs_naive']} pairs): scan = {r['ratio']:.1f}x the floor; "
            f"roots {r['roots']} (planted {r['planted']})"
        )
    with open(os.path.join(a.out, "results.json"), "w") as fh:
        json.dump(results, fh, indent=1)


if __name__ == "__main__":
    main()
