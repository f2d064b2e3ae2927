"""The index's ops in compact form: SlotMaps read like the dicts they were made from, ops are frozen once
indexed (and stay so through the index cache), and ops with the same graph attributes share them."""

from __future__ import annotations

import gc
import os
import pickle
import sys

import numpy as np
import pytest

from dumptui.core.formats import open_dump
from dumptui.core.graph.build import LazyAttrs
from dumptui.core.model.dump import InputSource, Op, TensorRef
from dumptui.core.model.ir import IRNode
from dumptui.core.model.slotmap import EMPTY, SlotMap, slots_of_both

SAMPLES = [{}, {0: "a"}, {0: "a", 1: "b"}, {1: "b", 0: "a"}, {2: "c"}, {0: "a", 2: "c", 5: "f"}]


@pytest.mark.parametrize("a", SAMPLES)
@pytest.mark.parametrize("b", SAMPLES)
def test_slots_of_both_are_the_sorted_union(a, b):
    """Dense SlotMaps take the range shortcut; sparse ones, dicts and the empty map the sets: one answer."""
    want = sorted(set(a) | set(b))
    for x, y in ((SlotMap(a), SlotMap(b)), (a, b), (SlotMap(a), b), (EMPTY, SlotMap(b)), (SlotMap(a), EMPTY)):
        assert list(slots_of_both(x, y)) == sorted(set(x) | set(y))
    assert list(slots_of_both(SlotMap(a), SlotMap(b))) == want


@pytest.mark.parametrize("d", SAMPLES)
def test_a_slotmap_reads_like_its_dict(d):
    parts = SlotMap.from_parts(tuple(d), tuple(d.values()))
    for m in (
        SlotMap(d),
        SlotMap.of(d),
        pickle.loads(pickle.dumps(SlotMap(d))),
        parts,
        pickle.loads(pickle.dumps(parts)),
    ):
        assert list(m) == list(d) and len(m) == len(d) and m == d and d == m
        assert list(m.items()) == list(d.items()) and list(m.values()) == list(d.values())
        assert list(m.keys()) == list(d.keys()) and dict(m) == d and sorted(m) == sorted(d)
        for k in (0, 1, 2, 5, -1, 7, 1.0, True, np.int64(2), "0"):
            assert (k in m) == (k in d), k
            assert m.get(k, "none") == d.get(k, "none"), k
            if k in d:
                assert m[k] == d[k]
            else:
                with pytest.raises(KeyError):
                    m[k]
        assert repr(m) == f"SlotMap({d!r})"
    assert SlotMap(d) != {**d, 9: "z"}


def test_slotmaps_share_what_they_can():
    assert SlotMap.of({}) is EMPTY and SlotMap.from_parts((), ()) is EMPTY
    m = SlotMap({0: "a", 2: "c"})
    assert SlotMap.of(m) is m
    assert SlotMap({0: "x", 2: "y"})._slots is m._slots  # one tuple of slots for every map with these
    assert SlotMap({0: "x", 1: "y"})._slots is None  # 0, 1, ...: no tuple at all
    one = SlotMap.of({0: "x"})  # slot 0 alone: not even a tuple of values
    assert one == {0: "x"} and type(one).__name__ == "_OneSlot" and one._values == "x"
    assert SlotMap.from_parts(None, ("x",)) == one and type(SlotMap.from_parts((0,), ("x",))) is type(one)
    assert type(SlotMap.of({1: "x"})) is SlotMap and pickle.loads(pickle.dumps(one)) == one
    as_dict = {0: "a", 1: "b"}
    frozen = SlotMap(as_dict)
    assert sys.getsizeof(frozen) + sys.getsizeof(frozen._values) < sys.getsizeof(as_dict) // 2


def test_ops_are_frozen_once_indexed_and_through_the_cache(demo_pair):
    op = Op("Default/Add-op0", "Add")
    t = TensorRef("x.npy", "input", 0)
    op.put("input", 0, t)
    op.put_source(0, InputSource("parameter", "x"))
    op.freeze()
    assert isinstance(op.inputs, SlotMap) and op.inputs == {0: t} and op.outputs is EMPTY
    with pytest.raises(TypeError, match="frozen"):
        op.put("output", 0, t)
    for dump in (open_dump(demo_pair.ref), open_dump(demo_pair.ref, cache=True), open_dump(demo_pair.ref, cache=True)):
        assert all(isinstance(m, SlotMap) for op in dump.ops for m in (op.inputs, op.outputs, op.sources))
        assert type(dump.graph).__name__ == "FlowGraph"


def test_ops_with_the_same_attribute_text_share_one_mapping(demo_pair):
    dump = open_dump(demo_pair.ref)
    convs = [op for op in dump.ops if op.op_type == "Conv2D"]
    assert len(convs) > 2 and all(op.attrs is convs[0].attrs for op in convs)
    assert isinstance(convs[0].attrs, LazyAttrs)
    assert not any(isinstance(x, IRNode) for x in gc.get_referents(convs[0].attrs))  # the node is not kept
    assert convs[0].attrs["kernel_size"] == "I64(1)" and convs[0].attrs["format"] == '"NCHW"'
    assert len({id(op.attrs) for op in dump.ops}) < len(dump.ops) // 4


