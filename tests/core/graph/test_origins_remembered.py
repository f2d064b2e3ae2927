"""An alignment that remembers at most so many inputs' origins gives the same origins and wirings as one that
remembers them all, and never holds more."""

from __future__ import annotations

from dumptui.core.formats import open_dump
from dumptui.core.graph.align import align
from dumptui.core.graph.dataflow import origins, wiring


def _plain(found):
    return [(o.kind, o.pair.index if o.pair else None, o.out_slot, o.op.key if o.op else None) for o in found]


def test_a_bounded_memory_of_origins_answers_the_same(demo_pair):
    ref, target = open_dump(demo_pair.ref), open_dump(demo_pair.target)
    every, bounded = align(ref, target), align(ref, target)
    bounded.remember_at_most = 5
    asks = [(i, slot) for i, p in enumerate(every.pairs) if p.paired for slot in sorted(p.ref.inputs)]
    assert len(asks) > 50
    for _round in range(2):  # the second round: remembered by one, found again by the other
        for i, slot in asks:
            a, b = every.pairs[i], bounded.pairs[i]
            assert _plain(origins(ref, target, every, a, slot)) == _plain(origins(ref, target, bounded, b, slot))
            slots = sorted(a.ref.inputs) if a.ref is not None else []
            assert wiring(ref, target, every, a, slots) == wiring(ref, target, bounded, b, slots)
            assert len(bounded.origins_known) <= 5 and len(bounded.wiring_known) <= 5
    assert len(every.origins_known) == len(asks)
    assert any(r.pair is not None for i, slot in asks for r in origins(ref, target, bounded, bounded.pairs[i], slot))
