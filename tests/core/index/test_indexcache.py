"""The persistent index cache: a cached index equals a fresh one, is reused only while the dump is unchanged,
never lives inside a dump, and is not written for a dump that changed a moment ago."""

from __future__ import annotations

import os

import numpy as np
import pytest
from helpers.common import SHARED
from helpers.indexing import age

from dumptui.core.compare.session import Session
from dumptui.core.demo.residual import write_demo
from dumptui.core.formats import open_dump
from dumptui.core.index import cache as indexcache
from dumptui.core.index.codec import decode, encode
from dumptui.core.io.fault import Fault, Flaw
from dumptui.core.model.dump import Dump
from dumptui.core.search.bisect import Bisection
from dumptui.report.reasons import say


def snapshot(d: Dump) -> dict:
    """Everything an index holds, as plain values (tensor data is not part of an index)."""
    ops = []
    for op in d.ops:
        tensors = {
            (side, slot): (t.path, t.io, t.slot, t.dtype, t.shape, t.fmt, t.timestamp, t.stats, t.size_on_disk)
            for side, group in (("in", op.inputs), ("out", op.outputs))
            for slot, t in group.items()
        }
        ops.append(
            (
                op.name,
                op.op_type,
                op.kind,
                op.graph,
                op.file_name,
                op.order,
                op.timestamp,
                op.name_source,
                op.key,
                op.call,
                op.fused,
                dict(op.sources),
                dict(op.attrs),
                list(op.code),
                tensors,
            )
        )
    graph = None
    if d.graph is not None:
        graph = (sorted(d.graph.nodes(data=True)), sorted(d.graph.edges(data=True)))
    return {
        "ops": ops,
        "graph": graph,
        "fields": (d.path, d.root, d.format, d.variant, d.version, d.device, d.rank, d.graphs, d.iterations),
        "more": (d.order_source, d.statistics_only, d.graph_source, d.notes, d.parameters, d.problems),
    }


def test_columns_give_back_the_same_index(demo_pair):
    fresh = open_dump(demo_pair.target)
    again = decode(encode(fresh))
    assert snapshot(again) == snapshot(open_dump(demo_pair.target))
    # the rebuilt tensors read the same values
    t0 = next(t for op in again.kernels for t in op.tensors())
    f0 = next(t for op in fresh.kernels for t in op.tensors())
    assert np.array_equal(t0.read(), f0.read())


def shared_dumps():
    roots = []
    for sub in ("mindspore-2.10-cpu/dumps/A", "mindspore-2.10-cpu/dumps/C_fp16"):
        roots.append(SHARED / sub)
    msprobe = SHARED / "msprobe-26.2-pytorch-cpu" / "dumps"
    if msprobe.is_dir():
        roots += sorted(p for p in msprobe.glob("*/ref"))
    return roots


def test_columns_give_back_the_same_index_on_real_dumps():
    roots = [r for r in shared_dumps() if r.is_dir()]
    if not roots:
        pytest.skip(f"shared fixtures absent ({SHARED} not found): real-dump round trip skipped")
    for root in roots:
        assert snapshot(decode(encode(open_dump(str(root))))) == snapshot(open_dump(str(root))), root


@pytest.fixture
def cache_home(tmp_path_factory, monkeypatch):
    """A cache folder of the test's own, outside the folders its dumps are in (creating it there would
    change the time of a folder above a raw dump, which its index depends on)."""
    home = tmp_path_factory.mktemp("cache")
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    monkeypatch.delenv(indexcache.DISABLE_ENV, raising=False)
    return home


def cached(path: str) -> indexcache.CacheResult:
    def index() -> Dump:
        return open_dump(path)

    return indexcache.cached_index(path, None, (None, None, None), index)


def test_second_open_comes_from_the_cache_and_bisects_the_same(tmp_path, cache_home):
    info = write_demo(str(tmp_path / "demo"), n_ops=40, size=64, fp16_region=None)
    age(str(tmp_path / "demo"))
    first = cached(info.target)
    assert not first.hit and first.stored and first.why_not_stored is None, say(first.why_not_stored)
    assert str(cache_home) in indexcache.cache_folder()
    entries = os.listdir(indexcache.cache_folder())
    assert len(entries) == 1 and not any(
        name.endswith(".idx") for _folder, _dirs, files in os.walk(str(tmp_path / "demo")) for name in files
    )
    second = cached(info.target)
    assert second.hit
    assert snapshot(second.dump) == snapshot(first.dump)
    ref = open_dump(info.ref)
    bisect = [Bisection(Session(ref, d, kl=False)) for d in (first.dump, second.dump)]
    for bi in bisect:
        bi.run()
    assert bisect[0].first_root() is not None
    assert (
        [r.pair.key for r in bisect[0].roots()]
        == [r.pair.key for r in bisect[1].roots()]
        == [bisect[0].first_root().pair.key]
    )
    assert bisect[1].first_root().pair.name == info.planted


