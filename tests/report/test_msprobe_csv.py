"""`compare --csv` in msprobe's profile: msprobe 26.x's columns, order, meanings and spellings.

Two independent checks: (1) the CSVs msprobe 26.2 itself wrote for the shared MindSpore fixtures, cell by
cell; (2) msprobe's formulas recomputed here with plain numpy on the whole arrays (EucDist absolute,
MaxRelativeErr with epsilon added where the bench is 0, thousandth ratios counted with a strict `<`).
"""

from __future__ import annotations

import csv
import glob
import json
import math
import os

import numpy as np
import pytest
from helpers.common import MS, SHARED, need_shared, run_here, write_npy

from dumptui.core.compare import msprobe_metrics as mm
from dumptui.core.model.dump import TensorRef
from dumptui.report.msprobe_csv import DUMPTUI_COLUMNS, HEADERS

# the commands run in this process (what they answer is the question here, not how a process starts),
# with one pool of worker processes for the module
pytestmark = pytest.mark.usefixtures("commands_share_one_pool")

PAIRS = ("A_rerun", "B_mod", "B_pad", "C_fp16", "C_wround")
MS_KERNEL_HEADER = [
    "NPU Name",
    "Bench Name",
    "NPU Dtype",
    "Bench Dtype",
    "NPU Tensor Shape",
    "Bench Tensor Shape",
    "NPU max",
    "NPU min",
    "NPU mean",
    "NPU l2norm",
    "Bench max",
    "Bench min",
    "Bench mean",
    "Bench l2norm",
    "Accuracy Reached or Not",
    "Err_message",
    "Cosine",
    "EucDist",
    "MaxAbsErr",
    "MaxRelativeErr",
    "One Thousandth Err Ratio",
    "Five Thousandths Err Ratio",
]
NUMERIC = [
    "NPU max",
    "NPU min",
    "NPU mean",
    "NPU l2norm",
    "Bench max",
    "Bench min",
    "Bench mean",
    "Bench l2norm",
    "Cosine",
    "EucDist",
    "MaxAbsErr",
    "MaxRelativeErr",
    "One Thousandth Err Ratio",
    "Five Thousandths Err Ratio",
]


