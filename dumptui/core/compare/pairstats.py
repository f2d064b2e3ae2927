"""The statistics record of a tensor pair (`PairStats`) and of one tensor (`SideStats`), stored compactly.

A session keeps one record per tensor pair compared for as long as it runs. As dataclasses they cost a
dict-backed SideStats per side, a float object per number, an empty dict and list per record. Here all of a record's numbers live in one float64 array: values exactly as given,
counts exactly up to 2**53 (an element count of a tensor is far below; a larger one is refused), a bit word
saying which values are undefined (None) and which flags are set, and the index of the largest difference.
The reasons for undefined values and the notes take room only when there are any (a third of the
dataclasses' size: docs/speed.md, measurements behind the design). Fields read and write as before (`st.cos`, `st.ref.max = ...`); a reason is set with
`set_undefined`. `SideStats` made alone owns small arrays; `PairStats.ref` and `.target` are views into the
record's arrays (assigning a SideStats to them copies its numbers).

A record kept for a long session can be packed (`pack`): its numbers as bytes, each value as float32 where
that gives it back exactly, a +0.0 or a value equal to another field (the target's to the reference's, a count
to n) not stored at all, read through a `_Packing` shared by the records of the same shape. Every value reads
back bit for bit; a write unpacks the record first. About a quarter of the array's size on the 20,000-op demo.
"""

from __future__ import annotations

import struct
from array import array
from collections.abc import Mapping
from math import copysign
from types import MappingProxyType
from typing import Any, overload

import numpy as np

from dumptui.core.compare.metrictable import PAIR_METRICS, SIDE_METRICS, Kind, Undefined, names

# The fields, from the one metric table (metrictable.py); the record's layout follows their order.
SIDE_INTS = names(SIDE_METRICS, Kind.COUNT)
SIDE_FLOATS = names(SIDE_METRICS, Kind.VALUE)
PAIR_INTS = names(PAIR_METRICS, Kind.COUNT)
PAIR_FLAGS = names(PAIR_METRICS, Kind.FLAG)
PAIR_FLOATS = names(PAIR_METRICS, Kind.VALUE)
PAIR_ORDER = tuple(m.name for m in PAIR_METRICS)  # the order of `to_dict`
SIDE_ORDER = SIDE_INTS + SIDE_FLOATS
assert sorted(PAIR_ORDER) == sorted((*PAIR_INTS, *PAIR_FLAGS, *PAIR_FLOATS, "max_abs_index")), (
    "a field in one list only"
)

# One float64 array per record: PairStats' counts, the reference's, the target's; then the values in the same
# order; then the bit word (bit k: value k is None; the flags from bit FLAG_BIT); then max_abs_index (its length,
# -1 for None, and its entries). A SideStats made alone has the same form for one side.
_N_PAIR_I, _N_SIDE_I = len(PAIR_INTS), len(SIDE_INTS)
_N_PAIR_F, _N_SIDE_F = len(PAIR_FLOATS), len(SIDE_FLOATS)
_N_I = _N_PAIR_I + 2 * _N_SIDE_I
_REF_I, _TARGET_I = _N_PAIR_I, _N_PAIR_I + _N_SIDE_I
_REF_F, _TARGET_F = _N_I + _N_PAIR_F, _N_I + _N_PAIR_F + _N_SIDE_F
_WORD = _N_I + _N_PAIR_F + 2 * _N_SIDE_F
_INDEX = _WORD + 1
FLAG_BIT = 40
EXACT = 1 << 53  # counts are kept exactly up to here (a tensor of 2**53 elements would be 8 PB of int8)
_NO_REASONS: Mapping[str, Undefined] = MappingProxyType({})
# The reasons for undefined values as one shared dict per distinct content (never changed in place:
# `set_undefined` makes a new one): a session keeps a record per tensor pair, and the same few reasons
# repeat (8,000 dicts of ~490 bytes on the 20,000-op demo pair). At most this many distinct ones are shared.
_SHARED_REASONS: dict[tuple[tuple[str, Undefined], ...], dict[str, Undefined]] = {}
_SHARED_MAX = 4096


def _shared(undefined: Mapping[str, Undefined] | None) -> dict[str, Undefined] | None:
    if not undefined:
        return None
    key = tuple(undefined.items())
    found = _SHARED_REASONS.get(key)
    if found is None:
        found = dict(undefined)
        if len(_SHARED_REASONS) < _SHARED_MAX:
            found = _SHARED_REASONS.setdefault(key, found)
    return found


