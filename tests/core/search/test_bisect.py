"""The bisection state machine on the demo pair (planted culprit known) and on hand-made edge cases."""

from __future__ import annotations

import json
import math
import os

import numpy as np
import pytest

from dumptui.core.compare.ledger import Purpose
from dumptui.core.compare.session import Session
from dumptui.core.demo.residual import write_demo
from dumptui.core.formats import open_dump
from dumptui.core.search.bisect import Bisection, sessionfile
from dumptui.report.reasons import say, say_all


def demo_session(info):
    return Session(open_dump(info.ref), open_dump(info.target))


def test_demo_planted_culprit_found_graph_mode(demo_pair):
    s = demo_session(demo_pair)
    bi = Bisection(s)
    assert bi.mode == "graph"
    bi.check_inputs()
    bi.run()
    r = bi.first_root()
    assert r.pair.name == demo_pair.planted and r.kind == "outputs"
    # the planted bug is a layout attribute: said, as the app's culprit panel says it
    assert say(r.why) == 'inputs agree, outputs diverge; its definition differs (attribute format: "NCHW" vs "NHWC")'
    assert all(t.verdict in ("equal", "close") for t in r.result.inputs)
    assert r.result.outputs[0].verdict == "diverged"
    assert any("format" in say(h.reason) and "NHWC" in say(h.reason) for h in r.result.hints)
    assert bi.roots() == [r]


def test_demo_planted_culprit_found_linear_mode(demo_pair):
    s = demo_session(demo_pair)
    bi = Bisection(s, use_graph=False)
    assert bi.mode == "linear"
    bi.run()
    assert bi.first_root().pair.name == demo_pair.planted


@pytest.mark.parametrize("n_ops", [60, 400])
def test_reads_at_most_2log2n_plus_4_pairs(tmp_path, n_ops):
    """On a clean pair bisection reads O(log n) pairs; on a noisy one it says it scanned and why."""
    info = write_demo(str(tmp_path / "clean"), n_ops=n_ops, size=64, fp16_region=None)
    s = demo_session(info)
    bi = Bisection(s)
    bi.run()
    assert bi.search == "bisection" and say(bi.search_reason).startswith("clean pair")
    assert bi.first_root().pair.name == info.planted
    n = len(bi.order)
    bisect_reads = sum(1 for r in s.ledger.reads() if r.purpose != Purpose.PRECONDITION)
    assert bisect_reads <= 2 * math.ceil(math.log2(n)) + 4, s.ledger.reads()
    noisy = write_demo(str(tmp_path / "noisy"), n_ops=n_ops, size=64)
    bi = Bisection(demo_session(noisy))
    bi.run()
    assert bi.search == "scan" and "on one side only (Cast)" in say(bi.search_reason)
    assert bi.first_root().pair.name == noisy.planted


def test_fp16_region_is_close_not_diverged(demo_pair):
    s = demo_session(demo_pair)
    fp16 = next(p for p in s.alignment.pairs if p.name == demo_pair.fp16_first)
    res = s.op_result(fp16)
    assert res.outputs[0].verdict == "close"
    assert any("dtypes differ" in n for n in say_all(res.outputs[0].notes))
    casts = [p for p in s.alignment.unpaired() if p.target is not None and p.target.op_type == "Cast"]
    assert len(casts) >= 2


def test_user_marks_undo_reset_and_replay(demo_pair, tmp_path):
    s = demo_session(demo_pair)
    bi = Bisection(s)
    bi.start()
    first = bi.next_probe()
    n_before = len(bi.candidates)
    bi.mark(first, "bad", "user", "marked by the user")
    assert len(bi.candidates) < n_before and bi.hi == first
    assert bi.history[-1].source == "user"
    assert bi.undo()
    assert len(bi.candidates) == n_before and bi.hi != first
    # accept computed verdicts to the end, save, replay on a new session: same culprit, no new probes needed
    bi.run()
    culprit = bi.first_root().pair.key
    path = tmp_path / "s.json"
    sessionfile.write_session(str(path), sessionfile.session_payload(bi.to_json(), demo_pair.ref, demo_pair.target, {}))
    data = json.loads(path.read_text())
    assert data["dumps"]["ref"] == os.path.abspath(demo_pair.ref) and data["steps"]
    bi2 = Bisection(demo_session(demo_pair))
    missing = bi2.replay(data)
    assert missing == []
    bi2.run()
    assert bi2.first_root().pair.key == culprit
    bi.reset()
    assert not bi.started and bi.history == [] and len(bi.candidates) == len(bi.order)
    # a reset is undoable (issue 21.4): the marks and the culprit come back
    assert bi.undo()
    assert bi.finished and bi.first_root().pair.key == culprit and bi.history


