"""The MindSpore >= 1.3 reader on dumps written here: every naming variant, layout level and damage."""

from __future__ import annotations

import os

import numpy as np
import pytest
from helpers.common import write_npy
from helpers.msdumps import STAT_HEADERS, ms_file, small_dump, stat_dump

from dumptui.core.formats import detect, open_dump
from dumptui.core.formats.mindspore import DtypeSuffix
from dumptui.core.formats.statistic_csv import StatisticHeader, read_statistic_csv
from dumptui.core.io.errors import DumpError
from dumptui.core.model.dump import NameSource, OrderSource
from dumptui.core.model.reason import Why, because
from dumptui.report.reasons import STATISTIC_HEADER_WORDS, say, say_all


def test_full_scope_names_with_dtype_suffix(tmp_path):
    root = small_dump(str(tmp_path / "a"))
    assert detect(root) == "mindspore-npy"
    d = open_dump(root)
    assert [op.name for op in d.kernels] == ["Default/conv1-Conv/Conv2D-op0", "Default/relu-ReLU/ReLU-op0"]
    assert d.kernels[0].name_source is NameSource.GRAPH
    assert d.variant == because(Why.MINDSPORE_NPY_VARIANT, False, DtypeSuffix.WITH)  # full scope names
    conv = d.kernels[0]
    assert conv.inputs[1].dtype == "float32" and conv.inputs[1].shape == (3, 2, 1, 1)
    assert conv.outputs[0].timestamp == 102
    assert d.op("conv1_weight").kind == "parameter"


def test_short_names_without_dtype_suffix(tmp_path):
    root = small_dump(str(tmp_path / "a"), dtype_label=None, short=True)
    d = open_dump(root)
    assert [op.name for op in d.kernels] == ["Default/net/Conv2D-op12", "Default/net/ReLU-op13"]
    assert d.variant == because(Why.MINDSPORE_NPY_VARIANT, True, DtypeSuffix.WITHOUT)  # short op names
    assert d.kernels[0].outputs[0].dtype == "float32"  # from the npy header


def test_file_names_kept_when_no_order_or_graph(tmp_path):
    root = small_dump(str(tmp_path / "a"))
    os.remove(os.path.join(root, "rank_0", "execution_order", "ms_execution_order_graph_0.csv"))
    d = open_dump(root)
    assert d.kernels[0].name == "Default_conv1-Conv_Conv2D-op0" and d.kernels[0].name_source is NameSource.FILE_NAME
    assert any("no graph file" in n for n in say_all(d.notes))


@pytest.mark.parametrize("level", ["root", "rank", "net", "graph", "iteration"])
def test_path_may_point_at_any_level(tmp_path, level):
    root = small_dump(str(tmp_path / "a"))
    path = {
        "root": root,
        "rank": os.path.join(root, "rank_0"),
        "net": os.path.join(root, "rank_0", "Net"),
        "graph": os.path.join(root, "rank_0", "Net", "0"),
        "iteration": os.path.join(root, "rank_0", "Net", "0", "0"),
    }[level]
    d = open_dump(path)
    assert [op.name for op in d.kernels] == ["Default/conv1-Conv/Conv2D-op0", "Default/relu-ReLU/ReLU-op0"]


def test_several_ranks_and_iterations_need_a_choice(tmp_path):
    root = str(tmp_path / "a")
    small_dump(root, rank="0")
    small_dump(root, rank="1")
    with pytest.raises(DumpError) as e:
        open_dump(root)
    assert "--rank" in e.value.reason and "0, 1" in e.value.reason
    assert open_dump(root, rank="1").rank == "1"
    with pytest.raises(DumpError) as e:
        open_dump(root, rank="7")
    assert "ranks here: 0, 1" in e.value.reason
    small_dump(root, rank="0", iteration="3")
    with pytest.raises(DumpError) as e:
        open_dump(root, rank="0")
    assert "--step N" in e.value.reason and "0, 3" in e.value.reason
    assert open_dump(root, rank="0", iteration="3").iterations == {"0": "3"}


