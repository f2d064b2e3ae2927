"""`SlotMap`: a small read-only mapping of slot numbers to values, for an op's tensors and input sources.

An index keeps three such mappings per op for the whole session, and a dict of one to five entries has room for
eight (docs/speed.md, measurements behind the design). A SlotMap keeps
the values in a tuple and the slots in another only when they are not 0, 1, 2... in order (the common case;
slot tuples are shared between maps); an empty one is a single shared object; one of slot 0 alone (most ops'
outputs) keeps its value without a tuple (`_OneSlot`: 3.5 MB of the 20,000-op demo pair's indexes). It reads
like the dict it was made from, in the same order; it cannot be changed (readers fill dicts, `Op.freeze` makes
SlotMaps).
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
        if len(items) == 1 and 0 in items and type(next(iter(items))) is int:
            return _one(items[0])
        return cls(items) if items else EMPTY

    @classmethod
    def from_parts(cls, slots: tuple[int, ...] | None, values: tuple[V, ...]) -> SlotMap[V]:
        """The map of `values` at `slots` (None: 0, 1, ...), as a SlotMap keeps them (for a fast load)."""
        if not values:
            empty: SlotMap[V] = EMPTY
            return empty
        if slots is not None and slots == tuple(range(len(slots))):
            slots = None
        if slots is None and len(values) == 1:
            return _one(values[0])
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
    if _dense(a) and _dense(b):
        return range(max(len(a), len(b)))
    return sorted(set(a) | set(b))


def _dense(m: Mapping[int, Any]) -> bool:
    """A SlotMap of slots 0, 1, ... in order."""
    t = type(m)
    return t is _OneSlot or (t is SlotMap and m._slots is None)  # type: ignore[attr-defined]  # a SlotMap here


class _OneSlot(SlotMap[V]):
    """A SlotMap of slot 0 alone: `_values` is the value itself, not a tuple of one."""

    __slots__ = ()

    def __getitem__(self, slot: int) -> V:
        if slot == 0:  # equality, as a dict finds 0.0 or False for the slot 0
            return self._values  # type: ignore[return-value]  # the value itself here
        raise KeyError(slot)

    def get(self, slot: int, default: Any = None) -> Any:
        return self._values if slot == 0 else default

    def __contains__(self, slot: object) -> bool:
        return bool(slot == 0)

    def __iter__(self) -> Iterator[int]:
        return iter(_SLOT_0)

    def __len__(self) -> int:
        return 1

    def values(self) -> tuple[V, ...]:  # type: ignore[override]  # as SlotMap's
        return (self._values,)  # type: ignore[return-value]  # a tuple of the one value

    def __reduce__(self) -> tuple[Any, ...]:
        return (slot_map, (None, (self._values,)))  # pickled as any SlotMap of slot 0 alone

    def __repr__(self) -> str:
        return f"SlotMap({{0: {self._values!r}}})"


_SLOT_0 = (0,)


def _one(value: V) -> SlotMap[V]:
    m: _OneSlot[V] = _OneSlot.__new__(_OneSlot)
    m._slots, m._values = None, value  # type: ignore[assignment]  # the value itself (see _OneSlot)
    return m


EMPTY: Any = SlotMap()  # the empty read-only mapping (of slots, or of anything: it has no keys)


def slot_map(slots: tuple[int, ...] | None, values: tuple[Any, ...]) -> SlotMap[Any]:
    """`SlotMap.from_parts`, as a module function (how a SlotMap is pickled)."""
    return SlotMap.from_parts(slots, values)
