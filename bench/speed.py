#!/usr/bin/env python3
"""The speed goals of issue 20 in one command: each workload beside its numpy floor, measured in the same run,
interleaved (floor, dumptui, floor, dumptui), the minimum of the runs; the ratios printed, and with
`--markdown` the README's Speed rows.

Workloads (generated under --out, default bench/out; `make clean` removes them):
1. `dumptui bisect` of a noisy 3,000-kernel pair (the local-error scan reads and judges every op, replays
   where the op allows): with the index cache, and without it. Floor: a numpy loop over the same pairs
   (np.load, cosine and max abs in float64, one process).
2. `dumptui bisect` of the 20,000-op demo (the app's bench_tui pair: 64-element tensors), index cached.
3. `dumptui compare` of a noisy 1 GB pair (116 ops of 1x8x256x256, replay on). Figure: the floor's time over
   ours, i.e. our throughput as a share of the floor's.

Usage: python bench/speed.py [--runs N] [--markdown] [--out DIR]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, REPO)

import bench_scale as scale  # noqa: E402  (measure, settled)

import bench as engine  # noqa: E402  (the demo pairs; sets single-threaded BLAS)

FLOOR = (
    "import sys, time, glob, os\n"
    "import numpy as np\n"
    "def key(f):\n"
    "    b = os.path.basename(f).split('.')\n"
    "    return tuple(b[:2] + b[5:])\n"
    "t0 = time.perf_counter()\n"
    "r = {key(f): f for f in glob.glob(os.path.join(sys.argv[1], 'rank_0', 'Net', '*', '*', '*.npy'))}\n"
    "t = {key(f): f for f in glob.glob(os.path.join(sys.argv[2], 'rank_0', 'Net', '*', '*', '*.npy'))}\n"
    "for k in r.keys() & t.keys():\n"
    "    a, b = np.load(r[k]).astype(np.float64).ravel(), np.load(t[k]).astype(np.float64).ravel()\n"
    "    if a.shape != b.shape:\n"
    "        continue\n"
    "    na, nb = np.linalg.norm(a), np.linalg.norm(b)\n"
    "    cos = float(np.dot(a, b) / (na * nb)) if na and nb else 0.0\n"
    "    mx = float(np.max(np.abs(a - b))) if a.size else 0.0\n"
    "print(time.perf_counter() - t0)\n"
)


CPU = {"floor": [], "dumptui": []}  # CPU seconds (user + system, every process of the run) per workload


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def floor_seconds(ref: str, target: str) -> float:
    """The numpy floor in a process of its own (as a user would run it: numpy's default threading)."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("_NUM_THREADS")}
    cpu = children_cpu()
    out = subprocess.run(
        [sys.executable, "-c", FLOOR, ref, target], capture_output=True, text=True, env=env, check=True
    )
    CPU["floor"].append(children_cpu() - cpu)
    return float(out.stdout)


def dumptui_seconds(args: list[str], env: dict[str, str]) -> float:
    cpu = children_cpu()
    seconds, _code, _peak = scale.measure([sys.executable, "-m", "dumptui", *args, "-q"], env)
    CPU["dumptui"].append(children_cpu() - cpu)
    return seconds


def interleaved(runs: int, ref: str, target: str, args: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(floor, dumptui): the minimum of `runs` interleaved runs of each."""
    floors, ours = [], []
    for _ in range(runs):
        floors.append(floor_seconds(ref, target))
        ours.append(dumptui_seconds(args, env))
    return min(floors), min(ours)


def cpu_ratio(runs: int) -> str:
    """The CPU seconds of the last `runs` runs of each, the minimum each: what a loaded machine changes least
    (the floor's process also counts its interpreter start; ours its worker processes)."""
    floor, ours = min(CPU["floor"][-runs:]), min(CPU["dumptui"][-runs:])
    return f"CPU {ours:.2f} s vs {floor:.2f} s: {ours / floor:.2f}x"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--markdown", action="store_true", help="print the README's Speed rows too")
    ap.add_argument("--out", default=os.path.join(HERE, "out"))
    a = ap.parse_args()
    scale.as_installed()
    os.makedirs(a.out, exist_ok=True)
    cache = os.path.join(a.out, "cache-speed")
    with_cache = dict(scale.ENV, XDG_CACHE_HOME=cache)
    no_cache = dict(scale.ENV, DUMPTUI_NO_INDEX_CACHE="1")
    rows = []
    print(f"machine: {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}; minimum of {a.runs} interleaved runs")
    start_load = os.getloadavg()[0]

    noisy = engine.demo(a.out, "e2e", 3000, 256)
    ref, target = noisy["ref"], noisy["target"]
    scale.settled(ref, target)
    bisect = ["bisect", ref, target]
    dumptui_seconds(bisect, with_cache)  # fills the index cache (and the page cache)
    for label, env in (("index cached", with_cache), ("no index cache", no_cache)):
        floor, ours = interleaved(a.runs, ref, target, bisect, env)
        rows.append(
            (
                f"noisy {noisy['kernels']:,}-kernel bisect, {label}",
                ours,
                floor,
                f"{ours / floor:.2f}x the floor",
                cpu_ratio(a.runs),
            )
        )

    demo = engine.demo(a.out, "demo-20k", 20000, 64)  # the app's demo: 20,000 ops of 64-element tensors
    scale.settled(demo["ref"], demo["target"])
    bisect = ["bisect", demo["ref"], demo["target"]]
    dumptui_seconds(bisect, with_cache)
    floor, ours = interleaved(a.runs, demo["ref"], demo["target"], bisect, with_cache)
    rows.append(
        (
            f"noisy {demo['kernels']:,}-kernel demo bisect, index cached",
            ours,
            floor,
            f"{ours / floor:.2f}x the floor",
            cpu_ratio(a.runs),
        )
    )

    big = engine.demo(a.out, "conv-1gb", 120, 1 << 19)
    scale.settled(big["ref"], big["target"])
    compare = ["compare", big["ref"], big["target"]]
    dumptui_seconds(compare, with_cache)
    floor, ours = interleaved(a.runs, big["ref"], big["target"], compare, with_cache)
    rows.append(
        (
            "noisy 1 GB pair, full compare, replay on",
            ours,
            floor,
            f"throughput {floor / ours:.0%} of the floor's",
            cpu_ratio(a.runs),
        )
    )

    print(f"load average {start_load:.2f} at the start, {os.getloadavg()[0]:.2f} at the end")
    width = max(len(r[0]) for r in rows)
    for name, ours, floor, words, cpu in rows:
        print(f"{name:{width}s}  dumptui {ours:6.2f} s  floor {floor:6.2f} s  {words}  ({cpu})")
    if a.markdown:
        print("\n| workload (bench/speed.py) | dumptui | numpy floor | ratio | CPU time, dumptui vs floor |")
        print("|---|---|---|---|---|")
        for name, ours, floor, words, cpu in rows:
            print(f"| {name} | {ours:.2f} s | {floor:.2f} s | {words} | {cpu.removeprefix('CPU ')} |")


if __name__ == "__main__":
    main()
