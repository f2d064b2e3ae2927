"""Sampled replays (core/search/replays.py `sample_positions`): a big output's proof compares the recomputation at
REPLAY_SAMPLE positions drawn with a fixed seed. Against the full replay of the same ops on a generated pair
(fp16 region and a planted bug): the same conclusion for every op, each number within the margin the proof
states, the same roots from the scan, and the sample said in the proof's sentence."""

from __future__ import annotations

import numpy as np
import pytest

from dumptui.core.compare import sampling
from dumptui.core.compare.batch import evaluate_all
from dumptui.core.compare.sampling import REPLAY_SAMPLE, sample_positions
from dumptui.core.compare.session import Session
from dumptui.core.formats import open_dump
from dumptui.core.io.executor import InProcess
from dumptui.core.search import replays as scan_module
from dumptui.core.search.measure import input_roles, measured, needs_replay
from dumptui.core.search.replays import replay_plan, run_replays
from dumptui.core.search.scan import kernel_order
from dumptui.report.reasons import replay_sentence

SIZE = 1 << 15  # elements per tensor: 8 x REPLAY_SAMPLE


@pytest.fixture(scope="module")
def big_pair(tmp_path_factory):
    from dumptui.core.demo.residual import write_demo

    return write_demo(str(tmp_path_factory.mktemp("sampled")), n_ops=40, size=SIZE)


def proofs(pair, sampled_from: int, monkeypatch) -> tuple[list, dict]:
    monkeypatch.setattr(sampling, "REPLAY_SAMPLED_FROM", sampled_from)
    session = Session(open_dump(pair.ref), open_dump(pair.target))
    plans = []
    for res in evaluate_all(session, kernel_order(session)):
        le = measured(session, res)
        if needs_replay(session, le):
            plan, _why = replay_plan(session, le.pair, input_roles(le.pair), le.out_slot or 0)
            if plan is not None:
                plans.append((le.pair.key, plan))
    done = dict(run_replays([plan for _key, plan in plans], InProcess()))
    return [key for key, _plan in plans], {plans[i][0]: proof for i, (proof, _why) in done.items()}


def test_positions_are_fixed_and_only_for_big_outputs():
    assert sample_positions(sampling.REPLAY_SAMPLED_FROM - 1) is None
    a, b = sample_positions(1 << 20), sample_positions(1 << 20)
    assert a is not None and b is not None and a.size == REPLAY_SAMPLE and (a == b).all()
    assert a.min() >= 0 and a.max() < 1 << 20