def test_damaged_and_foreign_files_reported_rest_loads(tmp_path):
    def damage(d):
        # truncated payload, garbage file, foreign name, header/payload mismatch (the MindSpore bug)
        good = os.path.join(d, "Add.Default_Add-op0.0.0.105.input.0.DefaultFormat.Float32.npy")
        write_npy(good, np.ones(16, np.float32))
        with open(good, "r+b") as fh:
            fh.truncate(os.path.getsize(good) - 8)
        with open(os.path.join(d, "Add.Default_Add-op0.0.0.106.output.0.DefaultFormat.Float32.npy"), "wb") as fh:
            fh.write(b"this is not npy")
        with open(os.path.join(d, "notes.txt"), "w") as fh:
            fh.write("x")
        write_npy(os.path.join(d, "odd_name.npy"), np.ones(2))
        payload = np.arange(8, dtype=np.float32)
        head = np.lib.format.header_data_from_array_1_0(np.zeros(8, np.float16))
        p = os.path.join(d, "Cast.Default_Cast-op0.0.0.107.output.0.DefaultFormat.Float16.npy")
        with open(p, "wb") as fh:
            np.lib.format.write_array_header_1_0(fh, head)
            fh.write(payload.tobytes())

    root = small_dump(str(tmp_path / "a"), extra=damage)
    d = open_dump(root)
    reasons = {os.path.basename(p.path): say(p.reason) for p in d.problems}
    assert "does not follow the MindSpore dump pattern" in reasons["odd_name.npy"]
    assert "not a dump tensor file" in reasons["notes.txt"]
    add = d.op("Default_Add-op0")
    assert say(add.inputs[0].problem).startswith("truncated")
    assert "bad magic" in say(add.outputs[0].problem)
    cast = d.op("Default_Cast-op0").outputs[0]
    assert cast.problem is None and "read as float32" in say(cast.repaired)
    np.testing.assert_array_equal(cast.array(), np.arange(8, dtype=np.float32))
    assert len(d.kernels) == 4  # conv, relu, and the two damaged ops still listed


def test_mapping_csv_long_names(tmp_path):
    long_name = "Default_" + "very-long-scope_" * 20 + "MatMul-op0"

    def numbered(d):
        write_npy(os.path.join(d, "1.npy"), np.ones(3, np.float32))
        with open(os.path.join(d, "mapping.csv"), "w") as fh:
            fh.write(f"1,MatMul.{long_name}.0.0.150.output.0.DefaultFormat.Float32.npy\n")

    d = open_dump(small_dump(str(tmp_path / "a"), extra=numbered))
    op = d.op(long_name)
    assert op is not None and op.op_type == "MatMul" and op.outputs[0].shape == (3,)


def test_repeated_kernel_in_one_iteration_becomes_two_calls(tmp_path):
    def twice(d):
        ms_file(d, "ReLU", "Default_relu-ReLU_ReLU-op0", 300, "input", 0, np.ones(2, np.float32))
        ms_file(d, "ReLU", "Default_relu-ReLU_ReLU-op0", 301, "output", 0, np.ones(2, np.float32))

    d = open_dump(small_dump(str(tmp_path / "a"), extra=twice))
    keys = [op.key for op in d.kernels]
    assert keys == ["Default/conv1-Conv/Conv2D-op0", "Default/relu-ReLU/ReLU-op0", "Default/relu-ReLU/ReLU-op0#2"]


def test_constants_folder(tmp_path):
    root = small_dump(str(tmp_path / "a"))
    cdir = os.path.join(root, "rank_0", "Net", "0", "constants")
    ms_file(cdir, "Parameter", "data-3", 5, "output", 0, np.array(0.5, np.float32))
    d = open_dump(root)
    c = d.op("constants/data-3")
    assert c.kind == "constant" and c.outputs[0].shape == ()


