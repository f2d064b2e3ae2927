"""The compact statistics records give back exactly what was put in (every field, None apart from 0.0, the
reasons and notes), in the order and form reports print them, and stay small."""

from __future__ import annotations

import gc
import json
import math
import pickle
import sys

import pytest

from dumptui.core.compare.metrics import compare_arrays
from dumptui.core.compare.metrictable import Undefined
from dumptui.core.compare.pairstats import (
    PAIR_FLAGS,
    PAIR_FLOATS,
    PAIR_INTS,
    SIDE_FLOATS,
    SIDE_INTS,
    PairStats,
    SideStats,
)

# the fields in the order of the dataclass PairStats was (JSON output keeps this order)
DATACLASS_ORDER = [
    "n",
    "bitwise_equal",
    "values_equal",
    "compared",
    "nonfinite_mismatch",
    "n_diff",
    "n_off",
    "cos",
    "max_abs",
    "max_abs_index",
    "max_abs_ref",
    "max_abs_target",
    "mean_abs",
    "mean_abs_trimmed",
    "rms_ref",
    "rmse",
    "rel_euclid",
    "max_rel",
    "mean_rel",
    "acc_rel",
    "thousandth",
    "five_thousandths",
    "kl",
    "ref",
    "target",
    "undefined",
    "notes",
]
SIDE_ORDER = ["count", "finite", "nan", "pos_inf", "neg_inf", "zeros", "min", "max", "mean", "std", "l2"]
AWKWARD_FLOATS = [0.0, -0.0, 1e-308, 5e-324, -1.7976931348623157e308, math.inf, -math.inf, 0.1 + 0.2, 1 / 3]
BIG_INTS = [0, 1, 2**31 + 7, 2**53 - 1, 2**53]


def test_every_field_gives_back_what_was_set():
    st = PairStats()
    assert all(getattr(st, k) is None for k in PAIR_FLOATS)
    assert all(getattr(st, k) == 0 for k in PAIR_INTS) and not any(getattr(st, k) for k in PAIR_FLAGS)
    assert all(getattr(st.ref, k) is None for k in SIDE_FLOATS) and all(getattr(st.target, k) == 0 for k in SIDE_INTS)
    for i, k in enumerate(PAIR_FLOATS):
        v = AWKWARD_FLOATS[i % len(AWKWARD_FLOATS)]
        setattr(st, k, v)
        got = getattr(st, k)
        assert type(got) is float and got == v and math.copysign(1, got) == math.copysign(1, v)
    st.kl = math.nan
    assert math.isnan(st.kl)
    st.kl = None
    assert st.kl is None and st.cos == 0.0  # the neighbours keep theirs
    for i, k in enumerate(PAIR_INTS):
        setattr(st, k, BIG_INTS[i % len(BIG_INTS)])
        assert getattr(st, k) == BIG_INTS[i % len(BIG_INTS)]
    st.bitwise_equal = True
    assert st.bitwise_equal is True and st.values_equal is False
    st.values_equal, st.bitwise_equal = True, False
    assert (st.bitwise_equal, st.values_equal) == (False, True)
    assert st.cos == 0.0 and st.max_abs == -0.0  # the flags live beside the None bits, not on them
    with pytest.raises(OverflowError, match="2\\*\\*53"):
        st.n = 2**53 + 1  # a float64 would not keep it exactly: refused, never rounded
    assert st.max_abs_index is None
    for index in [(), (0,), (3, 2**40, 7, 1, 0, 5)]:
        st.max_abs_index = index
        assert st.max_abs_index == index
    assert st.n_off == BIG_INTS[4 % len(BIG_INTS)] and st.kl is None  # the other fields kept theirs
    st.max_abs_index = None
    assert st.max_abs_index is None