def _none_bits(first: int, count: int) -> int:
    """The bit word's bits of `count` values from the array position `first` (bit k: position k - value base)."""
    return ((1 << count) - 1) << first


class _Int:
    """A count: a position of its owner's array (relative to the owner's base), named after the attribute."""

    __slots__ = ("pos",)

    def __set_name__(self, owner: type, name: str) -> None:
        self.pos = owner._INTS.index(name)  # type: ignore[attr-defined]  # set on PairStats and SideStats

    @overload
    def __get__(self, obj: None, owner: type) -> _Int: ...
    @overload
    def __get__(self, obj: object, owner: type | None = None) -> int: ...
    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            return self
        if obj._dec is not None:
            return int(obj._dec.read(obj._v, obj._ib + self.pos))
        return int(obj._v[obj._ib + self.pos])

    def __set__(self, obj: Any, value: int) -> None:
        if not -EXACT <= value <= EXACT:
            raise OverflowError(f"a count of {value} is beyond what a statistics record keeps exactly (2**53)")
        if obj._dec is not None:
            obj._writable()
        obj._v[obj._ib + self.pos] = value


class _Float:
    """A value: a position of its owner's array; None while its bit in the bit word is set."""

    __slots__ = ("pos",)

    def __set_name__(self, owner: type, name: str) -> None:
        self.pos = owner._FLOATS.index(name)  # type: ignore[attr-defined]  # set on PairStats and SideStats

    @overload
    def __get__(self, obj: None, owner: type) -> _Float: ...
    @overload
    def __get__(self, obj: object, owner: type | None = None) -> float | None: ...
    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            return self
        p = obj._fb + self.pos
        dec = obj._dec
        if dec is not None:
            return None if int(dec.read(obj._v, obj._word)) >> (p - obj._bit0) & 1 else dec.read(obj._v, p)
        return None if int(obj._v[obj._word]) >> (p - obj._bit0) & 1 else obj._v[p]

    def __set__(self, obj: Any, value: float | None) -> None:
        if obj._dec is not None:
            obj._writable()
        p = obj._fb + self.pos
        bit = 1 << (p - obj._bit0)
        word = int(obj._v[obj._word])
        if value is None:
            obj._v[obj._word] = word | bit
        else:
            obj._v[p] = value
            obj._v[obj._word] = word & ~bit


class _Flag:
    """A flag: a bit of the bit word, from FLAG_BIT on."""

    __slots__ = ("bit",)

    def __set_name__(self, owner: type, name: str) -> None:
        self.bit = FLAG_BIT + owner._FLAGS.index(name)  # type: ignore[attr-defined]  # set on PairStats and SideStats

    @overload
    def __get__(self, obj: None, owner: type) -> _Flag: ...
    @overload
    def __get__(self, obj: object, owner: type | None = None) -> bool: ...
    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            return self
        word = obj._v[obj._word] if obj._dec is None else obj._dec.read(obj._v, obj._word)
        return bool(int(word) >> self.bit & 1)

    def __set__(self, obj: Any, value: bool) -> None:
        if obj._dec is not None:
            obj._writable()
        word = int(obj._v[obj._word])
        obj._v[obj._word] = word | (1 << self.bit) if value else word & ~(1 << self.bit)


