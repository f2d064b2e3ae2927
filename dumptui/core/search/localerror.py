"""Where error is born: the local-error rule for one op pair, from its tensors' errors (no I/O here).

An op *creates* error when its output error exceeds what its inputs carry in by a large factor:

    gain (relative) = output error / input error      both trimmed means over |target - ref|, relative to the
    gain (absolute) = output |error| / input |error|  reference's RMS or absolute; the input side keeps its
                                                      outliers (a jump upstream reaches every consumer)

It is a root of divergence when its output error is above the noise floor of its dtypes AND both gains are
at least `gain` (10). Constants and attributes (0-d inputs such as epsilon, graph attributes, the op type)
are not inputs that carry error: when they differ, that is named as the reason. Weights are inputs here;
weights that differ beyond fp16/bf16 rounding are roots through the preconditions.

Where the op can be replayed (core/replay), the replay decides instead: the reference op's definition (its
type, attributes and constants) recomputed in float64 from each side's own dumped inputs. A target output that
departs from that recomputation far more than the reference output does is broken on the target (a root);
one that matches it only carries error in, whatever its gain (Exp of a larger input, a Floor that jumps).

The trimmed mean leaves out the largest 1 % of elements, so that a few whole-step jumps do not decide. A
sparse error is more than that: the **tail rule** counts the elements far off (beyond 10x the floor, as
`--max-off` does): an op whose output has more than TAIL_SHARE of them (or `--max-off`, when smaller) while
its inputs have at most a tenth (1/gain) of that share is a root too (a saturating fp16 Softmax wrong on 3 %
of its elements); the replay, where it exists, counts them the same way against the recomputation. Ops
that jump on noise by definition (Floor, ArgMax, TopK, comparisons) are left to their replay. With `--cos C`
an op whose output's cosine drops below C while its data inputs' do not is a root: the user's own alarm,
even where the replay says the op only amplifies what comes in (cancellation, a Floor that jumps), in every
mode: a tensor below C is diverged, never carried noise.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from dumptui.core.compare.hints import DISCONTINUOUS
from dumptui.core.compare.noise import ELEMENT_FACTOR, TensorError
from dumptui.core.compare.results import TensorResult
from dumptui.core.graph.align import OpPair
from dumptui.core.model.reason import NO_REASON, Reason, Said, Why, because
from dumptui.core.model.vocab import Word
from dumptui.core.search.selection import SelectionCode, SelectionProof


class LocalKind(Word):
    """What the local-error rule says of an op: error is born there (root), its error came in (carries), its
    output is within the floor (clean), or its outputs could not be compared (unknown)."""

    ROOT = "root"
    CARRIES = "carries"
    CLEAN = "clean"
    UNKNOWN = "unknown"


class LocalRule(Word):
    """Which rule of `classify` decided (a code; report/ words it): the views say what decided, never
    guess it again from the numbers (a fixed gain of 10 there disagreed with `--gain`)."""

    UNCOMPARED = "uncompared"  # its outputs could not be compared
    WIRING = "wiring"  # its inputs are wired otherwise than the reference's
    BLIND = "blind"  # an input could not be judged: neither born here nor carried can be said
    RESIZED_BY_FLIP = "resized-by-flip"  # ...only as its size follows a selection flipped upstream: carried
    # ...its inputs resized so by a flip, and no replay checks it: carried, following the flip's change of size
    FOLLOWS_RESIZING_FLIP = "follows-resizing-flip"
    COS_ALARM = "cos-alarm"  # the user's --cos: the cosine drops below it here
    WITHIN_FLOOR = "within-floor"  # its output is within the noise floor
    REPLAY_BROKEN = "replay-broken"  # the op recomputed on its own inputs disagrees with the target's output
    REPLAY_MATCHES = "replay-matches"  # the recomputation matches: whatever differs came in
    SPARSE = "sparse"  # a share of its elements far off that its inputs do not have (the tail rule)
    GAIN = "gain"  # both gains at least --gain (no conclusive replay)
    GAIN_BELOW = "gain-below"  # a gain below --gain: carried in
    # a selection op (TopK, NMS...) judged by what each side's own inputs give (selection.py)
    SELECTION_BROKEN = "selection-broken"  # the target's selection does not follow from its own inputs
    SELECTION_FLIP = "selection-flip"  # it does, and differs from the reference's: near-ties flipped
    SELECTION_SAME = "selection-same"  # it does, and selects what the reference selects


class DiffKind(Word):
    """What part of an op's definition differs between the two sides."""

    OP_TYPE = "op type"
    ATTRIBUTE = "attribute"
    CONSTANT = "constant input"


