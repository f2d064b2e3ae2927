"""`RecordStats`: four statistics of a tensor (max, min, mean, L2 norm), packed: a statistics-only record's
(msprobe's Max, Min, Mean and Norm), or the relative differences a statistics-only pair is judged on.

A million-call msprobe dump holds three such records a call for as long as it is open: as dicts of four Python
floats they cost the dict, its keys table and the floats the JSON parser made; packed they are one 33-byte
`bytes` (a presence mask, then four doubles: NaN, Inf and -0.0 kept as read), which
a `TensorRef` keeps as it is and equal records share. `RecordStats` reads one like the dict it replaces: the
keys `max`, `min`, `mean`, `l2` always, each a float or None (absent or not a number in the file).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Mapping
from typing import Any

KEYS = ("max", "min", "mean", "l2")
_INDEX = {k: i for i, k in enumerate(KEYS)}
_FORMAT = struct.Struct("<B4d")  # bit i of the mask: KEYS[i] is present


def pack(values: tuple[float | None, float | None, float | None, float | None]) -> bytes:
    """The packed form of (max, min, mean, l2), each a float or None."""
    mask = 0
    for i, v in enumerate(values):
        if v is not None:
            mask |= 1 << i
    return _FORMAT.pack(mask, *(0.0 if v is None else v for v in values))


class RecordStats(Mapping[str, "float | None"]):
    """A read-only view of a packed record (see the module docstring)."""

    __slots__ = ("packed",)

    packed: bytes

    def __init__(self, packed: bytes):
        if len(packed) != _FORMAT.size:
            raise ValueError(f"a packed statistics record is {_FORMAT.size} bytes, not {len(packed)}")
        self.packed = packed

    def values_in_order(self) -> tuple[float | None, ...]:
        mask, *values = _FORMAT.unpack(self.packed)
        return tuple(v if mask >> i & 1 else None for i, v in enumerate(values))

    def __getitem__(self, key: str) -> float | None:
        i = _INDEX[key]  # KeyError for any other key, as the dict
        mask, *values = _FORMAT.unpack(self.packed)
        return values[i] if mask >> i & 1 else None

    def __iter__(self) -> Iterator[str]:
        return iter(KEYS)

    def __len__(self) -> int:
        return len(KEYS)

    def __repr__(self) -> str:
        return "RecordStats(" + repr(dict(zip(KEYS, self.values_in_order()))) + ")"

    def __reduce__(self) -> tuple[Any, ...]:
        return (record_stats, (self.packed,))  # a module function: the index cache allows it by name


def record_stats(packed: bytes) -> RecordStats:
    """`RecordStats(packed)`, as a module function (how one is pickled)."""
    if not isinstance(packed, bytes):
        raise ValueError("a packed statistics record is bytes")
    return RecordStats(packed)


def as_packed(stats: Mapping[str, Any] | None) -> bytes | None:
    """The packed bytes of `stats` when it is a RecordStats (what a TensorRef keeps instead), else None."""
    return stats.packed if isinstance(stats, RecordStats) else None
