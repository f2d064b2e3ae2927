"""Statistics records kept packed (issue 23.3, memory per msprobe call): a RecordStats reads like the dict it
replaces, an msprobe statistics dump gives each tensor its record's values (NaN, Inf, -0.0, absent and text
values as before), equal records share one packed object, the index cache keeps them, a statistics-only pair's
relative differences read as compare_statistics gives them; and a dump.json call costs what the README says."""

from __future__ import annotations

import json
import math
import pickle
import struct
import tracemalloc

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dumptui.core.compare.session import Session
from dumptui.core.compare.verdict import compare_statistics
from dumptui.core.formats import open_dump
from dumptui.core.index import restricted
from dumptui.core.model.recordstats import KEYS, RecordStats, pack
from dumptui.report.reasons import say

STAT = st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True))


def same_float(a: float | None, b: float | None) -> bool:
    """Equal as stored: None as None, NaN as NaN, -0.0 apart from 0.0."""
    if a is None or b is None:
        return a is b
    return struct.pack("<d", a) == struct.pack("<d", b) or (math.isnan(a) and math.isnan(b))


@given(st.tuples(STAT, STAT, STAT, STAT))
def test_a_packed_record_reads_like_its_dict(values):
    as_dict = dict(zip(KEYS, values))
    r = RecordStats(pack(values))
    assert list(r) == list(as_dict) and len(r) == 4 and set(r.keys()) == set(KEYS)
    for k in KEYS:
        assert same_float(r[k], as_dict[k]) and same_float(r.get(k), as_dict[k])
    assert r.get("count") is None and "count" not in r and "max" in r
    with pytest.raises(KeyError):
        r["nan"]
    back = restricted.loads(pickle.dumps(r))  # the index cache's loader takes it
    assert isinstance(back, RecordStats) and back.packed == r.packed
    if not any(v is not None and math.isnan(v) for v in values):
        assert r == as_dict


def test_a_packed_record_has_its_size():
    with pytest.raises(ValueError):
        RecordStats(b"\x00" * 8)


def _rec(mx, mn, mean, norm, n=4):
    out = {"type": "torch.Tensor", "dtype": "torch.float32", "shape": [n]}
    for key, v in (("Max", mx), ("Min", mn), ("Mean", mean), ("Norm", norm)):
        if v is not ...:
            out[key] = v
    return out


def _write(root, calls: dict[str, dict]) -> str:
    d = root / "step0" / "rank0"
    d.mkdir(parents=True)
    doc = {"task": "statistics", "level": "L1", "framework": "pytorch", "dump_data_dir": None, "data": calls}
    # json.dumps writes NaN and Infinity as msprobe does
    (d / "dump.json").write_text(json.dumps(doc))
    return str(root)


def test_an_msprobe_statistics_dump_keeps_every_value_of_its_records(tmp_path):
    odd = [
        _rec(float("nan"), -1.0, 0.5, 2.0),  # NaN kept
        _rec(float("inf"), float("-inf"), -0.0, 3.0),  # Inf kept, -0.0 kept
        _rec(1.0, -1.0, "n/a", ...),  # text and absent: None
        _rec(True, [1], None, 1e308),  # a bool and a list are no numbers
    ]
    calls = {
        "Functional.linear.0.forward": {
            "input_args": [_rec(1.0, -1.0, 0.1, 2.0)],
            "output": [_rec(2.0, -2.0, 0.2, 4.0)],
        },
        # its input is the output above: one record, one packed object
        "Functional.relu.0.forward": {"input_args": [_rec(2.0, -2.0, 0.2, 4.0)], "output": odd},
    }
    dump = open_dump(_write(tmp_path / "a", calls))
    linear, relu = dump.op("Functional.linear.0.forward"), dump.op("Functional.relu.0.forward")
    assert relu.sources[0].ref == linear.key  # the dataflow as before
    assert relu.inputs[0]._extra is linear.outputs[0]._extra  # equal records share their bytes
    want = [
        (math.nan, -1.0, 0.5, 2.0),
        (math.inf, -math.inf, -0.0, 3.0),
        (1.0, -1.0, None, None),
        (None, None, None, 1e308),
    ]
    for slot, values in enumerate(want):
        t = relu.outputs[slot]
        assert not t.has_data and say(t.problem) == "statistics only (no tensor data)"
        assert all(same_float(t.stats[k], v) for k, v in zip(KEYS, values)), (slot, t.stats)
    assert dict(linear.inputs[0].stats) == {"max": 1.0, "min": -1.0, "mean": 0.1, "l2": 2.0}
    # through the index cache: the same values
    again = open_dump(str(tmp_path / "a"), cache=True)
    again = open_dump(str(tmp_path / "a"), cache=True)
    for slot, values in enumerate(want):
        stats = again.op("Functional.relu.0.forward").outputs[slot].stats
        assert all(same_float(stats[k], v) for k, v in zip(KEYS, values))


def test_a_statistics_only_pair_keeps_the_relative_differences_compare_statistics_gives(tmp_path):
    def calls(scale):
        return {
            "Functional.linear.0.forward": {
                "input_args": [_rec(1.0, -1.0, 0.1, 2.0)],
                "output": [_rec(2.0 * scale, -2.0, 0.2 * scale, 4.0), _rec(1.0, -1.0, float("nan"), 4.0)],
            }
        }

    ref, target = open_dump(_write(tmp_path / "r", calls(1.0))), open_dump(_write(tmp_path / "t", calls(1.5)))
    res = Session(ref, target).op_result(Session(ref, target).alignment.kernels[0])
    for slot, out in enumerate(res.outputs):
        r, t = ref.kernels[0].outputs[slot].stats, target.kernels[0].outputs[slot].stats
        _verdict, _reason, rel = compare_statistics(dict(r), dict(t), 2.0**-13, 4)
        assert list(out.stat_rel) == list(rel)
        assert all(same_float(out.stat_rel[k], rel[k]) for k in rel)
    assert res.outputs[0].stat_rel["max"] == pytest.approx(0.5) and res.outputs[0].verdict == "diverged"


def _chain(n: int) -> dict[str, dict]:
    """n calls, each reading the output before it and a weight of its own (the bench's generator's shape)."""
    out = {}
    for i in range(n):
        x, y, w = 1.0 + i * 1e-3, 1.0 + (i + 1) * 1e-3, 0.5 + i * 1e-4
        out[f"Functional.linear.{i}.forward"] = {
            "input_args": [_rec(x, -x, x / 7, x * 3.1, 64), _rec(w, -w, w / 7, w * 3.1, 8)],
            "input_kwargs": {},
            "output": [_rec(y, -y, y / 7, y * 3.1, 64)],
        }
    return out


def test_an_msprobe_call_costs_what_the_readme_says(tmp_path):
    """A statistics call of three tensors: about 1.5 KB kept once indexed, 2.5 KB at the peak of indexing
    (tracemalloc, 3,000 calls; fewer for more calls). Before the records were packed: 2.7 KB and 4.0 KB."""
    n = 3_000
    root = _write(tmp_path / "a", _chain(n))
    tracemalloc.start()
    try:
        dump = open_dump(root)
        kept, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(dump.kernels) == n
    assert kept / n < 1_900, f"{kept / n:.0f} bytes kept a call"
    assert peak / n < 3_200, f"{peak / n:.0f} bytes a call at the peak"