def test_wrong_user_mark_is_caught_by_the_culprit_check(demo_pair):
    """Marking the planted op good sends the search downstream; the check finds a bad input and walks back."""
    s = demo_session(demo_pair)
    bi = Bisection(s)
    bi.start()
    planted = next(i for i, p in enumerate(bi.order) if p.name == demo_pair.planted)
    after = planted + 1
    bi.mark(after, "bad", "user")
    bi.run()
    r = bi.first_root()
    assert r.pair.name == demo_pair.planted


def test_no_divergence_on_identical_dumps(demo_pair):
    s = Session(open_dump(demo_pair.ref), open_dump(demo_pair.ref))
    bi = Bisection(s)
    bi.check_inputs()
    bi.run()
    assert bi.first_root() is None and bi.no_divergence
    assert all(c.status == "equal" for c in bi.checks)


def _chain_dump(tmp_path, name, values_by_op, order, edges, dumped=None):
    """A tiny MindSpore-layout dump with a text IR giving the graph `edges` (producer -> consumer);
    only the ops in `dumped` (default: all) have files, as in a dump_mode 1 dump."""
    preds = {}
    for p, c in edges:
        preds.setdefault(c, []).append(p)
    rank = tmp_path / name / "rank_0"
    d = rank / "Net" / "0" / "0"
    d.mkdir(parents=True)
    ts = 100
    ir = [
        "# IR entry: @kernel_graph0",
        "%para1_x: <Tensor[Float32], (4)> : [4]  :  IsWeight: false",
        "subgraph @kernel_graph0() {",
    ]
    ids = {}
    for i, op in enumerate(order):
        ids[op] = i
        ins = preds.get(op, [])
        args = ", ".join(f"%{ids[p]}" for p in ins) or "%para1_x"
        ir.append(f"  %{i}(y) = Add({args})")
        ir.append("      : (<Tensor[Float32], (4)>) -> (<Tensor[Float32], (4)>)")
        ir.append(f"      # Fullname with scope: (Default/{op}-op0)")
        in_vals = [values_by_op[p] for p in ins] or [np.ones(4, np.float32)]
        if dumped is not None and op not in dumped:
            continue
        for slot, v in enumerate(in_vals):
            np.save(d / f"Add.Default_{op}-op0.0.0.{ts}.input.{slot}.DefaultFormat.Float32.npy", v)
            ts += 1
        np.save(d / f"Add.Default_{op}-op0.0.0.{ts}.output.0.DefaultFormat.Float32.npy", values_by_op[op])
        ts += 1
    ir.append("}")
    (rank / "graphs").mkdir()
    (rank / "graphs" / "ms_output_trace_code_graph_0.ir").write_text("\n".join(ir) + "\n")
    return str(tmp_path / name)


def test_two_parallel_roots_are_both_reported(tmp_path):
    """a -> b1 -> c and a -> b2 -> c: b1 and b2 both diverge on their own; both are roots."""
    order = ["a", "b1", "b2", "c"]
    edges = [("a", "b1"), ("a", "b2"), ("b1", "c"), ("b2", "c")]
    ref = {k: np.arange(4, dtype=np.float32) + i for i, k in enumerate(order)}
    tgt = dict(ref)
    tgt["b1"] = -ref["b1"]
    tgt["b2"] = ref["b2"][::-1].copy()
    tgt["c"] = ref["c"] * -3
    s = Session(
        open_dump(_chain_dump(tmp_path, "r", ref, order, edges)),
        open_dump(_chain_dump(tmp_path, "t", tgt, order, edges)),
    )
    bi = Bisection(s)
    bi.run()
    names = [r.pair.name for r in bi.roots()]
    assert names == ["Default/b1-op0", "Default/b2-op0"]
    assert bi.first_root().pair.name == "Default/b1-op0"


def test_masked_divergence_found_through_bad_input(tmp_path):
    """b diverges but c's output happens to agree (masking); d is bad: the check walks back to b."""
    order = ["a", "b", "c", "d"]
    edges = [("a", "b"), ("b", "c"), ("c", "d")]
    ref = {k: np.arange(4, dtype=np.float32) + i for i, k in enumerate(order)}
    tgt = dict(ref)
    tgt["b"] = -ref["b"]
    tgt["d"] = -ref["d"]
    rd = _chain_dump(tmp_path, "r", ref, order, edges)
    td = _chain_dump(tmp_path, "t", tgt, order, edges)
    bi = Bisection(Session(open_dump(rd), open_dump(td)))
    bi.run()
    r = bi.first_root()
    # c's output agrees although its input (b's output) does not: b is the root
    assert r.pair.name == "Default/b-op0"


