"""The app's controller without the app: the work the main screen's workers run, called directly."""

from __future__ import annotations

import csv
import io
import json

import numpy as np
import pytest

from dumptui.core.io.errors import DumpError
from dumptui.options.pair import PairOptions
from dumptui.present.controller import PairController
from dumptui.present.driver import BisectCommand

# the apps of this module share one pool of worker processes (conftest.py), not one spawned per app
pytestmark = pytest.mark.usefixtures("apps_share_one_pool")


@pytest.fixture
def opened(demo_pair):
    ctl = PairController(PairOptions(ref=demo_pair.ref, target=demo_pair.target), workers=1)
    steps: list[str] = []
    preview = ctl.preview()
    ref, target = ctl.index(steps.append)
    model = ctl.align(ref, target)
    yield ctl, preview, model, steps
    ctl.close()


def test_open_previews_indexes_and_aligns(opened, demo_pair):
    ctl, preview, model, steps = opened
    # the reference's kernels by name before anything is indexed: the same as once aligned, in order
    assert preview is not None
    kernels = [p.name for p in ctl.pairs if p.kind == "kernel" and p.ref is not None]
    assert [p.name for p in preview.pairs] == kernels
    assert ctl.kernel_count() == sum(1 for p in ctl.pairs if p.kind == "kernel")
    assert list(model.pairs) == ctl.pairs
    assert ctl.open_problems() == ([("ref", []), ("target", [])], [])
    assert ctl.driver is None and ctl.resume_choice() == (None, "", None)  # nothing autosaved for this pair yet


def test_statistics_report_every_op_once_and_count_every_tensor_pair(opened):
    ctl = opened[0]
    reports: list[tuple[int, int, dict]] = []
    total = ctl.statistics_total()
    done = ctl.run_statistics(lambda: False, lambda d, t, v: reports.append((d, t, dict(v))))
    seen: dict[int, str | None] = {}
    for _d, _t, verdicts in reports:
        assert not set(verdicts) & set(seen), "an op reported twice"
        seen.update(verdicts)
    assert done == total == reports[-1][0] and all(t == total for _d, t, _v in reports)
    assert set(seen) == {p.index for p in ctl.pairs}
    assert seen == ctl.verdicts_of(range(len(ctl.pairs)))  # what was reported is what the session holds
    assert all(ctl.all_compared(p.index) for p in ctl.pairs)


def test_statistics_report_a_bounded_number_of_verdicts_at_a_time(opened, monkeypatch):
    """The UI thread applies a report in one step: after a noisy pair's scan every verdict is known at once,
    and one report of them all was a long step (a key waited behind it). Each report holds at most
    VERDICTS_PER_REPORT; together they hold every op's verdict once."""
    from dumptui.present import controller

    ctl = opened[0]
    ctl.run_statistics(lambda: False, lambda *_: None)  # every verdict cached, as after a scan
    monkeypatch.setattr(controller, "VERDICTS_PER_REPORT", 7)
    reports: list[dict] = []
    ctl.run_statistics(lambda: False, lambda d, t, v: reports.append(dict(v)))
    assert len(ctl.pairs) > 7 and all(len(v) <= 7 for v in reports)
    seen = [i for v in reports for i in v]
    assert sorted(seen) == [p.index for p in ctl.pairs]


def test_statistics_stop_when_cancelled(opened):
    ctl = opened[0]
    assert ctl.run_statistics(lambda: True, lambda *_: pytest.fail("reported after a cancel")) == 0


def test_escape_stops_a_statistics_run_through_its_token(opened, monkeypatch):
    """escape (feed.py) sets the run's token: the run stops before its next batch, its count short of the
    total, and a later run starts with a token of its own (it computes the rest)."""
    from dumptui.present import controller

    ctl = opened[0]
    monkeypatch.setattr(controller, "JOBS_PER_BATCH", 16)
    monkeypatch.setattr(controller, "VERDICT_BATCH_SECONDS", 0.0)  # a report after every batch
    counts: list[int] = []

    def report(done: int, total: int, _verdicts: dict) -> None:
        counts.append(done)
        ctl.cancel_statistics()  # as escape does, while the run goes on

    total = ctl.statistics_total()
    done = ctl.run_statistics(lambda: False, report)
    assert counts == [done] and 0 < done < total
    assert ctl.run_statistics(lambda: False, lambda *_: None) == total


