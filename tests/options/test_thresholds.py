"""Thresholds out of range are usage errors (issue 23.6): NaN, infinities, a gain of 1 or less, floors
outside (0, 1), from the flags or the config file; bisect and compare refuse them alike with exit 2, and
the app before its screen opens. Values in range keep working."""

from __future__ import annotations

import pytest
from helpers.common import run_cli

from dumptui.core.demo.residual import write_demo

BAD = [
    ["--gain", "nan"],
    ["--gain", "0"],
    ["--gain", "-3"],
    ["--gain", "inf"],
    ["--floor", "float32=nan"],
    ["--floor", "float16=0"],
    ["--floor", "float16=2"],
    ["--floor-scale", "1e308"],
    ["--floor-scale", "0"],
    ["--max-off", "2"],
    ["--max-off", "nan"],
    ["--cos", "1.5"],
    ["--cos", "nan"],
]


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    d = write_demo(str(tmp_path_factory.mktemp("demo")))
    return d.ref, d.target


@pytest.mark.parametrize("flags", BAD, ids=lambda f: " ".join(f))
def test_bad_thresholds_are_refused_by_both_commands(pair, flags):
    for command in ("bisect", "compare"):
        code, out, err = run_cli(command, *pair, *flags)
        assert code == 2 and flags[0] in err and "must be" in err, (command, code, err)
        assert "culprit" not in out


def test_the_app_refuses_them_before_opening(pair):
    code, _out, err = run_cli(*pair, "--gain", "nan")
    assert code == 2 and "--gain nan" in err


def test_a_config_file_value_is_checked_the_same(pair, tmp_path):
    import os

    cfg = tmp_path / "dumptui.toml"
    cfg.write_text("gain = nan\n")
    code, _out, err = _with_config(cfg, "bisect", *pair)
    assert code == 2 and "--gain nan" in err
    cfg.write_text("gain = 5.0\n")
    code, _out, err = _with_config(cfg, "bisect", *pair)
    assert code == 1, err
    assert os.path.exists(cfg)


def _with_config(cfg, *args):
    import os
    import subprocess
    import sys

    from helpers.common import REPO

    env = dict(os.environ, PYTHONPATH=str(REPO), DUMPTUI_CONFIG=str(cfg), COLUMNS="200")
    p = subprocess.run([sys.executable, "-m", "dumptui", *args], capture_output=True, text=True, env=env, timeout=300)
    return p.returncode, p.stdout, p.stderr


def test_values_in_range_work(pair):
    code, out, err = run_cli("bisect", *pair, "--gain", "5", "--floor", "float32=1e-4", "--cos", "0.99", "-q")
    assert code == 1 and "culprit" in out, err
