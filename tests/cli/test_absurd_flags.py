"""Absurd flags get an answer at once: `--workers 10000` is capped at this machine's CPUs (said on stderr),
`--workers 0` refused naming the option, both within seconds (10,000 forked processes hung past a minute)."""

from __future__ import annotations

import os

import pytest
from helpers.common import run_here

# the commands run in this process (what they answer is the question here, not how a process starts),
# with one pool of worker processes for the module
pytestmark = pytest.mark.usefixtures("commands_share_one_pool")


def test_workers_beyond_the_cpus_are_capped_and_said(demo_pair):
    code, _out, err = run_here("compare", demo_pair.ref, demo_pair.target, "--workers", "10000", "-q")
    cpus = os.cpu_count() or 1
    assert code == 1 and f"--workers 10000: capped at {cpus}" in err  # the planted divergence still found


def test_no_workers_or_a_word_is_refused(demo_pair):
    for value in ("0", "-3", "many"):
        code, _out, err = run_here("compare", demo_pair.ref, demo_pair.target, "--workers", value, "-q")
        assert code == 2 and "--workers" in err, (value, err)


def test_other_absurd_numbers_are_refused_naming_the_option_and_the_range(tmp_path, demo_pair):
    """`demo --ops -5` wrote a demo, `demo --size 4095` one whose planted divergence nothing finds (one
    channel: the planted op's transposed layout holds the same values), `demo --size 0` ended in "max() arg is
    an empty sequence", `inspect -n -1` printed every value but the last, `serve --port 99999` was an
    internal error. Each is refused at once by the parser (exit 2), nothing written."""
    one_file = next(
        os.path.join(folder, name)
        for folder, _d, names in os.walk(demo_pair.ref)
        for name in names
        if name.endswith(".npy")
    )
    cases = [
        (("demo", tmp_path / "d", "--ops", "-5"), "--ops: -5: at least 1"),
        (("demo", tmp_path / "d", "--size", "4095"), "--size: 4095: at least 8, a multiple of 8"),
        (("demo", tmp_path / "d", "--size", "0"), "--size: 0: at least 8"),
        (("inspect", one_file, "-n", "-1"), "--values: -1: at least 0"),
        (("serve", demo_pair.ref, demo_pair.target, "--port", "99999"), "--port: 99999: from 1 to 65535"),
    ]
    for args, said in cases:
        code, _out, err = run_here(*args)
        assert code == 2 and said in err and "internal error" not in err, (args, err)
    assert not (tmp_path / "d").exists()
