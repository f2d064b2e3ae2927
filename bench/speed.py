#!/usr/bin/env python3
"""The speed goals of issue 20 in one command: each workload beside its numpy floor, measured in the same run,
interleaved (floor, dumptui, floor, dumptui), the minimum of the runs; the ratios printed, and with
`--markdown` the README's Speed rows.

Workloads (generated under --out, default bench/out; `make clean` removes them):
1. `dumptui bisect` of a noisy 3,000-kernel pair (the local-error scan reads and judges every op, replays
   where the op allows): with the index cache, and without it. Floor: a numpy loop over the same pairs
   (np.load, cosine and max abs in float64, one process).
2. `dumptui compare` of a noisy 1 GB pair (116 ops of 1x8x256x256, replay on). Figure: the floor's time over
   ours, i.e. our throughput as a share of the floor's.

Usage: python bench/speed.py [--runs N] [--markdown] [--out DIR]
"""

from __future__ import annotations

import argparse
import os
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


def floor_seconds(ref: str, target: str) -> float:
    """The numpy floor in a process of its own (as a user would run it: numpy's default threading)."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("_NUM_THREADS")}
    out = subprocess.run(
        [sys.executable, "-c", FLOOR, ref, target], capture_output=True, text=True, env=env, check=True
    )
    return float(out.stdout)


def dumptui_seconds(args: list[str], env: dict[str, str]) -> float:
    seconds, _code, _peak = scale.measure([sys.executable, "-m", "dumptui", *args, "-q"], env)
    return seconds


def interleaved(runs: int, ref: str, target: str, args: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(floor, dumptui): the minimum of `runs` interleaved runs of each."""
    floors, ours = [], []
    for _ in range(runs):
        floors.append(floor_seconds(ref, target))
        ours.append(dumptui_seconds(args, env))
    return min(floors), min(ours)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--markdown", action="store_true", help="print the README's Speed rows too")
    ap.add_argument("--out", default=os.path.join(HERE, "out"))
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    cache = os.path.join(a.out, "cache-speed")
    with_cache = dict(scale.ENV, XDG_CACHE_HOME=cache)
    no_cache = dict(scale.ENV, DUMPTUI_NO_INDEX_CACHE="1")
    rows = []
    print(f"machine: {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}; minimum of {a.runs} interleaved runs")

    noisy = engine.demo(a.out, "e2e", 3000, 256)
    ref, target = noisy["ref"], noisy["target"]
    scale.settled(ref, target)
    bisect = ["bisect", ref, target]
    dumptui_seconds(bisect, with_cache)  # fills the index cache (and the page cache)
    for label, env in (("index cached", with_cache), ("no index cache", no_cache)):
        floor, ours = interleaved(a.runs, ref, target, bisect, env)
        rows.append(
            (f"noisy {noisy['kernels']:,}-kernel bisect, {label}", ours, floor, f"{ours / floor:.2f}x the floor")
        )

    big = engine.demo(a.out, "conv-1gb", 120, 1 << 19)
    scale.settled(big["ref"], big["target"])
    compare = ["compare", big["ref"], big["target"]]
    dumptui_seconds(compare, with_cache)
    floor, ours = interleaved(a.runs, big["ref"], big["target"], compare, with_cache)
    rows.append(
        ("noisy 1 GB pair, full compare, replay on", ours, floor, f"throughput {floor / ours:.0%} of the floor's")
    )

    width = max(len(r[0]) for r in rows)
    for name, ours, floor, words in rows:
        print(f"{name:{width}s}  dumptui {ours:6.2f} s  floor {floor:6.2f} s  {words}")
    if a.markdown:
        print("\n| workload (bench/speed.py) | dumptui | numpy floor | ratio |\n|---|---|---|---|")
        for name, ours, floor, words in rows:
            print(f"| {name} | {ours:.2f} s | {floor:.2f} s | {words} |")


if __name__ == "__main__":
    main()
