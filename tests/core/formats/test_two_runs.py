"""A whole stale run mixed into the target's iteration folder (every tensor twice, the other copies from
another run) is noticed: the answer is incomplete and says which files are twice, never silently the older
run's (the stale copies paired with the reference and the divergence was hidden, exit 0). Tested with the
stale copies older and newer than the run's own."""

from __future__ import annotations

import json
import os
import shutil

import pytest
from helpers.common import run_here

from dumptui.core.demo.residual import write_demo
from dumptui.core.formats.runs import separate_runs
from dumptui.core.model.dump import KERNEL, Op
from dumptui.report.reasons import say

# the commands run in this process (what they answer about the dumps is the question, not a process's start),
# with one pool of worker processes for the module
pytestmark = pytest.mark.usefixtures("commands_share_one_pool")


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
    code, out, err = run_here("bisect", ref, target)
    said = out + err
    assert "two runs in one folder" in said and "remove the other run's files" in said, said[-600:]
    assert code in (1, 2)  # never 0: "no divergence" from half of the files
    if shift > 0:  # the run's own files are the earlier: compared, the planted divergence found
        assert code == 1 and planted in out
    else:  # the stale (good) run is the earlier: nothing is found in it, and that is no answer
        assert code == 2


def test_one_run_is_not_two(demo_pair):
    code, out, err = run_here("bisect", demo_pair.ref, demo_pair.target)
    assert code == 1 and "two runs in one folder" not in out + err


def _stale_copies(from_dump: str, into_dump: str, kernels: int, shift: int, first: str = "") -> list[str]:
    """The tensor files of `kernels` kernels of `from_dump` (`first`, then the others by file name) copied into
    the iteration folder of `into_dump` stamped `shift` apart: a stale run that dumped only some kernels. The
    kernels' file names."""
    src, into = _iteration_folder(from_dump), _iteration_folder(into_dump)
    files = sorted(f for f in os.listdir(src) if f.endswith(".npy") and not f.startswith("Parameter."))
    names = sorted({f.split(".")[1] for f in files}, key=lambda n: (n != first, n))
    chosen = names[:kernels]
    for f in files:
        parts = f.split(".")
        if parts[1] in chosen:
            parts[4] = str(int(parts[4]) + shift)
            shutil.copyfile(os.path.join(src, f), os.path.join(into, ".".join(parts)))
    return chosen


def _json(command: str, ref: str, target: str) -> tuple[int, dict]:
    code, out, err = run_here(command, ref, target, "--json", "-")
    doc = json.loads(out)
    assert doc["exit"] == code, err
    return code, doc


SHIFTS = pytest.mark.parametrize("shift", [-(10**12), 10**12], ids=["stale copies older", "stale copies newer"])


@SHIFTS
def test_a_partial_stale_run_is_left_out_and_named(tmp_path, shift):
    """A stale run of half the kernels beside the target's whole run: the whole run is compared (the planted
    divergence found by both commands), the other run's files are named as left out, the answer incomplete."""
    info = write_demo(str(tmp_path / "demo"), n_ops=30, size=256, fp16_region=None)
    stale = _stale_copies(info.ref, info.target, 13, shift)
    for command in ("bisect", "compare"):
        code, doc = _json(command, info.ref, info.target)
        assert code == 1 and info.planted in [r["ref"] for r in doc["roots"]], (command, doc["roots"])
        assert doc["incomplete"] is True
        said = " ".join(doc["undecided"] if command == "bisect" else [str(doc)])
        age = "older" if shift < 0 else "newer"
        assert "two runs in one folder: 13 of its 26 kernels" in said and f"({age}, 13 ops)" in said, said
        assert "were left out" in said and stale[0] in said


@SHIFTS
def test_a_whole_good_run_beside_a_stale_bad_one_is_no_clean_answer(tmp_path, shift):
    """The target's own run is good, a stale run of some kernels (the planted one among them) diverges: the
    whole run is compared and agrees, but with another run's files in the folder that is no "no divergence":
    exit 2 from both commands, never 0."""
    info = write_demo(str(tmp_path / "demo"), n_ops=30, size=256, fp16_region=None)
    good = str(tmp_path / "good")
    shutil.copytree(info.ref, good)
    _stale_copies(info.target, good, 13, shift, first=info.planted.replace("/", "_"))
    for command in ("bisect", "compare"):
        code, doc = _json(command, info.ref, good)
        assert code == 2 and doc["roots"] == [], (command, code, doc["roots"])
        age = "older" if shift < 0 else "newer"
        assert f"({age}, 13 ops) are another run's and were left out" in str(doc), str(doc)


