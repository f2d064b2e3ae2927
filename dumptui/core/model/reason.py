"""A reason as the engine gives it: a code and the values it rests on, never words.

The engine decides and says *which* rule decided with *which* numbers and names; `dumptui/report/reasons.py`
is the one place that turns a `Reason` into a sentence (the app gets it through `present/`). So a sentence can
never disagree with the decision it explains: both come from the same code and the same numbers, and a view
that wants to decide again from the words has no words to parse.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias, Union

from dumptui.core.model.vocab import Word


class Why(Word):
    """What a reason says; its values are in `Reason.args`, in the order report/reasons.py documents."""

    # the local-error rule (localerror.classify): one code per rule that decided
    UNCOMPARED = "uncompared"  # ()
    WIRING = "wiring"  # (how it is wired, output error)
    BLIND = "blind"  # (output error, what is blind)
    COS_ALARM = "cos-alarm"  # (output cosine, --cos, lowest data-input cosine or None)
    WITHIN_FLOOR = "within-floor"  # (floor dtype or "", floor)
    REPLAY_BROKEN = "replay-broken"  # (ReplayProof, definition differences)
    REPLAY_MATCHES = "replay-matches"  # (ReplayProof, unjudged note or None)
    SPARSE = "sparse"  # (output tail, input tail, floor dtype, floor, output error, differences, replay note)
    GAIN = "gain"  # (input error, output error, floor dtype, floor, gain rel, gain abs, differences, replay, note)
    GAIN_BELOW = "gain-below"  # (output error, gain rel, --gain, differences, unjudged note or None)
    SELECTION = "selection"  # (LocalRule of a selection: report/selection.py words it)
    UNJUDGED_CARRIED = "unjudged-carried"  # (error carried in, where it comes from)
    # why no root can be named (the answer's "undecided")
    BLIND_UNDECIDED = "blind-undecided"  # (op name, its local reason)
    UNJUDGED_UNDECIDED = "unjudged-undecided"  # (op name, error carried in, where it comes from)
    # the culprit check (bisect/culprit.py)
    OUTPUT_UNREADABLE_INPUTS_AGREE = "output-unreadable-inputs-agree"  # (op label, reason it is unreadable)
    INPUT_CARRIES = "input-carries"  # (slot, op name, the input's reason)
    AGREES_YET_READ_DIFFERS = "agrees-yet-read-differs"  # (op label, its outputs' verdicts)
    OUTPUT_UNREADABLE = "output-unreadable"  # (op label, reason, caveats)
    ONLY_CARRIES = "only-carries"  # (op label, input slots, its local reason)
    INPUTS_AGREE_OUTPUTS_DIVERGE = "inputs-agree-outputs-diverge"  # (inputs carry, floor)
    OUTPUTS_AND_UNPRODUCED_DIVERGE = "outputs-and-unproduced-diverge"  # ()
    BORN_HERE = "born-here"  # (its local reason)
    OUTPUTS_DIVERGE = "outputs-diverge"  # ()
    OWN_OUTPUT_UNREADABLE = "own-output-unreadable"  # (reason)
    UNPRODUCED_DIFFERS = "unproduced-differs"  # (origin, names, slot, the input's reason)
    OTHER_INPUTS = "other-inputs"  # (inputs carry, floor)
    DEFINITION_DIFFERS = "definition-differs"  # (differences)
    OUTPUT_NOT_JUDGED = "output-not-judged"  # (op label, tensor label, reason)
    # caveats of the culprit check
    INPUT_NOT_GOOD = "input-not-good"  # (slot, verdict, reason)
    PRODUCER_MARKED_GOOD = "producer-marked-good"  # (slot, producer name)
    PRODUCER_ONE_SIDED = "producer-one-sided"  # (slot, side, producer name)
    PRODUCER_UNKNOWN = "producer-unknown"  # (slot, reason, whether a graph is known)
    SIDE_INPUTS_UNCHECKED = "side-inputs-unchecked"  # (how many)
    # the search (bisect/bisection.py)
    USER_MARK_CONFLICT = "user-mark-conflict"  # (op label, its outputs' verdicts)
    SEARCH_ENDED = "search-ended"  # (op name, why)
    BIRTH_UNTOLD = "birth-untold"  # (why)
    CONTINUING = "continuing"  # (why)
    EVERYTHING_IGNORED = "everything-ignored"  # (the ignore rules' reasons)
    MORE_OUTPUTS_UNREAD = "more-outputs-unread"  # (how many)
    FILE_UNREAD = "file-unread"  # (path, reason)
    MORE_FILES_UNREAD = "more-files-unread"  # (how many)
    NOTHING_PAIRED = "nothing-paired"  # ()
    NOTHING_TO_BISECT = "nothing-to-bisect"  # ()
    MORE_SINKS_UNCHECKED = "more-sinks-unchecked"  # (how many)
    GRAPH_OUTPUT = "graph-output"  # (its probe's verdict)
    LAST_READABLE = "last-readable"  # (graph output name, its probe's verdict)
    SEARCHED_FROM = "searched-from"  # (graph output name, why unreadable, op searched from)
    OUTPUT_UNREAD_UNKNOWN = "output-unread-unknown"  # (graph output name, why unreadable, outputs before it agreeing)
    # joining reasons
    ALSO = "also"  # (reason, reason, ...): said one after the other


@dataclass(frozen=True)
class Reason:
    """A code and the values it rests on (numbers, names, codes, other reasons): hashable, so reasons
    compare and deduplicate as values."""

    code: Why
    args: tuple[object, ...] = ()

    def also(self, *more: Reason) -> Reason:
        """This reason followed by `more` (an ALSO of them all, flattened)."""
        parts: list[object] = list(self.args) if self.code == Why.ALSO else [self]
        for m in more:
            parts.extend(m.args if m.code == Why.ALSO else (m,))
        return Reason(Why.ALSO, tuple(parts))


def because(code: Why, *args: object) -> Reason:
    """A reason of `code` resting on `args` (lists become tuples: a reason is a value)."""
    return Reason(code, tuple(tuple(a) if isinstance(a, list) else a for a in args))


NO_REASON = Reason(Why.UNCOMPARED)  # an analysis not yet classified: nothing could be compared yet

# what the engine says where words and reasons still meet (a reader's message, a name): report/reasons.py says both
Said: TypeAlias = Union[Reason, str]