@dataclass(frozen=True)
class Difference:
    """One difference in an op's definition: what differs (a code), where, and each side's value as the
    dump writes it (report/reasons.py `difference_words` says it)."""

    kind: DiffKind
    ref: str
    target: str
    slot: int | None = None  # a constant input's slot
    name: str = ""  # an attribute's name


TAIL_SHARE = 0.01  # a share of elements far off that is a sparse error, not a few jumps (the trim is 1 %)


@dataclass(frozen=True, slots=True)  # one per op replayed in a scan: no __dict__ each
class ReplayProof:
    """How far each side's output is from the reference op recomputed on that side's own inputs."""

    dev_ref: float  # relative error (trimmed mean over the RMS) of the reference output
    dev_target: float
    floor_ref: float
    floor_target: float
    slot: int = 0
    note: str = ""
    tail_ref: float = 0.0  # share of elements far off (10x the floor) from the recomputation
    tail_target: float = 0.0
    sample: int = 0  # output positions compared, drawn at random (scan.sample_positions); 0: every one
    elements: int = 0  # the output's elements
    error_margin: float = 0.0  # a sampled proof: its error's relative margin (three standard errors)

    def conclusive(self, gain: float) -> bool:
        """The recomputation models the reference op (else we know too little about its semantics)."""
        return self.dev_ref <= gain * self.floor_ref and self.tail_ref <= TAIL_SHARE

    def broken(self, gain: float, tail_limit: float = TAIL_SHARE) -> bool:
        return self.dev_target > max(gain * self.dev_ref, self.floor_target) or self.sparse(gain, tail_limit)

    def sparse(self, gain: float, tail_limit: float = TAIL_SHARE) -> bool:
        """Broken on a share of elements the trimmed mean does not see."""
        return self.tail_target > max(tail_limit, gain * self.tail_ref)


@dataclass(slots=True)  # one per op pair in a scan: no __dict__ each
class LocalError:
    """The local-error analysis of one op pair."""

    pair: OpPair
    out: TensorError | None  # the worst counted output
    out_slot: int | None
    data_in: TensorError | None  # the worst input that carries error (not constants)
    in_slot: int | None
    floor: float
    floor_dtype: str | None
    # constants / attributes / op type that differ (a tuple: nearly always empty, and every empty one is the
    # same object, where an empty list per op was 1.4 MB of the 20,000-op demo's scan)
    differs: Sequence[Difference] = ()
    replay: ReplayProof | None = None
    replay_note: Said = ""  # why there is no replay, when there is none (report/reasons.py words it)
    kind: LocalKind = LocalKind.UNKNOWN
    rule: LocalRule = LocalRule.UNCOMPARED  # which rule decided `kind`
    why: Reason = NO_REASON  # which rule decided, with its numbers (report/reasons.py words it)
    gain_limit: float = 0.0  # the thresholds it was judged with (--gain, --cos): what the words quote
    cos_limit: float | None = None
    out_tail: float = 0.0  # share of output elements far off (beyond 10x the floor; the worst output)
    in_tail: float = 0.0  # the same, the largest of its data inputs
    out_cos: float | None = None  # the lowest cosine of its outputs, of its data inputs
    in_cos: float | None = None
    wiring: Reason | None = None  # how the target's inputs are wired otherwise than the reference's (WIRED)
    unjudged: Reason | None = None  # where its worst data input comes from unjudged (INTO_INPUT)
    unjudged_flow: bool = False  # that input carries error far above the floor: the answer cannot be "noise"
    statistics_only: bool = False  # its output was compared on statistics (max/min/mean/L2), not elements
    blind: Reason | None = (
        None  # a data input not compared (missing or unreadable) whose value no producer shows either
    )
    selection: SelectionProof | None = None  # a selection op judged by its own inputs (selection.py)
    resized: tuple[int, ...] = ()  # data inputs of another size on each side, as a flip upstream made them

    @property
    def gain_rel(self) -> float | None:
        return _gain(self.out, self.data_in, rel=True)

    @property
    def gain_abs(self) -> float | None:
        return _gain(self.out, self.data_in, rel=False)

    @property
    def is_root(self) -> bool:
        return self.kind == LocalKind.ROOT

    def pair_types(self) -> set[str]:
        """The op types of both sides (none when the analysis stands alone, as in a unit test)."""
        ops = (getattr(self.pair, "ref", None), getattr(self.pair, "target", None))
        return {t for op in ops if isinstance(t := getattr(op, "op_type", None), str)}

    @property
    def out_rel(self) -> float | None:
        if self.out is None:
            return None
        return math.inf if self.out.nonfinite else self.out.rel


