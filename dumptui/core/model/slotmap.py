"""`SlotMap`: a small read-only mapping of slot numbers to values, for an op's tensors and input sources.

An index keeps three such mappings per op for the whole session, and a dict of one to five entries has room for
eight (docs/speed.md, measurements behind the design). A SlotMap keeps
the values in a tuple and the slots in another only when they are not 0, 1, 2... in order (the common case;
slot tuples are shared between maps); an empty one is a single shared object. It reads like the dict it was
made from, in the same order; it cannot be changed (readers fill dicts, `Op.freeze` makes SlotMaps).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Generic, TypeVar

V = TypeVar("V")

_SHARED_SLOTS: dict[tuple[Any, ...], tuple[Any, ...]] = {}


class SlotMap(Mapping[int, V], Generic[V]):
    __slots__ = ("_slots", "_values")

    _slots: tuple[int, ...] | None  # None: the slots are 0, 1, ... len - 1 in this order
    _values: tuple[V, ...]

    def __init__(self, items: Mapping[int, V] | None = None):
        slots = tuple(items) if items else ()
        self._values = tuple(items.values()) if items else ()
        if slots == tuple(range(len(slots))):
            self._slots = None
        else:
            self._slots = _SHARED_SLOTS.setdefault(slots, slots)

    @classmethod
    def of(cls, items: Mapping[int, V]) -> SlotMap[V]:
        """`items` frozen (a SlotMap is returned as it is; every empty mapping is the same object)."""
        if isinstance(items, SlotMap):
            return items
        return cls(items) if items else EMPTY

    @classmethod
    def from_parts(cls, slots: tuple[int, ...] | None, values: tuple[V, ...]) -> SlotMap[V]:
        """The map of `values` at `slots` (None: 0, 1, ...), as a SlotMap keeps them (for a fast load)."""
        if not values:
            empty: SlotMap[V] = EMPTY
            return empty
        if slots is not None and slots == tuple(range(len(slots))):
            slots = None
        m: SlotMap[V] = cls.__new__(cls)
        m._slots = slots if slots is None else _SHARED_SLOTS.setdefault(slots, slots)
        m._values = values
        return m

    def __reduce__(self) -> tuple[Any, ...]:
        return (slot_map, (self._slots, self._values))  # a module function: the index cache allows it by name

    def __getitem__(self, slot: int) -> V:
        values = self._values
        if self._slots is None:
            if type(slot) is int and 0 <= slot < len(values):
                return values[slot]
            slots: Sequence[int] = range(len(values))
        else:
            slots = self._slots
        try:
            return values[slots.index(slot)]  # equality, as a dict finds 1.0 or True for the slot 1
        except ValueError:
            raise KeyError(slot) from None

    def get(self, slot: int, default: Any = None) -> Any:
        values = self._values
        if self._slots is None and type(slot) is int:  # the common case, without raising (820,000 calls a scan)
            return values[slot] if 0 <= slot < len(values) else default
        try:
            return self[slot]
        except KeyError:
            return default

    def __contains__(self, slot: object) -> bool:
        try:
            self[slot]  # type: ignore[index]  # any object may be asked for; a non-int is simply not found
        except KeyError:
            return False
        return True

    def __iter__(self) -> Iterator[int]:
        return iter(self._slots if self._slots is not None else range(len(self._values)))

    def __len__(self) -> int:
        return len(self._values)

    def values(self) -> tuple[V, ...]:  # type: ignore[override]  # what a ValuesView gives, without a lookup each
        return self._values

    def __repr__(self) -> str:
        return "SlotMap(" + repr(dict(zip(self, self._values))) + ")"


def slots_of_both(a: Mapping[int, Any], b: Mapping[int, Any]) -> Sequence[int]:
    """The slots of `a` and of `b`, ascending (a tensor pair per slot: Session.tensor_pairs, ~18,000 calls a
    scan of 3,000 ops): two SlotMaps of slots 0, 1, ... give a range without building sets."""
    if type(a) is SlotMap and type(b) is SlotMap and a._slots is None and b._slots is None:
        return range(max(len(a._values), len(b._values)))
    return sorted(set(a) | set(b))


EMPTY: Any = SlotMap()  # the empty read-only mapping (of slots, or of anything: it has no keys)


def slot_map(slots: tuple[int, ...] | None, values: tuple[Any, ...]) -> SlotMap[Any]:
    """`SlotMap.from_parts`, as a module function (how a SlotMap is pickled)."""
    return SlotMap.from_parts(slots, values)
