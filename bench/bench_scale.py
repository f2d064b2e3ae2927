#!/usr/bin/env python3
"""Scale benchmarks (issue 10), all figures from one run on this machine, side by side:

1. `dumptui bisect` end to end on the generated 3,000-kernel pairs (clean: a bisection; noisy: every op read
   by the local-error scan), cold (the dumps' pages dropped from the page cache, no index cache), warm (no
   index cache) and with the index cache; beside them the numpy floor of a full compare of the same pair
   (np.load + cosine + max abs over every tensor pair) and the bytes-only read floor (every file read once);
2. indexing 1,000,000 file names (a generated tree of empty files): cold, and from the index cache, in files/s;
3. a full compare of a >= 1 GB pair against its numpy floor and read floor: local processes, one process, and
   Dask distributed tasks on a local cluster of 1 and 2 workers (cluster start-up said apart);
4. peak resident memory: the compare of (3) and of a pair of two 256 MB tensors per side, per process.

Usage: python bench/bench_scale.py [--only bisect|names|compare|memory] [--names N] [--out DIR]
Generated data goes to DIR (default bench/out); `make clean` removes it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, REPO)
import numpy as np  # noqa: E402

import bench as engine  # noqa: E402  (the demo pairs and the numpy loop of bench.py; sets single-threaded BLAS)
from dumptui.core.index.cache import RACY_SECONDS  # noqa: E402

ENV = dict(os.environ, PYTHONPATH=REPO)


def as_installed() -> None:
    """The package's bytecode compiled, as pip leaves an installed package: where PYTHONDONTWRITEBYTECODE is
    set (some CI machines, this one) a fresh clone has none, and every process of every run (workers too)
    compiled each module it imports from source, ~0.2 s of CPU a process, before it did any work."""
    import compileall

    compileall.compile_dir(os.path.join(REPO, "dumptui"), quiet=1)


MEASURE = (
    "import json, resource, subprocess, sys, time\n"
    "t = time.perf_counter()\n"
    "p = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)\n"
    "dt = time.perf_counter() - t\n"
    "print(json.dumps([dt, p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, p.stderr.decode()[-500:]]))\n"
)


def measure(cmd: list[str], env: dict[str, str]) -> tuple[float, int, float]:
    """(seconds, exit code, peak resident MB of the largest process) of a command run in its own process tree."""
    out = subprocess.run([sys.executable, "-c", MEASURE, *cmd], capture_output=True, text=True, env=env, check=True)
    dt, code, peak_kb, err = json.loads(out.stdout)
    if code not in (0, 1):
        raise RuntimeError(f"{' '.join(cmd)} exited {code}: {err}")
    return dt, code, peak_kb / 1024


def files_of(*roots: str) -> list[str]:
    return [os.path.join(d, n) for root in roots for d, _dirs, names in os.walk(root) for n in names]


def drop_from_page_cache(paths: list[str]) -> None:
    """Ask the kernel to forget the files' cached pages (clean pages: no privilege needed)."""
    for p in paths:
        try:
            fd = os.open(p, os.O_RDONLY)
        except OSError:
            continue
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def read_floor(paths: list[str]) -> tuple[float, int]:
    """Seconds to read every byte of the files once, and the bytes."""
    t = time.perf_counter()
    n = 0
    for p in paths:
        with open(p, "rb") as fh:
            while chunk := fh.read(1 << 20):
                n += len(chunk)
    return time.perf_counter() - t, n


def numpy_floor(ref: str, target: str) -> tuple[float, int]:
    t = time.perf_counter()
    _, pairs = engine.naive_loop(ref, target)
    return time.perf_counter() - t, pairs


def settled(*roots: str) -> None:
    """The index cache does not store a dump changed in the last RACY_SECONDS: wait that out if needed."""
    newest = max(os.stat(p).st_mtime for p in files_of(*roots)[:50] + list(roots))
    wait = newest + RACY_SECONDS + 0.5 - time.time()
    if wait > 0:
        time.sleep(wait)


# ------------------------------------------------------------------------------------------ 1. bisect


