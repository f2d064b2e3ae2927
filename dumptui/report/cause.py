"""The one sentence that says why a root of divergence is one, from its facts (its definition, a weight or
input that differs, its local error, its outputs): the same words in `bisect`'s and `compare`'s text and JSON,
the report and the app's culprit panel. The engine decides; this module words what it decided."""

from __future__ import annotations

from collections.abc import Sequence

from dumptui.core.compare.noise import fmt_rel
from dumptui.core.compare.results import OpResult
from dumptui.core.compare.verdict import BAD
from dumptui.core.search.bisect import InputCheck, Root
from dumptui.core.search.cause import Basis, root_cause
from dumptui.core.search.localerror import LocalError, LocalRule
from dumptui.report.reasons import differences_words, fmt_gain, replay_sentence, say
from dumptui.report.selection import proof_sentence


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
        return replay_sentence(le.replay)
    if not le.replay_note:
        return ""
    decided = {
        LocalRule.GAIN: "the gain rule decides",
        LocalRule.SPARSE: "the share of elements far off decides",
        LocalRule.COS_ALARM: "the cosine alarm (--cos) decides",
        LocalRule.WIRING: "its wiring decides",
        LocalRule.WITHIN_FLOOR: "its output is within the noise floor",
    }.get(le.rule)
    return f"{say(le.replay_note)}: {decided}" if decided else say(le.replay_note)


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
    """(cause, sentence): the engine's cause of the root (core/search/cause.py), in words from its facts."""
    cause = root_cause(root, checks)
    le = root.local
    out = _output_words(le, root.result)
    basis = cause.basis
    if basis == Basis.DEFINITION:
        assert le is not None
        return cause.kind, f"its definition differs ({differences_words(le.differs)}), and {out}"
    if basis in (Basis.PRECONDITION, Basis.ENGINE_REASON):
        # a weight or input the preconditions found differing: their reason names what (a folded BatchNorm's
        # channel and variance, an int8 scale, the rounding it exceeds); wired otherwise: which input carries which
        return cause.kind, say(root.why)
    if basis in (Basis.WEIGHTS_DIFFER, Basis.WEIGHTS_DIFFER_OP_CORRECT):
        names = ", ".join(c.name for c in cause.failed)
        computes = (
            "; the op itself computes correctly on what it is given (replay)"
            if basis == Basis.WEIGHTS_DIFFER_OP_CORRECT
            else ""
        )
        return (
            cause.kind,
            f"its weight {names} differs by more than fp16/bf16 rounding{computes}: check the checkpoint and "
            "its conversion",
        )
    if basis == Basis.INPUTS_DIFFER:
        names = ", ".join(c.name for c in cause.failed) or "its input"
        return cause.kind, f"{names}, which no op in the dump computes, differs: check the preprocessing"
    assert le is not None
    ins = (
        "its inputs agree exactly"
        if le.data_in is None or le.data_in.worst_rel == 0
        else f"its inputs carry {fmt_rel(le.data_in.worst_rel)} of their RMS"
    )
    if le.resized:  # never compared: a flip upstream made them of another size on each side
        resized = ", ".join(f"input.{s}" for s in le.resized)
        ins = f"{resized} of another size on each side (a selection flipped upstream)"
    if basis == Basis.SELECTION_BROKEN:
        assert le.selection is not None
        return cause.kind, f"error is born here: {ins}, and {proof_sentence(le.selection)}"
    if basis == Basis.REPLAY_BROKEN:
        # the replay proves it: the strongest cause first, then what differs in its definition (a vendor
        # kernel in the reference op's place), which alone proves nothing
        differs = f"; its definition differs ({differences_words(le.differs)})" if le.differs else ""
        return (
            cause.kind,
            f"error is born here: {ins}, {out}, and the op recomputed on its own inputs disagrees{differs}",
        )
    if basis == Basis.RULE:
        return cause.kind, f"error is born here: {say(le.why)}"  # (the rule's own numbers: the cosine, the share)
    if basis == Basis.GAIN:
        return cause.kind, f"error is born here: {ins}, {out} (x{fmt_gain(le.gain_rel)} what came in)"
    return cause.kind, f"{ins}; {out}"
