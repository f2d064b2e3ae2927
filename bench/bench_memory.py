"""The app's memory on the 20,000-op demo: the peak resident set of the app's process and of each of its worker
processes, the shape of the app's resident set over the run (sampled, with the moments the app reports: the
dumps open, the bisection ready, every statistic known), and optionally tracemalloc's top allocation sites.

    python bench/bench_memory.py [--ops 20000] [--size 64] [--dir DIR] [--runs cold,cached] [--trace N]
                                 [--top 25] [--hog 0]

Each run is a fresh interpreter (cold imports) opening the app headless (`App.run_test`, 120x36) on the demo
pair with fresh state, config and cache folders for the first run (`cold`: indexing from nothing, in
processes of their own as the app does for a big dump), the second run reusing the cache the first wrote
(`cached`: the common case, the dumps opened again). A run ends on the app's own completion message for the
whole pair's statistics (`StatisticsProgress` with state done, as the main screen gets it): nothing polls
the screen's fields. `--trace N` starts tracemalloc with N frames a traceback (slower: several times) and
prints the biggest allocation sites once every statistic is known. Goal (issue 34): the app's process peak
<= 250 MB.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GOAL_MB = 250.0

CHILD = r'''
import asyncio, gc, json, os, sys, threading, time
T_SPAWN = float(os.environ["BENCH_T_SPAWN"])
TRACE = int(os.environ["BENCH_TRACE"])
TOP = int(os.environ["BENCH_TOP"])
if TRACE:
    import tracemalloc
    tracemalloc.start(TRACE)
sys.path.insert(0, os.environ["BENCH_REPO"])
import dumptui.cli  # what `dumptui A B` sets up before numpy loads: one BLAS thread, the heap kept
from dumptui.options.pair import PairOptions
from dumptui.present.progress import DONE
from dumptui.tui.app import DumpTuiApp
from dumptui.tui.screens.main import MainScreen

def status(pid="self"):
    """VmRSS and VmHWM of a process in MB (None when it has ended)."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            st = dict(line.split(":", 1) for line in fh if ":" in line)
    except OSError:
        return None
    return int(st["VmRSS"].split()[0]) / 1024, int(st["VmHWM"].split()[0]) / 1024

def children():
    me, found = str(os.getpid()), []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/stat") as fh:
                    text = fh.read()
            except OSError:
                continue
            if text[text.rindex(")") + 2 :].split()[1] == me:
                found.append(pid)
    return found

marks = {}
samples = []  # (seconds since spawn, the app's RSS, the sum of its children's RSS)
workers_peak = {}  # child pid -> the highest RSS seen (a child that ends takes its VmHWM with it)
stop = threading.Event()

def mark(name):
    marks.setdefault(name, round(time.time() - T_SPAWN, 2))

def sampler():
    while not stop.wait(0.25):
        own = status()
        kids = 0.0
        for pid in children():
            st = status(pid)
            if st is not None:
                kids += st[0]
                workers_peak[pid] = max(workers_peak.get(pid, 0.0), st[0], st[1])
        if own is not None:
            samples.append((round(time.time() - T_SPAWN, 2), round(own[0], 1), round(kids, 1)))

finished = asyncio.Event()

class BenchScreen(MainScreen):
    # Textual calls the handlers of every class in the MRO: these run alongside MainScreen's own.
    def on_session_ready(self, msg):
        mark("dumps open")

    def on_bisection_ready(self, msg):
        mark("bisection ready")

    def on_first_probe(self, msg):
        mark("first probe")

    def on_statistics_progress(self, msg):
        if msg.state == DONE:
            mark("every statistic")
            finished.set()

class BenchApp(DumpTuiApp):
    MAIN_SCREEN = BenchScreen

async def main():
    threading.Thread(target=sampler, name="sampler", daemon=True).start()
    app = BenchApp(PairOptions(os.environ["BENCH_REF"], os.environ["BENCH_TARGET"]))
    out = {}
    async with app.run_test(size=(120, 36)):
        await asyncio.wait_for(finished.wait(), timeout=3600)
        scr = app.main
        out["stats"] = f"{scr.stats_done}/{scr.stats_total}"
        out["ops"] = len(scr.model.pairs)
        stop.set()
        rss, hwm = status()
        out["peak_mb"], out["rss_mb"] = round(hwm, 1), round(rss, 1)
        for pid in children():
            st = status(pid)
            if st is not None:
                workers_peak[pid] = max(workers_peak.get(pid, 0.0), st[1])
        out["workers_peak_mb"] = sorted(round(v, 1) for v in workers_peak.values())
        out["marks"] = marks
        out["samples"] = samples
        if TRACE:
            gc.collect()
            cur, peak = tracemalloc.get_traced_memory()
            out["traced_mb"], out["traced_peak_mb"] = round(cur / 2**20, 1), round(peak / 2**20, 1)
            snap = tracemalloc.take_snapshot().filter_traces([tracemalloc.Filter(False, tracemalloc.__file__)])
            out["top"] = [
                (round(s.size / 2**20, 2), s.count, [f"{f.filename.replace(os.environ['BENCH_REPO'] + '/', '')}:{f.lineno}" for f in s.traceback])
                for s in snap.statistics("traceback" if TRACE > 1 else "lineno")[:TOP]
            ]
            out["top_files"] = [
                (round(s.size / 2**20, 2), s.count, s.traceback[0].filename.replace(os.environ['BENCH_REPO'] + '/', ''))
                for s in snap.statistics("filename")[:TOP]
            ]
        print("BENCH " + json.dumps(out))
        sys.stdout.flush()
        scr.controller.close()
        os._exit(0)