class SideStats:
    """Statistics of one side: counts (all elements, finite, NaN, +Inf, -Inf, zeros) and min, max, mean, std
    and L2 norm over the finite elements (None while there is none)."""

    __slots__ = ("_v", "_ib", "_fb", "_word", "_bit0", "_dec", "_owner")
    __hash__ = None  # type: ignore[assignment]  # mutable, compared by value

    _INTS, _FLOATS = SIDE_INTS, SIDE_FLOATS
    count = _Int()
    finite = _Int()
    nan = _Int()
    pos_inf = _Int()
    neg_inf = _Int()
    zeros = _Int()
    min = _Float()
    max = _Float()
    mean = _Float()
    std = _Float()
    l2 = _Float()

    def __init__(self, **values: Any):
        self._v: array[float] | bytes = array("d", [0.0] * (_N_SIDE_I + _N_SIDE_F) + [float(_none_bits(0, _N_SIDE_F))])
        self._ib, self._fb, self._word, self._bit0 = 0, _N_SIDE_I, _N_SIDE_I + _N_SIDE_F, _N_SIDE_I
        self._dec: _Packing | None = None
        self._owner: PairStats | None = None
        for k, v in values.items():
            if k not in SIDE_ORDER:
                raise TypeError(f"SideStats has no field {k!r}")
            setattr(self, k, v)

    @classmethod
    def _view(cls, owner: PairStats, ib: int, fb: int) -> SideStats:
        """One side of a PairStats, read and written in its array (or read in its packed bytes)."""
        s = cls.__new__(cls)
        s._v, s._ib, s._fb, s._word, s._bit0, s._dec, s._owner = owner._v, ib, fb, _WORD, _N_I, owner._dec, owner
        return s

    def _writable(self) -> None:
        """A view of a packed record: the record unpacked, the view then on its array."""
        assert self._owner is not None, "a side made alone is never packed"
        self._owner._writable()
        self._v, self._dec = self._owner._v, None

    def _copy_into(self, other: SideStats) -> None:
        for k in SIDE_ORDER:
            setattr(other, k, getattr(self, k))

    def copy(self) -> SideStats:
        out = SideStats()
        self._copy_into(out)
        return out

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in SIDE_ORDER}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SideStats) and self.to_dict() == other.to_dict()

    def __repr__(self) -> str:
        return "SideStats(" + ", ".join(f"{k}={v!r}" for k, v in self.to_dict().items()) + ")"

    def __getstate__(self) -> dict[str, Any]:
        return self.to_dict()

    def __setstate__(self, state: dict[str, Any]) -> None:
        SideStats.__init__(self, **state)