def _gain(out: TensorError | None, data_in: TensorError | None, rel: bool) -> float | None:
    if out is None:
        return None
    if out.nonfinite and (data_in is None or not data_in.nonfinite):
        return math.inf
    o = out.rel if rel else out.abs
    if data_in is None:
        return math.inf if o > 0 else 0.0
    if data_in.nonfinite:
        return 0.0  # NaN/Inf came in: whatever comes out is carried
    i = data_in.rel_l2 if rel else data_in.abs_rms
    if o == 0:
        return 0.0
    return math.inf if i == 0 else o / i


def classify(le: LocalError, gain: float, max_off: float = 1.0, cos: float | None = None) -> LocalError:
    """Fill `kind`, `rule` and `why` of an analysis whose errors are known. `max_off` and `cos` are the
    thresholds' (`--max-off`, `--cos`): the tail rule counts from the smaller of `max_off` and TAIL_SHARE."""
    le.gain_limit, le.cos_limit = gain, cos
    if le.out is None and _selection(le) is None:
        le.kind, le.rule, le.why = LocalKind.UNKNOWN, LocalRule.UNCOMPARED, because(Why.UNCOMPARED)
        return le
    out_rel = le.out_rel or 0.0
    floor = (le.floor_dtype or "", le.floor)
    tail_limit = min(max_off, TAIL_SHARE)
    if le.wiring and (out_rel > le.floor or _sparse(le, gain, tail_limit)):
        # it computes what it should from what it gets, but it gets another value: the root is the wiring
        le.kind, le.rule, le.why = LocalKind.ROOT, LocalRule.WIRING, because(Why.WIRING, le.wiring, out_rel)
        return le
    worst_in = le.data_in.worst_rel if le.data_in is not None else 0.0
    le.unjudged_flow = bool(le.unjudged) and worst_in > gain * le.floor
    if le.blind and (out_rel > le.floor or _sparse(le, gain, tail_limit)):
        # what came in through that input is not known: neither "born here" nor "carried" can be said
        le.kind, le.unjudged_flow, le.rule = LocalKind.UNKNOWN, True, LocalRule.BLIND
        le.why = because(Why.BLIND, out_rel, le.blind)
        return le
    # the user's own alarm, in every mode and for every op: its help says "also call a pair diverged below
    # this cosine", so the op where the cosine first drops below it is where that divergence is born (a
    # FloorMod that jumps on fp16 noise included: exempted, `--cos` changed nothing on a noisy pair)
    if _cos_alarm(le, cos):
        le.kind, le.rule = LocalKind.ROOT, LocalRule.COS_ALARM
        le.why = because(Why.COS_ALARM, le.out_cos, cos, le.in_cos)
        return le
    rule = _selection(le)
    if rule is not None:
        # what its own inputs give decides, whatever its error's size: a near-tie that flipped is no root
        kind = LocalKind.ROOT if rule == LocalRule.SELECTION_BROKEN else LocalKind.CARRIES
        if rule == LocalRule.SELECTION_SAME and out_rel <= le.floor:
            kind = LocalKind.CLEAN
        le.kind, le.rule, le.why = kind, rule, because(Why.SELECTION, rule)  # report/selection.py words it
        return le
    jumps = not le.pair_types().isdisjoint(DISCONTINUOUS)
    sparse = _sparse(le, gain, tail_limit)
    if out_rel <= le.floor and not sparse:
        le.kind, le.rule, le.why = LocalKind.CLEAN, LocalRule.WITHIN_FLOOR, because(Why.WITHIN_FLOOR, *floor)
        return le
    differs = tuple(le.differs)
    if le.replay is not None and le.replay.conclusive(gain):
        if le.replay.broken(gain, tail_limit):
            le.kind, le.rule = LocalKind.ROOT, LocalRule.REPLAY_BROKEN
            le.why = because(Why.REPLAY_BROKEN, le.replay, differs)
        else:
            le.kind, le.rule = LocalKind.CARRIES, LocalRule.REPLAY_MATCHES
            le.why = because(Why.REPLAY_MATCHES, le.replay, _unjudged_reason(le))
        return le
    if sparse and not jumps:
        le.kind, le.rule = LocalKind.ROOT, LocalRule.SPARSE
        le.why = because(Why.SPARSE, le.out_tail, le.in_tail, *floor, out_rel, differs, le.replay_note)
        return le
    if out_rel <= le.floor:
        le.kind, le.rule, le.why = LocalKind.CLEAN, LocalRule.WITHIN_FLOOR, because(Why.WITHIN_FLOOR, *floor)
        return le
    g_rel, g_abs = le.gain_rel or 0.0, le.gain_abs or 0.0
    carried_in = le.data_in.worst_rel if le.data_in is not None else 0.0
    if g_rel >= gain and g_abs >= gain:
        le.kind, le.rule = LocalKind.ROOT, LocalRule.GAIN
        le.why = because(Why.GAIN, carried_in, out_rel, *floor, g_rel, g_abs, differs, le.replay, le.replay_note)
    else:
        le.kind, le.rule = LocalKind.CARRIES, LocalRule.GAIN_BELOW
        le.why = because(Why.GAIN_BELOW, out_rel, g_rel, gain, differs, _unjudged_reason(le))
    return le


