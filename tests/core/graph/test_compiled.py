"""A target compiled as an Ascend310 graph is (core/demo/compiled.py): ops paired by dataflow, not by name or
place — a fused chain as a group, a renamed vendor kernel in a moved branch, never Erf with the Cast beside
it — the wiring of inputs checked, and an op on one side only never taken for noise. `bisect` and `compare`
name the same roots."""

from __future__ import annotations

import json
import os
import shutil

import numpy as np
import pytest
from helpers.common import run_here

from dumptui.core.demo.compiled import EXTRA_OP, GELU_REF, VARIANTS, write_compiled_demo
from dumptui.core.demo.dumpwriter import SIDES, PairWriter, f16
from dumptui.core.graph.align import RENAMED
from dumptui.core.graph.byflow import DATAFLOW_RETYPED, GROUPED
from dumptui.options.pair import PairOptions, make_session, open_pair

# the commands run in this process (what they answer is the question here, not how a process starts),
# with one pool of worker processes for the module
pytestmark = pytest.mark.usefixtures("commands_share_one_pool")


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    root = tmp_path_factory.mktemp("compiled")
    return {v: write_compiled_demo(str(root / v), v) for v in VARIANTS}


def session_of(demo):
    options = PairOptions(demo.ref, demo.target)
    ref, target = open_pair(options)
    return make_session(options, ref, target)


def pairs_by_name(session):
    return {(p.ref.name if p.ref else None, p.target.name if p.target else None): p for p in session.alignment.pairs}


def test_the_fused_chain_pairs_as_a_group_and_erf_never_with_the_cast_beside_it(compiled):
    s = session_of(compiled["compiled"])
    pairs = pairs_by_name(s)
    group = pairs[(f"{GELU_REF}/Mul-op0+RealDiv-op0+Erf-op0+Add-op0+Mul-op1", f"{GELU_REF}/GeLU-op0")]
    assert group.how == GROUPED
    assert group.ref.fused == tuple(
        f"{GELU_REF}/{n}" for n in ("Mul-op0", "RealDiv-op0", "Erf-op0", "Add-op0", "Mul-op1")
    )
    for p in s.alignment.pairs:  # Erf has the Cast's scope and shapes: they are still two ops of other kinds
        names = {o.op_type for o in (p.ref, p.target) if o is not None}
        assert not ({"Erf", "Cast"} <= names), p
    casts = [p for p in s.alignment.unpaired() if p.op_type == "Cast"]
    assert {p.target.name for p in casts} >= {f"{GELU_REF}/Cast-op0", f"{GELU_REF}/Cast-op1"}


def test_the_renamed_vendor_kernel_of_a_moved_branch_pairs_by_its_producers_and_consumers(compiled):
    s = session_of(compiled["compiled"])
    pair = pairs_by_name(s)[("Default/head-Head/l2-L2Norm/ReduceSum-op0", "Default/head-Head/l2-L2Norm/Custom-op0")]
    assert pair.how == DATAFLOW_RETYPED
    # the branch really ran elsewhere on the target: its ops come before branch A's there, after them here
    ref_mean = s.ref.op("Default/head-Head/centre-Centre/ReduceMean-op0")
    tgt_mean = s.target.op("Default/head-Head/centre-Centre/ReduceMean-op0")
    assert pair.ref.order > ref_mean.order and pair.target.order < tgt_mean.order


@pytest.mark.parametrize("variant", VARIANTS)
def test_bisect_and_compare_name_the_planted_culprit_or_none(compiled, variant):
    demo = compiled[variant]
    rc, out, err = run_here("bisect", demo.ref, demo.target, "--json")
    doc = json.loads(out)
    rc_c, out_c, _ = run_here("compare", demo.ref, demo.target, "--json")
    cdoc = json.loads(out_c)
    if demo.culprit is None:
        assert doc["culprit"] is None and cdoc["roots"] == []
        assert (rc, rc_c) == ((2, 2) if demo.incomplete else (0, 0)), (rc, doc.get("undecided"), err)
    else:
        assert rc == rc_c == 1, err
        assert (doc["culprit"]["ref"], doc["culprit"]["target"]) == demo.culprit
        first = cdoc["roots"][0]
        assert (first["ref"], first["target"]) == demo.culprit  # compare names the same first root


