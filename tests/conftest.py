"""Shared test helpers. Tests that need ../shared/fixtures skip with a visible reason when it is absent;
everything else generates what it needs."""

from __future__ import annotations

import os

import numpy as np
import pytest
from helpers.common import need_shared, renamed_copy


@pytest.fixture(scope="session", autouse=True)
def _private_cache_folder(tmp_path_factory):
    """The persistent index cache of every test (and of the CLI runs they start) lives in a folder of this
    session, never in the user's ~/.cache."""
    os.environ["XDG_CACHE_HOME"] = str(tmp_path_factory.mktemp("xdg-cache"))


@pytest.fixture(autouse=True)
def own_state_and_config(tmp_path_factory, monkeypatch):
    """Each test its own XDG state and config folders: the app autosaves bisections and settings there, and a
    test must neither find another's autosave (a resume dialog) nor touch the user's."""
    home = tmp_path_factory.mktemp("xdg")
    monkeypatch.setenv("XDG_STATE_HOME", str(home / "state"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "config"))
    return home


@pytest.fixture(scope="module")
def commands_share_one_pool():
    """The in-process commands of a module (compare, bisect, report via `cli.main`) share one set of worker
    processes for the module's life instead of forking cpu_count workers each: a compare starts its workers
    before it knows the dump is small, and a fork of a big pytest process was a quarter of a fuzz example's
    time. The commands run the same code: the executor each asks for (core/io/executor.py `command_processes`)
    is the module's, which a command's end does not close, forked only when work goes to it (a command's
    `start` at its beginning is left out). Modules about the processes themselves (their start, ctrl+c, their
    end) do not use this."""
    from dumptui.core.io import executor

    class KeptProcesses(executor.LocalProcesses):
        def start(self) -> None:  # the workers forked when work first goes to them, not for every module
            pass

        def close(self, kill: bool = False) -> None:  # a command's end: the next command of the module uses it
            pass

        def end(self) -> None:
            executor.LocalProcesses.close(self, kill=True)

    kept: dict[int, KeptProcesses] = {}

    def shared(workers: int) -> executor.LocalProcesses | executor.InProcess:
        if workers < 2:
            return executor.InProcess()
        if workers not in kept:
            kept[workers] = KeptProcesses(workers)
        return kept[workers]

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(executor, "command_processes", shared)
        yield
    for ex in kept.values():
        ex.end()


@pytest.fixture(scope="module")
def apps_share_one_pool():
    """The apps (and controllers) a module starts share one set of worker processes for the module's life: each
    controller spawned cpu_count workers of its own (numpy and the engine imported in each, ~0.3 s of CPU) and
    killed them at its quit. The pool is the engine's LocalProcesses, run as it is; only its close at an app's
    quit is left to the module's end. Modules about those processes (their start, nice, ctrl+c, `q` ending them)
    do not use this."""
    from dumptui.core.io.executor import LocalProcesses
    from dumptui.present import controller

    class KeptPool(LocalProcesses):
        def close(self, kill: bool = False) -> None:  # an app's quit: the next app of the module uses it
            pass

        def end(self) -> None:
            LocalProcesses.close(self, kill=True)

    pools: dict[tuple[int | None, int, bool], KeptPool] = {}

    def shared(workers: int | None = None, *, nice: int = 0, offload: bool = False) -> KeptPool:
        if (workers, nice, offload) not in pools:
            pools[workers, nice, offload] = KeptPool(workers, nice=nice, offload=offload)
        return pools[workers, nice, offload]

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(controller, "LocalProcesses", shared)
        yield
    for pool in pools.values():
        pool.end()


@pytest.fixture
def fixtures():
    return need_shared()


@pytest.fixture(scope="session")
def demo_pair(tmp_path_factory):
    """A small demo pair (60 kernels) written once per test session."""
    from dumptui.core.demo.residual import write_demo

    root = tmp_path_factory.mktemp("demo")
    return write_demo(str(root), n_ops=60, size=512)


@pytest.fixture(scope="session")
def clean_demo_pair(tmp_path_factory):
    """The demo without its fp16 region: a clean pair (bisection, not a scan) but for the planted bug."""
    from dumptui.core.demo.residual import write_demo

    root = tmp_path_factory.mktemp("clean_demo")
    return write_demo(str(root), n_ops=60, size=512, fp16_region=None)


@pytest.fixture(scope="session")
def renamed_demo_pair(tmp_path_factory):
    """The demo with its planted op renamed on the target (Add -> AddV2): paired by position, both names."""
    from dumptui.core.demo.residual import write_demo

    root = tmp_path_factory.mktemp("renamed_demo")
    info = write_demo(str(root / "src"), n_ops=60, size=512)
    scope = info.planted.rsplit("/", 1)[0]
    os.makedirs(root / "demo", exist_ok=True)
    os.rename(info.ref, root / "demo" / "ref")
    renamed_copy(info.target, str(root / "demo" / "target"), scope, "Add", "AddV2")
    return root, info.planted, f"{scope}/AddV2-op0"


@pytest.fixture(scope="session")
def inf_demo_pair(tmp_path_factory):
    """The clean demo whose planted op writes 216 +Inf on the target: a culprit with Inf in its output."""
    import shutil

    from dumptui.core.demo.residual import write_demo

    root = tmp_path_factory.mktemp("inf_demo")
    info = write_demo(str(root / "src"), n_ops=60, size=512, fp16_region=None)
    os.makedirs(root / "demo", exist_ok=True)
    os.rename(info.ref, root / "demo" / "ref")
    shutil.copytree(info.target, root / "demo" / "target")
    leaf = info.planted.replace("/", "_")
    out = next(
        os.path.join(r, f)
        for r, _d, fs in os.walk(root / "demo" / "target")
        for f in fs
        if leaf in f and ".output.0." in f
    )
    a = np.load(out)
    a.reshape(-1)[:216] = np.inf
    np.save(out, a, allow_pickle=False)
    return root, info.planted


# ---------------------------------------------------------------------------------------------- markers
# Set here from where a test lives and what its module starts, so that no test file has to remember them:
# `make test-fast` leaves out what is slow, starts processes or drives the app.
SLOW_MODULES = {
    "test_one_judgement.py",
    "test_one_judgement_fixtures.py",
    "test_one_answer_per_unit.py",
    "test_consistency.py",
    "test_thresholds_every_mode.py",
}


def _starts_processes(path: str) -> bool:
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except OSError:
        return False
    # run_here: the CLI in this process, its module's commands sharing a pool of worker processes
    words = ("run_cli", "run_here", "subprocess", "multiprocessing", "LocalProcesses")
    return any(word in text for word in words)


def pytest_collection_modifyitems(config, items):
    seen: dict[str, bool] = {}
    for item in items:
        path = str(item.fspath)
        parts = path.split(os.sep)
        if "tui" in parts:
            item.add_marker(pytest.mark.pilot)
        if "fuzz" in parts:
            item.add_marker(pytest.mark.fuzz)
        if os.path.basename(path) in SLOW_MODULES:
            item.add_marker(pytest.mark.slow)
        if path not in seen:
            seen[path] = _starts_processes(path)
        if seen[path]:
            item.add_marker(pytest.mark.subprocess)