def test_long_undumped_chains_are_bridged(tmp_path):
    """3,000 kernels in the graph, 4 dumped (a filtered dump): the graph still links the dumped ones."""
    order = [f"k{i}" for i in range(3000)]
    edges = list(zip(order, order[1:]))
    ref = {k: np.full(4, i, np.float32) for i, k in enumerate(order)}
    tgt = dict(ref)
    for k in order[1500:]:
        tgt[k] = -ref[k] - 1
    dumped = {"k0", "k1000", "k2000", "k2999"}
    s = Session(
        open_dump(_chain_dump(tmp_path, "r", ref, order, edges, dumped)),
        open_dump(_chain_dump(tmp_path, "t", tgt, order, edges, dumped)),
    )
    bi = Bisection(s)
    assert bi.mode == "graph" and len(bi.order) == 4
    assert set(bi.dag.edges) == {(0, 1), (1, 2), (2, 3)}
    bi.run()
    assert bi.first_root().pair.name == "Default/k2000-op0"


def test_undo_takes_back_a_mark_with_the_steps_it_triggered(tmp_path):
    """Linear bisection over [p, a, q1, q2, m]: the good branch a-q1-q2 passes the probes to m, whose
    culprit check finds its input from p diverged and walks back; undo then removes all of it."""
    order = ["p", "a", "q1", "q2", "m"]
    edges = [("a", "q1"), ("q1", "q2"), ("p", "m"), ("q2", "m")]
    ref = {k: np.arange(4, dtype=np.float32) + i for i, k in enumerate(order)}
    tgt = dict(ref)
    tgt["p"] = -ref["p"]
    tgt["m"] = -ref["m"]
    bi = Bisection(
        Session(
            open_dump(_chain_dump(tmp_path, "r", ref, order, edges)),
            open_dump(_chain_dump(tmp_path, "t", tgt, order, edges)),
        ),
        use_graph=False,
    )
    bi.start()
    assert bi.history and bi.history[0].source == "start"
    assert not bi.undo()  # the start is not a mark
    bi.run()
    assert any(st.source == "check" for st in bi.history) and bi.first_root().pair.name == "Default/p-op0"
    while bi.undo():
        pass
    assert [st.source for st in bi.history] == ["start"] and not bi.finished and bi.culprit is None


def test_user_marked_good_producer_is_named_in_the_caveat(clean_demo_pair, demo_pair):
    s = demo_session(clean_demo_pair)
    bi = Bisection(s)
    bi.start()
    planted = next(i for i, p in enumerate(bi.order) if p.name == demo_pair.planted)
    bi.mark(planted, "good", "user")  # wrong on purpose
    bi.run()
    r = bi.first_root()
    assert r.pair.name != clean_demo_pair.planted
    assert any("marked good" in c and clean_demo_pair.planted in c for c in say_all(r.caveats))
    # On a noisy pair the scan has read every op: a wrong mark cannot hide the root it found.
    bi = Bisection(demo_session(demo_pair))
    bi.start()
    bi.mark(next(i for i, p in enumerate(bi.order) if p.name == demo_pair.planted), "good", "user")
    bi.run()
    assert bi.search == "scan" and bi.first_root().pair.name == demo_pair.planted


def test_reset_and_start_again_say_what_the_first_start_said(tmp_path):
    """A reset goes back to before the start: the notes and the undecided reasons of the search are said
    again by the next start, not added to each time (they grew on every reset + start)."""
    import numpy as np

    from dumptui.core.demo.dumpwriter import PairWriter
    from dumptui.core.search.bisect import Bisection
    from dumptui.options.pair import PairOptions, make_session, open_pair

    io = PairWriter(str(tmp_path))  # no op on both sides: the start says so, in its notes and undecided
    x = np.ones((4,), dtype=np.float32)
    io.op("ref", "Exp", "Default/a-A/Exp-op0", [(x, io.param("ref", "x", x, is_weight=False))], np.exp(x))
    io.op("target", "Log", "Default/b-B/Log-op0", [(x, io.param("target", "x", x, is_weight=False))], np.log(x))
    io.finish()
    options = PairOptions(str(tmp_path / "ref"), str(tmp_path / "target"))
    bi = Bisection(make_session(options, *open_pair(options)))
    bi.run()
    first = (list(bi.notes), list(bi.undecided), bi.state.finished)
    assert first[1]  # the search said why it could not decide
    for _ in range(3):
        bi.reset()
        assert not bi.state.started and not bi.history
        bi.run()
        assert (list(bi.notes), list(bi.undecided), bi.state.finished) == first


