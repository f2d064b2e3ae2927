"""Standard output closed (`>&-`) or full (`>/dev/full`): a clear message on stderr and exit 2, never an
internal error and never 1 (which scripts read as "divergence found")."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from helpers.common import REPO


def _shell(demo_pair, redirect: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    cmd = f'"{sys.executable}" -m dumptui bisect "{demo_pair.ref}" "{demo_pair.target}" {redirect}'
    return subprocess.run(
        ["sh", "-c", cmd], capture_output=False, stderr=subprocess.PIPE, text=True, env=env, timeout=120
    )


def test_closed_standard_output_is_said_and_exits_2(demo_pair):
    done = _shell(demo_pair, ">&-")
    assert done.returncode == 2
    assert "standard output is closed" in done.stderr and "internal error" not in done.stderr


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full on this system")
def test_full_standard_output_is_said_and_exits_2(demo_pair):
    done = _shell(demo_pair, ">/dev/full")
    assert done.returncode == 2
    assert "standard output" in done.stderr and "internal error" not in done.stderr
