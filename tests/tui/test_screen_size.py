"""Issue 37: the main screen composes the panes and forwards events; the app's state and decisions live in
present/mainview.py (tested without the app), the work's results are applied by screens/feed.py. A screen
that grows past its limit is taking the presenter's work back."""

from __future__ import annotations

from pathlib import Path

import dumptui.tui.screens.main as main_screen

MAIN_SCREEN_LINES = 350


def lines_over(path: Path, limit: int) -> int:
    """How many lines `path` has beyond `limit` (0 when within it)."""
    return max(0, len(path.read_text().splitlines()) - limit)


def test_the_main_screen_stays_within_its_lines():
    path = Path(main_screen.__file__)
    over = lines_over(path, MAIN_SCREEN_LINES)
    assert not over, f"{path.name} is {over} lines over {MAIN_SCREEN_LINES}: move decisions to present/mainview.py"


def test_a_longer_file_is_found(tmp_path):
    path = tmp_path / "main.py"
    path.write_text("x = 1\n" * (MAIN_SCREEN_LINES + 1))
    assert lines_over(path, MAIN_SCREEN_LINES) == 1
    path.write_text("x = 1\n" * MAIN_SCREEN_LINES)
    assert lines_over(path, MAIN_SCREEN_LINES) == 0


def test_every_message_the_workers_post_has_its_feed_method():
    """The screen hands each `PairPosted` to the `WorkFeed` method of its handler name: one missing would
    fail only when that message arrives."""
    from dumptui.tui import messages
    from dumptui.tui.screens.feed import WorkFeed

    posted = [c for c in vars(messages).values() if isinstance(c, type) and issubclass(c, messages.PairPosted)]
    posted.remove(messages.PairPosted)
    assert len(posted) >= 9
    missing = [c.__name__ for c in posted if not callable(getattr(WorkFeed, c.handler_name, None))]
    assert not missing, f"no WorkFeed method for {missing}"
