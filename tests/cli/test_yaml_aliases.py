"""A `--map` YAML with anchors and aliases ("billion laughs": nine lines, 10^9 entries once walked) is
refused at once naming the file, exit 2 — `bisect` and `compare` hung until killed (30 s)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
from helpers.common import REPO

BOMB = "\n".join(
    ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    + [f"{n}: &{n} [{','.join([f'*{p}'] * 9)}]" for p, n in zip("abcdefgh", "bcdefghi")]
)


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="the peak is read from /proc (Linux)")
def test_an_alias_bomb_is_refused_in_a_second_naming_the_file(demo_pair, tmp_path):
    bomb = tmp_path / "pairs.yaml"
    bomb.write_text(BOMB + "\n")
    env = dict(os.environ, PYTHONPATH=str(REPO))
    for command in ("bisect", "compare"):
        # the command in a process of its own that reports its own peak memory
        code = (
            "import sys\n"
            "from dumptui.cli.main import main\n"
            f"rc = main([{command!r}, {demo_pair.ref!r}, {demo_pair.target!r}, '--map', {str(bomb)!r}, '-q'])\n"
            # VmHWM: this process's own peak (ru_maxrss keeps the parent's across exec: a big pytest worker's)
            "hwm = next(l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM'))\n"
            "print('peak', hwm, 'rc', rc, file=sys.stderr)\n"
        )
        start = time.monotonic()
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
        took = time.monotonic() - start
        assert "rc 2" in done.stderr and str(bomb) in done.stderr and "aliases" in done.stderr, done.stderr
        assert took < 10  # (a second of work; the interpreter's start and a loaded machine on top)
        peak_kb = int(done.stderr.split("peak ")[1].split()[0])
        assert peak_kb < 100 * 1024, peak_kb  # the interpreter and numpy; the expansion would need gigabytes


def test_a_mapping_without_aliases_still_reads(demo_pair, tmp_path):
    plain = tmp_path / "pairs.yaml"
    plain.write_text("Default/nothing-op0: Default/nothing-op0\n")
    done = subprocess.run(
        [sys.executable, "-m", "dumptui", "bisect", demo_pair.ref, demo_pair.target, "--map", str(plain), "-q"],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(REPO)),
        timeout=120,
    )
    assert "aliases" not in done.stderr
