"""Files that are not what their names say, and output streams that cannot take every byte: each command runs
in a subprocess with a timeout, so a hang fails the test instead of the suite.

- a FIFO and a symlink to /dev/zero named like tensors: `info` returns within seconds, naming both (the issue
  saw info/inspect/compare/bisect still blocked at 60 s);
- symlinks that loop, dangle, or lead outside the dump;
- a file name that is not UTF-8, under a strict UTF-8 stdout (the issue saw "surrogates not allowed").
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers.common import REPO
from helpers.damage import graph_output, same_pair, tensor_file

from dumptui.core.formats import open_dump
from dumptui.report.reasons import say

HANG = 60  # seconds: far beyond what any of these takes; a blocked read would wait forever


def dumptui(*args, env: dict | None = None, timeout: float = HANG) -> tuple[int, str, str, float]:
    """`python -m dumptui ARGS` in a subprocess: (exit code, stdout, stderr, seconds)."""
    full = dict(os.environ, PYTHONPATH=str(REPO), COLUMNS="1000", **(env or {}))
    t0 = time.monotonic()
    p = subprocess.run(
        [sys.executable, "-m", "dumptui", *map(str, args)],
        capture_output=True,
        env=full,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )
    decode = lambda b: b.decode("utf-8", errors="backslashreplace")  # noqa: E731
    return p.returncode, decode(p.stdout), decode(p.stderr), time.monotonic() - t0


@pytest.fixture
def pair(tmp_path) -> tuple[str, str]:
    return same_pair(tmp_path)


def _swap(path: Path, make) -> Path:
    """Replace a tensor file by something else with the same name."""
    path.unlink()
    make(path)
    return path


@pytest.mark.skipif(not hasattr(os, "mkfifo") or not os.path.exists("/dev/zero"), reason="needs FIFOs and /dev/zero")
def test_a_fifo_and_a_symlink_to_dev_zero_do_not_block(pair):
    ref, target = pair
    fifo = _swap(tensor_file(target, "block0-ResidualBlock_Add-op0"), os.mkfifo)
    zero = _swap(tensor_file(target, "block1-ResidualBlock_Add-op0"), lambda p: p.symlink_to("/dev/zero"))
    code, out, err, seconds = dumptui("info", target)
    assert code == 0, err
    assert seconds < 30
    assert f"unreadable {fifo}: not a regular file: a FIFO (named pipe), not read" in out
    assert f"unreadable {zero}: a symbolic link to a character device: not read" in out
    for cmd in ("compare", "bisect"):
        code, out, err, seconds = dumptui(cmd, ref, target)
        assert code in (0, 2) and "Traceback" not in err, err
        assert str(fifo) in out
    code, out, err, _ = dumptui("inspect", fifo)
    assert code == 2 and f"{fifo}: not a regular file: a FIFO (named pipe), not read" in err


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_as_a_side_file_and_behind_a_symlink(pair, tmp_path):
    ref, target = pair
    order = Path(target) / "rank_0" / "execution_order" / "ms_execution_order_graph_0.csv"
    _swap(order, os.mkfifo)
    meta = Path(target) / "rank_0" / ".dump_metadata" / "config.json"
    _swap(meta, os.mkfifo)
    elsewhere = tmp_path / "pipe"
    os.mkfifo(elsewhere)
    linked = _swap(graph_output(target), lambda p: p.symlink_to(elsewhere))
    code, out, err, _ = dumptui("bisect", ref, target)
    assert code == 2 and "Undecided" in out  # the graph output is a FIFO behind a link: never read
    assert f"{linked}: a symbolic link to a FIFO (named pipe): not read" in out


def test_symlinks_that_loop_dangle_or_leave_the_dump(pair, tmp_path):
    ref, target = pair
    loop = _swap(tensor_file(target, "block0-ResidualBlock_Add-op0"), lambda p: p.symlink_to(p))
    dangling = _swap(tensor_file(target, "block1-ResidualBlock_Add-op0"), lambda p: p.symlink_to(tmp_path / "none"))
    outside = tmp_path / "outside.npy"
    src = tensor_file(target, "block0-ResidualBlock_Mul-op0")
    outside.write_bytes(src.read_bytes())
    _swap(src, lambda p: p.symlink_to(outside))
    d = open_dump(target)
    by_path = {p.path: p for p in d.problems}
    assert say(by_path[str(loop)].reason) == "a loop of symbolic links: not read"
    assert "target does not exist" in say(by_path[str(dangling)].reason)
    leaving = by_path[str(src)]
    assert leaving.severity == "warning" and f"a symbolic link to {outside}, outside the dump folder" in say(
        leaving.reason
    )
    readable = {t.path for op in d.ops for t in op.tensors() if t.problem is None}
    assert str(src) in readable and str(loop) not in readable  # read, but reported
    code, out, err, _ = dumptui("info", target)
    assert code == 0 and f"warning {src}: a symbolic link to {outside}" in out


def test_non_utf8_names_under_a_strict_utf8_stdout(tmp_path):
    """A file name with byte 0xff: shown as \\xff, never "surrogates not allowed" and no path."""
    import numpy as np

    for side, scale in (("ref", 1.0), ("target", 2.0)):
        folder = os.fsencode(tmp_path / side)
        os.makedirs(folder)
        for io in ("input", "output"):
            value = np.ones(8, np.float32) * (scale if io == "output" else 1.0)
            with open(os.path.join(folder, b"op\xff\xfe." + io.encode() + b".0.npy"), "wb") as fh:
                np.save(fh, value)
    strict = {"PYTHONIOENCODING": "utf-8:strict", "LC_ALL": "C.UTF-8"}
    for cmd in ("bisect", "compare"):
        code, out, err, _ = dumptui(cmd, tmp_path / "ref", tmp_path / "target", env=strict)
        assert code == 1, err
        assert "op\\xff\\xfe" in out and "surrogates" not in err
    code, out, err, _ = dumptui("compare", tmp_path / "ref", tmp_path / "target", "--json", env=strict)
    assert code == 1 and "op\\udcff\\udcfe" in out  # JSON keeps the raw name, escaped


def test_a_deprecated_numpy_alias_is_no_dtype_and_no_warning():
    """A dtype label numpy only warns about ("a", an alias of "S"): unknown, as any label that is no dtype."""
    import warnings

    from dumptui.core.io import dtypes

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert dtypes.canonical("a") is None
        assert dtypes.canonical("<f4") == "float32"


@pytest.mark.parametrize(
    "path", ["/d/rank_0/x.npy", "rel/x.npy", "x.npy", "/x.npy", "a//x.npy", "//x.npy", "/d/sub/../x.npy"]
)
def test_the_file_check_splits_a_path_as_os_path_split(path):
    """The file check takes a tensor's folder and name from what the tensor keeps (not from its joined path
    split again): the same pair as os.path.split, also for a name in the root, a relative or a bare one."""
    from dumptui.core.formats.filecheck import _split
    from dumptui.core.model.dump import INPUT, TensorRef

    assert _split(TensorRef(path, INPUT, 0)) == os.path.split(path)
    folder, name = path[: path.rfind("/") + 1], path[path.rfind("/") + 1 :]  # as the index cache keeps them
    assert _split(TensorRef.in_folder(folder, name, INPUT, 0, None, None, "", None)) == os.path.split(path)