def test_bisection_commands_autosave_and_run_to_the_planted_culprit(opened, demo_pair):
    ctl = opened[0]
    ctl.adopt(ctl.build_bisection())
    state, note = ctl.bisect(BisectCommand.START)
    assert note == "" and state.started
    state, note = ctl.bisect(BisectCommand.ACCEPT)
    with open(ctl.autosave_to, encoding="utf-8") as fh:  # autosaved after the command: one mark
        assert len(json.load(fh)["steps"]) == 1  # the accepted probe (the history also shows the start's check)
    state, how, note = ctl.run_to_end(lambda: False, lambda _s: None)
    assert how == "converged" and state.culprit is not None
    assert ctl.pairs[state.culprit.index].name == demo_pair.planted
    assert ctl.resume_choice()[2] is not None  # the next launch offers the autosave
    marks = ctl.marks(timeout=1)
    assert marks is not None and ctl.session_payload(marks)["steps"] == marks["steps"]
    state, _note = ctl.bisect(BisectCommand.RESET)  # back to the start's check alone; the autosave follows
    assert [h.source for h in state.history] == ["start"] and state.culprit is None
    assert ctl.resume_choice()[2] is None


def test_a_stop_request_ends_the_run_after_one_step(opened):
    ctl = opened[0]
    ctl.adopt(ctl.build_bisection())
    ctl.bisect(BisectCommand.START)
    ctl.stop_run.set()  # escape pressed before the run's first step ends: the run clears it when it starts
    state, how, _note = ctl.run_to_end(lambda: True, lambda _s: None)
    assert how in ("stopped", "converged")
    if how == "stopped":
        assert state.culprit is None or state.finished


def test_op_and_tensor_detail_numbers(opened, demo_pair):
    ctl = opened[0]
    index = next(p.index for p in ctl.pairs if p.name == demo_pair.planted)
    res, _relations = ctl.op_detail(index)
    out = res.outputs[0]
    worst, hist, problem = ctl.tensor_detail(out)
    assert problem is None and worst and hist is not None
    a = np.load(out.ref.path).astype(np.float64).ravel()
    b = np.load(out.target.path).astype(np.float64).ravel()
    diff = np.abs(b - a)
    assert abs(worst[0].diff) == pytest.approx(diff.max())  # the worst element, against numpy
    counts, _first, zeros = hist
    assert sum(counts) + zeros == diff.size


def test_the_comparison_csv_has_a_row_per_tensor_pair(opened):
    ctl = opened[0]
    ctl.run_statistics(lambda: False, lambda *_: None)
    text, rows = ctl.comparison_csv()
    table = list(csv.reader(io.StringIO(text)))
    assert rows == len(table) - 1 == ctl.statistics_total()


def test_an_unreadable_dump_is_an_error_with_its_path(tmp_path):
    ctl = PairController(PairOptions(ref=str(tmp_path / "nowhere"), target=str(tmp_path)), workers=1)
    try:
        with pytest.raises(DumpError) as e:
            ctl.index(lambda _s: None)
        assert "nowhere" in str(e.value)
    finally:
        ctl.close()


def test_a_session_saved_for_another_pair_is_refused_not_reapplied(demo_pair, tmp_path):
    from dumptui.core.search.bisect.sessionfile import session_payload, write_session

    path = tmp_path / "other.json"
    write_session(str(path), session_payload({"steps": [], "mode": "graph"}, "/else/ref", "/else/target", {}))
    ctl = PairController(PairOptions(ref=demo_pair.ref, target=demo_pair.target), str(path), workers=1)
    try:
        resume, note, offer = ctl.resume_choice()
    finally:
        ctl.close()
    assert resume is None and offer is None
    assert note.startswith("session not resumed: it was saved for /else/ref vs /else/target, not ")


def test_the_resume_command_is_exact_and_quoted(tmp_path):
    import shlex

    ref, target = tmp_path / "my ref", tmp_path / "target"
    ctl = PairController(PairOptions(ref=str(ref), target=str(target)), workers=1)
    try:
        cmd = ctl.resume_command(str(tmp_path / "s 1.json"))
    finally:
        ctl.close()
    assert shlex.split(cmd) == ["dumptui", str(ref), str(target), "--session", str(tmp_path / "s 1.json")]


def test_autosaves_of_deleted_dumps_are_pruned_when_the_app_starts(demo_pair, tmp_path):
    import os

    from dumptui.core.search.bisect.sessionfile import session_payload, write_session
    from dumptui.present import autosave

    folder = os.path.join(autosave.state_dir(), "bisections")
    os.makedirs(folder, exist_ok=True)
    gone = os.path.join(folder, "gone.json")
    write_session(
        gone,
        session_payload(
            {"steps": [{"key": "k", "mark": "bad", "source": "user"}]}, str(tmp_path / "deleted"), demo_pair.target, {}
        ),
    )
    kept = os.path.join(folder, "kept.json")
    write_session(
        kept,
        session_payload(
            {"steps": [{"key": "k", "mark": "bad", "source": "user"}]}, demo_pair.ref, demo_pair.target, {}
        ),
    )
    ctl = PairController(PairOptions(ref=demo_pair.ref, target=demo_pair.target), workers=1)
    try:
        ctl.resume_choice()
    finally:
        ctl.close()
    assert not os.path.exists(gone) and os.path.exists(kept)
