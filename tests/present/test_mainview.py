"""The main screen's presenter without the app: what a bisection state changes, where the jumps and the search go,
how failures are recorded, which statistics run a count belongs to, what the status line says."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from dumptui.core.io.errors import DumpError
from dumptui.options.pair import PairOptions
from dumptui.present.cause import RootView
from dumptui.present.controller import PairController
from dumptui.present.driver import BisectCommand, BisectState, HistoryRow
from dumptui.present.mainview import MainView, after_worker, bisection_tags, refilter_needed
from dumptui.present.progress import CANCELLED, DONE, RUNNING, WAITING
from dumptui.present.tree import OpTreeModel


def root(index: int) -> RootView:
    return RootView(index, None, f"op{index}", "Add", "outputs", f"why {index}", "how", ref_name=f"ref.op{index}")


def row(index: int) -> HistoryRow:
    return HistoryRow(1, index, index, f"op{index}", "good", "computed", "", 10)


def fake_view(pairs=(), problems=((), ())) -> MainView:
    """A presenter over a stand-in controller: opened, the bisection ready, `pairs` labelled `op<i>`."""
    controller = SimpleNamespace(
        driver=object(),
        session=object(),
        pairs=[SimpleNamespace(label=f"op{i}") for i in pairs],
        open_problems=lambda: problems,
    )
    return MainView(PairOptions(ref="/d/ref", target="/d/target"), controller)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def opened(demo_pair):
    """The real controller over the demo pair, opened, and its tree model."""
    ctl = PairController(PairOptions(ref=demo_pair.ref, target=demo_pair.target), workers=1)
    ref, target = ctl.index(lambda _step: None)
    model = ctl.align(ref, target)
    yield ctl, model
    ctl.close()


# ---------------------------------------------------------------------- bisection states
def test_tags_name_the_culprit_and_roots_once_found_else_the_probe():
    assert bisection_tags(BisectState(probe_index=4)) == {4: "probe"}
    state = BisectState(probe_index=4, culprit=root(7), others=(root(2), root(7)))
    assert bisection_tags(state) == {7: "culprit", 2: "root"}  # the culprit is not relabelled a root
    assert bisection_tags(BisectState()) == {}


def test_a_found_culprit_is_selected_with_its_roots_and_the_ops_to_refresh():
    view = fake_view(range(10))
    state = BisectState(
        probe_index=5, culprit=root(7), others=(root(2),), history=(row(3), row(5)), selections={6: "6 of 8 equal"}
    )
    shown = view.bisection_changed(state, BisectCommand.ACCEPT, stepping=False, model=None)
    assert view.bstate is state
    assert shown.rejudged  # the first state
    assert shown.tags == {7: "culprit", 2: "root"} and shown.roots == frozenset({2, 7})
    assert shown.selections == {6: "6 of 8 equal"}
    assert shown.refresh == [3, 5, 5, 7]  # the history, the probe, the culprit
    assert shown.target == 7 and not shown.plot_only


def test_while_a_steps_the_cursor_roots_and_hints_stay():
    view = fake_view(range(10))
    shown = view.bisection_changed(BisectState(probe_index=5), BisectCommand.RUN, stepping=True, model=None)
    assert shown.tags == {5: "probe"} and shown.refresh == [5]
    assert shown.roots is None and shown.selections is None and shown.target is None


def test_the_plot_s_numbers_change_nothing_but_the_panel():
    view = fake_view(range(10))
    view.bisection_changed(BisectState(probe_index=5, judged=3), BisectCommand.START, False, None)
    shown = view.bisection_changed(BisectState(probe_index=5, judged=3), BisectCommand.POINTS, False, None)
    assert shown.plot_only and not shown.rejudged and shown.target is None and shown.tags == {}


def test_verdicts_judged_in_context_are_shown_again():
    view = fake_view(range(10))
    assert view.bisection_changed(BisectState(judged=0), BisectCommand.START, False, None).rejudged
    assert not view.bisection_changed(BisectState(judged=0), BisectCommand.ACCEPT, False, None).rejudged
    assert view.bisection_changed(BisectState(judged=40), BisectCommand.ACCEPT, False, None).rejudged


def test_no_divergence_selects_the_first_op_unless_the_user_moved(opened):
    ctl, model = opened
    view = MainView(ctl.options, ctl)
    assert view.bisection_changed(BisectState(no_divergence=True), None, False, model).target == 0
    view.current = 12
    assert view.bisection_changed(BisectState(no_divergence=True), None, False, model).target is None
    assert fake_view().bisection_changed(BisectState(), None, False, None).target is None  # nothing open


def test_the_first_probe_is_adopted_only_before_the_search_answers():
    view = fake_view(range(10))
    assert not view.first_probe(BisectState())  # no probe to show
    assert view.first_probe(BisectState(probe_index=3)) and view.probe() == 3
    view.bisection_changed(BisectState(started=True, probe_index=6), BisectCommand.START, False, None)
    assert not view.first_probe(BisectState(probe_index=3)) and view.probe() == 6


# ---------------------------------------------------------------------- jumps
def test_r_walks_the_roots_after_the_op_shown_and_wraps():
    view = fake_view(range(10))
    assert view.next_root() == (None, False) and view.culprit() is None
    view.bisection_changed(BisectState(culprit=root(7), others=(root(2), root(9))), None, False, None)
    assert view.culprit() == 7
    view.current = 7
    assert view.next_root() == (9, False)
    view.current = 9
    assert view.next_root() == (2, False)  # wrapped
    view.bisection_changed(BisectState(culprit=root(4), others=(root(4),)), None, False, None)
    assert view.next_root() == (4, True)  # the only root: said


def test_the_next_diverged_op_follows_the_verdicts(opened):
    ctl, _ = opened
    model = OpTreeModel(ctl.pairs)
    view = MainView(ctl.options, ctl)
    assert view.next_diverged(model, forward=True) is None
    model.set_verdicts({10: "diverged", 30: "diverged", 20: "equal"})
    view.current = 10
    assert view.next_diverged(model, forward=True) == 30
    assert view.next_diverged(model, forward=False) == 30  # backwards from 10 wraps to 30
    view.current = 31
    assert view.next_diverged(model, forward=True) == 10  # wraps
    assert refilter_needed(model, True, [10, 20]) and not refilter_needed(model, True, [20])
    assert not refilter_needed(model, False, [10])


def test_the_search_finds_counts_and_words_a_miss(opened):
    ctl, model = opened
    view = MainView(ctl.options, ctl)
    name = ctl.pairs[5].name
    expected = [p.index for p in ctl.pairs if name.lower() in p.label.lower() or name.lower() in p.name.lower()]
    answer = view.search(model, name, only_diverged=False, forward=True, inclusive=True)
    assert answer.index in expected and answer.shown == view.search_matches >= 1
    miss = view.search(model, "no-such-op-anywhere", only_diverged=True, forward=True, inclusive=False)
    assert miss.index is None and miss.shown == 0 and miss.scope == "among the diverged ops"
    assert miss.miss == "no match for 'no-such-op-anywhere' among the diverged ops"
    assert view.search(model, "", False, True, False).shown is None  # no query: no count


def test_copy_offers_the_op_shown_and_the_culprit(opened):
    ctl, _ = opened
    view = MainView(ctl.options, ctl)
    assert view.copy_choices(None) == []
    view.current = 3
    view.bisection_changed(BisectState(culprit=root(7)), None, False, None)
    texts = [c.text for c in view.copy_choices(None)]
    assert ctl.pairs[3].name in texts and "ref.op7" in texts and "why 7" in texts


# ---------------------------------------------------------------------- statistics, failures, workers
def test_a_cancelled_run_s_late_counts_are_ignored():
    view = fake_view()
    first = view.new_statistics_run()
    assert view.statistics_progress(first, 5, 10) and (view.stats_done, view.stats_total) == (5, 10)
    view.cancel_statistics()
    assert not view.statistics_progress(first, 9, 10) and view.stats_done == 5
    view.stats_failure = "x: broken"
    second = view.new_statistics_run()
    assert second == first + 2 and view.stats_failure == ""


def test_a_failure_is_the_state_until_its_work_is_retried():
    view = fake_view(range(10))
    view.current = 4
    line = view.fail("tensor", ValueError("bad shape"), tensor="out0")
    assert view.failure == ("tensor", line) and "op4 out0: bad shape" in line
    assert "op4: " in view.fail("detail", ValueError("bad"))  # the op, no tensor
    view.retry("tensor")
    assert view.failure is not None  # another work's retry leaves it
    view.retry("detail")
    assert view.failure is None
    view.fail("stats", DumpError("/d/ref/x.npy", "truncated"))
    assert view.stats_failure == "/d/ref/x.npy: truncated"
    assert view.status_facts(RUNNING, None, None).failure_work == "stats"


def test_the_dumps_that_cannot_be_opened_name_both_paths():
    view = fake_view()
    assert view.open_failure(ValueError("not a dump")) == ("/d/ref / /d/target", "not a dump")
    assert view.open_stage == "cannot open the dumps"


def test_what_a_worker_s_end_changes():
    assert after_worker("bisect", ended=True, failed=False, others_running=False) == (True, False, False)
    assert after_worker("bisect", ended=True, failed=False, others_running=True) == (False, False, False)
    assert after_worker("bisect", ended=True, failed=True, others_running=False) == (True, False, True)
    assert after_worker("stats", ended=True, failed=True, others_running=False) == (False, True, False)
    assert after_worker("open", ended=True, failed=True, others_running=False) == (False, False, True)
    assert after_worker("detail", ended=True, failed=True, others_running=False) == (False, False, False)


def test_problems_after_opening_name_three_files_and_count_the_rest():
    errors = [(f"/d/ref/f{i}.npy", "truncated") for i in range(5)]
    view = fake_view(problems=([("ref", errors), ("target", [])], ["mixed dtypes"]))
    notices = view.problem_notices()
    assert len(notices) == 2
    text, timeout = notices[0]
    assert text.startswith("ref: 5 unreadable: /d/ref/f0.npy: truncated; ") and text.endswith("(and 2 more)")
    assert "f3.npy" not in text and timeout == 10
    assert notices[1] == ("mixed dtypes", None)


def test_the_status_facts_and_key_context(opened):
    ctl, model = opened
    view = MainView(ctl.options, ctl, picked=False)
    view.stats_done, view.stats_total = 3, 9
    facts = view.status_facts(DONE, model, None)
    assert facts.opened and facts.opening_seconds == 0.0 and facts.diverged == model.diverged
    assert (facts.stats_state, facts.stats_done, facts.stats_total) == (DONE, 3, 9)
    assert facts.preparing_bisection  # no bisection order adopted yet, no command running
    assert not view.status_facts(WAITING, None, BisectCommand.START).preparing_bisection
    context = view.key_context(True, None, CANCELLED, searching=True)
    assert context.indexed and context.searching and not context.bisection_ready
    assert context.statistics == CANCELLED and context.bisection is None


def test_the_op_under_the_cursor_is_shown_once():
    view = fake_view(range(10))
    view.fail("detail", ValueError("x"))
    assert view.show(3, shown_in_detail=False) and view.current == 3 and view.failure is None
    assert not view.show(3, shown_in_detail=True)  # shown already
    assert view.show(3, shown_in_detail=False)  # the pane shows another op: again
    closed = fake_view(range(10))
    closed.controller.session = None
    assert not closed.show(3, shown_in_detail=False) and closed.current is None