def test_a_sampled_proof_agrees_with_the_full_replay_within_its_stated_margin(big_pair, monkeypatch):
    keys, full = proofs(big_pair, 1 << 40, monkeypatch)
    keys_sampled, sampled = proofs(big_pair, SIZE // 2, monkeypatch)
    assert keys == keys_sampled and len(keys) >= 3
    broken = 0
    for key in keys:
        f, s = full[key], sampled[key]
        assert (f is None) == (s is None), key
        if f is None or s is None:
            continue
        assert f.sample == 0 and s.sample == REPLAY_SAMPLE and s.elements == SIZE
        for gain in (10.0,):
            assert (f.conclusive(gain), f.broken(gain)) == (s.conclusive(gain), s.broken(gain)), key
        broken += f.broken(10.0)
        for a, b in ((f.dev_ref, s.dev_ref), (f.dev_target, s.dev_target)):
            assert abs(a - b) <= s.error_margin * a + 1e-300, (key, a, b, s.error_margin)
        share_margin = (
            max(3 * ((t * (1 - t)) / REPLAY_SAMPLE) ** 0.5 for t in (s.tail_ref, s.tail_target)) or 3 / REPLAY_SAMPLE
        )
        assert abs(f.tail_target - s.tail_target) <= max(share_margin, 3 / REPLAY_SAMPLE), key
        assert f"compared at {REPLAY_SAMPLE:,} of {SIZE:,} output positions" in replay_sentence(s)
        assert "compared at" not in replay_sentence(f)
    assert broken >= 1, "the planted bug's op is proven broken"


def test_a_replay_given_its_outputs_sampled_values_reads_no_output_file(big_pair, monkeypatch):
    """A plan that carries each side's dumped output at the sampled positions (as the worker that compared the
    pair read them: processes.run_units, Session.take_sampled) reads neither output file, and proves exactly
    what the plan that reads them proves."""
    from dataclasses import replace

    from dumptui.core.search import replays
    from dumptui.core.search.replay.run import _SAMPLED

    def replay_at_kernel(op_type: str) -> bool:
        return op_type in _SAMPLED

    keys, _full = proofs(big_pair, SIZE // 2, monkeypatch)
    session = Session(open_dump(big_pair.ref), open_dump(big_pair.target))
    plans = []
    for res in evaluate_all(session, kernel_order(session)):
        le = measured(session, res)
        plan, _why = replay_plan(session, le.pair, input_roles(le.pair), le.out_slot or 0)
        if plan is not None and le.pair.key in keys:
            plans.append(plan)
    assert len(plans) >= 3
    read: list[str] = []
    real_read = replays._read
    monkeypatch.setattr(replays, "_read", lambda t: read.append(t.path) or real_read(t))
    plain = list(run_replays(plans, InProcess()))
    outputs = {t.path for plan in plans for t in plan.outputs}
    assert outputs & set(read)
    given = []
    for plan in plans:
        positions = sample_positions(plan.outputs[0].size or 0)
        assert positions is not None
        dumped = tuple(np.asarray(t.read()).reshape(-1)[positions] for t in plan.outputs)
        given.append(replace(plan, dumped=dumped))
    read.clear()
    assert list(run_replays(given, InProcess())) == plain
    # every output of an op computed at the positions only (replay_at: the products, activations, element-wise
    # ops) is taken from the plan; an op replayed whole still reads its output
    at_positions = {t.path for plan in plans if replay_at_kernel(plan.op_type) for t in plan.outputs}
    assert at_positions and not at_positions & set(read)
    assert outputs - at_positions >= outputs & set(read)


def test_the_scan_names_the_same_roots_sampled_or_not(big_pair, monkeypatch):
    from dumptui.core.search.bisect import Bisection

    roots = []
    for sampled_from in (1 << 40, SIZE // 2):
        monkeypatch.setattr(sampling, "REPLAY_SAMPLED_FROM", sampled_from)
        bi = Bisection(Session(open_dump(big_pair.ref), open_dump(big_pair.target)))
        bi.prepare()
        bi.run()
        culprit = bi.first_root()
        assert culprit is not None
        roots.append((culprit.pair.key, [le.pair.key for le in bi.scan_result.roots]))
    assert roots[0] == roots[1]
    assert roots[0][0] == big_pair.planted


def test_a_sampled_product_proves_as_the_whole_product_at_the_same_positions(tmp_path, monkeypatch):
    """A scan's proof of a big product computes it at the compared positions only (replay.replay_at): the same
    proof, number for number (within 1e-9), as the whole product compared at those positions. (Every output
    sampled here, so the noisy demo's fp16 MatMul head is a big one.)"""
    from dumptui.core.demo.noisy import write_noisy_demo
    from dumptui.core.search import replay

    demo = write_noisy_demo(str(tmp_path / "noisy"), "fp16", "main", blocks=8)
    asked: list[str] = []
    real_at = replay.replay_at

    def at(spec, positions, dumped):
        asked.append(spec.op_type)
        return real_at(spec, positions, dumped)

    monkeypatch.setattr(scan_module, "replay_at", at)
    keys, sampled = proofs(demo, 1, monkeypatch)
    products = [k for k in keys if "MatMul" in k]
    assert products and "MatMul" in asked, "the fp16 MatMul head needs a proof"
    monkeypatch.setattr(scan_module, "replay_at", lambda spec, positions, dumped: None)  # the whole product
    _keys, whole = proofs(demo, 1, monkeypatch)
    for key in keys:
        a, b = sampled[key], whole[key]
        assert (a is None) == (b is None)
        if a is not None:
            for x, y in ((a.dev_ref, b.dev_ref), (a.dev_target, b.dev_target), (a.tail_ref, b.tail_ref)):
                assert x == pytest.approx(y, rel=1e-9, abs=1e-15)
            assert (a.sample, a.elements) == (b.sample, b.elements)
