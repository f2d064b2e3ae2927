"""A whole stale run mixed into the target's iteration folder (every tensor twice, the other copies from
another run) is noticed: the answer is incomplete and says which files are twice, never silently the older
run's (the stale copies paired with the reference and the divergence was hidden, exit 0). Tested with the
stale copies older and newer than the run's own."""

from __future__ import annotations

import os
import shutil

import pytest
from helpers.common import run_cli

from dumptui.core.demo.residual import write_demo


def _iteration_folder(dump: str) -> str:
    for folder, _dirs, files in os.walk(dump):
        if any(f.endswith(".npy") for f in files):
            return folder
    raise AssertionError(f"no tensor files under {dump}")


def _mixed(tmp_path, shift: int) -> tuple[str, str, str]:
    """The demo pair, its target holding also the reference's run (the good one) stamped `shift` apart."""
    info = write_demo(str(tmp_path / "demo"), n_ops=30, size=256, fp16_region=None)  # same ops both sides
    stale_from, into = _iteration_folder(info.ref), _iteration_folder(info.target)
    for f in os.listdir(stale_from):
        parts = f.split(".")
        if not f.endswith(".npy") or parts[0] == "Parameter" or len(parts) < 8:
            continue
        parts[4] = str(int(parts[4]) + shift)
        shutil.copyfile(os.path.join(stale_from, f), os.path.join(into, ".".join(parts)))
    return info.ref, info.target, info.planted


@pytest.mark.parametrize("shift", [-(10**12), 10**12], ids=["stale copies older", "stale copies newer"])
def test_two_runs_in_one_folder_are_said_never_silently_one(tmp_path, shift):
    ref, target, planted = _mixed(tmp_path, shift)
    code, out, err = run_cli("bisect", ref, target)
    said = out + err
    assert "two runs in one folder" in said and "remove the other run's files" in said, said[-600:]
    assert code in (1, 2)  # never 0: "no divergence" from half of the files
    if shift > 0:  # the run's own files are the earlier: compared, the planted divergence found
        assert code == 1 and planted in out
    else:  # the stale (good) run is the earlier: nothing is found in it, and that is no answer
        assert code == 2


def test_one_run_is_not_two(demo_pair):
    code, out, err = run_cli("bisect", demo_pair.ref, demo_pair.target)
    assert code == 1 and "two runs in one folder" not in out + err