def test_a_tensor_keeps_its_folder_shared_and_its_path_whole(tmp_path):
    folder = str(tmp_path / "Net" / "0" / "0") + "/"
    a = TensorRef(folder + "Add.Add-op0.0.0.1.output.0.DefaultFormat.npy", "output", 0)
    b = TensorRef(folder + "Add.Add-op0.0.0.2.input.0.DefaultFormat.npy", "input", 0, size_on_disk=128)
    assert a.path == folder + "Add.Add-op0.0.0.1.output.0.DefaultFormat.npy"
    assert a.folder_and_name[0] is b.folder_and_name[0]  # one string for the folder's files
    assert TensorRef("bare.npy", "output", 0).path == "bare.npy" and TensorRef("/x.npy", "output", 0).path == "/x.npy"
    assert (a.stats, a.size_on_disk, a._layout_fn) == (None, None, None) and b.size_on_disk == 128
    c = TensorRef.in_folder(folder, "Add.Add-op0.0.0.1.output.0.DefaultFormat.npy", "output", 0, "float32", (2,), "", 1)
    assert c.path == a.path and c.folder_and_name == a.folder_and_name and c.dtype == "float32" and c.shape == (2,)
    back = pickle.loads(pickle.dumps(b))
    assert (back.path, back.io, back.slot, back.size_on_disk) == (b.path, "input", 0, 128)


@pytest.mark.parametrize(
    "name, ts, parts",
    [
        (
            "Add.Default_Add-op0.0.0.1796214303518360.input.0.DefaultFormat.Float32.npy",
            1796214303518360,
            ("Add.Default_Add-op0.0.0.", ".input.0.DefaultFormat.Float32.npy"),
        ),
        ("Add.op.0.0.7.output.7.npy", 7, ("Add.op.0.0.", ".output.7.npy")),  # the first `.7.` is the timestamp
        ("Add.op.0.0.0007.output.0.npy", 7, None),  # spelled with zeros: kept whole
        ("Functional.linear.0.forward.input.0.pt", None, None),  # no timestamp (msprobe)
        ("x.12.npy", 3, None),
        ("", 1, None),
    ],
)
def test_a_file_name_splits_at_its_timestamp_and_joins_back_exactly(name, ts, parts):
    from dumptui.core.index.codec import split_at_timestamp

    stem, tail = split_at_timestamp(name, ts)
    if parts is None:
        assert (stem, tail) == (name, None)
    else:
        assert (stem, tail) == parts and stem + str(ts) + tail == name
        t = TensorRef.in_folder("/d/", (stem, ts, tail), "output", 0, None, None, "", ts)
        assert t.path == "/d/" + name and t.file_name == name and t.folder_and_name == ("/d/", name)
        back = pickle.loads(pickle.dumps(t))
        assert back.path == t.path


def test_names_from_the_cache_share_their_text_around_the_timestamp(demo_pair):
    """Through the codec the demo's file names come back as parts shared by an op's files (the text before
    the timestamp) and by all of them (the text after), and spell the same paths."""
    from dumptui.core.index.codec import decode, encode

    fresh = open_dump(demo_pair.ref)
    again = decode(encode(fresh))
    names = [(t._name, t._tail) for op in again.ops for t in op.tensors()]
    assert names and all(tail is not None for _stem, tail in names)  # kept apart, the timestamp the tensor's
    assert len({id(n[1]) for n in names}) <= len({n[1] for n in names})  # each distinct tail once
    stems = {id(n[0]) for n in names}
    assert len(stems) <= len(again.ops) < len(names)  # one stem per op at most, fewer than the files
    stamps = [t.timestamp for op in again.ops for t in op.tensors()]
    assert len({id(ts) for ts in stamps}) == len(set(stamps))  # one int object per timestamp
    shared = {id(ts) for ts in stamps}
    assert all(op.timestamp is None or id(op.timestamp) in shared for op in again.ops)  # the op's: one of them
    assert [t.path for op in again.ops for t in op.tensors()] == [t.path for op in fresh.ops for t in op.tensors()]


def test_sources_from_the_cache_name_their_producer_by_its_own_key_string(demo_pair):
    """Through the codec an input's source holds its producer's key string itself, not a copy of the text."""
    from dumptui.core.index.codec import decode, encode

    fresh = open_dump(demo_pair.ref)
    again = decode(encode(fresh))
    by_key = {op.key: op for op in again.ops}
    sources = [src for op in again.ops for src in op.sources.values() if src.ref in by_key]
    assert sources and all(src.ref is by_key[src.ref].key for src in sources)
    assert [dict(op.sources) for op in again.ops] == [dict(op.sources) for op in fresh.ops]


def test_counting_numbers_are_one_set_of_objects(tmp_path, monkeypatch):
    from dumptui.core.demo.residual import write_demo
    from dumptui.core.graph.align import align
    from dumptui.core.model.numbers import counting, shared

    first = counting(1000)
    assert counting(2000) is first and first[:2000] == list(range(2000))
    big = int("1999")  # an int made anew, equal to a shared one
    assert big is not first[1999] and shared(big) is first[1999] and shared(-1) == -1 and shared(10**9) == 10**9
    demo = write_demo(str(tmp_path), n_ops=320, size=8)
    ref, target = open_dump(demo.ref), open_dump(demo.target)
    pairs = align(ref, target).pairs
    assert len(pairs) > 257 and all(p.index is first[i] for i, p in enumerate(pairs))
    g = ref.graph
    assert all(g._index[k] is first[g._index[k]] for k in g.nodes)
    old = os.stat(demo.ref).st_mtime - 3600  # (the cache stores no dump that changed just now)
    for folder, dirs, files in os.walk(demo.ref):
        for name in files + dirs:
            os.utime(os.path.join(folder, name), (old, old))
    os.utime(demo.ref, (old, old))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("DUMPTUI_NO_INDEX_CACHE", raising=False)
    open_dump(demo.ref, cache=True)
    cached = open_dump(demo.ref, cache=True)  # from the cache's columns
    orders = [op.order for op in cached.ops if op.order > 256]
    assert orders and all(o is shared(o) for o in orders)