class PairStats:
    """Everything printed about one tensor pair. `None` values are undefined; `undefined` says why."""

    __slots__ = ("_v", "_dec", "_undefined", "_notes")
    __hash__ = None  # type: ignore[assignment]  # mutable, compared by value
    _ib, _fb, _word, _bit0 = 0, _N_I, _WORD, _N_I
    # `_v`: the array of numbers (`_dec` None), or the packed bytes read through the shared `_dec` (see `pack`)

    _INTS, _FLOATS, _FLAGS = PAIR_INTS, PAIR_FLOATS, PAIR_FLAGS
    n = _Int()
    bitwise_equal = _Flag()
    values_equal = _Flag()
    compared = _Int()  # elements finite on both sides
    nonfinite_mismatch = _Int()  # positions whose NaN/Inf pattern differs between the sides
    n_diff = _Int()  # elements that differ (same NaN/Inf at a position is no difference)
    n_off = _Int()  # elements outside the element tolerance
    cos = _Float()
    max_abs = _Float()
    max_abs_ref = _Float()
    max_abs_target = _Float()
    mean_abs = _Float()
    mean_abs_trimmed = _Float()  # mean |x-y| without the largest TRIM share (see `noise.robust_error`)
    rms_ref = _Float()  # sqrt(mean(y^2)) over the elements compared: the tensor's scale
    rmse = _Float()
    rel_euclid = _Float()
    max_rel = _Float()
    mean_rel = _Float()
    acc_rel = _Float()
    thousandth = _Float()
    five_thousandths = _Float()
    kl = _Float()

    def __init__(
        self,
        ref: SideStats | None = None,
        target: SideStats | None = None,
        undefined: Mapping[str, Undefined] | None = None,
        notes: list[str] | tuple[str, ...] = (),
        max_abs_index: tuple[int, ...] | None = None,
        **values: Any,
    ):
        self._v: array[float] | bytes = array(
            "d", [0.0] * _WORD + [float(_none_bits(0, _N_PAIR_F + 2 * _N_SIDE_F)), -1.0]
        )
        self._dec: _Packing | None = None
        self._undefined: dict[str, Undefined] | None = _shared(undefined)
        self._notes: tuple[str, ...] | None = tuple(notes) if notes else None
        for k, v in values.items():
            if k not in PAIR_ORDER or k == "max_abs_index":
                raise TypeError(f"PairStats has no field {k!r}")
            setattr(self, k, v)
        if max_abs_index is not None:
            self.max_abs_index = max_abs_index
        if ref is not None:
            self.ref = ref
        if target is not None:
            self.target = target

    @property
    def ref(self) -> SideStats:
        return SideStats._view(self, _REF_I, _REF_F)

    @ref.setter
    def ref(self, side: SideStats) -> None:
        side._copy_into(self.ref)

    @property
    def target(self) -> SideStats:
        return SideStats._view(self, _TARGET_I, _TARGET_F)

    @target.setter
    def target(self, side: SideStats) -> None:
        side._copy_into(self.target)

    @property
    def max_abs_index(self) -> tuple[int, ...] | None:
        """Where the largest |x-y| is (the tensor's index), None when undefined."""
        v = self._values()
        ndim = int(v[_INDEX])
        return None if ndim < 0 else tuple(int(x) for x in v[_INDEX + 1 : _INDEX + 1 + ndim])

    @max_abs_index.setter
    def max_abs_index(self, index: tuple[int, ...] | None) -> None:
        for i in index or ():
            if not 0 <= i <= EXACT:
                raise OverflowError(f"an index of {i} is beyond what a statistics record keeps exactly (2**53)")
        tail = [-1.0] if index is None else [float(len(index)), *map(float, index)]
        self._writable()
        self._v = self._v[:_INDEX] + array("d", tail)  # a new array of the exact size: no spare room kept

    @property
    def undefined(self) -> Mapping[str, Undefined]:
        """Why each undefined value is undefined (read-only here: `set_undefined` adds a reason)."""
        return self._undefined if self._undefined is not None else _NO_REASONS

    def set_undefined(self, field: str, why: Undefined) -> None:
        # a new dict, shared with the records of the same reasons: never changed in place (see _shared)
        self._undefined = _shared({**(self._undefined or {}), field: why})

    @property
    def notes(self) -> tuple[str, ...]:
        return self._notes or ()

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {k: getattr(self, k) for k in PAIR_ORDER}
        d["max_abs_index"] = list(self.max_abs_index) if self.max_abs_index is not None else None
        d["ref"] = self.ref.to_dict()
        d["target"] = self.target.to_dict()
        d["undefined"] = dict(self.undefined)
        d["notes"] = list(self.notes)
        return d

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PairStats) and self.to_dict() == other.to_dict()

    def __repr__(self) -> str:
        return "PairStats(" + ", ".join(f"{k}={v!r}" for k, v in self.to_dict().items()) + ")"

    def copy(self) -> PairStats:
        """An equal record that shares nothing changed in place with this one (the reasons for undefined values
        are shared: never changed in place)."""
        other = PairStats.__new__(PairStats)
        other._v = self._v if self._dec is not None else array("d", self._v)  # packed bytes: never changed
        other._dec = self._dec
        other._undefined = self._undefined  # shared, never changed in place (see _shared)
        other._notes = self._notes
        return other

    def __getstate__(self) -> tuple[Any, ...]:
        return (self._values(), self._undefined, self._notes)  # packed or not, pickled as an array

    def __setstate__(self, state: tuple[Any, ...]) -> None:
        self._v, undefined, self._notes = state
        self._dec = None
        self._undefined = _shared(undefined)

    # ------------------------------------------------------------------ packed form
    def pack(self) -> None:
        """Keep the numbers packed (see the module docstring): for a record kept long and rarely read. Reads
        give the same values bit for bit; a write unpacks it. Left as it is when the shapes of records already
        packed reach _PACKINGS_MAX."""
        if self._dec is None:
            packed = _pack(self._v)  # type: ignore[arg-type]  # unpacked: an array
            if packed is not None:
                self._v, self._dec = packed

    @property
    def packed(self) -> bool:
        return self._dec is not None

    def _values(self) -> array[float]:
        """The numbers as an array (the record's own, or unpacked from its bytes: a new one)."""
        dec = self._dec
        return self._v if dec is None else dec.unpack(self._v)  # type: ignore[return-value,arg-type]

    def _writable(self) -> None:
        if self._dec is not None:
            self._v, self._dec = self._dec.unpack(self._v), None  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------- records in bulk
# Many records at once (smallpairs.py computes thousands of small pairs as rows of one array): the columns of a
# record's array by name, so rows are filled with numpy and each record is made from its row in one copy.
RECORD_COLUMNS = _WORD  # the columns before the bit word


def pair_column(name: str) -> int:
    """The column of a pair count or value."""
    return PAIR_INTS.index(name) if name in PAIR_INTS else _N_I + PAIR_FLOATS.index(name)


def side_column(side: str, name: str) -> int:
    """The column of a side's count or value (`side`: "ref" or "target")."""
    if name in SIDE_INTS:
        return (_REF_I if side == "ref" else _TARGET_I) + SIDE_INTS.index(name)
    return (_REF_F if side == "ref" else _TARGET_F) + SIDE_FLOATS.index(name)


def none_bit(column: int) -> int:
    """The bit word's bit saying the value in `column` is undefined."""
    assert column >= _N_I, "counts are never undefined"
    return column - _N_I


def flag_bit(name: str) -> int:
    return FLAG_BIT + PAIR_FLAGS.index(name)


