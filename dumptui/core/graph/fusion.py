"""Fused ops: one target op that stands for several reference ops.

GE fuses framework ops for Ascend (Conv2D + BiasAdd + ReLU become one op) and names the ops it replaced in
`_datadump_original_op_names` (the reader puts them in `Op.fused`). The reference dump still has each op. To
compare them, the reference ops of a group become one group op: the inputs of the first (in execution order),
the outputs of the last, its key the last one's (so the graph's edges still reach it), its name the members'
leaf names joined with `+` in their common scope (so the op tree shows the group), `fused` listing the members.
"""

from __future__ import annotations

import re

from dumptui.core.graph.pairedby import PairedBy
from dumptui.core.model.dump import KERNEL, NameSource, Op

FUSED = PairedBy.FUSED
_SEPARATORS = re.compile(r"[/\\. _]+")


def _normalised(name: str) -> str:
    """align.normalise's spelling-insensitive name (align imports this module, so it cannot be imported here)."""
    return _SEPARATORS.sub("_", name).lower()


def _index(ops: list[Op]) -> tuple[dict[str, Op], dict[str, Op]]:
    """Ref kernels by name, and by spelling-insensitive name where that is unique."""
    by_name = {op.name: op for op in ops}
    by_norm: dict[str, list[Op]] = {}
    for op in ops:
        by_norm.setdefault(_normalised(op.name), []).append(op)
    return by_name, {k: v[0] for k, v in by_norm.items() if len(v) == 1}


def group_name(members: list[Op]) -> str:
    """The members' leaf names joined with `+`, in the scope they share (`scope/BiasAdd-op0+ReLU-op0`), so that
    the op tree, which nests by `/`, shows the group as one op where its members are."""
    scopes = [m.scope.split("/") if m.scope else [] for m in members]
    common: list[str] = []
    for parts in zip(*scopes):
        if len(set(parts)) > 1:
            break
        common.append(parts[0])
    leaves = "+".join(m.leaf for m in members)
    return "/".join(common + [leaves])


def group_op(members: list[Op]) -> Op:
    """One op standing for `members` (in execution order): the first one's inputs, the last one's outputs."""
    first, last = members[0], members[-1]
    return Op(
        name=group_name(members),
        op_type="+".join(m.op_type for m in members),
        kind=KERNEL,
        graph=last.graph,
        file_name=last.file_name,
        inputs=dict(first.inputs),
        outputs=dict(last.outputs),
        order=last.order,
        timestamp=first.timestamp,
        name_source=NameSource.FUSED_GROUP,
        sources=dict(first.sources),
        key=last.key,
        call=last.call,
        fused=tuple(m.name for m in members),
    )


def fused_groups(ref_ops: list[Op], target_ops: list[Op]) -> tuple[list[Op], list[tuple[Op, Op]]]:
    """The reference ops with each fused group replaced by its group op, and the (ref op, target op) pairs the
    fused target ops make. A target op whose original names name one reference op pairs with that op."""
    fused_targets = [t for t in target_ops if t.kind == KERNEL and t.fused]
    if not fused_targets:
        return ref_ops, []
    by_name, by_norm = _index([op for op in ref_ops if op.kind == KERNEL])
    taken: set[int] = set()
    replaced: dict[int, Op | None] = {}  # id(ref op) -> its group op (at the last member) or None (absorbed)
    pairs: list[tuple[Op, Op]] = []
    for target in fused_targets:
        found = [by_name.get(n) or by_norm.get(_normalised(n)) for n in target.fused]
        members = sorted(
            {id(m): m for m in found if m is not None and id(m) not in taken}.values(), key=lambda m: m.order
        )
        if not members:
            continue
        taken.update(id(m) for m in members)
        if len(members) == 1:
            pairs.append((members[0], target))
            continue
        group = group_op(members)
        for m in members[:-1]:
            replaced[id(m)] = None
        replaced[id(members[-1])] = group
        pairs.append((group, target))
    ops = []
    for op in ref_ops:
        kept = replaced.get(id(op), op)
        if kept is not None:
            ops.append(kept)
    return ops, pairs
