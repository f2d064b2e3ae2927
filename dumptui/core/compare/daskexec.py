"""Tensor-pair work as Dask distributed tasks: `dumptui compare --dask SCHEDULER` (or `--dask local:N`).

Each task is a batch of pairs; a worker reads the pairs' files where they are (a shared file system, or the
same dump at another path on each host: `path_map`) and sends back the statistics records only, never
tensors. Verdicts are made here, from the same statistics the local run computes, so the result is the same.
Dask reschedules the tasks of a worker that dies; a task that fails is retried (`RETRIES`). Dask is an
optional extra (`pip install 'dumptui[dask]'`), imported only when a cluster is asked for.

No cluster of our own: a scheduler address is any Dask scheduler (`dask scheduler` + `dask worker` on each
host, dask-jobqueue, dask-kubernetes...); `local:N` starts a `distributed.LocalCluster` of N single-threaded
worker processes for the run.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterator
from typing import Any

from dumptui.core.compare.processes import PairJob, PairOutcome, TensorSpec, run_job
from dumptui.core.io.errors import UsageError
from dumptui.core.io.procs import single_threaded_blas

BATCH_BYTES = 64 << 20  # a task holds pairs up to about this many bytes (both sides)...
BATCH_PAIRS = 256  # ...and at most this many pairs: a scheduler spends about a millisecond per task
RETRIES = 2


def _spec_bytes(spec: TensorSpec) -> int:
    import numpy as np

    return math.prod(spec[4]) * np.dtype(spec[5]).itemsize


def batches(jobs: list[PairJob]) -> list[list[PairJob]]:
    """Jobs in tasks of at most BATCH_BYTES / BATCH_PAIRS, biggest pairs first (a huge pair is a task alone)."""
    out: list[list[PairJob]] = []
    current: list[PairJob] = []
    size = 0
    for job in sorted(jobs, key=lambda j: -(_spec_bytes(j[1]) + _spec_bytes(j[2]))):
        n = _spec_bytes(job[1]) + _spec_bytes(job[2])
        if current and (size + n > BATCH_BYTES or len(current) >= BATCH_PAIRS):
            out.append(current)
            current, size = [], 0
        current.append(job)
        size += n
    if current:
        out.append(current)
    return out


def _absolute(spec: TensorSpec) -> TensorSpec:
    """A worker runs in a folder of its own (often on another host): a path relative to here means
    nothing there, and would read nothing or another file of the same name."""
    return (os.path.abspath(spec[0]),) + spec[1:]


def _mapped(spec: TensorSpec, path_map: list[tuple[str, str]]) -> TensorSpec:
    path = spec[0]
    for local, remote in path_map:
        if path == local or path.startswith(local.rstrip(os.sep) + os.sep):
            return (remote.rstrip(os.sep) + path[len(local.rstrip(os.sep)) :],) + spec[1:]
    return spec


def run_batch(jobs: list[PairJob], kl: bool) -> list[PairOutcome]:
    """One task, on a worker: every pair of the batch."""
    single_threaded_blas()
    return [run_job(job, kl) for job in jobs]


def parse_path_map(items: list[str]) -> list[tuple[str, str]]:
    """`LOCAL=REMOTE` items: a file under LOCAL here is under REMOTE on the workers."""
    out = []
    for item in items:
        local, sep, remote = item.partition("=")
        if not sep or not local or not remote:
            raise UsageError(f"--worker-path {item!r}: expected LOCAL=REMOTE")
        out.append((os.path.abspath(local), remote))
    return out


class DaskExecutor:
    """Runs pair jobs on a Dask cluster: an existing scheduler (`tcp://host:8786`) or `local:N`. Use as a
    context manager: the client (and a local cluster) is closed at the end."""

    def __init__(self, scheduler: str, path_map: list[tuple[str, str]] | None = None):
        try:
            import distributed
        except ImportError:
            raise UsageError("--dask needs Dask distributed, an optional extra: pip install 'dumptui[dask]'") from None
        self.path_map = path_map or []
        self.cluster: Any = None
        if scheduler.startswith("local:") or scheduler == "local":
            n = scheduler.partition(":")[2] or str(os.cpu_count() or 1)
            if not n.isdigit() or int(n) < 1:
                raise UsageError(f"--dask {scheduler}: expected local:N with N workers, N >= 1")
            self.cluster = distributed.LocalCluster(
                n_workers=int(n), threads_per_worker=1, processes=True, dashboard_address=":0"
            )
            self.client = distributed.Client(self.cluster)
        else:
            try:
                self.client = distributed.Client(scheduler, timeout="10s")
            except OSError as e:
                raise UsageError(f"--dask {scheduler}: cannot reach the scheduler ({e})") from None

    def __enter__(self) -> DaskExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.client.close()
        if self.cluster is not None:
            self.cluster.close()

    @property
    def workers(self) -> int:
        return len(self.client.scheduler_info().get("workers", {}))

    def run(self, jobs: list[PairJob], kl: bool, cancelled: Callable[[], bool] | None = None) -> Iterator[PairOutcome]:
        from distributed import as_completed

        jobs = [(i, _absolute(r), _absolute(t), tol) for i, r, t, tol in jobs]
        if self.path_map:
            jobs = [(i, _mapped(r, self.path_map), _mapped(t, self.path_map), tol) for i, r, t, tol in jobs]
        futures = [
            self.client.submit(run_batch, batch, kl, pure=False, retries=RETRIES) for batch in batches(jobs) if batch
        ]
        try:
            for fut in as_completed(futures):
                if cancelled and cancelled():
                    break
                yield from fut.result()
        finally:
            self.client.cancel(futures)
