"""Opening a pair: a big dump missing from the index cache is indexed by processes of their own, both at once,
with the same index as in this process."""

from __future__ import annotations

import os

from dumptui.cli.parser import build_parser
from dumptui.core.formats import indexproc
from dumptui.headless import open_session
from dumptui.options import pair
from dumptui.options.pair import many_files


def test_many_files_counts_up_to_the_limit_and_never_follows_links(tmp_path):
    (tmp_path / "a" / "b").mkdir(parents=True)
    for i in range(5):
        (tmp_path / "a" / "b" / f"{i}.npy").write_bytes(b"")
    os.symlink("/", tmp_path / "a" / "root")  # followed, the count would walk the whole file system
    assert many_files(str(tmp_path), 8)  # a, b, the five files and the link
    assert not many_files(str(tmp_path), 9)
    assert not many_files(str(tmp_path / "missing"), 1)


def _settled_demo(root):
    """A demo pair whose files and folders are an hour old: the cache stores no dump that changed just now."""
    from dumptui.core.demo.residual import write_demo

    demo = write_demo(str(root), n_ops=20, size=64)
    old = os.stat(root).st_mtime - 3600
    for top in (demo.ref, demo.target):
        for folder, dirs, files in os.walk(top):
            for name in files + dirs:
                os.utime(os.path.join(folder, name), (old, old))
        os.utime(top, (old, old))
    return demo


def _index(demo_pair, monkeypatch, cache_home, from_files):
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache_home))
    monkeypatch.delenv("DUMPTUI_NO_INDEX_CACHE", raising=False)
    monkeypatch.setattr(pair, "INDEX_IN_PROCESSES_FROM_FILES", from_files)
    args = build_parser("bisect").parse_args([demo_pair.ref, demo_pair.target, "-q"])
    return open_session(args, kl=False)


def test_a_big_pair_missing_from_the_cache_is_indexed_in_processes(tmp_path, monkeypatch):
    demo_pair = _settled_demo(tmp_path / "demo")
    calls = []
    real = indexproc.index_into_cache

    def spy(requests, report=None):
        done = real(requests, report)
        calls.append((requests, done))
        return done

    monkeypatch.setattr(indexproc, "index_into_cache", spy)
    ref, target, session = _index(demo_pair, monkeypatch, tmp_path / "big", from_files=10)
    assert len(calls) == 1
    requests, done = calls[0]
    assert [r[0] for r in requests] == [demo_pair.ref, demo_pair.target]
    assert done == {r: "" for r in requests}  # both stored by the processes; this process read them back
    # the same index as one made here (a small dump is never sent to processes)
    ref2, target2, session2 = _index(demo_pair, monkeypatch, tmp_path / "small", from_files=10**9)
    assert len(calls) == 1
    for a, b in ((ref, ref2), (target, target2)):
        assert [(op.key, op.name, op.op_type) for op in a.ops] == [(op.key, op.name, op.op_type) for op in b.ops]
    assert session.alignment.counts() == session2.alignment.counts()


def test_a_cache_folder_inside_the_other_dump_is_never_written_by_the_indexing_processes(tmp_path, monkeypatch):
    demo_pair = _settled_demo(tmp_path / "demo")
    inside = os.path.join(demo_pair.target, "cache-here")
    before = {os.path.join(f, n) for f, _d, names in os.walk(demo_pair.target) for n in names}
    _index(demo_pair, monkeypatch, inside, from_files=10)
    after = {os.path.join(f, n) for f, _d, names in os.walk(demo_pair.target) for n in names}
    assert after == before and not os.path.exists(inside)


def _texts(dump):
    """Everything share_text may touch, as plain values."""
    g = dump.graph
    return [
        (op.key, op.name, op.file_name, [t.path for t in op.tensors()], dict(op.sources), dump.op(op.key) is op)
        for op in dump.ops
    ] + [(k, sorted(g.successors(k)), sorted(g.predecessors(k))) for k in g.nodes]


def test_shared_text_from_the_index_cache_shares_the_file_names_text_before_the_timestamp(tmp_path, monkeypatch):
    demo = _settled_demo(tmp_path / "demo")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("DUMPTUI_NO_INDEX_CACHE", raising=False)
    options = pair.PairOptions(demo.ref, demo.target)
    ref, target = pair.open_pair(options)  # indexed, and stored in the cache
    ref2, target2 = pair.open_pair(options, share_text=True)  # from the cache
    assert _texts(target2) == _texts(target) and _texts(ref2) == _texts(ref)  # the same names, paths, graph
    by_key = {op.key: op for op in ref2.ops}
    shared = [op for op in target2.ops if op.key in by_key]
    assert len(shared) > len(target2.ops) * 0.9
    for op in shared:  # the reference's strings
        mine = by_key[op.key]
        assert op.key is mine.key and op.name is mine.name and op.file_name is mine.file_name
        for t, u in zip(op.tensors(), mine.tensors()):
            assert t._name is u._name and t.path != u.path  # the text before the timestamp, the timestamp its own
        for src in op.sources.values():
            assert src.ref not in by_key or src.ref is by_key[src.ref].key
    assert all(k is by_key[k].key for k in target2.graph.nodes if k in by_key)
    alone = pair.open_pair(options)[1]  # not shared
    assert sum(op.key is by_key[op.key].key for op in alone.ops if op.key in by_key) < len(alone.ops) * 0.1
