"""The one sentence that says why a root of divergence is one, from its facts (its definition, a weight or
input that differs, its local error, its outputs): the same words in `bisect`'s and `compare`'s text and JSON,
the report and the app's culprit panel. The engine decides; this module words what it decided."""

from __future__ import annotations

from typing import Sequence

from dumptui.core.compare.noise import fmt_rel
from dumptui.core.compare.results import OpResult
from dumptui.core.compare.verdict import BAD
from dumptui.core.search.bisect import CheckKind, CheckStatus, InputCheck, Root, RootKind
from dumptui.core.search.localerror import DiffKind, LocalError, LocalRule
from dumptui.report.selection import proof_sentence


def fmt_gain(g: float | None) -> str:
    if g is None:
        return "-"
    return "inf" if g == float("inf") else f"{g:.3g}"


def of_what(le: LocalError) -> str:
    """What an op's error is relative to: its RMS where elements were compared; on a statistics dump, the
    largest relative difference of its statistics (there is no RMS of the difference to speak of)."""
    return "of its statistics (max/min/mean/L2, relative)" if le.statistics_only else "of its RMS"


def proof_words(le: LocalError | None) -> str:
    """What proves the op's local verdict, as the rule that decided it says: the replay's numbers where it
    decided or was run, else why there was none and which rule decided instead (the gain rule only where
    it did: a weight, a wiring or the user's cosine may have decided)."""
    if le is None:
        return ""
    if le.selection is not None:
        return proof_sentence(le.selection)
    if le.replay is not None:
        return le.replay.sentence()
    if not le.replay_note:
        return ""
    decided = {
        LocalRule.GAIN: "the gain rule decides",
        LocalRule.SPARSE: "the share of elements far off decides",
        LocalRule.COS_ALARM: "the cosine alarm (--cos) decides",
        LocalRule.WIRING: "its wiring decides",
        LocalRule.WITHIN_FLOOR: "its output is within the noise floor",
    }.get(le.rule)
    return f"{le.replay_note}: {decided}" if decided else le.replay_note


def _vendor_kernel(root: Root) -> bool:
    """The target runs a vendor kernel of the reference's op (Custom_ReduceSum_<digest> for ReduceSum) and
    nothing else differs: its definition differing proves nothing, the replay does (FloorMod vs Mod is
    another op, not a kernel of it)."""
    le, p = root.local, root.pair
    if le is None or p.ref is None or p.target is None or p.ref.op_type == p.target.op_type:
        return False
    only_type = all(d.kind == DiffKind.OP_TYPE for d in le.differs)
    return only_type and p.ref.op_type in p.target.op_type.split("_")


def differing_inputs(pair_key: str, checks: Sequence[InputCheck]) -> list[InputCheck]:
    """The preconditions that failed for this op: weights or network inputs it reads that differ."""
    return [c for c in checks if c.status == CheckStatus.DIFFERS and any(u.key == pair_key for u in c.consumers)]


def _output_words(le: LocalError | None, res: OpResult | None) -> str:
    if le is not None and le.out is not None:
        if le.out.nonfinite:
            return f"NaN/Inf differ at {le.out.nonfinite} output positions"
        return f"its output is off by {fmt_rel(le.out_rel or 0.0)} {of_what(le)}"
    bad = [r for r in (res.outputs if res is not None else []) if r.verdict in BAD]
    return f"{bad[0].label} {bad[0].verdict}" if bad else "its outputs agree"


def why(root: Root, checks: Sequence[InputCheck]) -> str:
    """The sentence every output gives for this root."""
    return cause_sentence(root, checks)[1]


def cause_sentence(root: Root, checks: Sequence[InputCheck]) -> tuple[str, str]:
    """(cause, sentence): one sentence per kind of cause, from the facts."""
    le = root.local
    out = _output_words(le, root.result)
    failed = differing_inputs(root.pair.key, checks)
    if le is not None and le.differs and not (le.rule == LocalRule.REPLAY_BROKEN and _vendor_kernel(root)):
        return "constant", f"its definition differs ({'; '.join(le.differs)}), and {out}"
    if root.kind != RootKind.OUTPUTS and root.why:
        # a weight or input the preconditions found differing: the engine's sentence names what (a folded
        # BatchNorm's channel and variance, an int8 scale, the rounding it exceeds)
        return ("weight" if root.kind == RootKind.PARAMETER else "input"), root.why
    weights = [c for c in failed if c.kind == CheckKind.PARAMETER]
    if weights:
        names = ", ".join(c.name for c in weights)
        computes = (
            "; the op itself computes correctly on what it is given (replay)"
            if le is not None and le.rule == LocalRule.REPLAY_MATCHES
            else ""
        )
        return (
            "weight",
            f"its weight {names} differs by more than fp16/bf16 rounding{computes}: check the checkpoint and "
            "its conversion",
        )
    if failed or root.kind == RootKind.INPUT:
        names = ", ".join(c.name for c in failed) or "its input"
        return "input", f"{names}, which no op in the dump computes, differs: check the preprocessing"
    if le is None or le.out is None or le.wiring:
        return "data", root.why  # (wired otherwise: the engine's sentence says which input carries which)
    ins = (
        "its inputs agree exactly"
        if le.data_in is None or le.data_in.worst_rel == 0
        else f"its inputs carry {fmt_rel(le.data_in.worst_rel)} of their RMS"
    )
    if le.rule == LocalRule.SELECTION_BROKEN and le.selection is not None:
        return "data", f"error is born here: {ins}, and {proof_sentence(le.selection)}"
    if le.rule == LocalRule.REPLAY_BROKEN:
        # a vendor kernel in the op's place (only its type differs, and it names the op): the replay proves it: the strongest cause first, then what differs in its definition (a vendor
        # kernel in the reference op's place), which alone proves nothing
        differs = f"; its definition differs ({'; '.join(le.differs)})" if le.differs else ""
        return "data", f"error is born here: {ins}, {out}, and the op recomputed on its own inputs disagrees{differs}"
    if le.rule in (LocalRule.COS_ALARM, LocalRule.SPARSE):
        return "data", f"error is born here: {le.why}"  # (the rule's own numbers: the cosine, the share)
    if le.is_root:
        return "data", f"error is born here: {ins}, {out} (x{fmt_gain(le.gain_rel)} what came in)"
    return "data", f"{ins}; {out}"