def _rows(path):
    with open(path, newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        return reader.fieldnames, list(reader)


def _same(a: str, b: str) -> bool:
    if a == b:
        return True
    try:
        x, y = float(a), float(b)
    except ValueError:
        return False
    return abs(x - y) <= 1e-6 * max(abs(x), abs(y))  # float32 sums: msprobe's BLAS and ours may differ by an ulp


def _payload_mismatch(path: str) -> bool:
    """The MindSpore float16-header bug (docs/formats.md#known-traps): the payload is larger than the header declares."""
    if not path:
        return False
    with open(path, "rb") as fh:
        major, _minor = np.lib.format.read_magic(fh)
        read_header = np.lib.format.read_array_header_1_0 if major == 1 else np.lib.format.read_array_header_2_0
        shape, _fortran, dtype = read_header(fh)
        declared = int(np.prod(shape)) * dtype.itemsize
        return os.path.getsize(path) - fh.tell() != declared


def _key(row):
    return os.path.basename(row["NPU Name"]), os.path.basename(row["Bench Name"])


@pytest.fixture(scope="module")
def ours(tmp_path_factory):
    """Our msprobe-profile CSV for every fixture pair (one compare each)."""
    dumps = need_shared()
    out = {}
    for v in PAIRS:
        path = tmp_path_factory.mktemp("msp") / f"{v}.csv"
        rc, _out, err = run_here("compare", dumps / "A", dumps / v, "--csv", path, "-q")
        assert rc in (0, 1), err
        out[v] = _rows(path)
    return out


def _msprobe_csv(v):
    found = glob.glob(str(MS / "reports" / "msprobe" / f"A_vs_{v}" / "compare_result_*.csv"))
    if not found:
        pytest.skip(f"msprobe's own result for A vs {v} absent from the shared fixtures")
    return _rows(found[0])


@pytest.mark.parametrize("variant", PAIRS)
def test_header_and_cells_match_msprobe_26_2(ours, variant):
    header, rows = ours[variant]
    theirs_header, theirs = _msprobe_csv(variant)
    assert theirs_header == MS_KERNEL_HEADER  # the fixture is what we think it is
    assert header == MS_KERNEL_HEADER + DUMPTUI_COLUMNS  # msprobe's columns first, in msprobe's order
    mine = {_key(r): r for r in rows}
    compared = 0
    for t in theirs:
        m = mine.get(_key(t))
        if m is None:
            # one-sided in msprobe (name-keyed): dumptui pairs it with the renamed op instead, and says so
            assert not t["NPU Name"] or not t["Bench Name"], t
            side = "NPU Name" if t["NPU Name"] else "Bench Name"
            partner = [r for r in rows if os.path.basename(r[side]) == os.path.basename(t[side])]
            assert len(partner) == 1 and partner[0]["dumptui Paired By"] not in ("exact name", ""), t
            continue
        repaired_npu = _payload_mismatch(m["NPU Name"])
        for col in MS_KERNEL_HEADER[2:]:
            if repaired_npu and col.startswith("NPU ") and col not in ("NPU Dtype", "NPU Tensor Shape"):
                continue  # msprobe read the float16-header bug's payload as garbage (NaN stats); we read it right
            assert _same(t[col], m[col]), (variant, _key(t), col, t[col], m[col])
        compared += 1
    assert compared >= len(theirs) - 6


def _rel_err(n, b):
    """msprobe's relative error, written here from its definition: in the bench dtype (float64 for
    integers and booleans), with that dtype's epsilon added to both sides where the bench is exactly 0."""
    dt = b.dtype if b.dtype.kind == "f" else np.dtype(np.float64)
    n, b = n.astype(dt), b.astype(dt)
    eps = np.finfo(dt).eps
    zero = b == 0
    n = np.where(zero, n + eps, n).astype(dt)
    b = np.where(zero, b + eps, b).astype(dt)
    with np.errstate(all="ignore"):
        return np.abs((n - b) / b)


def _expected(n, b):
    n64, b64 = n.reshape(-1).astype(np.float64), b.reshape(-1).astype(np.float64)
    rel = _rel_err(n, b)
    na, nb = np.linalg.norm(n64), np.linalg.norm(b64)
    cos = None if min(na, nb) <= np.finfo(float).eps else float(n64 @ b64 / (na * nb))
    return {
        "Cosine": cos,
        "EucDist": float(np.linalg.norm(n64 - b64)),
        "MaxAbsErr": float(np.max(np.abs(n64 - b64))),
        "MaxRelativeErr": float(np.max(rel)),
        "One Thousandth Err Ratio": float(np.sum(rel < 0.001) / rel.size),
        "Five Thousandths Err Ratio": float(np.sum(rel < 0.005) / rel.size),
    }


@pytest.mark.parametrize("variant", PAIRS)
def test_every_number_against_numpy(ours, variant):
    """Every numeric cell of a compared row, recomputed with numpy from the .npy files themselves."""
    _header, rows = ours[variant]
    checked = 0
    for r in rows:
        if not r["NPU Name"] or not r["Bench Name"] or _payload_mismatch(r["NPU Name"]):
            continue
        n, b = np.load(r["NPU Name"]), np.load(r["Bench Name"])
        for side, a in (("NPU", n), ("Bench", b)):
            assert r[f"{side} Dtype"] == str(a.dtype)
            assert r[f"{side} Tensor Shape"] == str(a.shape).replace("(", "[").replace(")", "]")
            if a.dtype != bool:  # printed in the tensor's own dtype (float32: its shortest repr), read back exactly
                assert a.dtype.type(r[f"{side} max"]) == np.max(a) and a.dtype.type(r[f"{side} min"]) == np.min(a)
            else:
                assert r[f"{side} max"] == str(bool(np.max(a))) and r[f"{side} min"] == str(bool(np.min(a)))
            assert float(r[f"{side} mean"]) == pytest.approx(float(np.mean(a, dtype=np.float64)), rel=1e-6, abs=1e-9)
            assert float(r[f"{side} l2norm"]) == pytest.approx(float(np.linalg.norm(a.astype(float))), rel=1e-6)
        if not r["Cosine"]:
            assert r["Err_message"] and not r["Accuracy Reached or Not"]
            continue
        exp = _expected(n, b)
        for col, want in exp.items():
            if col == "Cosine" and want is None:
                assert r[col] in ("Nan", "1.0")
                continue
            got = float(r[col])
            assert got == pytest.approx(want, rel=1e-9, abs=2e-12 if col != "Cosine" else 1e-6), (col, r)
        # msprobe's verdict, msprobe's rule: No when (cos < 0.99 and max abs > 0.001) or cos < 0.9 or max abs > 1
        cos = float(r["Cosine"]) if r["Cosine"] != "Nan" else math.nan
        mae = float(r["MaxAbsErr"])
        no = (cos < 0.99 and mae > 0.001) or cos < 0.9 or mae > 1
        assert r["Accuracy Reached or Not"] == ("No" if no else "Yes")
        checked += 1
    assert checked > 40


# ---------------------------------------------------------------------------- formulas on made-up tensors
def _pair(tmp_path, n, b, name="x"):
    tn = TensorRef(write_npy(tmp_path / "npu" / f"{name}.npy", n), "output", 0)
    tb = TensorRef(write_npy(tmp_path / "bench" / f"{name}.npy", b), "output", 0)
    return tn, tb


def test_relative_error_adds_dtype_epsilon_where_bench_is_zero(tmp_path):
    b = np.array([0.0, 1.0, 2.0, 0.0], np.float32)
    n = np.array([0.5, 1.0, 2.0, 0.0], np.float32)
    m = mm.compare(*_pair(tmp_path, n, b))
    # 0.5 against a zero bench: (0.5 + eps32 - eps32) / eps32, in float32 - a huge ratio, not left out
    want = float(
        np.abs(np.float32(0.5) + np.finfo(np.float32).eps - np.finfo(np.float32).eps) / np.finfo(np.float32).eps
    )
    assert m.max_rel == pytest.approx(want, rel=1e-6) and m.max_rel > 1e6
    assert m.euc_dist == 0.5 and m.max_abs == 0.5
    assert m.thousandth == 0.75  # 3 of 4 below 0.001 (the two equal ones and the zero/zero one)


def test_thousandth_ratio_is_strictly_below(tmp_path):
    b = np.full(4, 1000.0)
    n = np.array([1001.0, 1000.5, 1000.0, 1005.0])  # relative errors 0.001 (not counted), 0.0005, 0, 0.005
    m = mm.compare(*_pair(tmp_path, n, b))
    assert m.thousandth == 0.5 and m.five_thousandths == 0.75


def test_nan_at_same_positions_is_no_difference_elsewhere_not_comparable(tmp_path):
    b = np.array([1.0, np.nan, 3.0, np.inf], np.float32)
    m = mm.compare(*_pair(tmp_path, b.copy(), b))
    assert m.compared and m.cosine == 1.0 and m.max_abs == 0.0
    n = np.array([1.0, 2.0, np.nan, np.inf], np.float32)
    m = mm.compare(*_pair(tmp_path, n, b, "y"))
    assert not m.compared and m.message == mm.NAN_POSITIONS


def test_checks_and_their_messages(tmp_path):
    assert mm.compare(*_pair(tmp_path, np.array(1.0), np.array(1.0))).message == mm.SCALAR
    m = mm.compare(*_pair(tmp_path, np.ones(3, np.float16), np.ones(3, np.float32), "d"))
    assert m.message == mm.DTYPE_DIFFERS and not m.compared
    m = mm.compare(*_pair(tmp_path, np.ones(3), np.ones(4), "s"))
    assert m.message == mm.SHAPE_DIFFERS
    m = mm.compare(*_pair(tmp_path, np.ones(3), np.zeros(3), "z"))
    assert m.cosine == "Nan" and m.message == mm.ZERO_BENCH
    assert mm.compare(*_pair(tmp_path, np.zeros(3), np.zeros(3), "zz")).cosine == 1.0
    assert mm.compare(*_pair(tmp_path, np.ones(1), np.ones(1), "one")).cosine == "unsupported"
    assert mm.compare(None, _pair(tmp_path, np.ones(2), np.ones(2), "o")[1]).message == mm.NOT_NDARRAY


def test_cosine_rounding_and_accuracy_rule():
    assert mm._cosine(0.999995, 1.0, 1.0, 10) == (1.0, "")  # above 0.99999: exactly 1.0
    assert mm._cosine(0.9999234567, 1.0, 1.0, 10) == (0.999923, "")  # above 0.9999: 6 decimals
    assert mm._cosine(0.5483046693051234, 1.0, 1.0, 10) == (0.548304669305, "")  # else 12
    assert mm.check_accuracy(0.98, 0.002) == "No"
    assert mm.check_accuracy(0.98, 0.0005) == "Yes"
    assert mm.check_accuracy(0.95, 1.5) == "No"
    assert mm.check_accuracy("Nan", 0.4) == "Yes" and mm.check_accuracy("Nan", 6.8) == "No"
    assert mm.check_accuracy("unsupported", 1.0) == "None"


# ---------------------------------------------------------------------------- msprobe dumps: API modes
MP = SHARED / "msprobe-26.2-pytorch-cpu" / "dumps"


def _need_msprobe():
    if not MP.is_dir():
        pytest.skip(f"shared msprobe fixtures absent ({MP} not found)")


def test_api_tensor_mode_columns_and_numbers(tmp_path):
    _need_msprobe()
    path = tmp_path / "api.csv"
    rc, _out, err = run_here(
        "compare", MP / "tensor_mix" / "ref", MP / "tensor_mix" / "diverge", "--csv", path, "-q", "--rank", "0"
    )
    assert rc == 1, err
    header, rows = _rows(path)
    assert header == HEADERS["api-tensor"] + DUMPTUI_COLUMNS
    by = {r["NPU Name"]: r for r in rows}
    w = by["Functional.linear.0.forward.input.1"]  # the scaled fc1 weight
    assert w["Bench Name"] == w["NPU Name"] and w["NPU Dtype"] == "torch.float32"
    assert w["NPU Requires_grad"] == "True" and w["Requires_grad Consistent"] == "True"
    assert json.loads(w["Data_name"].replace("'", '"')) == [
        "Functional.linear.0.forward.input.1.pt",
        "Functional.linear.0.forward.input.1.pt",
    ]
    dump_json = json.loads((MP / "tensor_mix" / "diverge" / "step0" / "rank0" / "dump.json").read_text())
    rec = dump_json["data"]["Functional.linear.0.forward"]["input_args"][1]
    assert float(w["NPU max"]) == rec["Max"] and float(w["NPU l2norm"]) == rec["Norm"]
    assert w["NPU Tensor Shape"] == str(rec["shape"])
    assert float(w["Cosine"]) < 1 and float(w["MaxAbsErr"]) > 0
    assert by["Module.fc1.Linear.forward.0.parameters.weight"]["Cosine"] == w["Cosine"]


def test_api_statistics_mode_differences(tmp_path):
    _need_msprobe()
    path = tmp_path / "stats.csv"
    rc, _out, err = run_here(
        "compare", MP / "statistics_L1" / "ref", MP / "statistics_L1" / "diverge", "--csv", path, "-q"
    )
    assert rc in (0, 1), err
    header, rows = _rows(path)
    assert header == HEADERS["api-statistics"] + DUMPTUI_COLUMNS
    npu = json.loads((MP / "statistics_L1" / "diverge" / "step0" / "rank0" / "dump.json").read_text())["data"]
    bench = json.loads((MP / "statistics_L1" / "ref" / "step0" / "rank0" / "dump.json").read_text())["data"]
    r = next(r for r in rows if r["NPU Name"] == "Functional.linear.0.forward.input.1")
    n_rec, b_rec = (
        npu["Functional.linear.0.forward"]["input_args"][1],
        bench["Functional.linear.0.forward"]["input_args"][1],
    )
    for key, diff_col, rel_col in (("Max", "Max diff", "MaxRelativeErr"), ("Norm", "L2norm diff", "NormRelativeErr")):
        diff = n_rec[key] - b_rec[key]
        assert float(r[diff_col]) == diff  # NPU - Bench, signed
        assert float(r[rel_col].rstrip("%")) == pytest.approx(abs(diff / b_rec[key] * 100), rel=1e-12)
    same = next(r for r in rows if r["NPU Name"] == "Functional.conv2d.0.forward.input.0")
    assert float(same["Max diff"]) == 0 and same["Result"] == ""


def test_mindspore_statistic_mode(tmp_path):
    """statistic.csv dumps get msprobe's statistic table: |NPU - Bench|, the relative one in percent where the
    bench is positive (else 0%), and Yes while the max moved by at most half the larger max."""
    from helpers.msdumps import stat_dump

    variant = "2.4+ configurable statistic_category"
    ref = stat_dump(str(tmp_path / "a"), variant)
    tgt = stat_dump(str(tmp_path / "b"), variant, scale=1.5)
    path = tmp_path / "s.csv"
    rc, _out, err = run_here("compare", ref, tgt, "--csv", path, "-q")
    assert rc in (0, 1), err
    header, rows = _rows(path)
    assert header == HEADERS["mindspore-statistic"] + DUMPTUI_COLUMNS
    out = next(r for r in rows if "Conv2D" in r["NPU Name"] and r["dumptui Verdict"] == "diverged")
    n_max, b_max = np.float32(out["NPU max"]), np.float32(out["Bench max"])
    assert (n_max, b_max) == (np.float32(6.0), np.float32(4.0))
    assert np.float32(out["Max diff"]) == abs(n_max - b_max)
    assert out["MaxRelativeErr"] == f"{abs(n_max - b_max) / b_max * 100}%"
    assert out["MinRelativeErr"] == "0%"  # the bench min is negative: msprobe writes 0
    assert out["Accuracy Reached or Not"] == (
        "Yes" if abs(n_max - b_max) / (max(n_max, b_max) + 1e-10) <= 0.5 else "No"
    )


def test_api_md5_mode(tmp_path):
    from helpers.msdumps import write_statistics_dump

    ref = write_statistics_dump(tmp_path / "ref", 1.0, True)
    tgt = write_statistics_dump(tmp_path / "tgt", 1.5, True)
    path = tmp_path / "m.csv"
    rc, _out, err = run_here("compare", ref, tgt, "--csv", path, "-q")
    assert rc == 1, err
    header, rows = _rows(path)
    assert header == HEADERS["api-md5"] + DUMPTUI_COLUMNS
    assert {r["Result"] for r in rows} == {"pass"}  # the made-up dumps share one md5 everywhere
    assert all(r["NPU MD5"] == r["BENCH MD5"] == "0123abcd" for r in rows)
