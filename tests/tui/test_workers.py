"""The UI's thread helpers: a call waited for without blocking `q`, in a thread of its own that may run below
the UI's priority (the statistics thread: keys first)."""

from __future__ import annotations

import os
import threading

import pytest

from dumptui.tui.workers import lower_this_thread, wait_abandonable


class NotCancelled:
    is_cancelled = False


def own_priority() -> int:
    return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())


@pytest.mark.skipif(not hasattr(os, "getpriority"), reason="needs POSIX priorities")
def test_a_call_runs_below_the_ui_in_a_thread_of_its_own():
    here = own_priority()
    seen = wait_abandonable(lambda: (own_priority(), threading.current_thread().name), NotCancelled(), "t", nice=3)
    assert seen == (min(19, here + 3), "t")
    assert own_priority() == here  # the caller's thread is untouched
    assert wait_abandonable(own_priority, NotCancelled()) == here  # no nice: as the caller


@pytest.mark.skipif(not hasattr(os, "getpriority"), reason="needs POSIX priorities")
def test_lowering_stops_at_the_lowest_priority():
    box = {}

    def run():
        lower_this_thread(100)
        box["p"] = own_priority()

    t = threading.Thread(target=run)
    t.start()
    t.join()
    assert box["p"] == 19
