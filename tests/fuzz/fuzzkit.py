"""What the fuzz targets share: the budget, the record of classes tried and outcomes, and the bounds every
example is held to (time, memory)."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import tempfile
import tracemalloc
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path

import hypothesis
from hypothesis import settings

FUZZ = int(os.environ.get("DUMPTUI_FUZZ", "0") or 0)  # `make fuzz`: examples per target
QUICK_EXAMPLES = 200  # per target in `make test`: the whole suite stays well under a minute
EXAMPLE_SECONDS = 30  # one example taking longer is a hang (a blocked read), not slowness: the test fails
WORK = Path(tempfile.mkdtemp(prefix="dumptui-fuzz-"))  # the examples' files; removed when pytest ends (conftest)


def examples(share: float = 1.0) -> settings:
    """Settings for a target whose examples cost more: `share` of the budget (at least 20)."""
    return settings(max_examples=max(20, int(settings.default.max_examples * share)))


# ---------------------------------------------------------------------------------------------- outcomes
# What dumptui made of one example: few fixed words, so that the report adds them up per class of damage.
# Anything else (a traceback, exit 1 from damage, a hang, a control byte in the output, a write under the
# dump, a pickle that ran) fails the example instead of being an outcome.
READ = "read whole"  # the damage left a file dumptui can read: it read every value its layout declares
REPAIRED = "repaired (proven float16-over-float32)"
UNREADABLE = "unreadable, reason named"
REFUSED = "exit 2, path and reason named"

OUTCOMES: dict[str, Counter[tuple[str, str]]] = defaultdict(Counter)  # target -> (damage, outcome) -> examples
REASONS: dict[str, set[str]] = defaultdict(set)  # target -> the distinct reasons given (numbers left out)
TESTS: dict[str, str] = {}  # target -> the pytest node id that runs it (for its wall time)


def reason_kind(reason: str) -> str:
    """A reason without its numbers and quoted values: to count how many different reasons were given."""
    return re.sub(r"'[^']*'|\S*\d\S*", "N", reason)


def record(target: str, damage: str, outcome: str, *reasons: str | None) -> None:
    """One example of `target`: the class of damage tried, what dumptui made of it, and the reasons it gave."""
    OUTCOMES[target][(damage, outcome)] += 1
    REASONS[target].update(reason_kind(r) for r in reasons if r)
    TESTS[target] = os.environ.get("PYTEST_CURRENT_TEST", "").rsplit(" ", 1)[0]
    hypothesis.event(f"{damage} -> {outcome}")


# ---------------------------------------------------------------------------------------------- bounds


class Hang(Exception):
    """An example ran past EXAMPLE_SECONDS: something waited (a FIFO opened, a device read)."""


@contextlib.contextmanager
def time_limit(seconds: float = EXAMPLE_SECONDS) -> Iterator[None]:
    """Fail an example that runs too long instead of hanging the suite (a blocking open() is interrupted
    by the alarm: the handler raises in the main thread, where pytest runs the test)."""

    def expired(_signum, _frame):
        raise Hang(f"still running after {seconds} s: a read that blocks?")

    old = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


@contextlib.contextmanager
def memory_peak() -> Iterator[list[int]]:
    """The peak of Python and numpy allocations inside the block (memory maps are not allocations): the
    list it yields holds the peak in bytes once the block ends."""
    out: list[int] = []
    started = not tracemalloc.is_tracing()
    if started:
        tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    try:
        yield out
    finally:
        out.append(tracemalloc.get_traced_memory()[1] - base)
        if started:
            tracemalloc.stop()