@pytest.mark.parametrize("variant", list(STAT_HEADERS))
def test_statistic_csv_variants(tmp_path, variant):
    root = stat_dump(str(tmp_path / "a"), variant)
    rows, got = read_statistic_csv(os.path.join(root, "rank_0", "Net", "0", "0", "statistic.csv"))
    assert STATISTIC_HEADER_WORDS[got] == variant and len(rows) == 4
    assert rows[1]["stats"]["max"] == 4.0 and rows[1]["shape"] == (1, 2, 4, 4)
    d = open_dump(root)
    assert d.format == "mindspore-statistic" and d.statistics_only
    assert d.variant == because(Why.STATISTIC_CSV_VARIANT, got)
    assert [op.name for op in d.kernels] == ["Default_conv2d-X_Conv2D-op0", "Default_relu-X_ReLU-op0"]


def test_statistic_only_pair_compares_on_statistics(tmp_path):
    from dumptui.core.compare.session import Session
    from dumptui.core.search.bisect import Bisection

    a = open_dump(stat_dump(str(tmp_path / "a"), "2.4+ configurable statistic_category"))
    b = open_dump(stat_dump(str(tmp_path / "b"), "2.4+ configurable statistic_category", scale=1.5))
    s = Session(a, b)
    res = s.op_result(s.alignment.kernels[0])
    out = res.outputs[0]
    assert out.statistics_only and out.verdict == "diverged" and say(out.reason).startswith("statistics only")
    assert out.stat_rel["max"] == pytest.approx(0.5)
    assert any("weaker check" in n for n in say_all(out.notes))
    assert res.inputs[0].verdict == "equal"
    bi = Bisection(s)
    bi.run()
    assert bi.first_root().pair.name == "Default_conv2d-X_Conv2D-op0"


def test_statistic_all_nan_row_is_null(tmp_path):
    root = stat_dump(str(tmp_path / "a"), "1.6-2.2", nan_row=True)
    rows, _ = read_statistic_csv(os.path.join(root, "rank_0", "Net", "0", "0", "statistic.csv"))
    assert rows[3]["stats"]["max"] is None and rows[3]["stats"]["nan"] == 32


def test_npy_folder_fallback(tmp_path):
    d = tmp_path / "plain"
    write_npy(d / "layer1.output.0.npy", np.ones(4, np.float32))
    write_npy(d / "layer1.input.0.npy", np.zeros(4, np.float32))
    write_npy(d / "sub" / "logits.npy", np.ones(2, np.float32))
    assert detect(str(d)) == "npy-folder"
    dump = open_dump(str(d))
    names = sorted(op.name for op in dump.ops)
    assert names == ["layer1", "sub/logits"]
    layer = dump.op("layer1")
    assert set(layer.inputs) == {0} and set(layer.outputs) == {0}


def test_bad_paths_explain(tmp_path):
    with pytest.raises(DumpError) as e:
        open_dump(str(tmp_path / "missing"))
    assert "no such" in e.value.reason
    (tmp_path / "empty").mkdir()
    with pytest.raises(DumpError) as e:
        open_dump(str(tmp_path / "empty"))
    assert "no dump found" in e.value.reason
    f = tmp_path / "file.npy"
    write_npy(f, np.ones(1))
    with pytest.raises(DumpError) as e:
        open_dump(str(f))
    assert "inspect" in e.value.reason


def test_reader_never_writes_and_needs_no_write_access(tmp_path):
    root = small_dump(str(tmp_path / "a"))
    before = sorted((p, os.path.getmtime(os.path.join(p, f))) for p, _, fs in os.walk(root) for f in fs)
    for p, _dirs, fs in os.walk(root):
        for f in fs:
            os.chmod(os.path.join(p, f), 0o400)
    for p, _dirs, _fs in os.walk(root, topdown=False):
        os.chmod(p, 0o500)
    try:
        d = open_dump(root)
        from dumptui.core.compare.batch import evaluate_all
        from dumptui.core.compare.session import Session

        evaluate_all(Session(d, open_dump(root)))
    finally:
        for p, _dirs, _fs in os.walk(root):
            os.chmod(p, 0o700)
    after = sorted((p, os.path.getmtime(os.path.join(p, f))) for p, _, fs in os.walk(root) for f in fs)
    assert before == after


