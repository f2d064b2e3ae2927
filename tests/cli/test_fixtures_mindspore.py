"""The real MindSpore 2.10 dumps of ../shared/fixtures against their ground truth (skipped when absent)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from helpers.common import MS, run_cli

from dumptui.core.compare.batch import evaluate_all
from dumptui.core.compare.session import Session
from dumptui.core.formats import open_dump
from dumptui.core.graph.byflow import DATAFLOW_RETYPED
from dumptui.core.graph.pairedby import PairedBy
from dumptui.core.io.errors import DumpError
from dumptui.core.io.executor import LocalProcesses
from dumptui.core.model.dump import NameSource, OrderSource
from dumptui.core.search.bisect import Bisection
from dumptui.core.search.compare_all import compare_pair
from dumptui.report.reasons import say, say_all

CONV2 = "Default/conv2-ConvBlock/Conv2D-op0"


def session(fx, variant):
    return Session(open_dump(str(fx / "A")), open_dump(str(fx / variant)))


def bisect(fx, variant):
    s = session(fx, variant)
    bi = Bisection(s)
    bi.check_inputs()
    bi.run()
    return s, bi, bi.first_root()


def test_names_from_execution_order(fixtures):
    d = open_dump(str(fixtures / "A"))
    assert d.format == "mindspore-npy" and d.version == "2.10.0" and d.device == "CPU"
    assert say(d.variant) == "full scope names in file names, with .{dtype} suffix"
    eo = (fixtures / "A" / "rank_0" / "execution_order" / "ms_execution_order_graph_0.csv").read_text().split()[1:]
    assert [op.name for op in d.kernels] == eo
    assert d.order_source is OrderSource.FILE_TIMESTAMPS
    assert len(d.ops) == 32 and d.tensor_count() == 80
    x = d.op("x")
    assert x.kind == "parameter" and x.attrs["is_weight"] == "false"
    conv1 = d.op("Default/conv1-ConvBlock/Conv2D-op0")
    assert conv1.sources[0].kind == "parameter" and conv1.sources[0].ref == "x"
    assert conv1.sources[1].ref == "conv1.weight"  # through the Load node
    relu1 = d.op("Default/relu1-ReLU/ReLU-op0")
    assert relu1.sources[0].ref == "Default/bn1-BatchNorm2d/BatchNorm-op0"  # through TupleGetItem
    assert d.graph.has_edge("Default/bn1-BatchNorm2d/BatchNorm-op0", "Default/relu1-ReLU/ReLU-op0")


def test_c_fp16_dump_counters_mapped_to_graph_names(fixtures):
    """Trap T2: dump Cast-op0..5 are graph Cast-op3..8; trap T3: timestamps, not the csv, give the order."""
    d = open_dump(str(fixtures / "C_fp16"))
    casts = [op for op in d.kernels if op.scope == "Default/conv1-ConvBlock" and op.op_type == "Cast"]
    assert [(op.file_name.rsplit("_", 1)[-1], op.leaf) for op in casts] == [
        ("Cast-op0", "Cast-op3"),
        ("Cast-op1", "Cast-op4"),
        ("Cast-op2", "Cast-op5"),
        ("Cast-op3", "Cast-op6"),
        ("Cast-op4", "Cast-op7"),
        ("Cast-op5", "Cast-op8"),
    ]
    assert casts[0].name_source is NameSource.GRAPH_COUNTER_ORDER
    names = [op.name for op in d.kernels]
    # conv2's weight casts ran right after conv1's casts, before conv1's Conv2D (the csv lists them later)
    assert names.index("Default/conv2-ConvBlock/Cast-op5") < names.index("Default/conv1-ConvBlock/Conv2D-op0")
    # the shape of every mapped Cast agrees with the graph file's types
    from dumptui.core.formats.irtext import parse_ir_text

    ir = parse_ir_text(str(fixtures / "C_fp16" / "rank_0" / "graphs" / "ms_output_trace_code_graph_0.ir"))
    by_full = ir.by_full_name()
    for op in d.kernels:
        if op.op_type == "Cast":
            assert op.inputs[0].shape == by_full[op.name].in_types[0][1]


def test_c_fp16_header_payload_mismatch_detected_and_repaired(fixtures):
    """Trap T1: header says float16, payload is the float32 buffer."""
    d = open_dump(str(fixtures / "C_fp16"))
    conv = d.op("Default/conv1-ConvBlock/Conv2D-op0").outputs[0]
    assert say(conv.repaired) and "float16" in say(conv.repaired) and "float32" in say(conv.repaired)
    values = conv.array()
    assert values.dtype == np.float32 and values.shape == (1, 8, 32, 32)
    # the repaired values, rounded to fp16, equal the following Cast's output bit for bit
    cast = d.op("Default/conv1-ConvBlock/Cast-op7").outputs[0]
    np.testing.assert_array_equal(values.astype(np.float16), np.asarray(cast.array()))
    damaged = [t.path for op in d.ops for t in op.tensors() if say(t.repaired)]
    assert len(damaged) == 6


@pytest.mark.parametrize("variant", ["A_rerun", "C_fp16", "C_wround"])
def test_no_divergence(fixtures, variant):
    s, bi, culprit = bisect(fixtures, variant)
    assert culprit is None and bi.no_divergence


def test_b_pad_culprit_is_conv2(fixtures):
    s, bi, culprit = bisect(fixtures, "B_pad")
    assert culprit.pair.ref.name == CONV2 and culprit.pair.target.name == CONV2
    ins = {r.slot: r for r in culprit.result.inputs}
    assert ins[0].verdict == "equal" and ins[1].verdict == "equal"
    out = culprit.result.outputs[0]
    assert out.verdict == "diverged"
    assert out.stats.cos == pytest.approx(0.548305, abs=1e-6)
    assert out.stats.max_abs == pytest.approx(8.0258, abs=1e-4)
    assert out.stats.n_diff == 1024
    assert any("pad_list" in say(h.reason) for h in culprit.result.hints)
    assert bi.roots() == [culprit]


def test_b_mod_pairs_floormod_with_mod_and_hints(fixtures):
    s, bi, culprit = bisect(fixtures, "B_mod")
    p = culprit.pair
    assert (p.ref.name, p.target.name) == ("Default/branch-ModBranch/FloorMod-op0", "Default/branch-ModBranch/Mod-op0")
    assert p.how == DATAFLOW_RETYPED  # between the same paired producers and consumers
    out = culprit.result.outputs[0]
    assert out.stats.cos == pytest.approx(-0.047755, abs=1e-6)
    assert out.stats.max_abs == pytest.approx(0.75, abs=1e-6)
    assert out.stats.n_diff == 676
    assert all(r.verdict == "equal" for r in culprit.result.inputs)
    assert any("FloorMod" in say(h.reason) and "Mod" in say(h.reason) for h in culprit.result.hints)
    # relu2 (the parallel branch) stays equal
    relu2 = s.alignment.for_ref("Default/relu2-ReLU/ReLU-op0")
    assert s.op_result(relu2).verdict == "equal"


def test_c_fp16_alignment_keeps_extra_casts_unpaired(fixtures):
    s = session(fixtures, "C_fp16")
    counts = s.alignment.counts()
    assert counts == {PairedBy.EXACT: 32, PairedBy.ONLY_TARGET: 18}
    assert all(p.target.op_type == "Cast" for p in s.alignment.unpaired())


def test_cli_info_lists_iterations_to_choose(fixtures):
    rc, out, err = run_cli("info", MS / "extras" / "A_3iters")
    assert rc == 0, err
    assert "iterations 0 (80 files), 1 (80 files), 2 (80 files)" in out and "--step" in out


def test_compare_shows_small_differences_of_benign_pairs(fixtures):
    s = session(fixtures, "C_fp16")
    with LocalProcesses(2) as s.executor:
        results = compare_pair(s).results
    by = {(r.pair.name, t.label): t for r in results for t in r.inputs + r.outputs}
    fm = by[("Default/branch-ModBranch/FloorMod-op0", "output.0")]
    assert fm.verdict == "close" and fm.stats.cos == pytest.approx(0.997038, abs=1e-6)
    first = by[("Default/conv1-ConvBlock/Conv2D-op0", "input.0")]
    assert first.verdict == "close" and first.stats.cos == pytest.approx(0.99999998, abs=1e-8)
    final = by[("Default/sigmoid-Sigmoid/Sigmoid-op0", "output.0")]
    assert final.stats.cos == pytest.approx(0.99997, abs=1e-5) and final.stats.max_abs == pytest.approx(
        7.47e-3, abs=1e-4
    )
    bn = by[("Default/bn1-BatchNorm2d/BatchNorm-op0", "output.3")]
    assert bn.verdict == "ignored" and "uninitialised" in say(bn.reason)
    conv = by[("Default/conv1-ConvBlock/Conv2D-op0", "output.0")]
    assert conv.verdict == "close" and any("repaired" in n for n in say_all(conv.notes))
    assert not any(t.bad for r in results for t in r.inputs + r.outputs)


def test_c_wround_weights_benign_rounding_said_so(fixtures):
    s, bi, culprit = bisect(fixtures, "C_wround")
    status = {c.name: c.status for c in bi.checks}
    assert status["conv1.weight"] == "benign" and status["x"] == "benign" and status["conv1.bias"] == "equal"
    assert "float16 rounding" in next(say(c.detail) for c in bi.checks if c.name == "x")


def test_weights_that_differ_make_their_consumer_the_culprit(fixtures, tmp_path):
    """A copy of A with conv2.weight scaled by 1.01 (the Parameter, the conv's weight input and so its output,
    linear in its weight): the consumer is named, with the weight, at a high cosine. Only the Parameter file
    scaled, the conv computing exactly what it did: the weight it read is not that file (a training dump's
    Parameter written after the optimizer's update), and nothing is a root."""
    import shutil

    def scaled(name: str, conv_too: bool):
        tgt = tmp_path / name
        shutil.copytree(fixtures / "A", tgt)
        for f in (tgt / "rank_0" / "Net" / "0" / "0").iterdir():
            conv = f.name.startswith("Conv2D.Default_conv2-ConvBlock_Conv2D-op0") and ".input.0." not in f.name
            if f.name.startswith("Parameter.conv2_weight") or (conv_too and conv):
                f.chmod(0o600)
                np.save(f, (np.load(f) * np.float32(1.01)).astype(np.float32))
        return tgt

    s = Session(open_dump(str(fixtures / "A")), open_dump(str(scaled("A_param_only", conv_too=False))))
    bi = Bisection(s)
    bi.check_inputs()
    bi.run()
    assert bi.first_root() is None
    assert say(next(c for c in bi.checks if c.name == "conv2.weight").detail).endswith(
        f"it goes no further: every output of {CONV2} is equal"
    )
    tgt = scaled("A_w", conv_too=True)
    s = Session(open_dump(str(fixtures / "A")), open_dump(str(tgt)))
    bi = Bisection(s)
    checks = bi.check_inputs()
    bad = [c for c in checks if c.status == "differs"]
    assert [c.name for c in bad] == ["conv2.weight"]
    assert "checkpoint" in say(bad[0].detail) and bad[0].result.stats.cos > 0.9999
    bi.run()
    culprit = bi.first_root()
    assert culprit.pair.name == CONV2 and culprit.kind == "parameter" and "conv2.weight" in say(culprit.why)


def test_extras_multigraph_iterations_and_filter():
    if not (MS / "extras").is_dir():
        pytest.skip("shared fixtures absent: extras not found")
    ex = MS / "extras"
    d = open_dump(str(ex / "multigraph"))
    assert d.graphs == ["0", "1", "2", "4"]
    keys = [op.key for op in d.kernels]
    assert "0:Default/ReLU-op0" in keys and "4:Default/ReLU-op0" in keys
    assert d.op("4:Expand/_Muls/Mul-op0").name == "Expand/_Muls/Mul-op0"  # '__' mapped back through the csv
    with pytest.raises(DumpError) as e:
        open_dump(str(ex / "A_3iters"))
    assert "--step N" in e.value.reason and "0, 1, 2" in e.value.reason
    d1 = open_dump(str(ex / "A_3iters"), iteration="1")
    assert d1.iterations == {"0": "1"} and len(d1.kernels) == 19
    d2 = open_dump(str(ex / "A_3iters" / "rank_0" / "Net" / "0" / "2"))
    assert d2.iterations == {"0": "2"} and d2.graph is not None
    filt = open_dump(str(ex / "A_kernels_filter"))
    assert len(filt.kernels) == 4 and not [op for op in filt.ops if op.kind == "parameter"]
    # BatchNorm outputs 3/4 differ between iterations, and are ignored: no divergence
    s = Session(open_dump(str(ex / "A_3iters"), iteration="0"), open_dump(str(ex / "A_3iters"), iteration="2"))
    res = evaluate_all(s)
    diffs = [
        (r.pair.name, t.label, t.verdict) for r in res for t in r.outputs if not t.stats or not t.stats.bitwise_equal
    ]
    assert diffs and all(v == "ignored" for _, _, v in diffs)


@pytest.mark.parametrize(
    "variant,expected,code",
    [
        ("A_rerun", None, 0),
        ("B_pad", (CONV2, CONV2), 1),
        ("B_mod", ("Default/branch-ModBranch/FloorMod-op0", "Default/branch-ModBranch/Mod-op0"), 1),
        ("C_fp16", None, 0),
        ("C_wround", None, 0),
    ],
)
def test_cli_bisect_json(fixtures, variant, expected, code):
    rc, out, err = run_cli("bisect", fixtures / "A", fixtures / variant, "--json")
    assert rc == code, err
    d = json.loads(out)
    got = None if d["culprit"] is None else (d["culprit"]["ref"], d["culprit"]["target"])
    assert got == expected
    assert d["tensors_read"] >= 1 and isinstance(d["roots"], list)
    if variant == "B_mod":  # a discontinuous culprit: its hints never call its change benign noise
        hints = " ".join(d["culprit"]["hints"])
        assert "not benign" in hints and "tiny benign input noise" not in hints, hints


def test_cli_info_reports_damaged_files(fixtures):
    rc, out, err = run_cli("info", fixtures / "C_fp16")
    assert rc == 0, err
    assert "MindSpore 2.10.0" in out and "37 kernels, 13 parameters" in out
    assert out.count("damaged") == 6 and "payload" in out


def test_cli_compare_lists_benign_differences(fixtures, tmp_path):
    csv_path = tmp_path / "c.csv"
    rc, out, err = run_cli("compare", fixtures / "A", fixtures / "C_wround", "--csv", csv_path, "--csv-profile", "full")
    assert rc == 0, err
    import csv

    with open(csv_path) as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 80
    fm = next(r for r in rows if r["Bench Name"] == "Default/branch-ModBranch/FloorMod-op0" and r["IO"] == "output")
    assert float(fm["Cosine"]) == pytest.approx(0.997033, abs=1e-6) and fm["Verdict"] == "close"
    assert fm["KullbackLeiblerDivergence"] == "" and "--kl" in fm["Err_message"]


def test_filtered_dump_checks_weights_through_consumer_inputs(fixtures, tmp_path):
    """dump_mode 1 dumps no Parameter files: weights are checked through the kernels' input files."""
    import shutil

    ex = MS / "extras" / "A_kernels_filter"
    tgt = tmp_path / "filt"
    shutil.copytree(ex, tgt)
    d = tgt / "rank_0" / "Net" / "0" / "0"
    for f in d.iterdir():
        # the weight the conv reads, and so what it computes (a conv without bias is linear in its weight)
        if f.name.startswith("Conv2D.Default_conv3-ConvBlock_Conv2D-op0") and (
            ".input.1." in f.name or ".output.0." in f.name
        ):
            f.chmod(0o600)
            np.save(f, (np.load(f) * np.float32(1.02)).astype(np.float32))
    s = Session(open_dump(str(ex)), open_dump(str(tgt)))
    bi = Bisection(s)
    checks = {c.name: c for c in bi.check_inputs()}
    assert checks["conv3.weight"].status == "differs" and checks["conv1.weight"].status == "equal"
    assert checks["x"].kind == "network input" and checks["x"].status == "equal"
    bi.run()
    assert bi.first_root().pair.name == "Default/conv3-ConvBlock/Conv2D-op0"