def records_from_rows(
    rows: np.ndarray,
    words: list[int],
    indexes: list[tuple[int, ...] | None],
    undefined: list[dict[str, Undefined] | None],
) -> list[PairStats]:
    """One PairStats per row of `rows` (float64, RECORD_COLUMNS wide, counts already checked below 2**53),
    with its bit word, max_abs_index and reasons for undefined values."""
    assert rows.dtype == np.float64 and rows.shape[1] == RECORD_COLUMNS
    out = []
    for row, word, index, why in zip(rows, words, indexes, undefined):
        st = PairStats.__new__(PairStats)
        v = array("d")
        v.frombytes(row.tobytes())
        v.append(float(word))
        if index is None:
            v.append(-1.0)
        else:
            v.append(float(len(index)))
            v.extend(map(float, index))
        st._v, st._dec, st._undefined, st._notes = v, None, _shared(why), None
        out.append(st)
    return out


# ---------------------------------------------------------------------------------------- the packed form
# Each position of a record's array is one of: +0.0 (not stored), float32 (4 bytes: it gives the value back
# exactly), float64 (8 bytes), or the same value as an earlier position (not stored): the target's fields as
# the reference's, a count as n. Records of the same tags share one _Packing (a few hundred shapes on the
# 20,000-op demo's 70,386 records); past _PACKINGS_MAX shapes a record stays unpacked.
_ZERO, _F32, _F64, _SAME = 0, 1, 2, 3
_AS_F32 = struct.Struct("<f")
_AS_F64 = struct.Struct("<d")
_PARTNER = [0] * _N_I + [-1] * (_WORD - _N_I)  # counts: as n (position 0); values: none (the word neither)
_PARTNER[0] = -1
for _k in range(_N_SIDE_I):
    _PARTNER[_TARGET_I + _k] = _REF_I + _k  # the target's count as the reference's (which may be as n)
for _k in range(_N_SIDE_F):
    _PARTNER[_TARGET_F + _k] = _REF_F + _k
_PACKINGS: dict[bytes, _Packing] = {}
_PACKINGS_MAX = 4096


class _Packing:
    """How the records of one tag pattern are packed: where each position's value is."""

    __slots__ = ("where", "struct", "stored", "index")

    def __init__(self, tags: bytes):
        fmt, index = "<", []
        self.stored: list[int] = []  # the positions stored, in the order of the bytes
        where: list[Any] = []  # per position: a float (+0.0), or (unpack_from, offset)
        offset = 0
        for p, tag in enumerate(tags):
            if tag == _ZERO:
                where.append(0.0)
                index.append(-1)
            elif tag == _SAME:
                q = _PARTNER[p]
                where.append(where[q])
                index.append(index[q])
            else:
                as_ = _AS_F32 if tag == _F32 else _AS_F64
                where.append((as_.unpack_from, offset))
                index.append(len(self.stored))
                self.stored.append(p)
                fmt += "f" if tag == _F32 else "d"
                offset += as_.size
        self.where = tuple(where)
        self.struct = struct.Struct(fmt)
        self.index = tuple(len(self.stored) if i < 0 else i for i in index)  # -1: the +0.0 appended last

    def read(self, data: bytes, p: int) -> float:
        w = self.where[p]
        return w if w.__class__ is float else w[0](data, w[1])[0]

    def unpack(self, data: bytes) -> array[float]:
        vals = (*self.struct.unpack(data), 0.0)
        return array("d", [vals[i] for i in self.index])


def _same(x: float, y: float) -> bool:
    """The same float64, bit for bit (NaN is never taken for another)."""
    return x == y and (x != 0.0 or copysign(1.0, x) == copysign(1.0, y))


def _pack(v: array[float]) -> tuple[bytes, _Packing] | None:
    as_f32 = array("f", v)  # out of float32's range: inf, which then differs
    tags = bytearray(len(v))
    for p, x in enumerate(v):
        q = _PARTNER[p] if p < _WORD else -1
        if x == 0.0 and copysign(1.0, x) > 0:
            tags[p] = _ZERO
        elif q >= 0 and _same(x, v[q]):
            tags[p] = _SAME
        elif x == as_f32[p]:
            tags[p] = _F32
        else:
            tags[p] = _F64
    key = bytes(tags)
    dec = _PACKINGS.get(key)
    if dec is None:
        if len(_PACKINGS) >= _PACKINGS_MAX:
            return None
        dec = _PACKINGS.setdefault(key, _Packing(key))
    return dec.struct.pack(*[v[p] for p in dec.stored]), dec