def _selection(le: LocalError) -> LocalRule | None:
    """The rule a conclusive selection judgement gives (None: none, or one that concludes nothing)."""
    sel = le.selection
    if sel is None or not sel.conclusive:
        return None
    if sel.code == SelectionCode.BROKEN:
        return LocalRule.SELECTION_BROKEN
    return LocalRule.SELECTION_FLIP if sel.code == SelectionCode.FLIP else LocalRule.SELECTION_SAME


def _unjudged_reason(le: LocalError) -> Reason | None:
    """Where error carried in comes from an op that exists on one side only: said, and never called noise."""
    if not le.unjudged_flow:
        return None
    return because(Why.UNJUDGED_CARRIED, le.data_in.worst_rel if le.data_in is not None else 0.0, le.unjudged)


def unjudged_reason(le: LocalError) -> Reason:
    """Why no root can be named for an error that came through an op on one side only (the answer's
    "undecided"): the same reason from the scan and from the culprit check."""
    if le.blind:
        return because(Why.BLIND_UNDECIDED, le.pair.name, le.why)
    worst = le.data_in.worst_rel if le.data_in is not None else 0.0
    return because(Why.UNJUDGED_UNDECIDED, le.pair.name, worst, le.unjudged)


def _sparse(le: LocalError, gain: float, tail_limit: float) -> bool:
    """More of the output's elements far off than a few jumps, and `gain` times its inputs' share."""
    return le.out_tail > max(tail_limit, gain * le.in_tail) and (le.out is None or le.out.n * le.out_tail >= 2)


def _cos_alarm(le: LocalError, cos: float | None) -> bool:
    """`--cos C`: the cosine of the output drops below C here while every data input's is at least C."""
    if cos is None or le.out_cos is None or le.out_cos >= cos:
        return False
    return le.in_cos is None or le.in_cos >= cos


def shape_of_error(
    outs: Sequence[TensorResult], ins: Sequence[TensorResult], floor: float = 0.0
) -> tuple[float, float, float | None, float | None]:
    """(output tail share, input tail share, lowest output cosine, lowest input cosine) from the compared
    tensors' statistics (TensorResult-like: `.stats` with n_off, compared, cos; None when not compared).

    The tail rule says "elements off by more than 10x the op's floor": an output counted against a tighter
    tolerance than that (a float32 weight gradient summed from bfloat16 values, counted at float32's floor
    while the op's floor is bfloat16's) would count the op's own precision noise as far off, so it is left
    out of the output's share. (An input counted so only makes the rule more careful: it stays.)"""

    def tail(rs: Sequence[TensorResult], at_least: float = 0.0) -> float:
        shares = [
            r.stats.n_off / r.stats.compared
            for r in rs
            if r.stats is not None
            and r.stats.compared
            and (r.tolerance is None or r.tolerance.rtol >= at_least * (1 - 1e-9))
        ]
        # (no share: the one 0.0, where each 0 / n was a float of its own: 40,000 on the 20,000-op demo)
        return max(shares, default=0.0) or 0.0

    def low_cos(rs: Sequence[TensorResult]) -> float | None:
        cs = [r.stats.cos for r in rs if r.stats is not None and r.stats.cos is not None]
        return min(cs, default=None)

    return tail(outs, floor * ELEMENT_FACTOR), tail(ins), low_cos(outs), low_cos(ins)
