"""The fuzz suite's settings and its report.

Two budgets (Hypothesis profiles): `make test` runs a few hundred examples per target, derandomized (the same
examples every run, so a failure reproduces) and without an example database (nothing written in the tree);
`make fuzz` (DUMPTUI_FUZZ=N) runs N examples per target with fresh random choices and keeps failing examples in
.hypothesis/ so the next run tries them first. Each example is one class of damage; what dumptui made of it
(read whole, unreadable with the reason named, exit 2 with path and reason...) is recorded, and the run ends
with a report: per target the examples, classes and wall time, and under `make fuzz` the outcomes of every
class (`record` also reports them as Hypothesis events: --hypothesis-show-statistics).
"""

from __future__ import annotations

import shutil
from collections import Counter, defaultdict

import pytest
from hypothesis import HealthCheck, settings

from fuzz.fuzzkit import FUZZ, OUTCOMES, QUICK_EXAMPLES, REASONS, TESTS, WORK

_SLOW_OK = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture]
settings.register_profile(
    "quick",
    max_examples=QUICK_EXAMPLES,
    derandomize=True,
    database=None,
    deadline=None,  # timing on a shared 2-core machine is noise: hangs are caught by `time_limit` instead
    suppress_health_check=_SLOW_OK,
    print_blob=True,
)
settings.register_profile(
    "fuzz",
    max_examples=max(FUZZ, 1),
    deadline=None,
    suppress_health_check=_SLOW_OK,
    print_blob=True,
)
settings.load_profile("fuzz" if FUZZ else "quick")


@pytest.fixture(scope="module", autouse=True)
def _one_pool_per_module(commands_share_one_pool):
    """The fuzz examples run commands in this process by the thousand: one pool of workers per module."""
    return commands_share_one_pool


_SECONDS: dict[str, float] = {}  # node id -> wall time of its call


def pytest_unconfigure(config) -> None:
    shutil.rmtree(WORK, ignore_errors=True)  # FIFOs and links in it are removed, never followed


def pytest_runtest_logreport(report) -> None:
    if report.when == "call":
        _SECONDS[report.nodeid] = report.duration


def _counts(pairs) -> str:
    return ", ".join(f"{outcome} {n}" for outcome, n in sorted(pairs, key=lambda x: (-x[1], x[0])))


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    if not OUTCOMES:
        return
    tr = terminalreporter
    budget = f"{FUZZ} random" if FUZZ else f"{QUICK_EXAMPLES} derandomized (make fuzz: more, random)"
    tr.section(f"fuzz report: {budget} examples per target; classes of damage tried and outcomes")
    total_examples, total_seconds = 0, 0.0
    for target in sorted(OUTCOMES):
        counts = OUTCOMES[target]
        examples = sum(counts.values())
        seconds = _SECONDS.get(TESTS.get(target, ""), 0.0)
        total_examples, total_seconds = total_examples + examples, total_seconds + seconds
        classes = {damage for damage, _ in counts}
        outcomes: Counter[str] = Counter()
        for (_damage, outcome), n in counts.items():
            outcomes[outcome] += n
        reasons = f", {len(REASONS[target])} distinct reasons" if REASONS[target] else ""
        tr.write_line(f"{target}: {examples} examples in {len(classes)} classes, {seconds:.1f} s{reasons}")
        if not FUZZ:
            tr.write_line(f"    {_counts(outcomes.items())}")
            continue
        by_damage: dict[str, list[tuple[str, int]]] = defaultdict(list)
        for (damage, outcome), n in counts.items():
            by_damage[damage].append((outcome, n))
        for damage in sorted(by_damage):
            tr.write_line(f"    {damage}: {_counts(by_damage[damage])}")
    tr.write_line(
        f"all targets: {total_examples} examples, {total_seconds:.1f} s; no traceback, no exit 1 from damage, "
        "no hang, no control byte in the output, nothing written under a dump, no pickle ran"
        if exitstatus == 0
        else f"all targets: {total_examples} examples, {total_seconds:.1f} s; a test failed: see above"
    )
