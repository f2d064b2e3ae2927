"""The scan's pieces (core/search/measure.py, replays.py and scan.py), each against an independent numpy computation on a small
generated pair (the residual demo: an fp16 region and a planted bug): measuring (rounding, combining,
an op's output error), replay shipping (a plan sent to a worker gives the proof made here), and the
scan with its rejudging (roots, taint down the predecessors, verdicts in context)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dumptui.core.compare.batch import evaluate_all
from dumptui.core.compare.noise import TensorError
from dumptui.core.compare.session import Session
from dumptui.core.compare.verdict import DIVERGED, IGNORED
from dumptui.core.formats import open_dump
from dumptui.core.search import scan as scan_module
from dumptui.core.search.measure import _combine, input_roles, measured, needs_replay
from dumptui.core.search.replays import _error_margin, _round_to, _run_shipped_many, _shipped, replay_plan, run_replay
from dumptui.core.search.scan import kernel_order, scan

RNG = np.random.default_rng(20261205)


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    from dumptui.core.demo.residual import write_demo

    return write_demo(str(tmp_path_factory.mktemp("scan")), n_ops=24, size=512)


def session_of(pair) -> Session:
    return Session(open_dump(pair.ref), open_dump(pair.target))


# --- measuring ------------------------------------------------------------------------------------


def bf16_by_arithmetic(x: float) -> float:
    """Round a float32 value to bfloat16's 8 significant bits, nearest, ties to even (Python's round)."""
    if x == 0 or not math.isfinite(x):
        return x
    _m, e = math.frexp(x)
    unit = 2.0 ** (e - 8)
    return round(x / unit) * unit


def test_round_to_stores_values_as_the_device_would():
    a = RNG.standard_normal(2000) * 10.0 ** RNG.integers(-3, 4, 2000)
    assert np.array_equal(_round_to(a, "float16"), a.astype(np.float16).astype(np.float64))
    assert np.array_equal(_round_to(a, "float32"), a.astype(np.float32).astype(np.float64))
    want = np.array([bf16_by_arithmetic(float(v)) for v in a.astype(np.float32)])
    assert np.array_equal(_round_to(a, "bfloat16"), want)
    ties = np.array([1 + 2.0**-8, 1 + 3 * 2.0**-8])  # halfway: down to 1, up to 1 + 2^-6 (the even ones)
    assert list(_round_to(ties, "bfloat16")) == [1.0, 1 + 2.0**-6]
    assert np.isinf(_round_to(np.array([1e6]), "float16")).all()
    assert _round_to(a, None) is a
    ints = np.arange(5)
    assert _round_to(ints, "float16") is ints


def test_error_margin_is_three_standard_errors_of_the_sampled_mean():
    want = RNG.standard_normal(4096)
    got = want + RNG.standard_normal(4096) * 1e-3
    got[7] = np.nan  # not finite: left out
    d = np.abs(want - got)[np.isfinite(got)]
    expected = 3 * np.sqrt(np.mean((d - d.mean()) ** 2)) / np.sqrt(d.size) / d.mean()
    assert _error_margin(want, got) == pytest.approx(expected, rel=1e-12)
    assert _error_margin(want, want.copy()) == 0.0


def test_combine_takes_the_worst_of_each_scale_and_the_slot_of_the_worst_relative():
    a = TensorError(rel=0.1, abs=5.0, rel_l2=0.2, abs_rms=1.0, nonfinite=0, n=10)
    b = TensorError(rel=0.3, abs=1.0, rel_l2=0.1, abs_rms=2.0, nonfinite=3, n=20)
    out, slot = _combine([(0, a), (2, b)])
    assert slot == 2 and out is not None
    assert (out.rel, out.abs, out.rel_l2, out.abs_rms, out.nonfinite, out.n) == (0.3, 5.0, 0.2, 2.0, 3, 20)
    assert _combine([]) == (None, None)


def read(t) -> np.ndarray:
    return np.asarray(t.read(), dtype=np.float64).reshape(-1)


def test_an_ops_output_error_is_the_numpy_rms_error_over_the_reference_rms(pair):
    """measured(): the op's output error on the L2 scale is, over its compared outputs, the largest
    sqrt(mean((target - ref)^2)) / sqrt(mean(ref^2)), read here from the dumped files."""
    session = session_of(pair)
    checked = 0
    for res in evaluate_all(session, kernel_order(session)):
        le = measured(session, res)
        outs = [r for r in res.outputs if r.verdict != IGNORED and r.ref is not None and r.target is not None]
        if le.out is None or not outs or any(r.statistics_only for r in outs):
            continue
        rels = []
        for r in outs:
            ref, tgt = read(r.ref), read(r.target)
            if ref.size != tgt.size or not (np.isfinite(ref).all() and np.isfinite(tgt).all()):
                break
            rels.append(np.sqrt(np.mean((tgt - ref) ** 2)) / np.sqrt(np.mean(ref**2)))
        else:
            assert le.out.rel_l2 == pytest.approx(max(rels), rel=1e-6, abs=1e-12), res.pair.label
            checked += 1
    assert checked >= 10, "most of the demo's ops are compared tensor by tensor"


# --- replay shipping --------------------------------------------------------------------------------


def plans_of(session: Session) -> list:
    plans = []
    for res in evaluate_all(session, kernel_order(session)):
        le = measured(session, res)
        if needs_replay(session, le):
            plan, _why = replay_plan(session, le.pair, input_roles(le.pair), le.out_slot or 0)
            if plan is not None:
                plans.append((le.pair.key, plan))
    return plans


def test_a_shipped_plan_gives_the_proof_made_here(pair):
    """A plan described as specs (what a worker process receives) and read back gives, number for number,
    the proof made from the tensors themselves; the planted op's proof says its target is broken."""
    plans = plans_of(session_of(pair))
    assert len(plans) >= 2, "the fp16 region and the planted bug give ops to replay"
    broken = []
    for key, plan in plans:
        shipped = _shipped(plan)
        assert shipped is not None and shipped is not plan
        (a, why_a), [(b, why_b)] = run_replay(plan), _run_shipped_many([shipped])
        assert why_a == why_b and (a is None) == (b is None)
        if a is not None and b is not None:
            assert (a.dev_ref, a.dev_target, a.tail_ref, a.tail_target) == (
                b.dev_ref,
                b.dev_target,
                b.tail_ref,
                b.tail_target,
            )
            if a.broken(10.0):
                broken.append(key)
    assert pair.planted in broken