def test_order_falls_back_to_csv_then_graph(tmp_path):
    """Without distinct timestamps the csv gives the order; without the csv, the graph file's node order."""
    root = str(tmp_path / "a")
    d = os.path.join(root, "rank_0", "Net", "0", "0")
    for op in ["B", "A"]:  # file names sort A before B; timestamps all equal
        ms_file(d, "ReLU", f"Default_{op}-op0", 5, "output", 0, np.ones(2, np.float32))
    eo = os.path.join(root, "rank_0", "execution_order")
    os.makedirs(eo)
    with open(os.path.join(eo, "ms_execution_order_graph_0.csv"), "w") as fh:
        fh.write("NodeExecutionOrder-FullNameWithScope\nDefault/B-op0\nDefault/A-op0\n")
    dump = open_dump(root)
    assert dump.order_source is OrderSource.EXECUTION_CSV and [o.name for o in dump.kernels] == [
        "Default/B-op0",
        "Default/A-op0",
    ]
    os.remove(os.path.join(eo, "ms_execution_order_graph_0.csv"))
    g = os.path.join(root, "rank_0", "graphs")
    os.makedirs(g)
    with open(os.path.join(g, "ms_output_trace_code_graph_0.ir"), "w") as fh:
        fh.write(
            "subgraph @kernel_graph0() {\n"
            "  %0(a) = ReLU(%para1_x)\n      # Fullname with scope: (Default/B-op0)\n"
            "  %1(b) = ReLU(%0)\n      # Fullname with scope: (Default/A-op0)\n}\n"
        )
    dump = open_dump(root)
    assert dump.order_source is OrderSource.GRAPH_TOPOLOGICAL
    assert [o.name for o in dump.kernels] == ["Default/B-op0", "Default/A-op0"]
    assert dump.graph.has_edge("Default/B-op0", "Default/A-op0")


def test_statistic_rows_stream_and_share_what_repeats(tmp_path):
    """Rows come one at a time; their numbers are the file's (-0.0 keeps its sign, NaN stays NaN), a count of
    0 is one object, and a consumer's input row that repeats its producer's output row shares its dict."""
    import math

    from dumptui.core.formats.statistic_csv import statistic_rows

    header = (
        "Op Type,Op Name,Task ID,Stream ID,Timestamp,IO,Slot,Data Size,Data Type,Shape,Max Value,Min Value,"
        "Avg Value,Count,Negative Zero Count,Positive Zero Count,NaN Count,Negative Inf Count,Positive Inf Count,"
        "Zero Count,L2 Value,MD5"
    )
    lines = [
        'Add,Default_A-op0,0,0,1,output,0,128,float32,"(1,2)",2.5,-0.0,0.25,2,0,0,0,0,0,0,1.5,ab',
        'Mul,Default_B-op0,0,0,2,input,0,128,float32,"(1,2)",2.5,-0.0,0.25,2,0,0,0,0,0,0,1.5,ab',
        'Mul,Default_B-op0,0,0,3,output,0,128,float32,"(1,2)",nan,-1.0,nan,2,0,0,2,0,0,0,nan,cd',
    ]
    path = tmp_path / "statistic.csv"
    path.write_text(header + "\n" + "\n".join(lines) + "\n")
    variant, rows = statistic_rows(str(path))
    assert variant is StatisticHeader.L2_MD5 and not isinstance(rows, list)
    a, b, c = list(rows)
    assert a["stats"]["max"] == 2.5 and math.copysign(1.0, a["stats"]["min"]) < 0  # -0.0 is -0.0
    assert a["stats"] is b["stats"]  # the producer's output and the consumer's input: one dict
    assert a["stats"]["nan"] is c["stats"]["neg_inf"] == 0.0  # zeros are one object
    assert math.isnan(c["stats"]["max"]) and c["stats"]["nan"] == 2.0 and c["stats"]["md5"] == "cd"
    assert a["shape"] is b["shape"] == (1, 2) and b["name"] is c["name"]
