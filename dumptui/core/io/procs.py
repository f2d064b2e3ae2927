"""What every process of ours that does numpy work needs: one BLAS thread, and (for pool workers) a lower
priority and an end when the parent ends. Imports no numpy: `single_threaded_blas` must run before it is."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

PARENT_CHECK_SECONDS = 0.5


def single_threaded_blas() -> None:
    """One BLAS thread per process, unless the user chose a number: our dot products are on 64K-element chunks,
    where BLAS threads only add synchronisation, and they oversubscribe the cores our worker processes use
    (OpenBLAS threads spin). Must run before numpy is imported; spawned workers inherit it."""
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, "1")


# glibc's malloc: buffers up to this size come from the heap, and the heap is given back to the system only
# above this much free memory at its top (the defaults: a threshold that moves with the sizes freed, and a trim at
# twice it)
HEAP_BUFFER_MAX = 32 << 20
HEAP_KEPT_FREE = 64 << 20
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # mallopt's parameter numbers (malloc.h)
LEAN_BUFFER_MAX = LEAN_KEPT_FREE = 128 << 10  # glibc's defaults (where its adaptive threshold starts)


def steady_heap() -> None:
    """Reuse freed memory instead of giving it back to the system between tensors. A compare reads each chunk
    into a fresh array of a few hundred KB; with glibc's defaults each one was a new memory map or a heap
    trimmed and grown again, and every page of it a fault and a page cleared by the kernel (a large compare
    spent a third of its CPU there; docs/speed.md, measurements behind the design), peak memory unchanged. Set for this process (mallopt) and, by the environment, for the processes it starts;
    nothing where the C library is not glibc."""
    os.environ.setdefault("MALLOC_MMAP_THRESHOLD_", str(HEAP_BUFFER_MAX))
    os.environ.setdefault("MALLOC_TRIM_THRESHOLD_", str(HEAP_KEPT_FREE))
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # not glibc (musl, macOS): its own allocator, left as it is
        return
    mallopt(_M_MMAP_THRESHOLD, HEAP_BUFFER_MAX)
    mallopt(_M_TRIM_THRESHOLD, HEAP_KEPT_FREE)


def lean_heap() -> None:
    """For a process that reads no tensor data itself (the app's: its worker processes read and compute): freed
    memory given back to the system as glibc does by default, not kept for the next tensor's buffers as
    `steady_heap` keeps it. The app's heap holds the session's records for good and frees the transient
    objects of judging them; with 64 MB kept free its peak on the 20,000-op demo was ~15 MB higher
    (docs/speed.md). Its spawned workers still start with `steady_heap`'s settings (the environment)."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # not glibc: its own allocator, left as it is
        return
    mallopt(_M_MMAP_THRESHOLD, LEAN_BUFFER_MAX)
    mallopt(_M_TRIM_THRESHOLD, LEAN_KEPT_FREE)


def worker_start(nice: int, parent: int) -> None:
    """A pool worker's initializer: below the UI process in the scheduler's eyes (keys first, statistics
    after), and gone soon after its parent. A spawned worker holds both ends of its job queue, so it never
    sees the parent's end as closed: when the parent ends without closing the pool (killed, `os._exit`),
    only this watch ends the worker. `parent` comes from the parent itself: a worker that starts after its
    parent has ended must see that too. Ctrl+C reaches the whole foreground process group: the parent alone
    answers it (it ends the pool), a worker does not print a KeyboardInterrupt traceback of its own. A worker
    reads and computes tensors: its heap is steady (`steady_heap`), also when it was forked from a process
    that keeps a lean one (`lean_heap`: the app's)."""
    steady_heap()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with contextlib.suppress(OSError):
        os.nice(nice)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_CHECK_SECONDS)
        os._exit(0)

    threading.Thread(target=watch, name="dumptui-parent-watch", daemon=True).start()


def start_resource_tracker() -> None:
    """multiprocessing's resource tracker, started with the real stderr: a UI that captures sys.stderr (Textual
    does) gives it a file number of -1, and spawning then fails with "bad value(s) in fds_to_keep"."""
    from multiprocessing import resource_tracker

    captured = sys.stderr
    sys.stderr = sys.__stderr__
    try:
        resource_tracker.ensure_running()
    finally:
        sys.stderr = captured


class CtrlC:
    """Whether ctrl+c came while `ctrl_c_ends_children` was in force."""

    def __init__(self) -> None:
        self.happened = False


@contextmanager
def ctrl_c_ends_children() -> Iterator[CtrlC]:
    """Ctrl+C kills this process's worker processes at once, in the signal handler itself, then raises
    KeyboardInterrupt as Python does. The pools also end their workers where they catch KeyboardInterrupt, but
    Python swallows one raised inside a finaliser (a `__del__`, a weakref callback: "Exception ignored"): the
    command then went on waiting for workers that wait for good (they ignore SIGINT), and never ended. With the
    workers gone, such a wait ends (a broken pool), and `happened` tells the caller it was ctrl+c, not a failure.
    Only in the main thread, and only where SIGINT has Python's default handler (not where it is ignored, as in
    a background job, nor where a caller installed its own)."""
    state = CtrlC()
    if threading.current_thread() is not threading.main_thread() or (
        signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    ):
        yield state
        return
    installer = os.getpid()

    def interrupted(signum: int, frame: object) -> None:
        if os.getpid() == installer:  # not in a worker forked a moment ago, before it ignores SIGINT
            state.happened = True
            import multiprocessing

            for child in multiprocessing.active_children():
                with contextlib.suppress(OSError, ValueError):  # already reaped, or closed
                    child.kill()
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, interrupted)
    try:
        yield state
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