def test_the_targets_constant_taken_from_the_reference_is_not_read(tmp_path):
    """A constant slot the target takes from the reference (the op's definition: `from_ref`) is the
    reference's value: the target's own file of it is never read, so a missing one changes nothing."""
    from dumptui.core.compare.metrics import ElementTolerance
    from dumptui.core.model.dump import INPUT, OUTPUT, TensorRef
    from dumptui.core.search.replays import ReplayPlanOf

    rng = np.random.default_rng(4)
    x = rng.standard_normal(64).astype(np.float32)
    files = {"x": x, "c": np.array(0.5, np.float32), "ref_out": x * np.float32(0.5), "tgt_out": x * np.float32(0.5)}
    for name, value in files.items():
        np.save(tmp_path / f"{name}.npy", value)

    def ref(name: str, io=INPUT, slot: int = 0) -> TensorRef:
        return TensorRef(str(tmp_path / f"{name}.npy"), io, slot, "float32", files[name].shape)

    def plan(target_constant: TensorRef) -> ReplayPlanOf:
        return ReplayPlanOf(
            op_type="Mul",
            attrs={},
            constants={},
            inputs=({0: ref("x"), 1: ref("c", slot=1)}, {0: ref("x"), 1: target_constant}),
            from_ref=(1,),
            outputs=(ref("ref_out", OUTPUT), ref("tgt_out", OUTPUT)),
            out_shapes=({0: (64,)}, {0: (64,)}),
            tolerances=(ElementTolerance(), ElementTolerance()),
            floors=(1e-6, 1e-6),
            slot=0,
        )

    read, why = run_replay(plan(ref("c", slot=1)))
    missing = TensorRef(str(tmp_path / "gone.npy"), INPUT, 1, "float32", ())
    unread, why_unread = run_replay(plan(missing))
    assert read is not None and unread is not None and why == why_unread == ""
    assert (unread.dev_ref, unread.dev_target) == (read.dev_ref, read.dev_target) == (0.0, 0.0)