def bench_bisect(out: str) -> list[dict]:
    rows = []
    cache_home = os.path.join(out, "cache-bisect")
    for label, clean in (("clean", True), ("noisy", False)):
        info = engine.demo(out, "e2e_clean" if clean else "e2e", 3000, 256, clean=clean)
        ref, target = info["ref"], info["target"]
        paths = files_of(ref, target)
        settled(ref, target)
        cmd = [sys.executable, "-m", "dumptui", "bisect", ref, target, "--json"]
        off = dict(ENV, DUMPTUI_NO_INDEX_CACHE="1")
        drop_from_page_cache(paths)
        cold, _, _ = measure(cmd, off)
        drop_from_page_cache(paths)
        cold_read, nbytes = read_floor(paths)
        warm = min(measure(cmd, off)[0] for _ in range(3))
        on = dict(ENV, XDG_CACHE_HOME=cache_home)
        subprocess.run(["rm", "-rf", cache_home], check=True)
        first, _, _ = measure(cmd, on)  # indexes, then writes the index cache
        cached = [measure(cmd, on)[0] for _ in range(5)]
        warm_read, _ = min(read_floor(paths) for _ in range(2))
        floor, pairs = min(numpy_floor(ref, target) for _ in range(2))
        rows.append(
            {
                "pair": label,
                "kernels": info["kernels"],
                "files_per_side": info["files"],
                "bytes": nbytes,
                "cold_s": cold,
                "warm_s": warm,
                "first_with_cache_s": first,
                "cached_s": min(cached),
                "cached_runs_s": cached,
                "numpy_floor_s": floor,
                "numpy_pairs": pairs,
                "read_floor_cold_s": cold_read,
                "read_floor_warm_s": warm_read,
            }
        )
    return rows


# ------------------------------------------------------------------------------------------ 2. 1M names

NAMES_CHILD = (
    "import json, os, sys, time\n"
    "t0 = time.perf_counter()\n"
    "from dumptui.core.formats import open_dump\n"
    "t = time.perf_counter()\n"
    "d = open_dump(sys.argv[1], cache=sys.argv[2] == 'cache')\n"
    "dt = time.perf_counter() - t\n"
    "files = sum(len(op.inputs) + len(op.outputs) for op in d.ops)\n"
    "peak = next(int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmHWM'))\n"
    "print(json.dumps([dt, files, len(d.ops), peak / 1024, t - t0]))\n"
    "os._exit(0)\n"  # skip tearing a million objects down: not part of the figure
)


def write_names_tree(root: str, n: int) -> None:
    """`n` empty files named as a MindSpore 2.x dump names them (4 per kernel), in one iteration folder."""
    folder = os.path.join(root, "rank_0", "Net", "0", "0")
    os.makedirs(folder, exist_ok=True)
    ts, files, k = 1796214300000000, 0, 0
    types = ("MatMul", "Add", "Mul", "Softmax")
    while files < n:
        typ = types[k % 4]
        name = f"Default_network-WithLossCell__backbone-GPTModel_layers-CellList_{k // 40}-Layer_attention-Attention_{typ}-op{k}"
        for io, slot in (("input", 0), ("input", 1), ("output", 0), ("output", 1))[: n - files]:
            ts += 7
            open(os.path.join(folder, f"{typ}.{name}.0.0.{ts}.{io}.{slot}.DefaultFormat.Float16.npy"), "w").close()
            files += 1
        k += 1


def bench_names(out: str, n: int) -> dict:
    root = os.path.join(out, f"names{n}")
    marker = os.path.join(root, "complete")
    if not os.path.exists(marker):
        subprocess.run(["rm", "-rf", root], check=True)
        t = time.perf_counter()
        write_names_tree(root, n)
        open(marker, "w").close()
        print(f"  (wrote {n:,} empty files in {time.perf_counter() - t:.0f} s)")
    settled(root)
    cache_home = os.path.join(out, "cache-names")
    subprocess.run(["rm", "-rf", cache_home], check=True)
    env = dict(ENV, XDG_CACHE_HOME=cache_home)

    def child(mode: str) -> list:
        p = subprocess.run([sys.executable, "-c", NAMES_CHILD, root, mode], capture_output=True, text=True, env=env)
        if p.returncode:
            raise RuntimeError(p.stderr[-2000:])
        return json.loads(p.stdout)

    cold = child("none")
    store = child("cache")  # indexes and writes the cache
    cached = [child("cache") for _ in range(3)]
    best = min(cached, key=lambda r: r[0])
    size = sum(os.path.getsize(p) for p in files_of(os.path.join(cache_home, "dumptui", "index")))
    return {
        "files": best[1],
        "ops": best[2],
        "cold_s": cold[0],
        "cold_files_per_s": cold[1] / cold[0],
        "cold_peak_mb": cold[3],
        "store_s": store[0],
        "cached_s": best[0],
        "cached_runs_s": [r[0] for r in cached],
        "cached_files_per_s": best[1] / best[0],
        "cached_peak_mb": best[3],
        "cache_file_mb": size / 1e6,
        "imports_s": best[4],
    }


