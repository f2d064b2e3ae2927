"""What caused a root, decided once: which kind of cause (a definition, a weight, an input, the data) and which
fact proves it (the replay, the user's cosine, the gain, a precondition...). report/cause.py words the answer
and decides nothing: the strongest proven cause comes first (a replay-proven precision error before "its
definition differs" of a vendor kernel, which alone proves nothing).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from dumptui.core.model.vocab import Word
from dumptui.core.search.bisect.types import CheckKind, CheckStatus, InputCheck, Root, RootKind
from dumptui.core.search.localerror import DiffKind, LocalRule


class CauseKind(Word):
    """What to change: the op's definition, a weight, an input of the network, or the op's data path."""

    CONSTANT = "constant"
    WEIGHT = "weight"
    INPUT = "input"
    DATA = "data"


class Basis(Word):
    """The fact a root's cause rests on (each worded by report/cause.py from the root's own numbers)."""

    DEFINITION = "definition"  # a constant, attribute or op type differs (and is not a vendor kernel of it)
    PRECONDITION = "precondition"  # the preconditions found the weight or input that differs (their reason)
    WEIGHTS_DIFFER = "weights-differ"  # weights it reads differ beyond fp16/bf16 rounding
    WEIGHTS_DIFFER_OP_CORRECT = "weights-differ-op-correct"  # ...and the op recomputed on them matches
    INPUTS_DIFFER = "inputs-differ"  # inputs no op computes differ
    ENGINE_REASON = "engine-reason"  # no local error to word (wired otherwise, not compared): the search's reason
    SELECTION_BROKEN = "selection-broken"  # its selection does not follow from its own inputs
    REPLAY_BROKEN = "replay-broken"  # the op recomputed on its own inputs disagrees with the target's output
    RULE = "rule"  # the rule's own numbers decide (the user's --cos, the share of elements far off)
    GAIN = "gain"  # its error grows by --gain or more here
    CARRIED = "carried"  # its error came in (a root by the search's walk, not by its own error)


@dataclass(frozen=True)
class RootCause:
    kind: CauseKind
    basis: Basis
    failed: tuple[InputCheck, ...] = ()  # the weights or inputs it reads that differ (WEIGHTS_/INPUTS_DIFFER)


def differing_inputs(pair_key: str, checks: Sequence[InputCheck]) -> list[InputCheck]:
    """The preconditions that failed for this op: weights or network inputs it reads that differ."""
    return [c for c in checks if c.status == CheckStatus.DIFFERS and any(u.key == pair_key for u in c.consumers)]


def vendor_kernel(root: Root) -> bool:
    """The target runs a vendor kernel of the reference's op (Custom_ReduceSum_<digest> for ReduceSum) and
    nothing else differs: its definition differing proves nothing, the replay does (FloorMod vs Mod is
    another op, not a kernel of it)."""
    le, p = root.local, root.pair
    if le is None or p.ref is None or p.target is None or p.ref.op_type == p.target.op_type:
        return False
    only_type = all(d.kind == DiffKind.OP_TYPE for d in le.differs)
    return only_type and p.ref.op_type in p.target.op_type.split("_")


def root_cause(root: Root, checks: Sequence[InputCheck]) -> RootCause:
    """One cause per root, the strongest proven first."""
    le = root.local
    failed = tuple(differing_inputs(root.pair.key, checks))
    if le is not None and le.differs and not (le.rule == LocalRule.REPLAY_BROKEN and vendor_kernel(root)):
        return RootCause(CauseKind.CONSTANT, Basis.DEFINITION)
    if root.kind != RootKind.OUTPUTS and root.why:
        kind = CauseKind.WEIGHT if root.kind == RootKind.PARAMETER else CauseKind.INPUT
        return RootCause(kind, Basis.PRECONDITION)
    weights = tuple(c for c in failed if c.kind == CheckKind.PARAMETER)
    if weights:
        correct = le is not None and le.rule == LocalRule.REPLAY_MATCHES
        return RootCause(
            CauseKind.WEIGHT, Basis.WEIGHTS_DIFFER_OP_CORRECT if correct else Basis.WEIGHTS_DIFFER, weights
        )
    if failed or root.kind == RootKind.INPUT:
        return RootCause(CauseKind.INPUT, Basis.INPUTS_DIFFER, failed)
    if le is None or le.out is None or le.wiring:
        return RootCause(CauseKind.DATA, Basis.ENGINE_REASON)
    if le.rule == LocalRule.SELECTION_BROKEN and le.selection is not None:
        return RootCause(CauseKind.DATA, Basis.SELECTION_BROKEN)
    if le.rule == LocalRule.REPLAY_BROKEN:
        return RootCause(CauseKind.DATA, Basis.REPLAY_BROKEN)
    if le.rule in (LocalRule.COS_ALARM, LocalRule.SPARSE):
        return RootCause(CauseKind.DATA, Basis.RULE)
    if le.is_root:
        return RootCause(CauseKind.DATA, Basis.GAIN)
    return RootCause(CauseKind.DATA, Basis.CARRIED)
