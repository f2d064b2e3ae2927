"""Counted progress while a dump is indexed (core/io/indexing_progress.py): each stage's counts checked against
what the dump holds, counted here another way (the folder's entries, the graph file's lines and node lines,
the tensor files, the ops), in this process, from the index cache, and from the indexing processes."""

from __future__ import annotations

import glob
import json
import os
import re

from dumptui.core.demo.residual import write_demo
from dumptui.core.formats import indexproc, open_dump
from dumptui.core.io.indexing_progress import EVERY, STAGE_NAMES, Stage, counted, reporting


def _settled(root: str) -> None:
    """Files an hour old: the cache stores no dump changed a moment ago."""
    old = os.stat(root).st_mtime - 3600
    for folder, dirs, files in os.walk(root):
        for name in files + dirs:
            os.utime(os.path.join(folder, name), (old, old))
    os.utime(root, (old, old))


def _reports(path: str, cache: bool = False) -> list[tuple[str, int, int | None]]:
    got: list[tuple[str, int, int | None]] = []
    with reporting(lambda *r: got.append(r)):
        open_dump(path, cache=cache)
    return got


def _last(got, stage):
    return [r for r in got if r[0] == stage][-1]


def _in_order(got) -> list[str]:
    stages = list(dict.fromkeys(r[0] for r in got))
    assert stages == sorted(stages, key=STAGE_NAMES.index)  # as indexing goes, never back
    return stages


def test_each_stage_counts_what_the_dump_holds(tmp_path, monkeypatch):
    monkeypatch.setenv("DUMPTUI_NO_INDEX_CACHE", "1")
    info = write_demo(str(tmp_path / "demo"), n_ops=60, size=8)
    got = _reports(info.target)
    assert _in_order(got) == [
        Stage.FORMAT,
        Stage.LISTING,
        Stage.GRAPH_FILES,
        Stage.DATAFLOW,
        Stage.CHECKING,
    ]
    (folder,) = glob.glob(os.path.join(info.target, "rank_0", "Net", "0", "0"))
    names = os.listdir(folder)
    npy = [n for n in names if n.endswith(".npy")]
    assert _last(got, Stage.LISTING) == (Stage.LISTING, len(names), len(names))
    assert _last(got, Stage.CHECKING) == (Stage.CHECKING, len(npy), len(npy))
    (graph,) = glob.glob(os.path.join(info.target, "rank_0", "graphs", "*.ir"))
    with open(graph) as fh:
        lines = fh.read().splitlines()
    assert _last(got, Stage.GRAPH_FILES) == (Stage.GRAPH_FILES, len(lines), None)
    nodes = sum(1 for line in lines if re.match(r"\s*%\d+\(", line))
    assert _last(got, Stage.DATAFLOW) == (Stage.DATAFLOW, nodes, nodes)
    # every report within its total, and the counts of a stage never go back
    for stage in set(r[0] for r in got):
        counts = [done for s, done, total in got if s == stage]
        assert counts == sorted(counts)
        assert all(total is None or done <= total for s, done, total in got if s == stage)


def test_storing_and_reading_the_index_cache_count_the_ops(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("DUMPTUI_NO_INDEX_CACHE", raising=False)
    info = write_demo(str(tmp_path / "demo"), n_ops=40, size=8)
    _settled(info.ref)
    ops = len(open_dump(info.ref).ops)
    first = _reports(info.ref, cache=True)
    assert _last(first, Stage.STORING) == (Stage.STORING, ops, ops)
    again = _reports(info.ref, cache=True)
    assert _in_order(again) == [Stage.CACHE]  # nothing listed or read again
    assert _last(again, Stage.CACHE) == (Stage.CACHE, ops, ops)


def test_the_indexing_processes_report_each_dump_to_the_caller(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("DUMPTUI_NO_INDEX_CACHE", raising=False)
    info = write_demo(str(tmp_path / "demo"), n_ops=40, size=8)
    for side in (info.ref, info.target):
        _settled(side)
    requests = [(p, None, None, None, None) for p in (info.ref, info.target)]
    got: dict[str, list] = {info.ref: [], info.target: []}
    assert indexproc.index_into_cache(requests, lambda path, *r: got[path].append(r)) == {r: "" for r in requests}
    for path in (info.ref, info.target):
        ops = len(open_dump(path).ops)
        _in_order(got[path])
        # the last word, read after the child ended: the whole index stored
        assert got[path][-1] == (Stage.STORING, ops, ops), path


def test_msprobe_calls_are_counted_as_dump_json_is_read(tmp_path, monkeypatch):
    from helpers.msprobe_write import write_dump

    monkeypatch.setenv("DUMPTUI_NO_INDEX_CACHE", "1")
    calls = [(f"Functional.relu.{i}.forward", "", [1.0], [1.0]) for i in range(7)]
    root = write_dump(tmp_path / "dump", "Module", {}, calls)
    with open(tmp_path / "dump" / "step0" / "rank0" / "dump.json") as fh:
        doc = json.load(fh)
    got = _reports(root)
    # each top-level member and each call of `data`: one item read
    assert _last(got, Stage.DUMP_JSON) == (Stage.DUMP_JSON, len(doc) - 1 + len(doc["data"]), None)


def test_a_long_loop_reports_every_so_often_not_every_item():
    got: list = []
    with reporting(lambda *r: got.append(r)):
        assert list(counted(Stage.LISTING, range(EVERY * 2 + 5))) == list(range(EVERY * 2 + 5))
    assert [done for _s, done, _t in got] == [0, EVERY, EVERY * 2, EVERY * 2 + 5]
    assert list(counted(Stage.LISTING, [1, 2])) == [1, 2]  # nobody listening: the items alone
