"""The read ledger: every tensor pair read is booked once, under its first purpose, on every kind of dump."""

from __future__ import annotations

import json

from helpers.msdumps import write_statistics_dump

from dumptui.core.compare.ledger import Purpose, ReadLedger
from dumptui.core.compare.session import Session
from dumptui.core.formats import open_dump
from dumptui.core.model.dump import INPUT, OUTPUT
from dumptui.core.search.bisect import Bisection
from dumptui.report.data import bisect_report


def test_a_pair_read_twice_is_one_read_under_its_first_purpose():
    led = ReadLedger()
    led.book(Purpose.PRECONDITION, "op", OUTPUT, 0)
    led.book(Purpose.PROBE, "op", OUTPUT, 0)
    led.book(Purpose.PROBE, "op", OUTPUT, 1)
    led.book(Purpose.COMPARE, "other", INPUT, 0)
    assert led.count == 3
    assert led.by_purpose() == {Purpose.PRECONDITION: 1, Purpose.PROBE: 1, Purpose.COMPARE: 1}
    # what bisect prints and writes is the purposes' text, as when they were strings
    assert led.summary() == "3 (1 precondition, 1 probe, 1 compare)"
    assert json.dumps(led.by_purpose()) == '{"precondition": 1, "probe": 1, "compare": 1}'
    assert [str(r) for r in led.reads()] == [
        "precondition: op output.0",
        "probe: op output.1",
        "compare: other input.0",
    ]


def test_a_read_that_names_no_purpose_is_booked_as_compare(demo_pair):
    s = Session(open_dump(demo_pair.ref), open_dump(demo_pair.target))
    pair = next(p for p in s.alignment.pairs if p.paired and p.ref.inputs and p.ref.outputs)
    s.op_result(pair, inputs=False)
    s.op_result(pair, inputs=True, purpose=Purpose.PROBE)  # its inputs are read now, its outputs were already
    assert list(s.ledger.by_purpose()) == [Purpose.COMPARE, Purpose.PROBE]
    assert {(r.purpose, r.io) for r in s.ledger.reads()} == {(Purpose.COMPARE, OUTPUT), (Purpose.PROBE, INPUT)}


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
        assert set(d["reads_by_purpose"]) <= {p.value for p in Purpose} - {Purpose.VIEW, Purpose.COMPARE}


def test_reads_come_back_in_booking_order_across_slots_and_sides():
    led = ReadLedger()
    booked = []
    for i in range(300):
        op, io, slot = f"op{i % 17}", (INPUT, OUTPUT)[i % 2], i % 5
        purpose = (Purpose.SCAN, Purpose.PROBE, Purpose.VIEW)[i % 3]
        if (op, io, slot) not in {(b[1], b[2], b[3]) for b in booked}:
            booked.append((purpose, op, io, slot))
        led.book(purpose, op, io, slot)
    assert [(r.purpose, r.op, r.io, r.slot) for r in led.reads()] == booked and led.count == len(booked)
    firsts = list(dict.fromkeys(b[0] for b in booked))
    assert list(led.by_purpose()) == firsts and sum(led.by_purpose().values()) == len(booked)