def _first_stamp(dump: str) -> int:
    folder = _iteration_folder(dump)
    return min(int(f.split(".")[4]) for f in os.listdir(folder) if f.endswith(".npy"))


def test_when_neither_run_is_whole_the_copies_are_named_and_the_answer_incomplete(tmp_path):
    info = write_demo(str(tmp_path / "demo"), n_ops=30, size=256, fp16_region=None)
    stale = _stale_copies(info.ref, info.target, 13, -(10**12))
    folder = _iteration_folder(info.target)
    own = [
        f for f in os.listdir(folder) if f.split(".")[1] == stale[0] and int(f.split(".")[4]) >= _first_stamp(info.ref)
    ]
    for f in own:  # the target's own run without one of the stale run's kernels: neither run is whole
        os.remove(os.path.join(folder, f))
    code, doc = _json("bisect", info.ref, info.target)
    said = " ".join(doc["undecided"])
    assert code in (1, 2) and "neither run is whole" in said and stale[1] in said, said


def _op(name: str, t: int) -> Op:
    return Op(name=name, op_type="Add", kind=KERNEL, graph="0", file_name=name, timestamp=t)


def test_a_kernel_called_twice_within_a_run_is_not_two_runs():
    loop = [_op("A", 0), _op("B", 10), _op("C", 20), _op("A", 30), _op("B", 40)]  # A and B called again
    assert separate_runs(loop, "f") == (loop, None)
    every_twice_interleaved = [_op("A", 0), _op("B", 10), _op("A", 20), _op("B", 30), _op("C", 40), _op("C", 50)]
    assert separate_runs(every_twice_interleaved, "f")[1] is None
    untimed = [_op("A", 0), _op("B", 10), _op("A", 10**9), Op(name="B", op_type="Add", kind=KERNEL, graph="0")]
    assert separate_runs(untimed, "f")[1] is None  # no time to tell them by


def test_a_later_partial_run_is_cut_off_by_its_pause():
    run = [_op(n, t) for n, t in (("A", 0), ("B", 10), ("C", 20), ("D", 30))]
    stale = [_op(n, t) for n, t in (("A", 10**6), ("B", 10**6 + 10))]
    kept, problem = separate_runs(run + stale, "f")
    assert kept == run and all(op.call == 1 for op in kept)
    assert problem is not None and problem.severity == "error" and "(newer, 2 ops)" in say(problem.reason)


@pytest.fixture(scope="module")
def cann_raw_runs(tmp_path_factory):
    """A noisy pair with a planted bug, its target re-encoded as CANN raw files, and a good run's target
    re-encoded alike (the stale run): made once for the module, each test copies the target."""
    from helpers.cann_encode import reencode

    from dumptui.core.demo.noisy import write_noisy_demo
    from dumptui.core.formats import open_dump

    root = tmp_path_factory.mktemp("cann-runs")
    demo = write_noisy_demo(str(root / "bug"), precision="fp16", bug="main")
    good = write_noisy_demo(str(root / "good"), precision="fp16", bug=None)
    target, stale = str(root / "target"), str(root / "stale")
    reencode(open_dump(demo.target), target)
    reencode(open_dump(good.target), stale)
    return demo, target, stale


@pytest.mark.parametrize(
    "share, shift", [(1.0, -(10**12)), (0.5, 10**12)], ids=["a whole stale run, older", "half a stale run, newer"]
)
def test_a_stale_run_in_a_cann_raw_dump_is_said(cann_raw_runs, tmp_path, share, shift):
    """The same for CANN raw files ({op_type}.{op_name}.{task}.{stream}.{timestamp}): a good run's files
    beside the target's (it said "no root of divergence", exit 0)."""
    demo, made_target, stale = cann_raw_runs
    target = str(tmp_path / "target")
    shutil.copytree(made_target, target)
    src, into = (next(f for f, _d, files in os.walk(d) if files) for d in (stale, target))
    names = sorted(os.listdir(src))
    for name in names[: int(len(names) * share)]:
        parts = name.split(".")
        parts[-1] = str(int(parts[-1]) + shift)
        shutil.copyfile(os.path.join(src, name), os.path.join(into, ".".join(parts)))
    code, doc = _json("bisect", demo.ref, target)
    said = " ".join(doc["undecided"])
    assert "two runs in one folder" in said, said
    if share == 1.0:  # which run is the dump's cannot be told: the earlier (good) is compared, no answer
        assert code == 2 and "cannot be told" in said
    else:  # the whole run is the target's own: compared, its planted divergence found
        assert code == 1 and doc["culprit"]["ref"] == demo.planted and "(newer," in said
