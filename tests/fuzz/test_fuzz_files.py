"""Fuzz targets for single files, at the engine's edge: npy headers, .pt zips and pickles, CANN raw dump
protobufs, graph files. Properties for every example: no exception escapes the reader; the file is either
readable (and then reading it works and gives as many values as its layout says) or has a problem saying why;
time and memory stay bounded; a pickle never runs code."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from dumptui.core.formats.cann_file import parse_raw_name, read_raw_file
from dumptui.core.formats.torchpt import pt_layout
from dumptui.core.io.npy import Layout, npy_layout
from dumptui.core.model.dump import TensorRef
from dumptui.report.reasons import say
from fuzz.fuzzgen import JSON_ANY, TEXT, npy_files, pt_files, raw_dump_files
from fuzz.fuzzkit import READ, REPAIRED, UNREADABLE, examples, memory_peak, record, time_limit
from fuzz.fuzzkit import WORK as FUZZ_WORK

WORK = FUZZ_WORK / "files"
WORK.mkdir()


def outcome(lay: Layout) -> str:
    return UNREADABLE if lay.problem else REPAIRED if lay.repaired else READ


def read_all(t: TensorRef, lay: Layout) -> None:
    """A readable tensor reads whole, and chunk by chunk, to as many values as its layout says."""
    n = lay.size
    assert t.read().size == n
    assert sum(c.size for c in t.chunks(7)) == n


def bounded(peak: int, file_size: int) -> None:
    """Reading never allocates much more than what the file can hold."""
    assert peak <= (8 << 20) + 8 * file_size, f"{peak} B allocated for a file of {file_size} B"


@given(npy_files())
def test_npy_headers(case):
    damage, data = case
    path = WORK / "t.npy"
    path.write_bytes(data)
    with time_limit(), memory_peak() as peak:
        lay = npy_layout(str(path))
        if lay.problem is None:
            read_all(TensorRef(str(path), "output", 0, layout_fn=lambda: lay), lay)
    bounded(peak[0], len(data))
    record("npy header", damage, outcome(lay), say(lay.problem))


@given(st.data())
def test_pt_zips_and_pickles(data):
    marker = WORK / "marker"
    damage, raw = data.draw(pt_files(str(marker)))
    path = WORK / "t.pt"
    path.write_bytes(raw)
    with time_limit(), memory_peak() as peak:
        lay, _dtype = pt_layout(str(path))
        if lay.problem is None:
            read_all(TensorRef(str(path), "output", 0, layout_fn=lambda: lay), lay)
    assert not marker.exists(), "a pickle ran code"
    bounded(peak[0], len(raw))
    record(".pt zip and pickle", damage, outcome(lay), say(lay.problem))


@given(raw_dump_files())
def test_raw_dump_protobufs(case):
    damage, data = case
    path = WORK / "Add.Default_Add-op1.1.0.1700000000000000"
    path.write_bytes(data)
    with time_limit(), memory_peak() as peak:
        raw = read_raw_file(str(path), parse_raw_name(path.name))
        for t in raw.tensors:
            if t.layout.problem is None:
                ref = TensorRef(str(path), t.io, t.slot, dtype=t.dtype, shape=t.shape, layout_fn=lambda t=t: t.layout)
                read_all(ref, t.layout)
    bounded(peak[0], len(data))
    assert raw.problem is None or say(raw.problem).strip()
    record("raw dump protobuf", damage, UNREADABLE if raw.problem else READ, say(raw.problem))


@given(st.data())
@examples(0.5)
def test_graph_files(data):
    """The text IR, the graph protobuf, a GE pbtxt and a MindIR: OSError or ValueError, nothing else."""
    from dumptui.core.formats.anf_pb import parse_anf_pb
    from dumptui.core.formats.ge_graph import read_ge_graph
    from dumptui.core.formats.irtext import parse_ir_text
    from dumptui.core.formats.mindir import read_graph_name

    kind = data.draw(st.sampled_from(["ir text", "graph protobuf", "ge pbtxt", "mindir"]))
    if kind == "ir text":
        lines = data.draw(
            st.lists(
                st.one_of(
                    TEXT,
                    st.builds(lambda a, b: f"%{a}(x) = {b}(%1, %para2_w)" + " {instance name: x}", TEXT, TEXT),
                    st.builds(
                        lambda s: f": (<Tensor[Float32], ({s})>) -> (<Tuple[Tensor[Float32]*{s}], TupleShape(({s}))>)",
                        TEXT,
                    ),
                    st.builds(lambda s: f"%para1_x : <Tensor[Float32], ({s})>", JSON_ANY.map(str)),
                    st.just("# Fullname with scope: (Default/" + "(" * 500),
                    st.just(": (<Tuple[Tensor[Float32]*999999999999], TupleShape((1,2)))>) -> ()"),
                ),
                max_size=12,
            )
        )
        raw = "\n".join(lines).encode("utf-8", "surrogatepass")
    else:
        raw = data.draw(st.binary(max_size=400))
    path = WORK / {"ir text": "g.ir", "graph protobuf": "g.pb", "ge pbtxt": "g.pbtxt", "mindir": "g.mindir"}[kind]
    path.write_bytes(raw)
    try:
        with time_limit():
            if kind == "ir text":
                ir = parse_ir_text(str(path))
                for node in ir.nodes.values():  # the lazily parsed parts too
                    _ = (node.in_types, node.out_types, node.attrs)
            elif kind == "graph protobuf":
                parse_anf_pb(str(path))
            elif kind == "ge pbtxt":
                read_ge_graph(str(path))
            else:
                read_graph_name(str(path))
        record("graph file", kind, READ)
    except (OSError, ValueError) as e:
        assert str(e).strip(), f"{type(e).__name__} without a reason"
        record("graph file", kind, f"refused, reason named ({type(e).__name__})", str(e))


def test_fortran_and_c_order_read_the_same_values():
    """Not random, but the property the fuzz targets rely on: chunks come in C index order either way."""
    arr = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    c, f = WORK / "c.npy", WORK / "f.npy"
    np.save(c, arr)
    np.save(f, np.asfortranarray(arr))
    tc, tf = TensorRef(str(c), "output", 0), TensorRef(str(f), "output", 0)
    assert tf.layout().fortran and not tc.layout().fortran
    for size in (1, 7, 60, 1000):
        np.testing.assert_array_equal(np.concatenate(list(tf.chunks(size))), np.concatenate(list(tc.chunks(size))))
    np.testing.assert_array_equal(tf.read(), arr.reshape(-1))