def test_sides_are_views_and_assigning_one_copies_it():
    st = PairStats(n=4)
    side = SideStats(count=4, finite=3, nan=1, min=-2.5, max=7.0, mean=0.5, std=1.25, l2=3.0)
    st.ref = side
    side.max = 99.0  # the record took a copy
    assert st.ref.max == 7.0 and st.ref.to_dict() == {**side.to_dict(), "max": 7.0}
    st.ref.max = 8.0
    st.target.nan = 2
    assert st.ref.max == 8.0 and st.target.nan == 2 and st.ref.nan == 1 and st.target.min is None
    st.target = st.ref
    assert st.target == st.ref and st.target is not st.ref
    assert st.to_dict()["target"] == {**side.to_dict(), "max": 8.0}
    with pytest.raises(TypeError, match="no field"):
        SideStats(maximum=1.0)
    with pytest.raises(TypeError, match="no field"):
        PairStats(cosine=1.0)


def test_to_dict_is_the_dataclass_form():
    st = PairStats(n=6, bitwise_equal=False, compared=6, cos=0.5, max_abs=2.0, max_abs_index=(1, 2), kl=None)
    st.ref = SideStats(count=6, finite=6, min=1.0)
    st.set_undefined("kl", Undefined.REF_CONSTANT)
    d = st.to_dict()
    assert list(d) == DATACLASS_ORDER and list(d["ref"]) == SIDE_ORDER and list(d["target"]) == SIDE_ORDER
    assert d["max_abs_index"] == [1, 2] and d["undefined"] == {"kl": Undefined.REF_CONSTANT} and d["notes"] == []
    assert d["ref"]["min"] == 1.0 and d["target"]["min"] is None and d["kl"] is None and d["cos"] == 0.5
    assert json.loads(json.dumps(d)) == d
    assert PairStats(notes=["a"]).to_dict()["notes"] == ["a"]


def test_reasons_are_added_through_set_undefined_only():
    st = PairStats()
    assert dict(st.undefined) == {}
    with pytest.raises(TypeError):
        st.undefined["cos"] = "x"  # type: ignore[index]
    st.set_undefined("cos", Undefined.REF_ZEROS)
    assert st.undefined["cos"] is Undefined.REF_ZEROS and st.undefined.get("kl") is None


def test_records_pickle_and_compare_by_value():
    st = compare_arrays(
        __import__("numpy").arange(12, dtype="float32").reshape(3, 4), __import__("numpy").ones((3, 4), "float32")
    )
    back = pickle.loads(pickle.dumps(st))
    assert back == st and back.to_dict() == st.to_dict() and back is not st
    back.n_off += 1
    assert back != st
    assert st != "something else"  # noqa: PLR1714 (two claims: a changed copy differs, a foreign type is unequal)
    side = pickle.loads(pickle.dumps(st.ref))
    assert side == st.ref and type(side) is SideStats
    assert repr(st).startswith("PairStats(n=12, bitwise_equal=False")


def _deep_size(obj: object) -> int:
    """Bytes of an object and of everything only it refers to (shared constants and types excluded)."""
    seen: set[int] = set()
    total = 0
    stack = [obj]
    while stack:
        o = stack.pop()
        if id(o) in seen or isinstance(o, (type, str)) or o is None or isinstance(o, bool):
            continue
        seen.add(id(o))
        total += sys.getsizeof(o)
        stack += gc.get_referents(o)
    return total


def test_a_record_takes_about_half_a_kilobyte():
    import numpy as np

    st = compare_arrays(np.linspace(1, 2, 1000).reshape(10, 100), np.linspace(1, 2.01, 1000).reshape(10, 100))
    assert st.cos is not None and st.ref.max == 2.0 and st.max_abs_index == (9, 99)
    assert _deep_size(st) < 560  # a dataclass record with its two SideStats took ~1,500


def test_records_share_their_reasons_for_undefined_values_and_never_change_anothers():
    a, b = PairStats(), PairStats()
    for st in (a, b):
        st.set_undefined("cos", Undefined.REF_ZEROS)
    assert a._undefined is b._undefined  # one dict for the same reasons
    back = pickle.loads(pickle.dumps(a))  # as a worker's record arrives
    assert back._undefined is a._undefined and back.undefined == {"cos": Undefined.REF_ZEROS}
    b.set_undefined("kl", Undefined.KL_NOT_ASKED)
    assert dict(a.undefined) == {"cos": Undefined.REF_ZEROS}  # the other records keep theirs
    assert dict(b.undefined) == {"cos": Undefined.REF_ZEROS, "kl": Undefined.KL_NOT_ASKED}
    c = b.copy()
    c.set_undefined("rel_euclid", Undefined.REF_ZEROS)
    assert "rel_euclid" not in b.undefined and c.undefined["rel_euclid"] == Undefined.REF_ZEROS


