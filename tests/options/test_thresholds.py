"""Thresholds out of range are usage errors (issue 23.6): NaN, infinities, a gain of 1 or less, floors
outside (0, 1), from the flags or the config file; bisect and compare refuse them alike with exit 2, and
the app before its screen opens. Values in range keep working."""

from __future__ import annotations

import json

import numpy as np
import pytest
from helpers.common import run_here

from dumptui.core.demo.residual import write_demo

# the commands run in this process (what they answer is the question here, not how a process starts),
# with one pool of worker processes for the module
pytestmark = pytest.mark.usefixtures("commands_share_one_pool")

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


@pytest.mark.parametrize("flags", BAD, ids=" ".join)
def test_bad_thresholds_are_refused_by_both_commands(pair, flags):
    for command in ("bisect", "compare"):
        code, out, err = run_here(command, *pair, *flags)
        assert code == 2 and flags[0] in err and "must be" in err, (command, code, err)
        assert "culprit" not in out


def test_the_app_refuses_them_before_opening(pair):
    code, _out, err = run_here(*pair, "--gain", "nan")
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
    code, out, err = run_here("bisect", *pair, "--gain", "5", "--floor", "float32=1e-4", "--cos", "0.99", "-q")
    assert code == 1 and "culprit" in out, err


@pytest.fixture(scope="module")
def cos_pair(tmp_path_factory):
    """One op whose target output is off by about 7.7 % of its RMS everywhere (cosine about 0.997), its input
    the same on both sides: within a floor of 10 %, diverged below a cosine of 0.999."""
    from helpers.msdumps import ms_file

    rng = np.random.default_rng(3)
    x = rng.standard_normal(4096).astype(np.float32)
    y = np.abs(x)
    noise = rng.standard_normal(4096).astype(np.float32)
    off = (y + 0.077 * np.sqrt(np.mean(y * y)) * noise / np.sqrt(np.mean(noise * noise))).astype(np.float32)
    root = tmp_path_factory.mktemp("cos")
    for side, out in (("ref", y), ("target", off)):
        d = root / side / "rank_0" / "Net" / "0" / "0"
        d.mkdir(parents=True)
        ms_file(str(d), "Abs", "Default_Abs-op0", 100, "input", 0, x)
        ms_file(str(d), "Abs", "Default_Abs-op0", 101, "output", 0, out)
    cos = float(np.dot(y.astype(np.float64), off) / np.linalg.norm(y.astype(np.float64)) / np.linalg.norm(off))
    assert 0.996 < cos < 0.998
    return str(root / "ref"), str(root / "target"), cos


def _op_verdict(out: str) -> tuple[str, str]:
    doc = json.loads(out)
    op = next(o for o in doc["ops"] if (o["ref"] or "").endswith("Abs-op0"))
    return op["verdict"], op["outputs"][0]["reason"]


def test_cos_below_the_threshold_diverges_from_the_flag_and_the_config(cos_pair, tmp_path):
    ref, target, cos = cos_pair
    code, out, err = run_here("compare", ref, target, "--floor", "float32=0.1", "--json", "-")
    assert code == 0 and _op_verdict(out)[0] == "close", err  # 7.7 % is within a floor of 10 %
    code, out, err = run_here("compare", ref, target, "--floor", "float32=0.1", "--cos", "0.999", "--json", "-")
    verdict, reason = _op_verdict(out)
    assert code == 1 and verdict == "diverged" and reason.endswith("< 0.999"), err
    op = next(o for o in json.loads(out)["ops"] if (o["ref"] or "").endswith("Abs-op0"))
    shown = float(reason.split()[1])  # the cosine the reason prints, to its digits: close to the JSON's own
    assert abs(op["outputs"][0]["stats"]["cos"] - cos) < 1e-6 and abs(shown - cos) < 1e-5
    config = tmp_path / "config.toml"
    config.write_text('cos = 0.999\nfloor = ["float32=0.1"]\n')
    code, out, err = run_here("compare", ref, target, "--json", "-", "-v", env_extra={"DUMPTUI_CONFIG": str(config)})
    assert code == 1 and _op_verdict(out)[0] == "diverged", err
    assert f"config: read {config}: cos = 0.999" in err  # -v says which file was read and what it set
    code, out, err = run_here(
        "compare", ref, target, "--json", "-", "--cos", "0.99", env_extra={"DUMPTUI_CONFIG": str(config)}
    )
    assert code == 0 and _op_verdict(out)[0] == "close", err  # the flag wins over the file
