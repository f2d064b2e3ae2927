"""Paths of the repository and the shared fixtures, the CLI in a subprocess, small files, renamed copies of dumps."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]


# the shared fixtures: DUMPTUI_FIXTURES=DIR points the suite at them from anywhere (a clone elsewhere, CI);
# by default ../shared/fixtures beside the clone
SHARED = (
    Path(os.environ["DUMPTUI_FIXTURES"]) if os.environ.get("DUMPTUI_FIXTURES") else REPO / ".." / "shared" / "fixtures"
)


MS = SHARED / "mindspore-2.10-cpu"


MS_DUMPS = MS / "dumps"


def need_shared():
    if not MS_DUMPS.is_dir():
        pytest.skip(
            f"shared fixtures absent ({MS_DUMPS} not found; DUMPTUI_FIXTURES=DIR names them): real-dump test skipped"
        )
    return MS_DUMPS


def write_npy(path: str | os.PathLike, arr: np.ndarray) -> str:
    os.makedirs(os.path.dirname(str(path)), exist_ok=True)
    np.save(str(path), arr, allow_pickle=False)
    return str(path)


def run_cli(*args, cwd=None, env_extra=None):
    """Run `python -m dumptui ARGS` in a subprocess: (returncode, stdout, stderr). `env_extra`: variables set
    for this run (a test's own DUMPTUI_CONFIG)."""
    import subprocess

    # no user config file reaches the tests (DUMPTUI_CONFIG unset, XDG_CONFIG_HOME at a folder that does not exist)
    env = dict(os.environ, PYTHONPATH=str(REPO), COLUMNS="200", XDG_CONFIG_HOME=str(REPO / "tests" / "no-config-here"))
    env.pop("DUMPTUI_CONFIG", None)
    env.update(env_extra or {})
    p = subprocess.run(
        [sys.executable, "-m", "dumptui", *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=300,
    )
    return p.returncode, p.stdout, p.stderr


def run_here(*args, cwd=None, env_extra=None):
    """`run_cli` in this process: `dumptui ARGS` as `cli.main` (the same code, without a Python start and its
    imports): (exit code, stdout, stderr), the environment as `run_cli` gives it (no user config, COLUMNS=200,
    `env_extra` on top) for the command's time only. For tests about what a command answers; what is about
    the process (its streams, signals, exit) keeps `run_cli`."""
    import contextlib
    import io

    from dumptui import cli

    env = {"COLUMNS": "200", "XDG_CONFIG_HOME": str(REPO / "tests" / "no-config-here"), "DUMPTUI_CONFIG": None}
    env.update(env_extra or {})
    saved = {k: os.environ.get(k) for k in env}
    here = os.getcwd()
    out, err = io.StringIO(), io.StringIO()
    try:
        for k, v in env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = str(v)
        if cwd is not None:
            os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = cli.main([str(a) for a in args])
            except SystemExit as e:  # as the interpreter ends on it: a number, None (0) or a message (1)
                if e.code is None or isinstance(e.code, int):
                    code = e.code or 0
                else:
                    print(e.code, file=sys.stderr)
                    code = 1
    finally:
        os.chdir(here)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return code, out.getvalue(), err.getvalue()


def json_answer(capsys, command: str, *argv: str) -> dict:
    """`dumptui COMMAND ARGV -q --json -` in this process: its JSON document (its `exit` checked against the
    return code)."""
    import json

    from dumptui import cli

    capsys.readouterr()
    code = cli.main([command, *argv, "-q", "--json", "-"])
    doc = json.loads(capsys.readouterr().out)
    assert doc["exit"] == code
    return doc


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


def long_scopes_copy(dump: str, out: str, scopes: dict[str, str]) -> str:
    """A copy of a MindSpore dump whose scopes are renamed (`{"stage0-Stage": "stage0-AVeryLong…Stage"}`): its
    files' names, the execution-order csv and the graph say so. The names shown of a model with long scopes."""
    import shutil

    shutil.copytree(dump, out)
    for root, _dirs, files in os.walk(out):
        for f in files:
            path = os.path.join(root, f)
            if f.endswith((".csv", ".ir")):
                text = Path(path).read_text()
                for old, new in scopes.items():
                    text = text.replace(f"/{old}/", f"/{new}/")
                Path(path).write_text(text)
            new_f = f
            for old, new in scopes.items():
                new_f = new_f.replace(f"_{old}_", f"_{new}_")
            if new_f != f:
                os.rename(path, os.path.join(root, new_f))
    return out
