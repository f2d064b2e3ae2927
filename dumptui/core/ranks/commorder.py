"""Ordering ranks against each other by their communication ops: which rank's divergence came first.

Each rank has its own execution order; nothing orders an op of rank 0 against an op of rank 1, except the
communication between them. A collective (AllReduce, AllGather, ReduceScatter, Broadcast, AllToAll...) is
run by every rank of its group, the k-th one of a group on one rank with the k-th one on the others: every
rank's output of it depends on every rank's input. A Send from rank A to rank B, the k-th with its tag, is
the k-th matching Receive on B: B's output depends on A's input.

So a divergence on rank A at position p reaches rank B at the first communication op of B that takes, directly
or through other ranks, an input of A from after p. A rank's divergence is *explained* by another rank when
that rank's divergence reaches it at or before its own first root; the ranks whose divergence nothing
explains diverged first. Two of them are concurrent: no communication orders them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from dumptui.core.model.reason import Reason, Why, because
from dumptui.core.model.vocab import Word

COLLECTIVES = {
    "allreduce",
    "allgather",
    "reducescatter",
    "broadcast",
    "alltoall",
    "alltoallv",
    "reduce",
    "gather",
    "scatter",
    "barrier",
    "allgatherv",
    "reducescatterv",
    "neighborexchange",
}
SENDS = {"send", "isend"}
RECEIVES = {"receive", "recv", "irecv"}
_PREFIX = re.compile(r"^(hcom|hccl|distributed\.|torch\.distributed\.|mint\.distributed\.)", re.IGNORECASE)
_INT = re.compile(r"^\s*(?:[A-Za-z]+\d*\(\s*)?(-?\d+)\s*\)?\s*$")  # 3, I64(3), Int64(3)


class CommKind(Word):
    """The kind of communication an op does."""

    COLLECTIVE = "collective"
    SEND = "send"
    RECEIVE = "receive"


class OpLike(Protocol):
    @property
    def op_type(self) -> str: ...

    @property
    def name(self) -> str: ...

    @property
    def attrs(self) -> Mapping[str, str]: ...


def comm_kind(op_type: str) -> CommKind | None:
    """The kind of communication of an op type: collective, send, receive, or None (none)."""
    t = _PREFIX.sub("", op_type).replace("_", "").lower()
    if t in COLLECTIVES:
        return CommKind.COLLECTIVE
    if t in SENDS:
        return CommKind.SEND
    if t in RECEIVES:
        return CommKind.RECEIVE
    return None


def _attr_int(attrs: Mapping[str, str], *names: str) -> int | None:
    for name in names:
        text = attrs.get(name)
        if text is not None:
            m = _INT.match(str(text))
            if m:
                return int(m.group(1))
    return None


@dataclass(frozen=True)
class CommEvent:
    """One communication op of one rank: where it ran, and the key its counterparts on other ranks share."""

    rank: int
    position: int  # in the rank's execution order
    kind: CommKind
    key: tuple[object, ...]
    name: str


@dataclass
class RankEvents:
    """The communication ops of every rank, and what could not be matched (said in the report)."""

    events: dict[int, list[CommEvent]] = field(default_factory=dict)
    unmatched: int = 0  # Send/Receive ops that name no peer rank

    def add(self, rank: int, events: list[CommEvent], unmatched: int = 0) -> None:
        self.events[rank] = events
        self.unmatched += unmatched

    @property
    def notes(self) -> list[Reason]:
        if not self.unmatched:
            return []
        return [because(Why.COMM_NO_PEER, self.unmatched)]


def rank_events(rank: int, ops: Sequence[OpLike]) -> tuple[list[CommEvent], int]:
    """The communication ops of one rank (`ops` in its execution order), keyed for matching across ranks,
    and how many Send/Receive ops name no peer (they cannot be matched)."""
    seen: dict[tuple[object, ...], int] = {}
    events = []
    unmatched = 0
    for pos, op in enumerate(ops):
        kind = comm_kind(op.op_type)
        if kind is None:
            continue
        attrs = op.attrs
        tag = _attr_int(attrs, "sr_tag", "tag")
        peer = None
        if kind == CommKind.COLLECTIVE:
            base: tuple[object, ...] = (_PREFIX.sub("", op.op_type).lower(), str(attrs.get("group", "")))
        elif kind == CommKind.SEND:
            peer = _attr_int(attrs, "dest_rank", "dst", "dest")
            base = ("p2p", rank, peer, tag)
        else:
            peer = _attr_int(attrs, "src_rank", "src", "source")
            base = ("p2p", peer, rank, tag)
        if kind != CommKind.COLLECTIVE and peer is None:
            unmatched += 1
            continue
        k = seen.get(base, 0)
        seen[base] = k + 1
        events.append(CommEvent(rank, pos, kind, base + (k,), op.name))
    return events, unmatched


def comm_events(ops_by_rank: Mapping[int, Sequence[OpLike]]) -> RankEvents:
    """The communication ops of each rank (ops in its execution order)."""
    out = RankEvents()
    for rank, ops in ops_by_rank.items():
        out.add(rank, *rank_events(rank, ops))
    return out


@dataclass(frozen=True)
class Reach:
    """Where a divergence reaches a rank: the first position there, and the communication op it came by."""

    position: float  # (x.5 when the divergence is in an op's inputs: there before the op at x runs)
    via: str  # the op name on the reached rank ("" on the rank it started on)
    from_rank: int


def reach(events: RankEvents, rank: int, position: float) -> dict[int, Reach]:
    """Every rank a divergence born on `rank` at `position` reaches, and where first."""
    groups: dict[tuple[object, ...], list[CommEvent]] = {}
    for evs in events.events.values():
        for e in evs:
            groups.setdefault(e.key, []).append(e)
    tainted = {rank: Reach(position, "", rank)}
    changed = True
    while changed:
        changed = False
        for members in groups.values():
            sources = [e for e in members if e.rank in tainted and tainted[e.rank].position < e.position]
            if not sources:
                continue
            if members[0].kind == CommKind.COLLECTIVE:
                targets = members
            else:  # point to point: only the receiver is reached, only when the sender carried it
                targets = (
                    [e for e in members if e.kind == CommKind.RECEIVE]
                    if any(e.kind == CommKind.SEND for e in sources)
                    else []
                )
            for e in targets:
                old = tainted.get(e.rank)
                if old is None or e.position < old.position:
                    tainted[e.rank] = Reach(e.position, e.name, sources[0].rank)
                    changed = True
    return tainted


@dataclass
class CrossRank:
    """Which ranks diverged first, and how every other rank's divergence is explained."""

    first: list[int]  # ranks whose divergence nothing explains, in rank order (several: concurrent)
    explained: dict[int, Reach]  # rank -> how the divergence of a first rank reached it
    notes: list[Reason] = field(default_factory=list)  # report/reasons.py words them

    @property
    def concurrent(self) -> bool:
        return len(self.first) > 1


def first_divergence(events: RankEvents, roots: Mapping[int, float]) -> CrossRank:
    """`roots`: rank -> position of its first root (ranks without a divergence left out), less a half when
    the divergence is in the op's inputs (there before the op runs)."""
    reaches = {r: reach(events, r, pos) for r, pos in roots.items()}
    explained: dict[int, Reach] = {}
    for r, pos in roots.items():
        by = [reaches[o][r] for o in sorted(roots) if o != r and r in reaches[o] and reaches[o][r].position <= pos]
        if by:
            explained[r] = by[0]
    first = sorted(r for r in roots if r not in explained)
    return CrossRank(first, explained, list(events.notes))
