"""dumptui.present: the decisions behind the terminal app (tree aggregation, navigation, interval bar, the
bisection driver, relations, paths), tested without any UI."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from dumptui.core.compare.session import Session
from dumptui.core.compare.verdict import PENDING
from dumptui.core.formats import open_dump
from dumptui.core.graph.align import ONLY_TARGET, OpPair
from dumptui.core.model.dump import KERNEL, PARAMETER, Dump, Op
from dumptui.core.search.bisect import Bisection
from dumptui.core.search.bisect import sessionfile as session_file
from dumptui.present import bars, columns, keys, paths, relations, search, tree
from dumptui.present import driver as bisection
from dumptui.present.progress import RUNNING
from dumptui.report.looks import mark
from dumptui.report.reasons import say


def pairs_of(names, kinds=None):
    out = []
    for i, n in enumerate(names):
        kind = (kinds or {}).get(n, KERNEL)
        op = Op(n, n.rsplit("/", 1)[-1].split("-")[0], kind=kind)
        out.append(OpPair(op, op, "exact name", index=i))
    return out


NAMES = [
    "Default/a-A/x-X/MatMul-op0",
    "Default/a-A/Add-op0",
    "Default/b-B/ReLU-op0",
    "Default/a-A/x-X/Mul-op1",
    "Sigmoid-op9",
    "conv.weight",
]


@pytest.fixture
def model():
    return tree.OpTreeModel(pairs_of(NAMES, {"conv.weight": PARAMETER}))


def test_tree_folders_from_scopes(model):
    top = model.children(model.root)
    assert [getattr(c, "name", c) for c in top] == ["Default", 4, tree.PARAMETERS_FOLDER]
    default = top[0]
    assert default.total == 4 and default.first == 0
    a, b = model.children(default)
    assert (a.path, b.path) == ("Default/a-A", "Default/b-B")
    # a sub-folder sits where its first op ran: x-X (op 0) before Add (op 1)
    assert [getattr(c, "name", c) for c in model.children(a)] == ["x-X", 1]
    assert model.children(model.by_path["Default/a-A/x-X"]) == [0, 3]
    assert [f.name for f in model.path_to(3)] == ["Default", "a-A", "x-X"]
    assert model.by_path[tree.PARAMETERS_FOLDER].synthetic


def test_folder_worst_verdict_and_diverged_count(model):
    a = model.by_path["Default/a-A"]
    assert a.verdict == PENDING and a.diverged == 0 and a.pending == 3
    ops, folders = model.set_verdicts({0: "equal", 1: "close", 3: None})
    assert ops == {0, 1}
    assert {f.path for f in folders} == {"Default", "Default/a-A", "Default/a-A/x-X"}
    assert a.verdict == PENDING  # op 3 unknown yet: never `equal` before everything is computed
    model.set_verdicts({3: "diverged"})
    assert a.verdict == "diverged" and a.diverged == 1 and a.pending == 0
    assert model.by_path["Default"].diverged == 1
    # a verdict that changes moves the counts (no double counting)
    model.set_verdicts({3: "shape mismatch"})
    assert a.counts == {"equal": 1, "close": 1, "shape mismatch": 1} and a.diverged == 1
    assert a.verdict_counts == ("equal", 1, "close", 1, "shape mismatch", 1)  # in the order they came
    leaves = [f for f in model.by_path.values() if not f.folders]
    assert len(leaves) > 1 and all(f.folders is leaves[0].folders for f in leaves)  # one empty mapping
    model.set_verdicts({3: "close"})
    assert a.verdict == "close" and a.diverged == 0 and model.diverged == 0
    # unchanged verdicts report nothing to relabel
    assert model.set_verdicts({3: "close"}) == (set(), set())


def test_only_diverged_children_and_rows(model):
    model.set_verdicts({0: "equal", 2: "diverged", 3: "dtype mismatch", 4: "only in target"})
    assert model.rows() == list(range(6))
    assert model.rows(only_diverged=True) == [2, 3]
    default = model.by_path["Default"]
    assert [c.name for c in model.children(default, only_diverged=True)] == ["a-A", "b-B"]
    assert model.children(model.by_path["Default/a-A/x-X"], only_diverged=True) == [3]
    assert [c.name for c in model.children(model.root, only_diverged=True)] == ["Default"]
    assert model.visible(2, True) and not model.visible(0, True) and model.visible(0, False)


def test_leaf_names_show_both_sides_when_renamed():
    r = Op("Default/branch-ModBranch/FloorMod-op0", "FloorMod")
    t = Op("Default/branch-ModBranch/Mod-op0", "Mod")
    assert tree.leaf_name(OpPair(r, t, "renamed")) == "FloorMod-op0 ↔ Mod-op0"
    t2 = Op("Other/Mod-op0", "Mod")
    assert tree.leaf_name(OpPair(r, t2, "renamed")) == "FloorMod-op0 ↔ Other/Mod-op0"
    only = OpPair(None, Op("Default/x/Cast-op0", "Cast"), ONLY_TARGET)
    assert tree.leaf_name(only) == "Cast-op0" and tree.scope_parts(only) == ["Default", "x"]


def test_marks_are_distinct_without_colour():
    from dumptui.core.compare.verdict import Verdict

    marks = [mark(v) for v in Verdict]
    assert len(set(marks)) == len(marks) == 12
    assert mark("flipped") == "⇄"  # a selection flipped on near-ties: neither close nor diverged
    assert mark(None) == "·" and mark("diverged") == "✗"


def test_search_wraps_and_respects_rows():
    pairs = pairs_of(NAMES)
    rows = list(range(len(pairs)))
    assert search.find_op(pairs, rows, "mul-op1", None) == 3
    assert search.find_op(pairs, rows, "mul", 0) == 3
    assert search.find_op(pairs, rows, "MATMUL", 0) == 0  # wraps back to the only match
    assert search.find_op(pairs, rows, "a-A", 0) == 1
    assert search.find_op(pairs, rows, "a-A", 0, inclusive=True) == 0
    assert search.find_op(pairs, rows, "a-A", 1, forward=False) == 0
    assert search.find_op(pairs, rows, "a-A", 0, forward=False) == 3
    assert search.find_op(pairs, [2, 4], "a-A", None) is None  # not among the rows shown
    assert search.find_op(pairs, rows, "  ", 0) is None
    assert search.count_matches(pairs, rows, "a-a") == 3
    # the op type matches too
    assert search.find_op(pairs, rows, "relu", None) == 2


def test_next_diverged_in_execution_order():
    verdicts = {1: "diverged", 4: "shape mismatch", 2: "close"}
    rows = list(range(6))
    assert search.next_diverged(rows, verdicts.get, None) == 1
    assert search.next_diverged(rows, verdicts.get, 1) == 4
    assert search.next_diverged(rows, verdicts.get, 4) == 1  # wraps
    assert search.next_diverged(rows, verdicts.get, 1, forward=False) == 4
    assert search.next_diverged(rows, verdicts.get, 3, forward=False) == 1
    assert search.next_diverged(rows, {}.get, 0) is None


def test_next_root_after_the_op_shown_wrapping():
    roots = [7, 2, 11, 2]  # the culprit first, then the other roots, in any order and repeated
    assert search.next_root(roots, None) == 2
    assert search.next_root(roots, 2) == 7
    assert search.next_root(roots, 8) == 11
    assert search.next_root(roots, 11) == 2  # wraps
    assert search.next_root([5], 5) == 5
    assert search.next_root([], 3) is None


def test_elide_left_keeps_the_end_of_a_message():
    assert columns.elide_left("Default/a/b/Conv2D-op0", 12) == "…/Conv2D-op0"
    assert columns.elide_left("short", 12) == "short"
    assert columns.elide_left("abc", 1) == "…" and columns.elide_left("abc", 0) == ""


def state(**kw):
    return bisection.BisectState(**kw)


def test_interval_bar_kinds_and_characters():
    s = state(
        n=10, started=True, candidates=frozenset({4, 5, 6, 7}), good=frozenset({3}), bad=frozenset({7}), hi=7, probe=5
    )
    bar = "".join(c.char for c in bars.interval_bar(s, 10))
    assert bar == "===G▒P▒Bxx"
    # stretched: 10 positions over 20 columns, two columns each
    assert "".join(c.char for c in bars.interval_bar(s, 20)) == "======GG▒▒PP▒▒BBxxxx"
    # compressed: the probe and the marks survive on a narrow bar
    kinds = [c.kind for c in bars.interval_bar(s, 4)]
    assert kinds == ["clear", "good", "probe", "bad"]
    assert "".join(c.char for c in bars.interval_bar(state(n=5), 5)) == "·····"
    assert bars.interval_bar(state(n=0), 10) == []


def test_interval_bar_on_a_large_order_keeps_a_narrow_interval_visible():
    s = state(n=20000, started=True, candidates=frozenset({12345, 12346}), hi=12346, bad=frozenset({12346}))
    cells = bars.interval_bar(s, 60)
    assert len(cells) == 60
    assert [c.kind for c in cells].count("bad") == 1
    assert cells[0].kind == "clear" and cells[-1].kind == "after"


def test_interval_bar_converged_shows_the_culprit():
    root = bisection.RootView(index=7, position=3, label="x", op_type="T", kind="outputs", why="", how="")
    s = state(
        n=6,
        started=True,
        finished=True,
        candidates=frozenset({3}),
        hi=3,
        bad=frozenset({3, 5}),
        good=frozenset({1}),
        culprit=root,
    )
    assert "".join(c.char for c in bars.interval_bar(s, 6)) == "=G=!xB"


def test_histogram_bar_merges_bins_to_fit():
    bar, merge = bars.histogram_bar([1, 0, 10, 100], 10)
    assert merge == 1 and len(bar) == 4 and bar[1] == " " and bar[3] == "█"
    bar, merge = bars.histogram_bar(list(range(1, 41)), 10)
    assert merge == 4 and len(bar) == 10
    assert bars.histogram_bar([], 10) == ("", 1)


# ---------------------------------------------------------------------------------------- on real data


@pytest.fixture
def demo_session(demo_pair):
    return Session(open_dump(demo_pair.ref), open_dump(demo_pair.target))


def test_driver_accepting_computed_verdicts_finds_the_planted_culprit(demo_pair, demo_session):
    d = bisection.BisectDriver(Bisection(demo_session))
    d.start()
    st = d.state()
    assert st.started and st.probe is not None and st.probe_mark in ("good", "bad")
    assert st.checks.startswith("network input: 1 equal") and not st.can_undo
    assert st.probe_index == d.bi.order[st.probe].index
    for _ in range(40):
        if not d.step():
            break
    st = d.state()
    assert st.finished and st.culprit is not None
    assert demo_session.alignment.pairs[st.culprit.index].name == demo_pair.planted
    res = demo_session.op_result(demo_session.alignment.pairs[st.culprit.index])
    assert all(r.good for r in res.inputs) and res.verdict == "diverged"
    out = res.outputs[0]
    # the sentence of its cause (an attribute differs), with the output error computed here independently:
    # mean |t - r| without the largest 1 % over the reference's RMS
    y = np.load(out.ref.path).astype(np.float64).ravel()
    x = np.load(out.target.path).astype(np.float64).ravel()
    e = np.sort(np.abs(x - y))[: y.size - int(y.size * 0.01)]
    rel = e.mean() / np.sqrt(np.mean(y**2))
    assert st.culprit.cause == "constant"
    assert st.culprit.why == (
        f'its definition differs (attribute format: "NCHW" vs "NHWC"), and its output is off by {rel:.2e} of its RMS'
    )
    assert st.culprit.proof == (
        ", ".join(f"{r.label} {r.verdict}" for r in res.inputs) + f" → output.0 diverged (cos {out.stats.cos:.6f})"
    )
    # the attributes hint says what the sentence says: left out
    assert st.culprit.hints == tuple((h.kind, say(h.reason)) for h in res.hints if h.kind != "attributes")
    assert st.culprit.ref_name == st.culprit.target_name == demo_pair.planted and not st.culprit.renamed
    assert st.probe is None and not st.can_mark and st.steps_left == 0


def test_driver_overrule_and_undo(demo_session):
    d = bisection.BisectDriver(Bisection(demo_session))
    d.start()
    first = d.probe
    n0 = len(d.bi.history)
    d.overrule("good")
    assert d.bi.history[-1].source == "user" and d.bi.history[-1].mark == "good"
    assert d.state().can_undo
    d.accept()
    assert len(d.bi.history) >= n0 + 2
    assert d.undo() and d.undo()
    assert len(d.bi.history) == n0 and d.probe == first and not d.state().can_undo
    assert not d.undo()  # the start is not undone
    assert d.bi.started


def test_driver_undo_removes_the_culprit_check_steps(demo_pair, demo_session):
    d = bisection.BisectDriver(Bisection(demo_session))
    d.start()
    while d.step():
        pass
    assert d.bi.finished
    before = [s for s in d.bi.history if bisection.is_mark_step(s)]
    assert d.undo()
    after = d.bi.history
    assert not d.bi.finished and d.probe is not None
    assert [s for s in after if bisection.is_mark_step(s)] == before[:-1]
    assert after[-1] is before[-2] or not bisection.is_mark_step(after[-1])


def test_driver_replay_resumes_the_same_state(demo_session, demo_pair):
    d = bisection.BisectDriver(Bisection(demo_session))
    d.start()
    d.accept()
    d.overrule("bad")
    saved = json.loads(json.dumps(d.to_json()))
    d2 = bisection.BisectDriver(Bisection(demo_session))
    assert d2.replay(saved) == []
    a, b = d.state(), d2.state()
    assert (a.candidates, a.probe, a.good, a.bad) == (b.candidates, b.probe, b.good, b.bad)
    assert [h.mark for h in a.history] == [h.mark for h in b.history]
    missing = bisection.BisectDriver(Bisection(demo_session)).replay({"steps": [{"key": "nope", "mark": "good"}]})
    assert missing == ["nope"]


def test_driver_reset_starts_over(demo_session):
    d = bisection.BisectDriver(Bisection(demo_session))
    d.start()
    first = d.probe
    d.accept()
    d.accept()
    marked = d.bi.history
    d.reset()
    assert d.bi.started and d.probe == first
    # the reset itself is undoable (issue 21.4), and then nothing is left to undo
    assert d.state().can_undo and d.bi.undo() and d.bi.history == marked


def test_redump_kernels_cover_the_interval_both_spellings(demo_pair, demo_session):
    bi = Bisection(demo_session)
    pairs = demo_session.alignment.pairs
    # the interval around the fp16 region holds the target-only Casts
    casts = [p for p in pairs if not p.paired and p.kind == KERNEL]
    assert casts
    lo = bi.position[pairs[casts[0].index - 1].index]
    hi = bi.position[pairs[casts[-1].index + 1].index]
    names = bisection.redump_kernels(bi.order, pairs, range(lo, hi + 1))
    for c in casts:
        assert c.target.name in names
    assert names[0] == bi.order[lo].name and names[-1] == bi.order[hi].name
    assert len(names) == len(set(names))
    assert bisection.redump_kernels(bi.order, pairs, []) == []


def test_relations_from_the_graph(demo_pair, demo_session):
    import networkx as nx

    pairs = demo_session.alignment.pairs
    g = demo_session.ref.graph.to_networkx()  # networkx walks the graph independently of relations.py
    planted = next(p for p in pairs if p.name == demo_pair.planted)
    rel = relations.relations_of(demo_session, planted)
    prods = [r for r in rel if r.direction == "producer"]
    cons = [r for r in rel if r.direction == "consumer"]
    assert [r.slot for r in prods] == sorted(planted.ref.inputs)
    ancestors = nx.ancestors(g, planted.ref.key)
    assert all(pairs[r.index].ref.key in ancestors for r in prods if r.index is not None)
    assert cons and all(planted.ref.key in nx.ancestors(g, pairs[r.index].ref.key) for r in cons)
    assert planted.index not in {r.index for r in rel}
    # a convolution's weight: the parameter it reads (through the graph's Load), selectable
    conv = next(p for p in pairs if p.op_type == "Conv2D")
    weight = [r for r in relations.relations_of(demo_session, conv) if r.direction == "producer"][1]
    assert weight.name.startswith("parameter ") and pairs[weight.index].kind == PARAMETER


def test_relations_without_graph():
    op = Op("Default/Add-op0", "Add")
    op.inputs = {}
    dump = Dump("d", "d", "test", ops=[op])
    s = Session(dump, dump)
    assert relations.relations_of(s, s.alignment.pairs[0]) == []


def test_default_paths_never_inside_a_dump(tmp_path):
    dump_dir = tmp_path / "dump"
    dump_dir.mkdir()
    d = Dump(str(dump_dir), str(dump_dir), "test")
    env = {
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "HOME": str(tmp_path / "home"),
    }
    p = paths.default_session_path([d], now=0, env=env, cwd=str(dump_dir))
    assert p.startswith(str(tmp_path / "state" / "dumptui")) and p.endswith(".json")
    assert paths.default_export_path([d], cwd=str(tmp_path), env=env) == str(tmp_path / "data_dump.json")
    inside = paths.default_export_path([d], cwd=str(dump_dir / "sub"), env=env)
    assert inside == str(tmp_path / "cache" / "dumptui" / "data_dump.json")
    assert paths.default_redump_dir([d], cwd=str(dump_dir), env=env) == str(tmp_path / "home" / "dump_interval")
    assert os.path.isabs(paths.default_redump_dir([d], cwd="rel"))
    # home without XDG
    assert paths.cache_dir({"HOME": "/h"}) == "/h/.cache/dumptui"
    assert paths.state_dir({"HOME": "/h"}) == "/h/.local/state/dumptui"


def test_refused_outputs(tmp_path):
    dump_dir = tmp_path / "dump"
    dump_dir.mkdir()
    d = Dump(str(dump_dir), str(dump_dir), "test")
    assert "inside the dump folder" in paths.refuse_output(str(dump_dir / "x.json"), [d])
    assert "is a folder" in paths.refuse_output(str(tmp_path), [d])
    assert paths.refuse_output("", [d]) == "give a file path"
    assert paths.refuse_output(str(tmp_path / "ok.json"), [d]) is None
    assert "absolute" in paths.refuse_dump_dir("relative/dir")
    assert paths.refuse_dump_dir("/abs/dir") is None


def test_session_payload_and_read(tmp_path):
    data = session_file.session_payload(
        {"version": 1, "mode": "graph", "steps": []}, "a", "b", {"cos": 0.95, "ignore": [], "rank": None}
    )
    assert data["dumps"] == {"ref": os.path.abspath("a"), "target": os.path.abspath("b")}
    assert data["options"] == {"cos": 0.95} and data["dumptui_session"] == 1
    p = tmp_path / "s.json"
    p.write_text(json.dumps(data))
    assert session_file.read_session(str(p))["mode"] == "graph"
    assert session_file.session_mismatch(data, "a", "b") is None
    assert "saved for" in say(session_file.session_mismatch(data, "a", "c"))
    (tmp_path / "bad.json").write_text("{nope")
    with pytest.raises(session_file.SessionError) as e:
        session_file.read_session(str(tmp_path / "bad.json"))
    assert "not a JSON file" in say(e.value.reason)
    (tmp_path / "other.json").write_text("[1]")
    with pytest.raises(session_file.SessionError) as e:
        session_file.read_session(str(tmp_path / "other.json"))
    assert "not a dumptui session" in say(e.value.reason)
    with pytest.raises(session_file.SessionError) as e:
        session_file.read_session(str(tmp_path / "missing.json"))
    assert e.value.path == str(tmp_path / "missing.json") and "No such file" in say(e.value.reason)


def test_tree_model_on_the_demo_is_complete(tmp_path):
    """Every op reachable from the root. How fast it is built is measured by bench/bench_tui.py, not here."""
    from dumptui.core.demo.residual import write_demo

    info = write_demo(str(tmp_path), n_ops=2000, size=16)
    s = Session(open_dump(info.ref), open_dump(info.target))
    m = tree.OpTreeModel(s.alignment.pairs)
    assert m.root.total == len(s.alignment.pairs)
    # every op is reachable from the root through children()
    seen, stack = set(), [m.root]
    while stack:
        f = stack.pop()
        for c in m.children(f):
            if isinstance(c, tree.Folder):
                stack.append(c)
            else:
                seen.add(c)
    assert seen == set(range(len(s.alignment.pairs)))


def test_format_columns_aligns():
    lines = columns.format_columns([["index", "ref"], ["[0, 1]", "-1.5"], ["[2]", "10"]], [False, True])
    assert lines == ["index    ref", "[0, 1]  -1.5", "[2]       10"]
    assert columns.format_columns([], [True]) == []


def test_redump_plan_says_what_the_export_holds(demo_session):
    bi = Bisection(demo_session)
    pairs = demo_session.alignment.pairs
    st = bisection.BisectState(n=len(bi.order), started=True, candidates=frozenset({3, 4, 5}))
    plan = bisection.redump_plan(bi.order, pairs, st)
    assert list(plan.kernels) == bisection.redump_kernels(bi.order, pairs, st.candidates)
    first, last = bi.order[3].index + 1, bi.order[5].index + 1
    assert plan.summary == (
        f"{len(plan.kernels)} kernel names (both sides' spellings): the 3 suspects "
        f"#{first}..#{last} and the kernels dumped on one side only between them"
    )
    one = bisection.redump_plan(bi.order, pairs, bisection.BisectState(n=len(bi.order), candidates=frozenset({4})))
    assert f"the 1 suspect #{bi.order[4].index + 1} and" in one.summary


# ---------------------------------------------------------------------------------------- the action table


def test_action_table_ids_unique_and_every_command_described():
    ids = [a.id for a in keys.ACTIONS]
    assert len(ids) == len(set(ids))
    for a in keys.ACTIONS:
        assert a.label and a.help and a.section and a.on in (keys.SCREEN, keys.APP, keys.PICKER), a
        assert a.keys or a.palette, f"{a.id}: neither a key nor a palette entry reaches it"
    assert [title for title, _actions in keys.sections()] == [keys.BISECTION, keys.RANKS_AND_STEPS, keys.EVERYWHERE]
    assert [a.id for a in keys.actions_on(keys.PICKER)] == ["picker.open"]  # the picker's own: enter
    assert keys.action_named("mark").id in ("bisect.good", "bisect.bad")
    assert keys.action_named("help", keys.APP).qualified == "app.help"


def test_commands_available_as_the_work_progresses():
    def ids(**kw):
        return keys.available_now(keys.KeyContext(**kw))

    always = {
        "focus.next",
        "focus.previous",
        "app.quit",
        "app.interrupt",
        "app.help",
        "app.command_palette",
        "view.zoom",
        "nav.first",
        "nav.last",
        "picker.open",  # bound on the picker only, where it always applies
    }
    assert ids() == always  # nothing indexed yet
    indexed = ids(indexed=True)
    assert {"nav.search", "nav.next_diverged", "view.toggle", "view.only_diverged"} <= indexed
    # a search's n / N / escape only while it holds a query; hidden otherwise, so n falls to the diverged ops
    search_keys = {"search.next", "search.previous", "search.end"}
    assert not search_keys & indexed and search_keys <= ids(indexed=True, searching=True)
    walk = keys.by_id("search.next")
    assert keys.state(walk, keys.KeyContext(indexed=True)) is False
    assert keys.state(walk, keys.KeyContext(indexed=True, searching=True)) is True
    assert keys.state(keys.by_id("bisect.accept"), keys.KeyContext(indexed=True)) is None  # shown dimmed
    order = [a.id for a in keys.ACTIONS]
    assert order.index("search.next") < order.index("nav.next_diverged")  # the first available binding answers
    assert order.index("search.end") < order.index("work.cancel")
    ranks = [keys.footer_rank(a) for a in ("quit", "help", "search_next", "end_search", "accept", "mark('good')")]
    assert ranks == [0, 0, 1, 1, 2, 2]
    assert "bisect.accept" not in indexed  # the bisection order is not built yet
    ready = dict(indexed=True, bisection_ready=True)
    assert {"bisect.accept", "bisect.run"} <= ids(**ready)  # space starts the bisection
    assert "bisect.good" not in ids(**ready) and "bisect.undo" not in ids(**ready)
    probing = bisection.BisectState(n=10, started=True, probe=4, candidates=frozenset({3, 4, 5}), can_undo=True)
    now = ids(**ready, bisection=probing)
    assert {
        "bisect.accept",
        "bisect.good",
        "bisect.bad",
        "bisect.undo",
        "bisect.reset",
        "session.save",
        "bisect.export",
    } <= now
    assert not {"bisect.good", "bisect.accept", "bisect.undo"} & ids(
        **ready, bisection=probing, bisect_task=bisection.BisectCommand.ACCEPT
    )
    converged = bisection.BisectState(n=10, started=True, finished=True, candidates=frozenset({4}), can_undo=True)
    now = ids(**ready, bisection=converged)
    assert "bisect.undo" in now and not {"bisect.accept", "bisect.good", "bisect.run"} & now
    assert "nav.probe" in ids(**ready, bisection=probing) and "nav.culprit" not in ids(**ready, bisection=probing)
    assert "nav.probe" not in ids(**ready, bisection=converged)  # no culprit in this state: nothing to go to
    assert "nav.culprit" not in ids(**ready, bisection=converged) and "edit.copy" in ids(indexed=True)
    assert "work.cancel" in ids(statistics=RUNNING) and "work.cancel" in ids(
        **ready, bisect_task=bisection.BisectCommand.RUN
    )
    assert "work.cancel" not in ids(**ready, bisect_task=bisection.BisectCommand.ACCEPT)
    assert "work.compute_statistics" in ids(indexed=True, statistics="cancelled")
    assert "work.compute_statistics" not in ids(indexed=True, statistics="done")


def test_palette_offers_what_is_available_now():
    titles = [a.palette for a in keys.palette(keys.KeyContext())]
    assert titles == ["View: zoom the focused pane (toggle)", "Help: every key"]
    probing = bisection.BisectState(n=10, started=True, probe=4, candidates=frozenset({3, 4, 5}))
    titles = [a.palette for a in keys.palette(keys.KeyContext(indexed=True, bisection_ready=True, bisection=probing))]
    assert "Bisection: run to the end" in titles and "Bisection: undo the last mark" not in titles


def test_failures_name_the_path_and_the_reason():
    from dumptui.core.io.errors import DumpError, UsageError
    from dumptui.present import failures

    assert str(failures.describe(DumpError("/d/ref", "no such file or folder"))) == "/d/ref: no such file or folder"
    assert str(failures.describe(UsageError("give REF and TARGET"))) == "give REF and TARGET"
    missing = failures.describe(FileNotFoundError(2, "No such file or directory", "/x/map.csv"), "fallback")
    assert (missing.path, missing.reason) == ("/x/map.csv", "No such file or directory")
    assert failures.describe(ValueError("bad line 3"), "/x/ignore.txt") == failures.Failure(
        "/x/ignore.txt", "bad line 3"
    )
    bug = failures.describe(RuntimeError("graph walk failed"), "Default/Add-op0")
    assert str(bug) == "Default/Add-op0: RuntimeError: graph walk failed"
    assert (
        failures.failure_line("save", failures.Failure("/x/s.json", "Permission denied"))
        == "cannot save the session: /x/s.json: Permission denied"
    )


@pytest.mark.parametrize(
    "name,width,shown",
    [
        ("block0-ResidualBlock", 30, "block0-ResidualBlock"),  # fits: whole
        ("block12-ResidualBlock", 14, "block12…lBlock"),  # the sibling's own name stays whole
        ("block0-ResidualBlock", 18, "block0-R…dualBlock"),
        ("FloorMod-op0 ↔ Mod-op0", 16, "Floor… ↔ Mod-op0"),  # a rename: the starts, where the two differ
        ("Add-op0 ↔ AddV2-op0", 19, "Add-op0 ↔ AddV2-op0"),
        ("Trunc-op0", 7, "Trunc…0"),  # the type whole, the end of the index
        ("abcdefghijklmnop", 7, "abc…nop"),
    ],
)
def test_a_label_is_cut_in_the_middle_keeping_what_tells_siblings_apart(name, width, shown):
    from dumptui.present.columns import fit_name

    assert fit_name(name, width) == shown and len(shown) <= width


def test_a_path_keeps_the_op_and_its_nearest_scopes_whole_names():
    from dumptui.present.columns import fit_name
    from dumptui.report.names import is_shown_from

    path = "Default/stage0-Stage/block5-ResidualBlock/conv-Conv1x1/Conv2D-op0"
    assert fit_name(path, 80) == path
    assert fit_name(path, 50) == "Defa…/block5-ResidualBlock/conv-Conv1x1/Conv2D-op0"
    assert fit_name(path, 30) == "Defau…/conv-Conv1x1/Conv2D-op0"  # no scope shortened to a name it lacks
    assert fit_name(path, 12) == "…/Conv2D-op0"
    rows = [path.replace("block5", f"block{i}") for i in range(4, 8)]
    assert len({fit_name(r, 50) for r in rows}) == 4  # rows of a flat list stay distinct where there is room
    for w in range(1, 70):
        assert len(fit_name(path, w)) <= w and is_shown_from(fit_name(path, w), path)


def test_the_title_shows_the_dumps_without_what_they_share():
    from dumptui.present.paths import shown_pair

    assert shown_pair("/tmp/pytest/x/demo0/ref", "/tmp/pytest/x/demo0/target/") == ("demo0/ref", "demo0/target")
    assert shown_pair("/data/910/run1", "/mnt/310/run1") == ("/data/910/run1", "/mnt/310/run1")
    assert shown_pair("/data/x", "/data/x/y") == ("x", "x/y")  # one inside the other
