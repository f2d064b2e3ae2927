"""A root of divergence in words that agree with its numbers: what the app's culprit view shows.

One sentence per kind of cause, chosen from the facts rather than from how the search reached the op:

- `constant`: the op's definition differs (its type, a graph attribute, a constant input such as epsilon);
- `weight`: a weight it reads differs by more than fp16/bf16 rounding (the precondition that failed);
- `input`: the network input (or an input no dumped op produces) differs;
- `data`: error is born in the op itself: its output is off by far more than its data inputs carry.

Then the numbers of the local-error rule, the replay proof (or why there is none), and the hints, the
discontinuity hint reworded for a root (core/compare/hints.py `for_root`): a culprit is never "benign noise".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from dumptui.core.compare.hints import Hint, for_root
from dumptui.core.compare.metrics import format_cos
from dumptui.core.compare.noise import fmt_rel
from dumptui.core.compare.results import OpResult, TensorResult
from dumptui.core.compare.verdict import BAD
from dumptui.core.graph.dataflow import input_source
from dumptui.core.search.cause import differing_inputs
from dumptui.core.search.localerror import Difference, DiffKind, LocalError
from dumptui.present.words import nonfinite_words
from dumptui.report import fmt
from dumptui.report.cause import cause_sentence, fmt_gain, of_what, proof_words
from dumptui.report.reasons import difference_words, say, say_all

if TYPE_CHECKING:
    from dumptui.core.search.bisect import InputCheck, Root

CAUSES = ("constant", "weight", "input", "data")


@dataclass(frozen=True)
class RootView:
    """One root of divergence, as the app shows it (an immutable snapshot: the UI thread renders it)."""

    index: int
    position: int | None
    label: str
    op_type: str
    kind: str  # the engine's kind: outputs | parameter | input
    why: str  # the one sentence of its cause
    how: str
    caveats: tuple[str, ...] = ()
    hints: tuple[tuple[str, str], ...] = ()  # (kind, text), reworded for a root
    proof: str | None = None  # its tensors: inputs -> outputs, with verdicts
    ref_name: str = ""
    target_name: str = ""
    cause: str = "data"  # one of CAUSES
    numbers: str = ""  # the local-error rule's numbers
    replay: str = ""  # the replay proof in a sentence, or why there is none
    differs: tuple[str, ...] = ()
    # every rank at once (--rank all): the rank it runs on, and each other rank it reaches with the
    # communication op it arrives by (the cross-rank story of the headless every-rank report)
    rank: str = ""
    reaches: tuple[tuple[str, str], ...] = ()

    @property
    def renamed(self) -> bool:
        return bool(self.ref_name and self.target_name and self.ref_name != self.target_name)


def local_numbers(le: LocalError) -> str:
    """`output 9.92e-01 of its RMS (float32 floor 1.22e-04); inputs carry 4.62e-05: gain x2.15e+04 (x2.45e+04
    absolute)`: the numbers the rule decides by (docs/workflow.md, "Where the error is born")."""
    if le.out is None:
        return "outputs not compared"
    ins = (
        "inputs agree exactly"
        if le.data_in is None or le.data_in.worst_rel == 0
        else f"inputs carry {fmt_rel(le.data_in.worst_rel)}"
    )
    floor = f"{le.floor_dtype} floor {fmt_rel(le.floor)}" if le.floor_dtype else f"floor {fmt_rel(le.floor)}"
    return (
        f"output {fmt_rel(le.out_rel or 0.0)} {of_what(le)} ({floor}); {ins}: "
        f"gain x{fmt_gain(le.gain_rel)} (x{fmt_gain(le.gain_abs)} absolute)"
    )


def replay_words(le: LocalError | None) -> str:
    return proof_words(le)


def tensors_line(res: OpResult, failed: Sequence[InputCheck] = (), differs: Sequence[Difference] = ()) -> str:
    """Inputs vs outputs in one line: `input.0 close, input.1 equal → output.0 diverged (cos 0.466451)`; a
    weight whose precondition failed, or a constant input that differs, says so whatever its verdict as a
    tensor (it is the cause)."""
    failed_names = {c.name for c in failed}

    def one(r: TensorResult) -> str:
        if r.io == "input" and any(d.kind == DiffKind.CONSTANT and d.slot == r.slot for d in differs):
            return f"{r.label} differs (constant)"
        sources = {s.ref for s in input_source(res.pair, r.slot) if s is not None} if r.io == "input" else set()
        if sources & failed_names:
            return f"{r.label} differs ({', '.join(sorted(sources & failed_names))})"
        s = f"{r.label} {r.verdict}"
        if r.stats is not None and r.verdict in BAD:
            bad = nonfinite_words(r.stats)
            s += f" ({bad})" if bad else f" (cos {format_cos(r.stats.cos)})"
        return s

    ins = ", ".join(one(r) for r in res.inputs) or "no inputs dumped"
    outs = ", ".join(one(r) for r in res.outputs) or "no outputs dumped"
    return f"{ins} → {outs}"


def root_view(root: Root, position: int | None, checks: Sequence[InputCheck], hints: Sequence[Hint]) -> RootView:
    p = root.pair
    cause, sentence = cause_sentence(root, checks)
    le = root.local
    failed = differing_inputs(p.key, checks)
    return RootView(
        index=p.index,
        position=position,
        label=p.label,
        op_type=fmt.short_types(p.op_type),
        kind=root.kind,
        why=fmt.short_types(sentence),
        how=say(p.how),
        caveats=tuple(
            dict.fromkeys(
                c for c in say_all(root.caveats) if c not in sentence and not any(f.name in c for f in failed)
            )
        ),
        hints=tuple(
            (h.kind, say(h.reason))
            # a known cause first: at 60x18 the first hint is what stays above the fold
            for h in sorted(for_root(list(hints), True, p.op_type), key=lambda h: h.kind != "known cause")
            # the sentence of a definition that differs already names the attributes
            if not (h.kind == "attributes" and cause == "constant")
        ),
        proof=tensors_line(root.result, failed, le.differs if le is not None else ())
        if root.result is not None
        else None,
        ref_name=p.ref.name if p.ref is not None else "",
        target_name=p.target.name if p.target is not None else "",
        cause=cause,
        numbers=local_numbers(le) if le is not None else "",
        replay=replay_words(le),
        differs=tuple(difference_words(d) for d in le.differs) if le is not None else (),
    )