def test_open_dump_uses_the_cache_only_when_asked(tmp_path, cache_home):
    info = write_demo(str(tmp_path / "demo"), n_ops=20, size=16)
    age(str(tmp_path / "demo"))
    open_dump(info.ref)
    assert not os.path.isdir(indexcache.cache_folder())
    open_dump(info.ref, cache=True)
    assert len(os.listdir(indexcache.cache_folder())) == 1


def test_a_changed_dump_is_indexed_again(tmp_path, cache_home):
    info = write_demo(str(tmp_path / "demo"), n_ops=20, size=16)
    age(str(tmp_path / "demo"))
    assert not cached(info.ref).hit
    assert cached(info.ref).hit
    data = os.path.join(info.ref, "rank_0", "Net", "0", "0")
    # a new tensor file: its folder's time changes
    src = sorted(n for n in os.listdir(data) if n.startswith("ReLU"))[0]
    extra = src.replace("ReLU-op0", "ReLU-op7")
    with open(os.path.join(data, src), "rb") as a, open(os.path.join(data, extra), "wb") as b:
        b.write(a.read())
    result = cached(info.ref)
    assert not result.hit
    assert any(op.file_name.endswith("ReLU-op7") for op in result.dump.ops)
    age(str(tmp_path / "demo"))
    assert not cached(info.ref).hit  # the aging itself changed the times: indexed again, then cached
    assert cached(info.ref).hit
    # a side file rewritten in place (the execution order): only its own time and size change
    csv = os.path.join(info.ref, "rank_0", "execution_order", "ms_execution_order_graph_0.csv")
    with open(csv, "a") as fh:
        fh.write("Default/extra-Op/Extra-op0\n")
    assert not cached(info.ref).hit


def test_a_dump_changed_a_moment_ago_is_not_cached(tmp_path, cache_home):
    info = write_demo(str(tmp_path / "demo"), n_ops=20, size=16)
    result = cached(info.ref)
    assert not result.stored and result.why_not_stored == Fault(Flaw.DUMP_TOO_RECENT, (indexcache.RACY_SECONDS,))
    assert not cached(info.ref).hit


def test_never_inside_the_dump(tmp_path, monkeypatch):
    info = write_demo(str(tmp_path / "demo"), n_ops=20, size=16)
    monkeypatch.setenv("XDG_CACHE_HOME", os.path.join(info.ref, "rank_0"))
    age(str(tmp_path / "demo"))
    before = sorted(os.walk(info.ref))
    result = cached(info.ref)
    assert not result.stored and result.why_not_stored is not None
    assert result.why_not_stored.code is Flaw.CACHE_INSIDE_DUMP and "inside the dump" in say(result.why_not_stored)
    assert sorted(os.walk(info.ref)) == before


def test_a_damaged_entry_is_a_miss_and_removed(tmp_path, cache_home):
    info = write_demo(str(tmp_path / "demo"), n_ops=20, size=16)
    age(str(tmp_path / "demo"))
    cached(info.ref)
    entry = indexcache.entry_path(info.ref, None, (None, None, None))
    with open(entry, "r+b") as fh:
        fh.seek(40)
        fh.write(b"\x00garbage\x00" * 8)
    result = cached(info.ref)
    assert not result.hit and result.stored  # indexed again, and a good entry written in its place
    assert cached(info.ref).hit


def test_switched_off_by_the_environment(tmp_path, cache_home, monkeypatch):
    info = write_demo(str(tmp_path / "demo"), n_ops=20, size=16)
    age(str(tmp_path / "demo"))
    monkeypatch.setenv(indexcache.DISABLE_ENV, "1")
    open_dump(info.ref, cache=True)
    assert not os.path.isdir(indexcache.cache_folder())


def test_a_raw_file_rewritten_in_place_is_noticed(tmp_path, cache_home):
    """Raw (CANN) dumps are indexed from every file's header: each file is a dependency of its own."""
    from helpers.cann_encode import RawOp, Tensor, step_folder, write

    folder = step_folder(tmp_path / "raw")
    x = np.arange(8, dtype=np.float32).reshape(1, 2, 2, 2)
    ops = [
        RawOp(t, f"Default_{t}-op0", [Tensor(x)], [Tensor(x)], timestamp=1700000000000000 + i)
        for i, t in enumerate(("Abs", "Neg"))
    ]
    paths = [write(folder, op) for op in ops]
    age(str(tmp_path / "raw"))
    first = cached(str(tmp_path / "raw"))
    assert first.stored and first.dump.format == "cann-raw"
    assert cached(str(tmp_path / "raw")).hit
    wider = RawOp(
        "Neg", "Default_Neg-op0", [Tensor(x.reshape(1, 8))], [Tensor(x.reshape(1, 8))], timestamp=ops[1].timestamp
    )
    write(folder, wider)  # same name, same folder: only the file itself changes
    assert sorted(os.listdir(folder)) == sorted(os.path.basename(p) for p in paths)
    again = cached(str(tmp_path / "raw"))
    assert not again.hit
    assert again.dump.op(again.dump.kernels[1].key).outputs[0].shape == (1, 8)