ELEMENTWISE = {"Add": np.add, "Mul": np.multiply, "ReLU": lambda x: np.maximum(x, 0)}


def test_a_replay_deviation_is_zero_exactly_where_numpy_recomputes_the_dump(pair):
    """Add, Mul and ReLU recomputed here in float32 from each side's own dumped inputs (exact for these: the
    float64 result rounded to float32 is float32 arithmetic): where numpy gives the dumped output bit for bit,
    the proof's deviation is 0; where not (the planted Add on the target), it is, and numpy sees a relative
    RMS error of the same order."""
    checked, off = 0, 0
    for key, plan in plans_of(session_of(pair)):
        if plan.op_type not in ELEMENTWISE:
            continue
        proof, _why = run_replay(plan)
        assert proof is not None, key
        for side, dev in ((0, proof.dev_ref), (1, proof.dev_target)):
            ins = [
                np.asarray(plan.inputs[side][s].read(), dtype=np.float32).reshape(-1) for s in sorted(plan.inputs[side])
            ]
            want = ELEMENTWISE[plan.op_type](*ins).astype(np.float64)
            got = read(plan.outputs[side])
            if np.array_equal(want, got):
                assert dev == 0.0, (key, side)
            else:
                rel_l2 = np.sqrt(np.mean((want - got) ** 2)) / np.sqrt(np.mean(got**2))
                assert dev > 0.0 and 0.1 < dev / rel_l2 < 10.0, (key, side, dev, rel_l2)
                off += 1
            checked += 1
    assert checked >= 8 and off >= 1, (checked, off)


# --- the scan and its rejudging -----------------------------------------------------------------------


def test_the_scan_finds_the_planted_root_and_taints_everything_after_it(pair):
    session = session_of(pair)
    order = kernel_order(session)
    chain = lambda pos: {pos - 1} if pos else set()  # noqa: E731 - each op fed by the one before it
    sr = scan(session, order, chain)
    assert len(sr.locals) == len(sr.tainted) == len(order)
    assert [le.pair.key for le in sr.locals] == [p.key for p in order]
    assert sr.roots == [le for le in sr.locals if le.is_root]
    assert sr.roots[0].pair.key == pair.planted
    first = next(i for i, le in enumerate(sr.locals) if le.is_root or le.unjudged_flow)
    assert sr.tainted == [i >= first for i in range(len(order))]
    untouched = scan(session, order, lambda pos: set())
    assert untouched.tainted == [le.is_root or le.unjudged_flow for le in untouched.locals]


def test_rejudging_calls_noise_before_the_root_close_and_keeps_the_root_diverged(pair):
    """Outputs beyond their floor with no root upstream are restated (carried precision noise, never
    DIVERGED in context); the planted root's output stays DIVERGED."""
    session = session_of(pair)
    order = kernel_order(session)
    sr = scan(session, order, lambda pos: {pos - 1} if pos else set())
    planted = next(i for i, le in enumerate(sr.locals) if le.pair.key == pair.planted)
    restated = 0
    for pos, le in enumerate(sr.locals):
        res = session.op_result(le.pair, purpose="scan")
        for r in res.outputs:
            seen = sr.in_context.tensor(r)
            if pos < planted and not sr.tainted[pos]:
                assert seen.verdict != DIVERGED, le.pair.label
                restated += seen.verdict != r.verdict
            if pos == planted and r.slot == le.out_slot:
                assert seen.verdict == DIVERGED
    assert restated >= 1, "the fp16 region's outputs beyond the floor are restated in context"


def test_the_scan_and_the_bisection_name_the_same_first_root(pair):
    from dumptui.core.search.bisect import Bisection

    bi = Bisection(session_of(pair))
    bi.prepare()
    bi.run()
    culprit = bi.first_root()
    assert culprit is not None and culprit.pair.key == pair.planted
    assert scan_module.position_of(bi.scan_result) == {p.index: i for i, p in enumerate(bi.scan_result.order)}
