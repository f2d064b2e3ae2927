"""What the command line sets up for its process before numpy loads: one BLAS thread and a heap that keeps
freed buffers; and ctrl+c, which ends its worker processes. Each is checked in a fresh interpreter, as a
user's `dumptui` starts."""

from __future__ import annotations

import json
import os
import platform
import signal
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _run(code: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_NUM_THREADS") and not k.startswith("MALLOC_")}
    env["PYTHONPATH"] = REPO
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="counts threads in /proc (Linux)")
@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="OpenBLAS starts no thread of its own on one CPU")
def test_importing_the_cli_leaves_numpy_one_blas_thread() -> None:
    # numpy was loaded by the CLI's own imports before main() set the thread count: OpenBLAS then ran a thread
    # per core that spun between small dot products
    out = _run(
        "import dumptui.cli, numpy, os; numpy.dot(numpy.ones(64), numpy.ones(64)); print(len(os.listdir('/proc/self/task')))"
    )
    assert int(out) == 1


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="tunes glibc's malloc; other C libraries are left alone")
def test_freed_tensor_buffers_are_reused_not_faulted_in_again() -> None:
    # a chunk's arrays (a read payload, its float64 copies, masks), freed before the next chunk's: with glibc's
    # defaults the heap was trimmed after each round and every page faulted in again (1,760 a round here); the
    # heap kept by steady_heap reuses the same pages
    code = (
        "import dumptui.cli, resource, numpy as np\n"
        "def chunk():\n"
        "    a, b, c, d = np.ones(1 << 18), np.ones(1 << 19), np.ones(1 << 19), np.ones(1 << 17)\n"
        "chunk()\n"
        "before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt\n"
        "for i in range(100):\n"
        "    chunk()\n"
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)\n"
    )
    assert int(_run(code)) < 100 * 1760 // 10


def test_the_apps_process_gives_freed_buffers_back_and_its_workers_keep_them() -> None:
    # the app's process reads no tensor (lean_heap: glibc's defaults, freed memory given back, so the same
    # rounds fault their pages in again); a worker's start makes its heap steady again, also when it was forked
    # from the app's process
    code = (
        "import dumptui.cli, os, resource, numpy as np\n"
        "from dumptui.core.io.procs import lean_heap, worker_start\n"
        "def chunk():\n"
        "    a, b, c, d = np.ones(1 << 18), np.ones(1 << 19), np.ones(1 << 19), np.ones(1 << 17)\n"
        "def faults():\n"
        "    chunk()\n"
        "    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt\n"
        "    for i in range(100):\n"
        "        chunk()\n"
        "    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before\n"
        "lean_heap()\n"
        "lean = faults()\n"
        "worker_start(0, os.getppid())\n"
        "print(lean, faults())\n"
    )
    lean, steady = map(int, _run(code).split())
    assert lean > 100 * 1760 // 2 and steady < 100 * 1760 // 10


def test_the_heap_settings_reach_the_processes_the_cli_starts() -> None:
    # worker processes are spawned interpreters: glibc reads these when they start
    out = _run(
        "import dumptui.cli, os; print(os.environ['MALLOC_MMAP_THRESHOLD_'], os.environ['MALLOC_TRIM_THRESHOLD_'])"
    )
    from dumptui.core.io.procs import HEAP_BUFFER_MAX, HEAP_KEPT_FREE

    assert out.split() == [str(HEAP_BUFFER_MAX), str(HEAP_KEPT_FREE)]


CTRL_C_SETUP = """
import multiprocessing, os, signal, sys, threading
from dumptui.core.io.procs import ctrl_c_ends_children

{before}
child = multiprocessing.get_context("fork").Process(target=signal.pause)
child.start()
with ctrl_c_ends_children() as ctrl_c:
    installed = signal.getsignal(signal.SIGINT) not in (signal.SIG_IGN, signal.default_int_handler)
    try:
        os.kill(os.getpid(), signal.SIGINT)
        signal.pause() if installed else None
    except KeyboardInterrupt:
        pass
restored = signal.getsignal(signal.SIGINT)
if child.is_alive() and not ctrl_c.happened:
    child.kill()
child.join()
print(installed, ctrl_c.happened, child.exitcode, restored is signal.SIG_IGN)
"""


def _ctrl_c(before: str) -> list[str]:
    return subprocess.run(
        [sys.executable, "-c", CTRL_C_SETUP.format(before=before)],
        env=dict(os.environ, PYTHONPATH=REPO),
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout.split()


@pytest.mark.skipif(not hasattr(signal, "pause"), reason="POSIX signals")
def test_ctrl_c_kills_the_worker_processes_in_its_handler_and_is_remembered() -> None:
    # the worker waits for good: only the handler's SIGKILL ends it (exit code -9; else the join never returns)
    installed, happened, exitcode, ignored = _ctrl_c("signal.signal(signal.SIGINT, signal.default_int_handler)")
    assert (installed, happened, exitcode, ignored) == ("True", "True", "-9", "False")


@pytest.mark.skipif(not hasattr(signal, "pause"), reason="POSIX signals")
def test_a_command_started_with_ctrl_c_ignored_keeps_ignoring_it() -> None:
    # a background job of a shell without job control: SIGINT ignored, and left so (the worker not killed)
    installed, happened, exitcode, ignored = _ctrl_c("signal.signal(signal.SIGINT, signal.SIG_IGN)")
    assert (installed, happened, exitcode, ignored) == ("False", "False", "-9", "True")


@pytest.mark.parametrize("command", ["bisect", "compare"])
def test_a_scan_runs_without_the_cyclic_gc_and_leaves_it_as_it_was(demo_pair, command) -> None:
    """A scan makes hundreds of thousands of objects and no garbage cycles: the cyclic GC only walked them
    (~100 ms of a noisy 3,000-kernel bisect's 1.4 s). Off while the command compares, on again once it ends
    (a caller in the same process keeps it), and no cycle is left behind for it."""
    code = (
        "import gc, json, sys\n"
        "from dumptui.cli.main import main\n"
        "from dumptui.core.search import compare_all, scan\n"
        "seen = []\n"
        "def spying(real):\n"
        "    def spy(*a, **k):\n"
        "        seen.append(gc.isenabled())\n"
        "        return real(*a, **k)\n"
        "    return spy\n"
        "scan.evaluate_all = spying(scan.evaluate_all)\n"
        "compare_all.evaluate_all = spying(compare_all.evaluate_all)\n"
        "gc.collect()\n"
        f"code = main([{command!r}, {demo_pair.ref!r}, {demo_pair.target!r}, '-q'])\n"
        "print(json.dumps([code, seen, gc.isenabled(), gc.collect()]), file=sys.stderr)\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.endswith("_NUM_THREADS") and not k.startswith("MALLOC_")}
    env["PYTHONPATH"] = REPO
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    code_, seen, enabled_after, cycles = json.loads(done.stderr.strip().splitlines()[-1])
    assert code_ == 1  # the planted divergence found
    assert seen and not any(seen)  # every compare of the command ran with the cyclic GC off
    assert enabled_after is True and cycles == 0