def test_an_op_on_one_side_only_is_never_taken_for_noise(compiled):
    demo = compiled["extra-op"]
    rc, out, _ = run_here("bisect", demo.ref, demo.target, "--json")
    doc = json.loads(out)
    assert rc == 2 and doc["culprit"] is None
    assert any(EXTRA_OP in u and "target-only" in u for u in doc["undecided"]), doc["undecided"]
    rc, out, _ = run_here("compare", demo.ref, demo.target, "--json")
    doc = json.loads(out)
    assert rc == 2 and doc["incomplete"] and any(EXTRA_OP in u for u in doc["undecided"])
    add = next(o for o in doc["ops"] if o["ref"] == "Default/ffn-FFN/Add-op0")
    reasons = " ".join(t["reason"] for t in add["inputs"] + add["outputs"])
    assert "precision noise" not in reasons and "target-only op" in reasons
    # the error it carries, checked against the dumped files: 3 % as planted, far above fp16's floor
    r = np.load(_file(demo.ref, "Default_ffn-FFN_Add-op0", "input.0")).astype(np.float64)
    t = np.load(_file(demo.target, "Default_ffn-FFN_Add-op0", "input.0")).astype(np.float64)
    assert 0.02 < np.mean(np.abs(t - r)) / np.sqrt(np.mean(r * r)) < 0.04


def test_a_wiring_bug_is_the_root_and_its_remedy_is_the_graph(compiled):
    demo = compiled["concat-swap"]
    rc, out, _ = run_here("bisect", demo.ref, demo.target, "--json")
    doc = json.loads(out)
    assert rc == 1
    why = doc["culprit"]["why"]
    assert "input.0 carries the reference's input.1" in why and "input.1 carries the reference's input.0" in why
    assert doc["remedy"]["culprits"][0]["cause"] == "wiring"
    # checked on the files: the target's input.0 is the reference's input.1, exactly as fp16 stores it
    ref1 = np.load(_file(demo.ref, "Default_head-Head_Concat-op0", "input.1"))
    tgt0 = np.load(_file(demo.target, "Default_head-Head_Concat-op0", "input.0"))
    assert np.allclose(tgt0.astype(np.float64), ref1.astype(np.float64), rtol=2e-3, atol=2e-3)


def test_inputs_swapped_into_an_op_that_does_not_care_are_no_root(tmp_path):
    """Add(b, a) where the reference has Add(a, b): wired otherwise, the same output: no root."""
    root = str(tmp_path / "commuted")
    io = PairWriter(root)
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((8, 8)).astype(np.float32), rng.standard_normal((8, 8)).astype(np.float32)
    for side in SIDES:
        cast = f16 if side == "target" else (lambda v: np.asarray(v, dtype=np.float32))
        pa = (cast(a), io.param(side, "a", a, is_weight=False))
        pb = (cast(b), io.param(side, "b", b, is_weight=False))
        ea = io.op(side, "Exp", "Default/ea-E/Exp-op0", [pa], cast(np.exp(pa[0].astype(np.float64))))
        eb = io.op(side, "Exp", "Default/eb-E/Exp-op0", [pb], cast(np.exp(pb[0].astype(np.float64))))
        ins = [ea, eb] if side == "ref" else [eb, ea]
        io.op(side, "Add", "Default/Add-op0", ins, cast(ea[0].astype(np.float64) + eb[0].astype(np.float64)))
    io.finish()
    rc, out, err = run_here("bisect", f"{root}/ref", f"{root}/target", "--json")
    assert rc == 0 and json.loads(out)["culprit"] is None, err


def test_without_graphs_a_rename_needs_the_same_input_values(compiled, tmp_path):
    """No graph files: FloorMod <-> Mod style renames pair only when their inputs agree; Erf and the Cast
    beside it (same scope, same shapes) read other values and stay apart."""
    demo = compiled["compiled"]
    for side in ("ref", "target"):
        shutil.copytree(os.path.join(demo.root, side), tmp_path / side)
        shutil.rmtree(tmp_path / side / "rank_0" / "graphs")
    options = PairOptions(str(tmp_path / "ref"), str(tmp_path / "target"))
    s = make_session(options, *open_pair(options))
    kinds = [{o.op_type for o in (p.ref, p.target) if o is not None} for p in s.alignment.pairs]
    assert {"Erf", "Cast"} not in kinds
    renamed = [p for p in s.alignment.pairs if p.how == RENAMED]
    assert ("Default/head-Head/l2-L2Norm/ReduceSum-op0", "Default/head-Head/l2-L2Norm/Custom-op0") in {
        (p.ref.name, p.target.name) for p in renamed
    }
    for p in renamed:  # whatever was renamed read the same values
        r = np.load(p.ref.inputs[0].path).astype(np.float64)
        t = np.load(p.target.inputs[0].path).astype(np.float64)
        assert np.linalg.norm(t - r) <= 0.05 * np.linalg.norm(r)


def _file(dump: str, op: str, what: str) -> str:
    folder = os.path.join(dump, "rank_0", "Net", "0", "0")
    return next(os.path.join(folder, f) for f in os.listdir(folder) if f".{op}." in f and f".{what}." in f)