# ------------------------------------------------------------------------------------------ 3. full compare

COMPARE_CHILD = (
    "import json, sys, time\n"
    "from dumptui.core.compare.batch import evaluate_all\n"
    "from dumptui.options.pair import PairOptions, make_session, open_pair\n"
    "ref, target, how = sys.argv[1:4]\n"
    "o = PairOptions(ref, target)\n"
    "s = make_session(o, *open_pair(o, cache=False), kl=False)\n"
    "start = 0.0\n"
    "if how.startswith('local:'):\n"
    "    from dumptui.core.compare.daskexec import DaskCluster\n"
    "    t = time.perf_counter(); s.executor = DaskCluster(how); start = time.perf_counter() - t\n"
    "else:\n"
    "    import os\n"
    "    from dumptui.core.io.executor import command_processes\n"
    "    s.executor = command_processes(1 if how == 'one' else os.cpu_count() or 1)\n"
    "t = time.perf_counter()\n"
    "res = evaluate_all(s)\n"
    "dt = time.perf_counter() - t\n"
    "print(json.dumps([dt, start, sum(len(r.inputs) + len(r.outputs) for r in res)]))\n"
    "s.executor.close()\n"
)


def bench_compare(out: str) -> dict:
    info = engine.demo(out, "compare", 200, 300_000)
    ref, target = info["ref"], info["target"]
    paths = [p for p in files_of(ref, target) if p.endswith(".npy")]
    nbytes = sum(os.path.getsize(p) for p in paths)
    read_floor(paths)  # warm the page cache for everyone
    row: dict = {"bytes": nbytes, "read_floor_s": min(read_floor(paths)[0] for _ in range(2))}
    row["numpy_floor_s"], row["numpy_pairs"] = min(numpy_floor(ref, target) for _ in range(2))
    for how in ("processes", "one", "local:1", "local:2"):
        runs = []
        for _ in range(2):
            p = subprocess.run(
                [sys.executable, "-c", COMPARE_CHILD, ref, target, how], capture_output=True, text=True, env=ENV
            )
            if p.returncode:
                raise RuntimeError(p.stderr[-2000:])
            runs.append(json.loads(p.stdout.strip().splitlines()[-1]))
        best = min(runs)
        row[how] = {"s": best[0], "cluster_start_s": best[1], "pairs": best[2]}
    return row


# ------------------------------------------------------------------------------------------ 4. memory


def big_pair(out: str, elems: int = 64 << 20) -> tuple[str, str]:
    """Two ops of one 256 MB tensor each, per side (a MindSpore dump), the target's second op off by a bit."""
    from dumptui.core.demo.dumpwriter import DumpWriter

    root = os.path.join(out, "bigtensors")
    marker = os.path.join(root, "complete")
    if not os.path.exists(marker):
        subprocess.run(["rm", "-rf", root], check=True)
        x = np.random.default_rng(1).standard_normal(elems).astype(np.float32)
        for side in ("ref", "target"):
            w = DumpWriter(os.path.join(root, side, "rank_0"))
            w.tensor("Abs", "Default/Abs-op0", "output", 0, x, "Float32")
            y = x * np.float32(1.5 if side == "target" else 1.0)
            w.tensor("Mul", "Default/Mul-op0", "output", 0, y, "Float32")
            w.finish()
        open(marker, "w").close()
    return os.path.join(root, "ref"), os.path.join(root, "target")


def bench_memory(out: str) -> dict:
    info = engine.demo(out, "compare", 200, 300_000)
    rows = {}
    for label, (ref, target) in (("compare_1gb", (info["ref"], info["target"])), ("two_256mb", big_pair(out))):
        nbytes = sum(os.path.getsize(p) for p in files_of(ref, target) if p.endswith(".npy"))
        for workers in ("1", "2"):
            cmd = [sys.executable, "-m", "dumptui", "compare", ref, target, "--json", "--workers", workers]
            dt, _code, peak = measure(cmd, dict(ENV, DUMPTUI_NO_INDEX_CACHE="1"))
            rows[f"{label}_workers{workers}"] = {"bytes": nbytes, "s": dt, "peak_mb": peak}
    return rows


# ------------------------------------------------------------------------------------------ report


def load_average() -> str:
    try:
        return " / ".join(f"{v:.1f}" for v in os.getloadavg())
    except OSError:
        return "?"


