"""How two ops were paired (`OpPair.how`): a code; report/reasons.py words it for every view."""

from __future__ import annotations

from dumptui.core.model.vocab import Word


class PairedBy(Word):
    EXACT = "exact"  # the same name on both sides
    NORMALISED = "normalised"  # the same name once separators and case are normalised
    COUNTER = "counter"  # same scope and type, the -opN counter differs
    POSITION = "position"  # the same position in execution order, same type and shapes
    RENAMED = "renamed"  # renamed at the same position and scope, same shapes and input values
    MAPPED = "mapped"  # a line of the user's map file
    DATAFLOW = "dataflow"  # the same paired producers and consumers
    DATAFLOW_RETYPED = "dataflow-retyped"  # the same paired producers and consumers, another op type
    GROUPED = "grouped"  # a group of ops between the same paired neighbours (a fused kernel)
    FUSED = "fused"  # several reference ops, one target op
    ONLY_REF = "only-ref"  # no partner: in the reference only
    ONLY_TARGET = "only-target"