def _awkward_record() -> PairStats:
    st = PairStats(n=7, compared=7, n_diff=3, bitwise_equal=True, max_abs_index=(2, 2**40, 0))
    for i, k in enumerate(PAIR_FLOATS):
        setattr(st, k, [*AWKWARD_FLOATS, math.nan, 0.5, 1e300][i % (len(AWKWARD_FLOATS) + 3)])
    st.kl = None
    st.ref = SideStats(count=7, finite=7, zeros=2, min=-0.0, max=3.5, mean=0.1 + 0.2, std=None, l2=1e-308)
    st.target = st.ref
    st.target.l2 = 5e-324
    st.set_undefined("kl", Undefined.KL_NOT_ASKED)
    return st


def test_a_packed_record_reads_back_bit_for_bit_and_unpacks_on_a_write():
    import numpy as np

    records = [
        _awkward_record(),
        PairStats(),
        compare_arrays(np.linspace(1, 2, 1000).reshape(10, 100), np.linspace(1, 2.01, 1000).reshape(10, 100)),
        compare_arrays(np.ones(5, "float32"), np.ones(5, "float32")),
    ]
    for st in records:
        before, raw = repr(st.to_dict()), bytes(st._v)
        twin = st.copy()
        st.pack()
        assert st.packed and sys.getsizeof(st._v) < sys.getsizeof(twin._v)
        assert repr(st.to_dict()) == before and bytes(st._values()) == raw  # every value, -0.0 and NaN too
        same = repr(twin.to_dict())  # (repr: NaN is never == NaN)
        assert repr(st.copy().to_dict()) == same and st.copy().packed
        back = pickle.loads(pickle.dumps(st))  # pickled as an unpacked record
        assert not back.packed and repr(back.to_dict()) == same and pickle.dumps(st) == pickle.dumps(twin)
        side = st.target
        side.max = 42.0  # a write through a side's view unpacks the record first
        assert not st.packed and st.target.max == 42.0 and st.ref.to_dict() == twin.ref.to_dict()
        st.pack()
        st.n_off = 5
        assert not st.packed and st.n_off == 5 and st.n == twin.n
        st.pack()
        st.max_abs_index = (1,)
        assert not st.packed and st.max_abs_index == (1,) and repr(st.mean_abs) == repr(twin.mean_abs)
    a = _awkward_record()
    a.pack()
    assert a.ref.min == 0.0 and math.copysign(1, a.ref.min) == -1.0
    assert any(isinstance(v, float) and math.isnan(v) for v in a.to_dict().values())
    assert a.target.l2 == 5e-324 and a.ref.std is None and a.kl is None and a.bitwise_equal is True


def test_records_of_one_shape_share_their_packing():
    import numpy as np

    a = compare_arrays(np.arange(1, 7, dtype="float32"), np.arange(1, 7, dtype="float32"))
    b = compare_arrays(np.arange(7, 13, dtype="float32"), np.arange(7, 13, dtype="float32"))
    a.pack()
    b.pack()
    assert a._dec is b._dec and a._v != b._v
    assert _deep_size(b) - _deep_size(b._dec) < 200  # the array form: ~500 bytes


def test_past_the_shapes_shared_a_record_stays_unpacked(monkeypatch):
    from dumptui.core.compare import pairstats

    monkeypatch.setattr(pairstats, "_PACKINGS", {})
    monkeypatch.setattr(pairstats, "_PACKINGS_MAX", 1)
    a, b = PairStats(n=3), _awkward_record()
    a.pack()
    b.pack()
    assert a.packed and not b.packed and repr(b.to_dict()) == repr(_awkward_record().to_dict())
