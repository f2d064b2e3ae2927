"""Tensor-pair work as Dask distributed tasks: `dumptui compare --dask SCHEDULER` (or `--dask local:N`).

The cluster is an executor (core/io/executor.py) like the local processes: the session's work (tensor pairs,
replays) is submitted to it as tasks made by the one batch policy. Each task is a batch of pairs; a worker reads the pairs' files where they are (a shared file system, or the
same dump at another path on each host: `path_map`) and sends back the statistics records only, never
tensors. Verdicts are made here, from the same statistics the local run computes, so the result is the same.
Dask reschedules the tasks of a worker that dies; a task that fails is retried (`RETRIES`). Dask is an
optional extra (`pip install 'dumptui[dask]'`), imported only when a cluster is asked for.

No cluster of our own: a scheduler address is any Dask scheduler (`dask scheduler` + `dask worker` on each
host, dask-jobqueue, dask-kubernetes...); `local:N` starts a `distributed.LocalCluster` of N single-threaded
worker processes for the run.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, TypeVar

from dumptui.core.io.errors import UsageError
from dumptui.core.io.executor import Runs, Task

RETRIES = 2
A = TypeVar("A")
R = TypeVar("R")


def _mapped(path: str, path_map: list[tuple[str, str]]) -> str:
    for local, remote in path_map:
        if path == local or path.startswith(local.rstrip(os.sep) + os.sep):
            return remote.rstrip(os.sep) + path[len(local.rstrip(os.sep)) :]
    return path


def parse_path_map(items: list[str]) -> list[tuple[str, str]]:
    """`LOCAL=REMOTE` items: a file under LOCAL here is under REMOTE on the workers."""
    out = []
    for item in items:
        local, sep, remote = item.partition("=")
        if not sep or not local or not remote:
            raise UsageError(f"--worker-path {item!r}: expected LOCAL=REMOTE")
        out.append((os.path.abspath(local), remote))
    return out


def _single_threaded(fn_item: tuple[Callable[[Any], Any], Any]) -> Any:
    """A task on a Dask worker: one BLAS thread there too."""
    from dumptui.core.io.procs import single_threaded_blas

    single_threaded_blas()
    fn, item = fn_item
    return fn(item)


class DaskCluster(Runs):
    """An executor on a Dask cluster: an existing scheduler (`tcp://host:8786`) or `local:N`. Its workers
    read files by the paths `where` gives (absolute, then `path_map`). Use as a context manager: the client
    (and a local cluster) is closed at the end."""

    local = False
    offload = False

    def __init__(self, scheduler: str, path_map: list[tuple[str, str]] | None = None):
        super().__init__()
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

    def __enter__(self) -> DaskCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self, kill: bool = False) -> None:
        self.closed = True
        self._wake_all()
        self.client.close()
        if self.cluster is not None:
            self.cluster.close()

    @property
    def workers(self) -> int:  # type: ignore[override]
        return max(1, len(self.client.scheduler_info().get("workers", {})))

    def where(self, path: str) -> str:
        """A worker runs in a folder of its own (often on another host): a path relative to here means
        nothing there, and would read nothing or another file of the same name."""
        return _mapped(os.path.abspath(path), self.path_map)

    def submit(self, fn: Callable[[A], R], item: A) -> Task[R]:
        # Dask reschedules the task of a worker that dies; a task that fails is retried
        future: Task[R] = self.client.submit(_single_threaded, (fn, item), pure=False, retries=RETRIES)
        return future
