"""The read ledger: every tensor pair read is booked once, under its first purpose, on every kind of dump."""

from __future__ import annotations

from helpers.msdumps import write_statistics_dump

from dumptui.core.compare.ledger import ReadLedger
from dumptui.core.compare.session import Session
from dumptui.core.formats import open_dump
from dumptui.core.search.bisect import Bisection
from dumptui.report.data import bisect_report


def test_a_pair_read_twice_is_one_read_under_its_first_purpose():
    led = ReadLedger()
    led.book("precondition", "op", "output", 0)
    led.book("probe", "op", "output", 0)
    led.book("probe", "op", "output", 1)
    led.book("", "other", "input", 0)
    assert led.count == 3
    assert led.by_purpose() == {"precondition": 1, "probe": 1, "compare": 1}
    assert led.summary() == "3 (1 precondition, 1 probe, 1 compare)"


def _bisect(tmp_path, md5: bool) -> dict:
    ref = write_statistics_dump(tmp_path / f"ref{md5}", 1.0, md5)
    tgt = write_statistics_dump(tmp_path / f"tgt{md5}", 1.5, md5)
    s = Session(open_dump(ref), open_dump(tgt))
    assert s.ref.statistics_only
    bi = Bisection(s)
    bi.check_inputs()
    bi.run()
    return bisect_report(bi)


def test_read_count_is_right_on_statistics_only_and_md5_dumps(tmp_path):
    for md5 in (False, True):
        d = _bisect(tmp_path, md5)
        assert d["culprit"] is not None and d["culprit"]["ref"] == "Functional.linear.1.forward"
        assert d["tensors_read"] > 0
        assert d["tensors_read"] == sum(d["reads_by_purpose"].values())
        assert set(d["reads_by_purpose"]) <= {
            "precondition",
            "graph output",
            "probe",
            "culprit check",
            "other roots",
            "scan",
        }
