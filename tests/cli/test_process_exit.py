"""The `dumptui` program ends without the interpreter's teardown (os._exit after main): what it wrote is all
there, its exit code is main's, and the exit handlers still run (a temporary folder's cleanup, a pool's)."""

from __future__ import annotations

import os
import subprocess
import sys

from helpers.common import REPO

PROGRAM = r"""
import atexit, sys
atexit.register(lambda: print("exit handlers ran", file=sys.stderr, flush=True))
sys.argv = ["dumptui", *sys.argv[1:]]
from dumptui.cli import command_line
command_line()
print("never printed: command_line does not return")
"""


def _program(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(REPO), COLUMNS="200")
    return subprocess.run([sys.executable, "-c", PROGRAM, *args], capture_output=True, text=True, env=env, timeout=120)


def test_the_answer_the_exit_code_and_the_exit_handlers(demo_pair):
    done = _program("bisect", "--json", "-", str(demo_pair.ref), str(demo_pair.target))
    assert done.returncode == 1  # the demo's planted root
    assert done.stdout.rstrip().endswith("}") and '"command": "bisect"' in done.stdout  # all of it, flushed
    assert "never printed" not in done.stdout
    assert done.stderr.count("exit handlers ran") == 1
    usage = _program("bisect", "--no-such-option")
    assert usage.returncode == 2 and "exit handlers ran" in usage.stderr
