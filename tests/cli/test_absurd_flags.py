"""Absurd flags get an answer at once: `--workers 10000` is capped at this machine's CPUs (said on stderr),
`--workers 0` refused naming the option, both within seconds (10,000 forked processes hung past a minute)."""

from __future__ import annotations

import os

from helpers.common import run_cli


def test_workers_beyond_the_cpus_are_capped_and_said(demo_pair):
    code, _out, err = run_cli("compare", demo_pair.ref, demo_pair.target, "--workers", "10000", "-q")
    cpus = os.cpu_count() or 1
    assert code == 1 and f"--workers 10000: capped at {cpus}" in err  # the planted divergence still found


def test_no_workers_or_a_word_is_refused(demo_pair):
    for value in ("0", "-3", "many"):
        code, _out, err = run_cli("compare", demo_pair.ref, demo_pair.target, "--workers", value, "-q")
        assert code == 2 and "--workers" in err, (value, err)