def test_a_dump_cached_by_a_relative_path_opens_by_its_absolute_one(tmp_path, cache_home, monkeypatch):
    """The index holds its files' paths as made from the path given (`demo/ref/...`): the same folder given
    another way (absolute, or from another folder) has an entry of its own, and every path it holds opens."""
    info = write_demo(str(tmp_path / "demo"), n_ops=20, size=16)
    age(str(tmp_path / "demo"))
    monkeypatch.chdir(tmp_path)
    assert cached("demo/ref").stored  # relative: its tensors' paths are relative to tmp_path
    monkeypatch.chdir(tmp_path / "demo")
    for given in (info.ref, "ref", os.path.join("..", "demo", "ref")):
        result = cached(given)
        assert not result.hit  # a different path as given: indexed again, not the relative entry
        paths = [t.path for op in result.dump.ops for t in op.tensors()]
        assert paths and all(os.path.isfile(p) for p in paths), given
        assert cached(given).hit


def test_indexing_in_processes_fills_the_cache_and_opens_the_same_pair(tmp_path, cache_home):
    """open_pair(in_processes=True): both dumps indexed by child processes into the cache, then opened from
    it in this process; the same index as in-process, and nothing to do the second time."""
    from dumptui.core.formats import indexproc
    from dumptui.options import pair as pairing

    info = write_demo(str(tmp_path / "demo"), n_ops=40, size=64, fp16_region=None)
    age(str(tmp_path / "demo"))
    options = pairing.PairOptions(info.ref, info.target)
    requests = [(p, None, None, None, None) for p in (info.ref, info.target)]
    assert indexproc.missing_from_cache(requests) == requests
    assert indexproc.index_into_cache(requests) == {r: "" for r in requests}
    assert indexproc.missing_from_cache(requests) == [] and indexproc.index_into_cache(requests) == {}
    ref, target = pairing.open_pair(options, in_processes=True)
    assert snapshot(ref) == snapshot(open_dump(info.ref)) and snapshot(target) == snapshot(open_dump(info.target))


def test_indexing_in_processes_leaves_errors_to_the_caller(tmp_path, cache_home, monkeypatch):
    """A dump the child cannot index, or a cache switched off: nothing is stored, and open_pair reports the
    error from this process with its path, as without processes."""
    from dumptui.core.formats import indexproc
    from dumptui.core.io.errors import DumpError
    from dumptui.options import pair as pairing

    info = write_demo(str(tmp_path / "demo"), n_ops=20, size=16, fp16_region=None)
    age(str(tmp_path / "demo"))
    empty = tmp_path / "empty"
    empty.mkdir()
    got = indexproc.index_into_cache([(str(empty), None, None, None, None)])
    assert list(got.values())[0].startswith("DumpError"), got
    with pytest.raises(DumpError) as err:
        pairing.open_pair(pairing.PairOptions(info.ref, str(empty)), in_processes=True)
    assert str(empty) in str(err.value)
    assert indexproc.missing_from_cache([(info.ref, None, None, None, None)]) == []  # the good side was stored
    monkeypatch.setenv(indexcache.DISABLE_ENV, "1")
    before = sorted(os.listdir(indexcache.cache_folder()))
    assert indexproc.index_into_cache([(info.target, None, None, None, None)]) == {}
    assert sorted(os.listdir(indexcache.cache_folder())) == before


def test_the_code_fingerprint_covers_every_folder_of_the_engine(tmp_path, monkeypatch):
    """An index made by other reader code is not reused: the fingerprint changes when a module of
    core/formats (where the readers that build an index live) changes, not only one of core/index."""
    import shutil

    from dumptui.core.index import cache as index_cache

    copy = tmp_path / "core"
    shutil.copytree(index_cache.CORE_FOLDER, copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(index_cache, "CORE_FOLDER", str(copy))
    before = index_cache._code_fingerprint()
    reader = copy / "formats" / "msprobe.py"
    st = reader.stat()
    os.utime(reader, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    assert index_cache._code_fingerprint() != before
