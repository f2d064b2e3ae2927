"""The culprit view's presenter: the error plot along the execution order, the sentence of a root's cause, the
panel's lines for a width, the words that must agree with the numbers, and the columns that fit."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dumptui.core.compare.metrics import compare_arrays
from dumptui.core.compare.session import Session
from dumptui.core.demo.noisy import write_noisy_demo
from dumptui.core.formats import open_dump
from dumptui.core.search.bisect import Bisection
from dumptui.present import detail, errorplot, panel, words
from dumptui.present.driver import BisectDriver
from dumptui.present.errorplot import INFINITE, LEVELS, NOT_READ, ZERO, PlotPoint, error_plot


def converged(ref: str, target: str) -> BisectDriver:
    d = BisectDriver(Bisection(Session(open_dump(ref), open_dump(target))))
    d.start()
    while d.step():
        pass
    return d


@pytest.fixture(scope="module")
def noisy_main(tmp_path_factory):
    """fp16 target, a small bug on the main path: a scan, every op with numbers."""
    return write_noisy_demo(str(tmp_path_factory.mktemp("noisy_main")), "fp16", "main", blocks=12)


# ---------------------------------------------------------------------------------------------- the plot


def test_plot_levels_are_log_scaled_and_marks_are_distinct():
    pts = {
        0: PlotPoint(0.0, 0.0, "clean"),  # exactly equal: blank
        1: PlotPoint(1e-4, 0.5, "clean"),  # the low end; no growth: blank gain
        2: PlotPoint(1e-1, 1e3, "root"),  # three decades up: the top
        4: PlotPoint(math.inf, math.inf, "root"),  # NaN/Inf
    }
    rows = error_plot(pts, 5, 5)
    assert rows.error == ZERO + LEVELS[0] + LEVELS[-1] + NOT_READ + INFINITE
    assert rows.gain == ZERO + ZERO + LEVELS[-1] + NOT_READ + INFINITE
    assert rows.known == 4 and "1 of 5 ops not read" in rows.caption
    assert rows.error_range == "1.00e-04..1.00e-01"
    # one decade of three: a level in the lower half, by the log scale (7 steps over three decades)
    mid = error_plot({0: PlotPoint(1e-4, None, "probed"), 1: PlotPoint(1e-3, None, "probed")}, 2, 2)
    assert mid.error == LEVELS[0] + LEVELS[round(7 / 3)]
    assert mid.gain == NOT_READ * 2  # inputs not read: no gain


def test_plot_column_over_many_ops_shows_the_largest():
    pts = {p: PlotPoint(1e-4, 1.0, "clean") for p in range(1000)}
    pts[517] = PlotPoint(5.0, 2e4, "root")
    rows = error_plot(pts, 1000, 40)
    col = errorplot.column_of(517, 1000, 40)
    assert rows.error[col] == LEVELS[-1] and rows.gain[col] == LEVELS[-1]
    assert set(rows.error[:col] + rows.error[col + 1 :]) == {LEVELS[0]}
    assert len(rows.error) == 40 and rows.known == 1000 and "not read" not in rows.caption


def test_scan_plot_marks_the_root_where_error_grows(noisy_main):
    d = converged(noisy_main.ref, noisy_main.target)
    st = d.state()
    assert st.search == "scan" and st.culprit is not None and st.culprit.ref_name == noisy_main.planted
    assert len(st.points) == st.n  # a scan reads every op
    width = 60
    rows = error_plot(st.points, st.n, width)
    bar = panel.interval_bar(st, width)
    col = errorplot.column_of(st.culprit.position, st.n, width)
    assert bar[col].char == "!"
    assert rows.gain[col] == max(rows.gain, key=LEVELS.find)  # the largest growth
    # the numbers are the scan's: the culprit's output error as compare_arrays gives it from the files
    le = d.bi.scan_result.locals[st.culprit.position]
    out = next(r for r in d.session.op_result(le.pair).outputs if r.slot == le.out_slot)
    y, x = np.load(out.ref.path).ravel(), np.load(out.target.path).ravel()
    e = np.sort(np.abs(x.astype(np.float64) - y))[: y.size - int(y.size * 0.01)]
    assert st.points[st.culprit.position].out_rel == pytest.approx(e.mean() / np.sqrt(np.mean(y.astype(float) ** 2)))
    lines = [panel.plain(line) for line in panel.panel_lines(st, 78)]
    assert lines[0].startswith("CULPRIT #") and any(line.startswith("err  ") for line in lines[:12])
    assert any(line.startswith("search: local-error scan of") for line in lines)


def test_clean_pair_plot_says_the_rest_is_not_read(clean_demo_pair):
    d = converged(clean_demo_pair.ref, clean_demo_pair.target)
    st = d.state()
    assert st.search == "bisection" and st.culprit is not None
    probed = {h.position for h in st.history}
    assert set(st.points) >= probed - {None} and len(st.points) < st.n
    assert st.points[st.culprit.position].gain is not None  # the culprit check read its inputs
    rows = error_plot(st.points, st.n, st.n)
    assert rows.error.count(NOT_READ) == st.n - rows.known
    assert f"{st.n - rows.known} of {st.n} ops not read" in rows.caption


def test_clean_pair_plot_takes_the_statistics_in_once_they_are_done(clean_demo_pair):
    """The app's statistics compare every op: from then on no op of a clean pair is "not read", and each
    column shows that op's own output error (compared here with numpy) and local gain (the scan's rule)."""
    from dumptui.core.compare.batch import evaluate_all
    from dumptui.core.search.scan import analyse

    d = converged(clean_demo_pair.ref, clean_demo_pair.target)
    evaluate_all(d.session)
    before = d.state()
    d.note_compared()
    st = d.state()
    assert len(before.points) < st.n == len(st.points)
    rows = error_plot(st.points, st.n, st.n)
    assert rows.known == st.n and NOT_READ not in rows.error and "not read" not in rows.caption
    assert st.points[st.culprit.position] == before.points[st.culprit.position]  # the culprit check's numbers win
    for pos, pair in enumerate(d.bi.order):
        if pos in before.points:
            continue
        point = st.points[pos]
        assert point.kind == "compared" and point.gain == analyse(d.session, d.session.op_result(pair)).gain_rel
        worst = 0.0
        for r in d.session.op_result(pair).outputs:  # the rule's error: trimmed mean |t - r| / RMS(ref)
            x = np.load(r.ref.path).astype(np.float64).ravel()
            y = np.load(r.target.path).astype(np.float64).ravel()
            diff = np.sort(np.abs(y - x))
            kept = diff[: diff.size - int(diff.size * 0.01)]
            worst = max(worst, float(kept.mean() / np.sqrt(np.mean(x**2))))
        assert point.out_rel == pytest.approx(worst, rel=1e-9, abs=1e-300), pair.name


# ---------------------------------------------------------------------------------------------- the words


def test_words_plurals():
    assert words.plural(1, "step") == "1 step" and words.plural(0, "suspect") == "0 suspects"
    assert words.plural(3, "match", "matches") == "3 matches"


def test_cosine_and_kl_are_not_shown_where_nan_inf_make_them_meaningless():
    y = np.ones(300, dtype=np.float32)
    x = y.copy()
    x[:216] = np.inf
    st = compare_arrays(y, x, kl=True)
    assert words.cos_words(st) == "n/a: 216 Inf on target"
    assert words.kl_words(st, "1e-3") == "n/a: 216 Inf on target"
    st2 = compare_arrays(y, y * 1.001, kl=True)
    assert words.cos_words(st2) == words.format_cos(st2.cos)


def test_wrap_keeps_styles_and_never_exceeds_the_width():
    line = (("why: ", "bold"), ("its inputs agree exactly, its output is off by 9.92e-01 of its RMS", ""))
    out = panel.wrap(line, 30)
    assert all(len(panel.plain(x)) <= 30 for x in out)
    assert out[0][0] == ("why: ", "bold") and all(panel.plain(x).startswith("  ") for x in out[1:])
    assert " ".join(panel.plain(x).strip() for x in out) == panel.plain(line)


def test_tensor_columns_drop_by_priority_and_never_cut():
    rows = [
        {
            "tensor": "input.0",
            "verdict": "close",
            "cos": "1-1.0e-09",
            "max_abs": "3.314e-04",
            "max_rel": "0.064",
            "nonfinite": "-",
            "shape": "(1,8,16,32) float32",
            "rmse": "1e-5",
        }
    ]
    wide = detail.tensor_columns(rows, 200)
    assert [k for k, _l, _w in wide] == ["tensor", "verdict", "cos", "max_abs", "max_rel", "shape", "rmse"]
    narrow = detail.tensor_columns(rows, 45)
    assert [k for k, _l, _w in narrow] == ["tensor", "verdict", "cos", "max_abs"]
    assert sum(w + 2 for _k, _l, w in narrow) <= 45
    rows[0]["nonfinite"] = "216 Inf on target"
    assert "nonfinite" in [k for k, _l, _w in detail.tensor_columns(rows, 200)]


def test_a_culprit_beside_what_could_not_be_judged_says_incomplete(tmp_path):
    """A root found by its weight while its own output is unreadable: the panel names the culprit and, under
    it, that the answer is incomplete and which op could not be judged (never the culprit alone)."""
    demo = write_noisy_demo(str(tmp_path / "w"), "fp16", "weight", blocks=12)
    leaf = demo.planted.split("/", 1)[1].replace("/", "_")
    out = next(
        p for p in (tmp_path / "w" / "target").rglob("*.npy") if f"_{leaf}." in p.name and ".output.0." in p.name
    )
    out.write_bytes(b"XXXXXX" + out.read_bytes()[6:])
    d = converged(demo.ref, demo.target)
    state = d.state()
    assert state.finished and state.culprit is not None and state.culprit.label == demo.planted
    assert any(demo.planted in u and "could not be judged" in u for u in state.undecided), state.undecided
    text = [" ".join(chunk for chunk, _role in line) for line in panel.panel_lines(state, 100)]
    at = next(i for i, line in enumerate(text) if line.startswith("Incomplete"))
    assert any(demo.planted in line for line in text[:at]) and any("could not be judged" in line for line in text[at:])
