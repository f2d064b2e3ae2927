"""Where the error is born: the local-error rule, on real noisy MindSpore dumps and on generated networks
with fp16 noise over 200+ ops and one small planted bug (or none)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from helpers.common import SHARED

from dumptui.core.compare.ledger import Purpose
from dumptui.core.compare.metrics import compare_arrays
from dumptui.core.compare.noise import TensorError, fmt_rel, tensor_error
from dumptui.core.compare.session import Session
from dumptui.core.demo.noisy import BUGS, bf16_round, write_noisy_demo
from dumptui.core.formats import open_dump
from dumptui.core.graph.align import OpPair
from dumptui.core.search.bisect import Bisection
from dumptui.core.search.compare_all import compare_pair
from dumptui.core.search.localerror import Difference, DiffKind, LocalError, ReplayProof, classify
from dumptui.report.reasons import say

NOISY = SHARED / "mindspore-2.10-noisy"


def need_noisy():
    if not (NOISY / "dumps" / "REF").is_dir():
        pytest.skip(f"shared noisy fixtures absent ({NOISY} not found): real-dump test skipped")
    return json.loads((NOISY / "ground_truth.json").read_text())["pairs"]


def run(ref: str, target: str, **kw) -> Bisection:
    bi = Bisection(Session(open_dump(ref), open_dump(target)), **kw)
    bi.check_inputs()
    bi.run()
    return bi


# ------------------------------------------------------------------------------------------------ error measures


def test_tensor_error_is_the_trimmed_mean_over_the_rms():
    rng = np.random.default_rng(3)
    y = rng.standard_normal(5000)
    x = y + 1e-3 * rng.standard_normal(5000)
    x[:20] += 5.0  # 0.4 % of the elements jump: dropped by the 1 % trim
    err = tensor_error(compare_arrays(y, x, kl=False))
    e = np.sort(np.abs(x - y))[: 5000 - 50]
    rms = np.sqrt(np.mean(y**2))
    assert err.rel == pytest.approx(e.mean() / rms, rel=1e-12)
    assert err.abs == pytest.approx(e.mean(), rel=1e-12)
    assert err.rel_l2 == pytest.approx(np.linalg.norm(x - y) / np.linalg.norm(y), rel=1e-12)  # keeps outliers
    assert err.rel_l2 > 10 * err.rel


def test_nan_inf_positions_make_an_infinite_error():
    y = np.array([1.0, 2.0, 3.0, 4.0])
    x = np.array([1.0, np.inf, 3.0, 4.0])
    err = tensor_error(compare_arrays(y, x, kl=False))
    assert err.nonfinite == 1 and math.isinf(err.worst_rel)


# ------------------------------------------------------------------------------------------------ the rule


def le_of(
    out_rel: float,
    in_rel: float,
    out_abs: float | None = None,
    in_abs: float | None = None,
    floor: float = 2.0**-13,
    replay: ReplayProof | None = None,
    differs=(),
) -> LocalError:
    out = TensorError(out_rel, out_abs if out_abs is not None else out_rel, out_rel, out_abs or out_rel)
    data_in = TensorError(in_rel, in_abs if in_abs is not None else in_rel, in_rel, in_abs or in_rel)
    return classify(
        LocalError(OpPair(0, None, None, "x"), out, 0, data_in, 0, floor, "float32", list(differs), replay), 10.0
    )


def test_gain_rule_needs_both_scales_and_the_floor():
    assert le_of(3e-3, 2e-4).kind == "root"  # x15 on both scales, above the floor
    assert le_of(1e-3, 2e-4).kind == "carries"  # x5: carried, with the numbers
    assert "x5 what its inputs carry" in say(le_of(1e-3, 2e-4).why)
    assert le_of(5e-5, 0.0).kind == "clean"  # below the fp32 floor whatever the gain
    # a reduction grows absolute error 20x, not relative error: not a root
    assert le_of(3e-3, 2e-4, out_abs=1e-3, in_abs=5e-4).kind == "carries"
    assert le_of(1e-2, 0.0).kind == "root" and "inputs agree" in say(le_of(1e-2, 0.0).why)


def test_replay_decides_where_it_is_conclusive():
    # an amplifier (Exp of a bigger input): gain x1e6, yet it computes exactly what it should on its inputs
    consistent = ReplayProof(dev_ref=1e-8, dev_target=2e-8, floor_ref=2.0**-13, floor_target=2.0**-13)
    assert le_of(5.0, 5e-6, replay=consistent).kind == "carries"
    # a silent kernel bug: gain only x3, yet the target departs from what the op computes
    broken = ReplayProof(dev_ref=1e-8, dev_target=5e-3, floor_ref=2.0**-13, floor_target=2.0**-13)
    le = le_of(6e-3, 2e-3, replay=broken, differs=[Difference(DiffKind.CONSTANT, "1e-05", "0.005", slot=6)])
    assert le.kind == "root" and "off by 5.00e-03" in say(le.why) and "1e-05 vs 0.005" in say(le.why)
    # the recomputation does not model the reference op: the gain rule decides
    unknown = ReplayProof(dev_ref=0.5, dev_target=0.5, floor_ref=2.0**-13, floor_target=2.0**-13)
    assert le_of(6e-3, 2e-3, replay=unknown).kind == "carries"
    assert le_of(6e-2, 2e-4, replay=unknown).kind == "root" and "inconclusive" in say(
        le_of(6e-2, 2e-4, replay=unknown).why
    )


# ------------------------------------------------------------------------------------------------ generated networks


@pytest.fixture(scope="module")
def noisy_nets(tmp_path_factory):
    root = tmp_path_factory.mktemp("noisy")
    cases = [("fp16", None), ("bf16-input", None), ("bf16-autocast", None), ("fp32", "branch")]
    cases += [("fp16", bug) for bug in BUGS]
    return {(p, b): write_noisy_demo(str(root / f"{p}-{b}"), p, b) for p, b in cases}


@pytest.mark.parametrize(
    "precision,bug",
    [
        ("fp16", None),
        ("fp16", "main"),
        ("fp16", "branch"),
        ("fp16", "discontinuous"),
        ("fp16", "weight"),
        ("bf16-input", None),
        ("bf16-autocast", None),
        ("fp32", "branch"),
    ],
)
def test_generated_networks_name_the_planted_op_or_none(noisy_nets, precision, bug):
    demo = noisy_nets[(precision, bug)]
    assert demo.n_kernels >= 200
    bi = run(demo.ref, demo.target)
    roots = [r.pair.name for r in bi.roots()]
    assert roots == ([demo.planted] if bug else []), (bi.search_reason, [say(r.why) for r in bi.roots()])
    assert bi.search == ("bisection" if precision == "fp32" else "scan")
    comparison = compare_pair(Session(open_dump(demo.ref), open_dump(demo.target)))
    assert [r.pair.name for r in comparison.roots] == roots  # bisect and compare agree


def test_the_search_reason_counts_the_rounded_weights_it_names(noisy_nets):
    """`N inputs/weights rounded (a, b, c and N-3 more)`: the names shown never pass for all of them."""
    import re

    bi = run(noisy_nets[("fp16", "main")].ref, noisy_nets[("fp16", "main")].target)
    rounded = [c.name for c in bi.checks if c.status == "benign"]
    assert len(rounded) > 3
    m = re.search(r"(\d+) inputs/weights rounded \(([^()]*)\)", say(bi.search_reason))
    assert m and int(m.group(1)) == len(rounded)
    assert m.group(2) == ", ".join(rounded[:3]) + f" and {len(rounded) - 3} more"


def test_a_diluted_branch_bug_is_found_on_a_clean_pair_with_few_reads(noisy_nets):
    """fp32 both sides: the branch's effect at the output is far below 5 % of the RMS, yet it is found by
    bisection, and the first probe after the merge is not called good."""
    demo = noisy_nets[("fp32", "branch")]
    bi = run(demo.ref, demo.target)
    out = bi.session.op_result(bi.order[-1], inputs=False).outputs[0]
    assert out.stats.rel_euclid < 0.05 and out.verdict == "diverged"
    assert bi.first_root().pair.name == demo.planted
    n = len(bi.order)
    assert (
        sum(1 for r in bi.session.ledger.reads() if r.purpose != Purpose.PRECONDITION)
        <= 2 * math.ceil(math.log2(n)) + 4
    )


def test_benign_discontinuous_jumps_are_not_roots(noisy_nets):
    """fp16 noise moves a few Floor outputs by a whole step: the Floor carries, it is not a root, and its
    output is close in context (no root upstream)."""
    demo = noisy_nets[("fp16", None)]
    comparison = compare_pair(Session(open_dump(demo.ref), open_dump(demo.target)))
    floors = [le for le in comparison.locals.values() if le.pair.op_type == "Floor"]
    jumped = [le for le in floors if le.out is not None and le.out.rel_l2 > 10 * le.out.rel]
    assert jumped, "the generated fp16 run should make some Floor jump"
    for le in jumped:
        assert le.kind in ("carries", "clean"), say(le.why)
    verdicts = {t.verdict for r in comparison.results for t in r.outputs}
    assert "diverged" not in verdicts


def test_bf16_rounded_input_is_a_named_benign_precondition(noisy_nets):
    demo = noisy_nets[("bf16-input", None)]
    bi = run(demo.ref, demo.target)
    x = next(c for c in bi.checks if c.name == "x")
    assert x.kind == "network input" and x.status == "benign" and "bfloat16 rounding" in say(x.detail)
    assert bi.first_root() is None and "rounded (x)" in say(bi.search_reason)
    assert np.array_equal(bf16_round(bf16_round(np.float32([1.0001, -3.3]))), bf16_round(np.float32([1.0001, -3.3])))


# ------------------------------------------------------------------------------------------------ real dumps


@pytest.mark.parametrize(
    "name", ["REF_vs_RERUN", "REF_vs_P0", "REF_vs_P1", "REF_vs_P2", "REF_vs_P3", "REF_vs_P4", "REF_vs_P5"]
)
def test_noisy_fixture_culprits(name):
    pairs = need_noisy()
    gt = pairs[name]
    bi = run(str(NOISY / gt["ref"]), str(NOISY / gt["target"]))
    root = bi.first_root()
    if gt["culprit"] is None:
        assert root is None, [say(r.why) for r in bi.roots()]
        return
    assert root is not None and (root.pair.ref.name, root.pair.target.name) == (
        gt["culprit"]["ref"],
        gt["culprit"]["target"],
    )
    assert [r.pair.name for r in bi.roots()] == [root.pair.name]  # one root: the trap ops are not blamed
    comparison = compare_pair(Session(open_dump(str(NOISY / gt["ref"])), open_dump(str(NOISY / gt["target"]))))
    assert [r.pair.name for r in comparison.roots] == [root.pair.name]


def test_noisy_fixture_proofs_carry_the_numbers():
    pairs = need_noisy()
    p1 = run(str(NOISY / pairs["REF_vs_P1"]["ref"]), str(NOISY / pairs["REF_vs_P1"]["target"])).first_root()
    assert p1.local.replay is not None and p1.local.replay.dev_ref == 0 and p1.local.replay.dev_target > 0.1
    assert "op type Floor vs Trunc" in say(p1.local.why)
    p5 = run(str(NOISY / pairs["REF_vs_P5"]["ref"]), str(NOISY / pairs["REF_vs_P5"]["target"]))
    assert "constant input.1: 0.5 vs 500" in say(p5.first_root().local.why)
    exp = next(le for le in p5.scan_result.locals if le.pair.op_type == "Exp")
    assert exp.kind == "carries" and math.isinf(exp.gain_rel)  # infinite gain, yet replay says carried


@pytest.mark.parametrize("name,slot", [("REF_vs_P2", 6), ("REF_vs_P5", 1)])
def test_a_constant_that_differs_is_never_called_carried_noise(name, slot):
    """The scan re-judges diverged tensors with no root upstream as carried precision noise; a constant
    input is the op's definition, not something carried: it stays diverged, beside a why that names it and
    never says "inputs agree"."""
    gt = need_noisy()[name]
    bi = run(str(NOISY / gt["ref"]), str(NOISY / gt["target"]))
    root = bi.first_root()
    constant = next(r for r in bi.session.op_result(root.pair, purpose="view").inputs if r.slot == slot)
    assert constant.verdict == "diverged" and "carried" not in say(constant.reason)
    assert say(root.why).startswith(f"outputs diverge; constant input.{slot} differs (")
    assert "inputs agree, outputs" not in say(root.why)
    # the other inputs carry fp16 noise beyond this op's float32 floor: said with its number, never "agree"
    le = root.local
    assert le is not None and le.data_in is not None and le.data_in.worst_rel > le.floor
    assert say(root.why).endswith(
        f"; its other inputs carry {fmt_rel(le.data_in.worst_rel)} (noise carried in, no root upstream)"
    )


def test_cli_bisect_and_compare_carry_the_local_error(noisy_nets, tmp_path, commands_share_one_pool):
    """The headless reports show the search used, each root's gain and replay proof, and compare's columns;
    the numbers in --json are the ones the engine computed. (The commands run in this process: what they write
    is the question here, not how a process starts.)"""
    from helpers.common import run_here

    demo = noisy_nets[("fp16", "main")]
    json_path = tmp_path / "b.json"
    rc, out, err = run_here("bisect", demo.ref, demo.target, "--json", json_path)  # the text still on stdout
    assert rc == 1, err
    assert "Local-error scan" in out and "proof (replay):" in out
    d = json.loads(json_path.read_text())
    assert d["search"]["kind"] == "scan" and "Cast" in d["search"]["reason"]
    le = d["culprit"]["local_error"]
    assert d["culprit"]["ref"] == demo.planted and le["kind"] == "root"
    assert le["replay"]["target_deviation"] > 10 * max(le["replay"]["reference_deviation"], 2.0**-13)
    assert le["gain"] == pytest.approx(le["output_error"] / le["input_error"], rel=1e-9)
    csv_path = tmp_path / "c.csv"
    rc, out, err = run_here("compare", demo.ref, demo.target, "--csv", csv_path, "--csv-profile", "full")
    assert rc == 1, err
    import csv

    with open(csv_path) as fh:
        rows = [r for r in csv.DictReader(fh) if r["Root"] == "Yes"]
    assert [r["Bench Name"] for r in rows] == [demo.planted]
    benign = noisy_nets[("fp16", None)]
    rc, out, err = run_here("bisect", benign.ref, benign.target)
    assert rc == 0 and "Benign" in out and "carried from precision noise" in out
    rc, out, err = run_here("compare", benign.ref, benign.target, "--json")
    assert rc == 0 and json.loads(out)["roots"] == [] and json.loads(out)["benign"]


def test_the_tail_counts_an_output_only_at_the_ops_floor_or_looser():
    """A float32 output computed from bfloat16 values (a weight gradient summed over a batch under autocast) is
    compared at float32's tolerance: its bfloat16 noise puts most elements "far off" there. The op's floor is
    bfloat16's, and the tail rule says "off by more than 10x the bfloat16 floor": so that output's count is
    not its tail (it made a real training step's layer_norm backward a false root); counted at the op's
    floor, it is."""
    from dumptui.core.compare.results import TensorResult
    from dumptui.core.compare.verdict import DIVERGED, Thresholds
    from dumptui.core.model.dump import OUTPUT
    from dumptui.core.search.localerror import shape_of_error

    rng = np.random.default_rng(5)
    ref = rng.standard_normal(4096).astype(np.float32)
    target = (ref + bf16_round(ref) - ref + 1e-3 * rng.standard_normal(4096) * np.abs(ref)).astype(np.float32)
    th = Thresholds()
    f32, bf16 = th.floor("float32")[0], th.floor("bfloat16")[0]
    tol32 = th.tolerance("float32", "float32")
    st = compare_arrays(ref, target, tol32)
    res = TensorResult(OUTPUT, 0, None, None, DIVERGED, stats=st, tolerance=tol32)
    share = st.n_off / st.compared
    assert share > 0.1  # bfloat16 noise, counted at float32's tolerance: far above TAIL_SHARE (1 %)
    assert shape_of_error([res], [], floor=f32)[0] == share
    assert shape_of_error([res], [], floor=bf16)[0] == 0.0
    loose = compare_arrays(ref, target, th.tolerance("bfloat16", "bfloat16"))
    at_op_floor = TensorResult(
        OUTPUT, 0, None, None, DIVERGED, stats=loose, tolerance=th.tolerance("bfloat16", "bfloat16")
    )
    assert shape_of_error([at_op_floor], [], floor=bf16)[0] == loose.n_off / loose.compared
