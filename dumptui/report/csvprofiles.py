"""The comparison as CSV in one of its two profiles, for every way out (`compare --csv`, the app's `x`):

- `msprobe`: msprobe's own columns and numbers for the dump's kind (kernel, statistic, API), then dumptui's
  (report/msprobe_csv.py): what a user of the Ascend tools reads and diffs;
- `full`: dumptui's richer table (every metric of the metric table, both sides' statistics, the verdict, the
  local error; report/csvout.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import IO

from dumptui.core.compare.results import OpResult
from dumptui.core.model.dump import Dump
from dumptui.core.search.judgement import RunJudgement
from dumptui.report.msprobe_csv import MsprobeTable

PROFILES = ("msprobe", "full")
DEFAULT_PROFILE = "msprobe"
PROFILE_WORDS = {
    "msprobe": "msprobe's columns for this dump, then dumptui's verdict and local error",
    "full": "dumptui's columns: every metric, both sides' statistics, the verdict and the local error",
}


def write_profile(
    fh: IO[str],
    profile: str,
    ref: Dump,
    target: Dump,
    results: list[OpResult],
    judgement: RunJudgement,
    only_bad: bool = False,
    table: MsprobeTable | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> int:
    """Write the rows; how many. `table`: msprobe's table when the caller built it already (for --xlsx too)."""
    if profile not in PROFILES:
        raise ValueError(f"CSV profile {profile!r}: one of {', '.join(PROFILES)}")
    if profile == "full":
        from dumptui.report.csvout import write_csv

        return write_csv(fh, results, only_bad=only_bad, judgement=judgement)
    from dumptui.report.msprobe_csv import build_table, write_table

    if table is None:
        table = build_table(ref, target, results, judgement, only_bad, progress)
    return write_table(table, fh)