def _copy_without(src: str, dst: str, op: str, io: str) -> str:
    """A copy of dump `src` without op `op`'s first `io` file (a file lost, or renamed out of reach)."""
    import shutil

    shutil.copytree(src, dst)
    mangled = op.replace("/", "_")
    for folder, _dirs, files in os.walk(dst):
        for f in sorted(files):
            if f".{mangled}." in f and f".{io}." in f:
                os.remove(os.path.join(folder, f))
                return dst
    raise AssertionError(f"no {io} file of {op}")


def test_error_from_an_op_whose_output_one_dump_lacks_is_never_noise(clean_demo_pair, tmp_path):
    """The planted op's output file is gone from the target: that op cannot be judged, and the error its
    consumers carry is said to come from it, not called precision noise; the answer is undecided (exit 2)."""
    from helpers.common import run_cli

    target = _copy_without(clean_demo_pair.target, str(tmp_path / "target"), clean_demo_pair.planted, "output")
    code, out, err = run_cli("bisect", clean_demo_pair.ref, target, "--json", "-")
    doc = json.loads(out)
    assert code == 2 and doc["culprit"] is None, err
    said = " ".join(doc["undecided"])
    assert f"from {clean_demo_pair.planted}, whose output.0 the target dump does not hold" in said
    code, out, _err = run_cli("compare", clean_demo_pair.ref, target, "--json", "-")
    doc = json.loads(out)
    assert code == 2 and not doc["roots"]
    reasons = [t["reason"] for op in doc["ops"] for t in op["inputs"] + op["outputs"]]
    assert not any("carried precision noise" in r and "e-01 of its RMS" in r for r in reasons)


def test_an_op_that_agrees_is_never_named_for_its_consumers_missing_input(clean_demo_pair, tmp_path):
    """The planted op's input file is gone from the target: the search traces that input to its producer,
    whose output agrees. That producer is no culprit ("inputs agree, outputs diverge" would contradict its
    numbers); the planted op is named, or the answer is undecided."""
    from helpers.common import run_cli

    target = _copy_without(clean_demo_pair.target, str(tmp_path / "target"), clean_demo_pair.planted, "input")
    code, out, err = run_cli("bisect", clean_demo_pair.ref, target, "--json", "-")
    doc = json.loads(out)
    assert code in (1, 2), err
    assert [r["ref"] for r in doc["roots"]] in ([], [clean_demo_pair.planted]), doc["roots"]
    if doc["culprit"] is not None:
        assert doc["culprit"]["ref"] == clean_demo_pair.planted and doc["culprit"]["verdict"] == "diverged"


def test_a_lost_input_file_of_the_culprit_never_makes_its_producer_the_culprit(tmp_path):
    """Real 310-like dumps (a conv whose folded BatchNorm used another channel's variance): with the conv's
    input.0 file lost on the target, the search traced that input to its producer, a ReLU whose numbers all
    agree, and named it ("inputs agree, outputs diverge"). The conv is still the culprit (its weight check
    does not need that input); the ReLU is never named."""
    import shutil

    from helpers.common import SHARED, run_cli

    dumps = SHARED / "mindspore-2.10-transformed" / "dumps"
    if not (dumps / "det_BNVAR").is_dir():
        pytest.skip(f"shared fixtures absent ({dumps} not found; DUMPTUI_FIXTURES=DIR names them)")
    conv = "Default/layer2-SequentialCell/b00-ResBlock/down-Conv2d/Conv2D-op0"
    target = shutil.copytree(dumps / "det_BNVAR", tmp_path / "target")
    lost = next(p for p in target.rglob("*.input.0.*") if f".{conv.replace('/', '_')}." in p.name)
    lost.unlink()
    code, out, err = run_cli("bisect", dumps / "det_REF", target, "--json", "-")
    doc = json.loads(out)
    assert code == 1 and doc["culprit"]["ref"] == conv, err
    assert all("ReLU" not in r["ref"] for r in doc["roots"])
