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
    from dumptui.core.demo import write_demo

    root = tmp_path_factory.mktemp("demo")
    return write_demo(str(root), n_ops=60, size=512)


@pytest.fixture(scope="session")
def clean_demo_pair(tmp_path_factory):
    """The demo without its fp16 region: a clean pair (bisection, not a scan) but for the planted bug."""
    from dumptui.core.demo import write_demo

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
