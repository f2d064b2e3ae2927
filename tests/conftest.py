"""Shared test helpers. Tests that need ../shared/fixtures skip with a visible reason when it is absent;
everything else generates what it needs."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO / ".." / "shared" / "fixtures"
MS = SHARED / "mindspore-2.10-cpu"
MS_DUMPS = MS / "dumps"


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


def need_shared():
    if not MS_DUMPS.is_dir():
        pytest.skip(f"shared fixtures absent ({MS_DUMPS} not found): real-dump test skipped")
    return MS_DUMPS


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


def write_npy(path: str | os.PathLike, arr: np.ndarray) -> str:
    os.makedirs(os.path.dirname(str(path)), exist_ok=True)
    np.save(str(path), arr, allow_pickle=False)
    return str(path)


def run_cli(*args, cwd=None):
    """Run `python -m dumptui ARGS` in a subprocess: (returncode, stdout, stderr)."""
    import subprocess

    # no user config file reaches the tests (DUMPTUI_CONFIG unset, XDG_CONFIG_HOME at a folder that does not exist)
    env = dict(os.environ, PYTHONPATH=str(REPO), COLUMNS="200", XDG_CONFIG_HOME=str(REPO / "tests" / "no-config-here"))
    env.pop("DUMPTUI_CONFIG", None)
    p = subprocess.run(
        [sys.executable, "-m", "dumptui", *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=300,
    )
    return p.returncode, p.stdout, p.stderr


def renamed_copy(target: str, out: str, scope: str, old: str, new: str) -> str:
    """A copy of a MindSpore target dump where the op `{scope}/{old}-op0` is `{new}-op0` of type `new`: its
    files, the execution-order csv and the graph say so (what a converter that swaps an op type gives)."""
    import shutil

    shutil.copytree(target, out)
    file_old = f"{old}.{scope.replace('/', '_')}_{old}-op0."
    file_new = f"{new}.{scope.replace('/', '_')}_{new}-op0."
    for root, _dirs, files in os.walk(out):
        for f in files:
            path = os.path.join(root, f)
            if f.startswith(file_old):
                os.rename(path, os.path.join(root, file_new + f[len(file_old) :]))
            elif f.endswith((".csv", ".ir")):
                text = Path(path).read_text()
                lines = text.split("\n")
                full_old, full_new = f"{scope}/{old}-op0", f"{scope}/{new}-op0"
                for k, line in enumerate(lines):
                    if f"({full_old})" in line:  # the IR's scope comment: the node line above it names the type
                        node = max(j for j in range(k) if lines[j].startswith("  %"))
                        lines[node] = lines[node].replace(f" = {old}(", f" = {new}(")
                    lines[k] = lines[k].replace(full_old, full_new)
                Path(path).write_text("\n".join(lines))
    return out


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