def print_bisect(rows: list[dict]) -> None:
    print("[bisect end to end, 3,000-kernel pairs] seconds (best of runs; cold: one run)")
    print(
        f"  {'pair':6s} {'files/side':>10s} {'cold':>7s} {'warm':>7s} {'1st+cache':>9s} {'cached':>7s}   "
        f"{'numpy floor':>11s} {'read cold':>9s} {'read warm':>9s}"
    )
    for r in rows:
        print(
            f"  {r['pair']:6s} {r['files_per_side']:>10,d} {r['cold_s']:7.2f} {r['warm_s']:7.2f} "
            f"{r['first_with_cache_s']:9.2f} {r['cached_s']:7.2f}   {r['numpy_floor_s']:11.2f} "
            f"{r['read_floor_cold_s']:9.2f} {r['read_floor_warm_s']:9.2f}"
        )
    print(
        "  (cold: pages dropped, no index cache; warm: no index cache; 1st+cache: the run that writes the cache;"
        " cached: with it. Floors: a full compare of the pair by np.load + cos + max abs, and reading its "
        f"{rows[0]['bytes'] / 1e6:.0f} MB once)"
    )


def print_names(r: dict) -> None:
    print(f"[index {r['files']:,} file names, {r['ops']:,} kernels]")
    print(
        f"  cold (no cache): {r['cold_s']:.1f} s = {r['cold_files_per_s']:,.0f} files/s, peak {r['cold_peak_mb']:.0f} MB"
    )
    print(
        f"  from the index cache: {r['cached_s']:.2f} s = {r['cached_files_per_s']:,.0f} files/s "
        f"(runs {', '.join(f'{t:.2f}' for t in r['cached_runs_s'])}; goal >= 200,000 files/s), "
        f"peak {r['cached_peak_mb']:.0f} MB; cache file {r['cache_file_mb']:.0f} MB, written in {r['store_s']:.1f} s "
        f"(that run); imports {r['imports_s']:.2f} s apart"
    )


def print_compare(r: dict) -> None:
    gb = r["bytes"] / 1e9
    print(f"[full compare, {gb:.2f} GB pair, {r['processes']['pairs']} tensor pairs, page cache warm]")

    def line(label: str, s: float, extra: str = "") -> None:
        print(
            f"  {label:34s} {s:6.2f} s = {r['bytes'] / s / 1e6:5.0f} MB/s = {r['numpy_floor_s'] / s:4.0%} of the "
            f"numpy floor, {r['read_floor_s'] / s:4.0%} of the read floor{extra}"
        )

    print(
        f"  read floor (bytes only)            {r['read_floor_s']:6.2f} s = {r['bytes'] / r['read_floor_s'] / 1e6:5.0f} MB/s"
    )
    print(
        f"  numpy floor (np.load + cos + max)  {r['numpy_floor_s']:6.2f} s = {r['bytes'] / r['numpy_floor_s'] / 1e6:5.0f} MB/s"
    )
    line("dumptui, local processes", r["processes"]["s"])
    line("dumptui, one process", r["one"]["s"])
    for n in ("1", "2"):
        c = r[f"local:{n}"]
        line(
            f"dumptui, Dask local cluster {n} worker{'s' if n != '1' else ''}",
            c["s"],
            f" (+ {c['cluster_start_s']:.1f} s start)",
        )


def print_memory(rows: dict) -> None:
    print("[peak resident memory of `dumptui compare`, the largest process]")
    for label, r in rows.items():
        print(f"  {label:22s} {r['bytes'] / 1e9:5.2f} GB: {r['peak_mb']:5.0f} MB peak, {r['s']:.1f} s   goal < 300 MB")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", choices=["bisect", "names", "compare", "memory"])
    ap.add_argument("--names", type=int, default=1_000_000, help="file names to index (default 1,000,000)")
    ap.add_argument("--out", default=os.path.join(HERE, "out"))
    a = ap.parse_args()
    as_installed()
    os.makedirs(a.out, exist_ok=True)
    print(
        f"machine: {os.cpu_count()} CPUs, python {sys.version.split()[0]}, numpy {np.__version__}; "
        f"load average at start {load_average()}"
    )
    results: dict = {}
    if a.only in (None, "bisect"):
        results["bisect"] = bench_bisect(a.out)
        print_bisect(results["bisect"])
    if a.only in (None, "names"):
        results["names"] = bench_names(a.out, a.names)
        print_names(results["names"])
    if a.only in (None, "compare"):
        results["compare"] = bench_compare(a.out)
        print_compare(results["compare"])
    if a.only in (None, "memory"):
        results["memory"] = bench_memory(a.out)
        print_memory(results["memory"])
    print(f"load average at the end {load_average()}")
    with open(os.path.join(a.out, "results_scale.json"), "w") as fh:
        json.dump(results, fh, indent=1)


if __name__ == "__main__":
    main()
