"""The status line's words from the screen's facts (present/status.py): each state says what it is."""

from __future__ import annotations

from dumptui.core.io.indexing_progress import Stage
from dumptui.present.panel import plain
from dumptui.present.status import StatusFacts, status_line


def test_opening_counts_seconds_and_names_the_stage():
    line = plain(status_line(StatusFacts("a/ref", "a/target", stage="indexing", opening_seconds=1.25), 80))
    assert line == "dumptui ref a/ref vs a/target │ indexing… 1.2 s"


def test_open_shows_statistics_and_the_diverged_count_only_when_there_are_some():
    f = StatusFacts("r", "t", opened=True, stats_state="running", stats_done=1, stats_total=4, diverged=3)
    spans = status_line(f, 80)
    assert plain(spans) == "dumptui ref r vs t │ statistics 25% (esc cancels) │ 3 ✗"
    assert ("3 ✗", "verdict:diverged") in spans
    quiet = plain(status_line(StatusFacts("r", "t", opened=True), 80))
    assert quiet == "dumptui ref r vs t" and "│" not in quiet  # never an empty segment


def test_a_failure_replaces_the_pair_and_keeps_its_reason_when_elided():
    reason = "/very/long/" + "x" * 200 + "/op.npy: bad magic number"
    f = StatusFacts("r", "t", opened=True, stats_state="done", failure_work="detail", failure=reason)
    line = plain(status_line(f, 80))
    assert line.startswith("dumptui statistics done │ …") and line.endswith("op.npy: bad magic number")
    assert len(line) == 80
    stats = StatusFacts("r", "t", opened=True, stats_state="failed", stats_failure=reason, failure_work="stats")
    spans = status_line(stats, 60)
    assert plain(spans).startswith("dumptui statistics failed: …") and len(plain(spans)) == 60
    assert all(role in ("bold", "error") for _text, role in spans)


def test_long_paths_are_elided_from_the_left_and_the_line_fits():
    f = StatusFacts("/data/" + "r" * 100, "/data/" + "t" * 100, opened=True, stats_state="done", diverged=12)
    line = plain(status_line(f, 80))
    assert len(line) <= 80 and line.endswith("statistics done │ 12 ✗")
    assert "…" in line


def test_indexing_words_say_each_dumps_stage_count_and_time_left():
    from dumptui.present.progress import IndexingWords

    now = [100.0]
    words = IndexingWords(lambda: now[0])
    assert words.update("ref", Stage.LISTING, 0, 70_000) == "indexing ref: listing tensor files 0 of 70,000 files"
    now[0] = 102.0  # 2 s for 20,000 of 70,000: 50,000 more at that rate is 5 s
    assert words.update("ref", Stage.LISTING, 20_000, 70_000) == (
        "indexing ref: listing tensor files 20,000 of 70,000 files, ~5 s left"
    )
    text = words.update("target", Stage.GRAPH_FILES, 8_192, None)  # no total: a count, no time left
    assert text == (
        "indexing ref: listing tensor files 20,000 of 70,000 files, ~5 s left"
        " · target: reading the graph files 8,192 lines"
    )
    now[0] = 102.5  # a new stage starts its own clock: half a second in, no estimate yet
    assert words.update("ref", Stage.DATAFLOW, 1_000, 29_000).startswith(
        "indexing ref: linking the dataflow 1,000 of 29,000 nodes · target"
    )


def test_counts_are_passed_on_at_most_every_interval_and_always_the_last():
    """The search counts every tensor pair; the app repaints per count it is given: at most one per interval,
    the first at once, the last (done == total) always, even within the interval."""
    from dumptui.present.progress import EveryFewCounts

    now = [0.0]
    seen: list[tuple[int, int]] = []
    every = EveryFewCounts(lambda d, t: seen.append((d, t)), 0.1, lambda: now[0])
    for done in range(1, 1001):  # 1,000 counts over 0.5 s: one every 0.5 ms
        now[0] = done * 0.0005
        every(done, 1000)
    times = [d * 0.0005 for d, _t in seen]
    assert seen[0] == (1, 1000) and seen[-1] == (1000, 1000)
    assert all(b - a >= 0.1 - 1e-12 for a, b in zip(times, times[1:-1]))  # the last may come sooner
    assert 5 <= len(seen) <= 7  # 0.5 s at one per 0.1 s, plus the first and the last
    # a total that grows (the replays continue the compares' count) is passed on once reached, never skipped
    every(1000, 1200)
    now[0] += 0.01
    every(1200, 1200)
    assert seen[-1] == (1200, 1200)


def test_the_unit_opened_from_the_picker_follows_the_pair_and_the_line_still_fits():
    f = StatusFacts("runs/" + "r" * 60, "runs/" + "t" * 60, opened=True, diverged=2, unit="rank 1, step 0")
    line = plain(status_line(f, 80))
    assert " │ rank 1, step 0 │ 2 ✗" in line and len(line) <= 80
    assert ("rank 1, step 0", "bold") in status_line(f, 80)
    assert plain(status_line(StatusFacts("r", "t", opened=True), 80)) == "dumptui ref r vs t"  # a pair of one
