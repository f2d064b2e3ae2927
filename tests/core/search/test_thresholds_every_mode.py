"""`--cos`, `--gain`, `--floor` and `--max-off` change the answer on a noisy pair (a local-error scan, where
verdicts are judged in context) as their help says, from the flag and from the config file alike. The
expectations are computed here from compare's JSON numbers (cosines, gains), never from printed digits."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from helpers.msdumps import ms_file

from dumptui import cli
from dumptui.core.demo.noisy import write_noisy_demo

# many commands run in this process: one pool of worker processes for the module, not one per command
pytestmark = pytest.mark.usefixtures("commands_share_one_pool")


@pytest.fixture(scope="module")
def noisy(tmp_path_factory):
    root = tmp_path_factory.mktemp("every-mode")
    # (8 blocks: the weight's error reaches a BiasAdd whose sparse error grows between x1.2 and x10)
    return {
        b: write_noisy_demo(str(root / str(b)), precision="fp16", bug=b, blocks=8) for b in (None, "main", "weight")
    }


def _compare(capsys, ref: str, target: str, *flags: str, config: str | None = None) -> dict:
    old = os.environ.get("DUMPTUI_CONFIG")
    try:
        if config is not None:
            os.environ["DUMPTUI_CONFIG"] = config
        code = cli.main(["compare", ref, target, "-q", "--json", "-", *flags])
    finally:
        if old is None:
            os.environ.pop("DUMPTUI_CONFIG", None)
        else:
            os.environ["DUMPTUI_CONFIG"] = old
    doc = json.loads(capsys.readouterr().out)
    assert doc["exit"] == code
    return doc


def _config(tmp_path, text: str) -> str:
    path = tmp_path / "config.toml"
    path.write_text(text)
    return str(path)


def _cos(t: dict) -> float | None:
    return (t.get("stats") or {}).get("cos")


def test_cos_calls_a_pair_diverged_below_it_and_names_where_it_drops(noisy, capsys, tmp_path):
    pair = noisy[None]
    plain = _compare(capsys, pair.ref, pair.target)
    assert plain["exit"] == 0 and plain["search"]["kind"] == "scan"  # a noisy pair with no bug
    outs = [(op, t) for op in plain["ops"] for t in op["outputs"] if _cos(t) is not None]
    lowest = min(_cos(t) for _op, t in outs)
    assert lowest < 1.0
    threshold = float(np.nextafter(lowest, 1.0))  # just above the lowest output cosine: one alarm at least
    for how in ("flag", "config"):
        if how == "flag":
            doc = _compare(capsys, pair.ref, pair.target, "--cos", repr(threshold))
        else:
            doc = _compare(capsys, pair.ref, pair.target, config=_config(tmp_path, f"cos = {threshold!r}\n"))
        assert doc["exit"] == 1, how
        # every tensor below the cosine is diverged, in context too (never "carried precision noise")
        below = [t for op in doc["ops"] for t in op["inputs"] + op["outputs"] if (_cos(t) or 1.0) < threshold]
        assert below and all(t["verdict"] == "diverged" for t in below), how
        # the roots: ops whose output drops below it while every compared input stays at or above it
        for root in doc["roots"]:
            ins = [_cos(t) for t in root["inputs"] if _cos(t) is not None and t["verdict"] != "equal"]
            assert min(_cos(t) or 1.0 for t in root["outputs"]) < threshold
            assert all(c >= threshold for c in ins), (how, root["ref"])
            assert "cosine" in root["why"] and "--cos" in root["why"]
        first = min(
            op["position"]
            for op in doc["ops"]
            if op["outputs"] and min(_cos(t) or 1.0 for t in op["outputs"]) < threshold
        )
        assert doc["roots"][0]["position"] <= first


def test_floor_and_gain_change_the_answer_on_a_noisy_pair(noisy, capsys, tmp_path):
    bug = noisy["main"]
    found = _compare(capsys, bug.ref, bug.target)
    assert found["exit"] == 1 and found["roots"]
    # a floor above every error: nothing is beyond the noise, so nothing is born anywhere
    worst = max((op["local_error"] or {}).get("output_error") or 0.0 for op in found["ops"] if op.get("local_error"))
    floor = min(0.9, 2 * worst)
    flags = ["--floor", f"float16={floor}", "--floor", f"float32={floor}"]
    for doc in (
        _compare(capsys, bug.ref, bug.target, *flags),
        _compare(
            capsys, bug.ref, bug.target, config=_config(tmp_path, f'floor = ["float16={floor}", "float32={floor}"]\n')
        ),
    ):
        assert doc["exit"] == 0 and not doc["roots"]
    # a smaller gain: error that grows less than 10x but more than G is born where it grows (more roots); the
    # roots of the default stay roots
    weight = noisy["weight"]
    default = {r["position"] for r in _compare(capsys, weight.ref, weight.target)["roots"]}
    for doc in (
        _compare(capsys, weight.ref, weight.target, "--gain", "1.2"),
        _compare(capsys, weight.ref, weight.target, config=_config(tmp_path, "gain = 1.2\n")),
    ):
        more = {r["position"] for r in doc["roots"]}
        assert default < more, (default, more)
        for r in doc["roots"]:
            le = r["local_error"] or {}
            if r["position"] not in default and le.get("rule") == "gain":
                assert le["gain"] >= 1.2 and le["gain_absolute"] >= 1.2


@pytest.fixture(scope="module")
def sparse_pair(tmp_path_factory):
    """A noisy pair (the target computes in float16) of two ops: the first only rounds; the second, of a type
    no replay knows, is off by 40 % of its RMS on 0.5 % of its elements and exact elsewhere: under the tail
    rule's default share (1 %), within it below `--max-off 0.002`."""
    rng = np.random.default_rng(11)
    n = 4000
    x = rng.standard_normal(n).astype(np.float32)
    a = np.abs(x)
    b = (a * 2).astype(np.float32)
    b_target = b.astype(np.float16)
    far = rng.choice(n, size=n // 200, replace=False)
    b_target[far] += np.float16(0.4 * np.sqrt(np.mean(b * b)))
    root = tmp_path_factory.mktemp("sparse")
    for side in ("ref", "target"):
        d = root / side / "rank_0" / "Net" / "0" / "0"
        d.mkdir(parents=True)
        low = side == "target"
        ms_file(str(d), "Abs", "Default_Abs-op0", 100, "input", 0, x)
        ms_file(
            str(d),
            "Abs",
            "Default_Abs-op0",
            101,
            "output",
            0,
            a.astype(np.float16) if low else a,
            "Float16" if low else "Float32",
        )
        ms_file(
            str(d),
            "Scale",
            "Default_Scale-op0",
            102,
            "input",
            0,
            a.astype(np.float16) if low else a,
            "Float16" if low else "Float32",
        )
        ms_file(
            str(d),
            "Scale",
            "Default_Scale-op0",
            103,
            "output",
            0,
            b_target if low else b,
            "Float16" if low else "Float32",
        )
    return str(root / "ref"), str(root / "target")


def test_max_off_is_the_share_the_tail_rule_counts_from(sparse_pair, capsys, tmp_path):
    ref, target = sparse_pair
    plain = _compare(capsys, ref, target)
    assert plain["search"]["kind"] == "scan"
    assert not any(r["ref"].endswith("Scale-op0") for r in plain["roots"])
    for doc in (
        _compare(capsys, ref, target, "--max-off", "0.002"),
        _compare(capsys, ref, target, config=_config(tmp_path, "max_off = 0.002\n")),
    ):
        assert doc["exit"] == 1
        assert [r["ref"].endswith("Scale-op0") for r in doc["roots"]] == [True]
        assert "0.5%" in doc["roots"][0]["why"]