asyncio.run(main())
'''


def run_child(ref: str, target: str, scratch: str, trace: int, top: int) -> dict:
    env = dict(
        os.environ,
        BENCH_REPO=REPO,
        BENCH_REF=ref,
        BENCH_TARGET=target,
        BENCH_TRACE=str(trace),
        BENCH_TOP=str(top),
        BENCH_T_SPAWN=repr(time.time()),
        XDG_STATE_HOME=os.path.join(scratch, "state"),  # the app autosaves: never into the user's folders
        XDG_CONFIG_HOME=os.path.join(scratch, "config"),
        XDG_CACHE_HOME=os.path.join(scratch, "cache"),  # the first run indexes cold, the second from its cache
    )
    p = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, env=env, timeout=4000)
    for line in p.stdout.splitlines():
        if line.startswith("BENCH "):
            return dict(json.loads(line.split(" ", 1)[1]))
    raise RuntimeError(f"bench child failed ({p.returncode}): {p.stderr[-2000:]}")


def shape(samples: list[list[float]], marks: dict[str, float], every: float = 2.0) -> list[str]:
    """The app's RSS over the run, one line every `every` seconds (the highest sample in it), the marks between."""
    lines, t_next, pending = [], 0.0, sorted(marks.items(), key=lambda kv: kv[1])
    best: list[float] | None = None
    for s in samples:
        while pending and pending[0][1] <= s[0]:
            name, at = pending.pop(0)
            lines.append(f"      {at:6.1f} s  -- {name}")
        if best is None or s[1] > best[1]:
            best = s
        if s[0] >= t_next:
            lines.append(f"      {best[0]:6.1f} s  app {best[1]:6.0f} MB   workers {best[2]:6.0f} MB")
            best, t_next = None, s[0] + every
    lines += [f"      {at:6.1f} s  -- {name}" for name, at in pending]
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description="dumptui: the app's memory on the demo pair")
    ap.add_argument("--ops", type=int, default=20000)
    ap.add_argument("--size", type=int, default=64)
    ap.add_argument("--dir", help="reuse (or create) the demo pair here")
    ap.add_argument("--runs", default="cold,cached", help="cold, cached or both (the cached run needs the cold)")
    ap.add_argument("--trace", type=int, default=0, help="tracemalloc frames per site (0: off)")
    ap.add_argument("--top", type=int, default=25, help="allocation sites printed with --trace")
    ap.add_argument("--hog", type=int, default=0, help="busy-loop processes running meanwhile")
    ap.add_argument("--json", help="also write every figure here")
    a = ap.parse_args()
    sys.path.insert(0, REPO)
    from dumptui.core.demo.residual import write_demo

    root = a.dir or os.path.join(tempfile.gettempdir(), f"dumptui-bench-tui-{a.ops}-{a.size}")
    ref, target = os.path.join(root, "ref"), os.path.join(root, "target")
    if not (os.path.isdir(ref) and os.path.isdir(target)):
        t = time.perf_counter()
        write_demo(root, n_ops=a.ops, size=a.size)
        print(
            f"wrote the demo pair ({a.ops} ops, {a.size} elements per tensor) to {root} in {time.perf_counter() - t:.1f} s"
        )
    runs = [r for r in a.runs.split(",") if r]
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(a.hog)]
    results = {}
    try:
        with tempfile.TemporaryDirectory(prefix="dumptui-bench-xdg-") as scratch:
            for name in ("cold", "cached"):
                if name in runs or (name == "cold" and "cached" in runs):  # the cached run reads the cold's cache
                    results[name] = run_child(ref, target, scratch, a.trace if name in runs else 0, a.top)
    finally:
        for h in hogs:
            h.kill()
            h.wait()
    load = os.getloadavg()
    print(
        f"demo: {root}, {os.cpu_count()} CPUs, load {load[0]:.1f} {load[1]:.1f}, {a.hog} busy loop(s), "
        f"python {sys.version.split()[0]}{', tracemalloc on' if a.trace else ''}"
    )
    for name in runs:
        r = results[name]
        print(
            f"  {name:6} the app's process: peak {r['peak_mb']:.0f} MB, {r['rss_mb']:.0f} MB once every statistic "
            f"was known ({r['stats']} tensor pairs, {r['ops']} op pairs, {r['marks']['every statistic']:.1f} s)   "
            f"goal <= {GOAL_MB:.0f} MB"
        )
        print(f"         worker processes' peaks: {', '.join(f'{w:.0f}' for w in r['workers_peak_mb'])} MB")
        print("\n".join(shape(r["samples"], r["marks"])))
        if "top" in r:
            print(f"         traced now {r['traced_mb']:.0f} MB (peak {r['traced_peak_mb']:.0f} MB); top sites:")
            for size, count, frames in r["top"]:
                print(f"      {size:7.2f} MB {count:8d}  {frames[0]}")
                for f in frames[1:]:
                    print(f"                          {f}")
            print("         by file (the innermost frame):")
            for size, count, name in r["top_files"]:
                print(f"      {size:7.2f} MB {count:8d}  {name}")
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(results, fh)
    return 0


if __name__ == "__main__":
    sys.exit(main())
