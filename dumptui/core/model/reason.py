"""A reason as the engine gives it: a code and the values it rests on, never words.

The engine decides and says *which* rule decided with *which* numbers and names; `dumptui/report/reasons.py`
is the one place that turns a `Reason` into a sentence (the app gets it through `present/`). So a sentence can
never disagree with the decision it explains: both come from the same code and the same numbers, and a view
that wants to decide again from the words has no words to parse.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias

from dumptui.core.io.fault import Fault
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
    # a tensor pair's verdict (compare/verdict.py)
    EMPTY_TENSOR = "empty-tensor"  # ()
    BITWISE_EQUAL = "bitwise-equal"  # ()
    VALUES_EQUAL = "values-equal"  # ()
    NONFINITE_MISMATCH = "nonfinite-mismatch"  # (elements with NaN/Inf on one side only)
    NO_FINITE_PAIR = "no-finite-pair"  # ()
    COS_BELOW = "cos-below"  # (cosine, --cos)
    ERROR_ABOVE_FLOOR = "error-above-floor"  # (error, floor dtype, floor, why the cosine is undefined or "")
    OFF_SHARE_ABOVE = "off-share-above"  # (share far off, factor, floor dtype, floor, --max-off)
    ERROR_WITHIN_FLOOR = "error-within-floor"  # (error, floor dtype, floor)
    STAT_NONFINITE = "stat-nonfinite"  # (statistic, reference value, target value)
    STAT_NONFINITE_COUNT = "stat-nonfinite-count"  # (count kind, reference count, target count)
    NO_STATISTIC = "no-statistic"  # ()
    STATISTICS_IDENTICAL = "statistics-identical"  # ()
    STAT_WITHIN = "stat-within"  # (largest relative difference, statistic, limit)
    STAT_DIFFERS = "stat-differs"  # (statistic, relative difference, limit)
    NO_SUCH_TENSOR = "no-such-tensor"  # (whether the reference lacks it)
    REPAIRED = "repaired"  # (side, what was repaired)
    DTYPES_DIFFER = "dtypes-differ"  # (reference dtype, target dtype): compared as values
    SHAPES_DIFFER_NOTE = "shapes-differ-note"  # (reference shape, target shape): compared element by element
    ON_STATISTICS = "on-statistics"  # ()
    STATISTICS_ONLY = "statistics-only"  # (the statistics' reason)
    DTYPES_INCOMPARABLE = "dtypes-incomparable"  # (reference dtype, target dtype)
    SHAPES_INCOMPARABLE = "shapes-incomparable"  # (reference shape, target shape, their element counts)
    SHAPES_DIFFER = "shapes-differ"  # (reference shape, target shape, the values' reason)
    IGNORED_BY_USER = "ignored-by-user"  # (the user's pattern)
    BATCHNORM_UNINITIALISED = "batchnorm-uninitialised"  # ()
    # the preconditions (bisect/preconditions.py)
    ONE_SIDED = "one-sided"  # ()
    CARRIED_FROM_STEP = "carried-from-step"  # (step, the error there, its error, numbers)
    WRITTEN_AFTER_UPDATE = "written-after-update"  # (the optimizer kernel that wrote it, numbers)
    TRANSFORM_VERIFIED = "transform-verified"  # (the transformation's words, numbers)
    TRANSFORM_WRONG = "transform-wrong"  # (the transformation's words, the transformation)
    CARRIED_FLOWING = "carried-flowing"  # (its error, the error flowing, where, --gain, numbers)
    STATISTICS_AGREE = "statistics-agree"  # (dtype, largest relative difference, floor)
    CLOSE_LOWER_PRECISION = "close-lower-precision"  # (the lower dtypes, numbers)
    ROUNDING_ONLY = "rounding-only"  # (the format whose rounding explains it, numbers)
    BEYOND_ROUNDING = "beyond-rounding"  # (numbers, CheckKind)
    GOES_NO_FURTHER = "goes-no-further"  # (the check's reason, the consumer whose outputs are equal)
    NETWORK_INPUT_DIFFERS = "network-input-differs"  # (name)
    TRANSFORMED_PARAMETER = "transformed-parameter"  # (name, the check's reason)
    PARAMETER_DIFFERS = "parameter-differs"  # (name)
    UNPRODUCED_INPUT_DIFFERS = "unproduced-input-differs"  # (name)
    NUMBERS = "numbers"  # (cosine, largest absolute difference or None)
    # what a probe says, benign reasons
    PROBE = "probe"  # (per output: (label, verdict, cosine, max abs) or (label, verdict, reason or None); op verdict)
    BLIND_INPUTS = "blind-inputs"  # (per input not compared: (slot, verdict, reason))
    RESIZED_BY_FLIP = "resized-by-flip"  # (input slots differing in shape, the flipped selection upstream)
    # ...where no replay checks the op (why not: a Said): it follows the flip's size change, carried
    FOLLOWS_RESIZING_FLIP = "follows-resizing-flip"  # (input slots differing in shape, the flip, why no replay)
    BENIGN_CHECK = "benign-check"  # (CheckKind, name, the check's reason)
    LARGEST_CARRIED = "largest-carried"  # (largest output error, op name)
    MARKED_BY_USER = "marked-by-user"  # ()
    # the remedy (search/remedy.py, replay/precision.py)
    NO_REPLAY_FOR = "no-replay-for"  # (op type)
    NO_REPLAY_WITHOUT_DATA = "no-replay-without-data"  # (): a statistics-only dump holds no values to replay
    NO_REPLAY_BACKWARD = "no-replay-backward"  # (op type): a backward call computes gradients, not its op type
    OUTPUT_NOT_ON_BOTH = "output-not-on-both"  # ()
    TOO_LARGE_TO_REPLAY = "too-large-to-replay"  # ()
    COULD_NOT_READ = "could-not-read"  # (the error)
    NO_REPLAY = "no-replay"  # (why not)
    REPLAY_FAILED = "replay-failed"  # (the error)
    REPLAY_GIVES_TARGET = "replay-gives-target"  # (the target's deviation from the exact op)
    CHANGE_ATTRIBUTES = "change-attributes"  # (the attributes that differ)
    CHANGE_TO_FLOORMOD = "change-to-floormod"  # (target type, reference type)
    CHANGE_TO_REFERENCE_OP = "change-to-reference-op"  # (target type, reference type)
    CHECK_DISCONTINUOUS = "check-discontinuous"  # (target type)
    KERNEL_DIFFERS = "kernel-differs"  # (target type)
    # transformed weights (bisect/transformed.py)
    SCALE_OF = "scale-of"  # (transformation, op)
    FOLDED_INTO = "folded-into"  # (op)
    FOLDED_BIAS = "folded-bias"  # ()
    FOLD_EPSILON = "fold-epsilon"  # (epsilon the target implies, the reference's)
    FOLD_WRONG = "fold-wrong"  # (per channel: ("bias", c, folded, expected) or ("variance", c, var, ref var,
    #                              whose or None, scale ratio); channels not named)
    WORST_ROUNDING = "worst-rounding"  # (largest deviation in units of rounding, dtype)
    WORST_STEP = "worst-step"  # (largest deviation in quantisation steps)
    QUANTISED_WRONG = "quantised-wrong"  # (transformation, per channel: ("scale", k, scale, ratio, folded,
    #                                        implied scale) or ("steps", k, steps); channels not named)
    QUANTISED_OK = "quantised-ok"  # (transformation, channels, folded, worst)
    FOLD_OK = "fold-ok"  # (channels, dtype, worst)
    AGAINST_TRANSFORMED_WEIGHT = "against-transformed-weight"  # (transformation)
    AGAINST_SCALED_OUTPUT = "against-scaled-output"  # ()
    # the scan (search/scan.py, search/selection.py) and why a search scans
    WIRED = "wired"  # ((target slot, the reference slot it carries), ...)
    OUTPUT_SLOT_NOT_ON_BOTH = "output-slot-not-on-both"  # (slot)
    NOT_REPLAYED_SIZE = "not-replayed-size"  # (input elements, limit)
    REPLAY_NO_OUTPUT = "replay-no-output"  # (op type, slot)
    CARRIES_REF_INPUT = "carries-ref-input"  # (the reference's slot it carries)
    COMES_UNJUDGED = "comes-unjudged"  # ((NaN/Inf positions, relative error) or None, where it comes from)
    # where an input comes from without being judged (graph/dataflow.py)
    THROUGH_ONE_SIDED_OP = "through-one-sided-op"  # ("reference" or "target", the op on that side only)
    OUTPUT_NOT_HELD = "output-not-held"  # (op pair name, output slot, the sides whose dump lacks it)
    UNJUDGED_ORIGINS = "unjudged-origins"  # (THROUGH_ONE_SIDED_OP / OUTPUT_NOT_HELD reasons)
    INTO_INPUT = "into-input"  # (input slot, THROUGH_ONE_SIDED_OP / OUTPUT_NOT_HELD reasons)
    SINK_UNJUDGED = "sink-unjudged"  # (op name, paired: dumped on both sides without its outputs)
    MAP_OP_NOT_FOUND = "map-op-not-found"  # ("ref" or "target", the name the map file gives)
    MAP_ALREADY_PAIRED = "map-already-paired"  # (ref name, target name)
    IDENTICAL_FILES = "identical-files"  # ()
    UNREADABLE_SIDES = "unreadable-sides"  # ((side, Fault), ...): the pair's files that cannot be read
    # how a dump spells things: its variant (Dump.variant, formats/)
    MINDSPORE_NPY_VARIANT = "mindspore-npy-variant"  # (whether short op names (r1.3-2.3) name the files, DtypeSuffix)
    STATISTIC_CSV_VARIANT = "statistic-csv-variant"  # (StatisticHeader)
    MINDSPORE_BIN_VARIANT = "mindspore-bin-variant"  # (whether it has no device_{id} level: a CPU dump)
    MSPROBE_VARIANT = "msprobe-variant"  # (task, level, framework: dump.json's fields, cut short)
    NPY_FOLDER_VARIANT = "npy-folder-variant"  # ()
    CANN_RAW_VARIANT = "cann-raw-variant"  # (tree, RawNameStyles, RawLayouts, GE graph file or None, fused ops)
    # how a dump was read: its notes (formats/, ranks/)
    NO_GRAPH_FILE = "no-graph-file"  # ()
    ORDER_FROM_FILE_NAMES = "order-from-file-names"  # (whether a graph file is missing too, else timestamps)
    KERNELS_NOT_IN_ORDER = "kernels-not-in-order"  # (how many, the OrderSource they are not in)
    OTHER_GRAPHS_LEFT_OUT = "other-graphs-left-out"  # (how many ops, the graph chosen)
    KERNELS_NOT_IN_GRAPH = "kernels-not-in-graph"  # (how many, whether they kept their file names)
    GRAPH_NOT_READ = "graph-not-read"  # (graph id)
    GE_GRAPH_UNUSED = "ge-graph-unused"  # (file name)
    OVERFLOW_RECORDS = "overflow-records"  # (how many)
    DEVICE_LAYOUT_READ = "device-layout-read"  # (how many tensors)
    OVERFLOW_RECORD = "overflow-record"  # ()
    TWO_RUNS_UNTOLD = "two-runs-untold"  # ((twice, kernels), early stamps, late stamps, (names, more))
    TWO_RUNS_ONE_LEFT_OUT = "two-runs-one-left-out"  # ((twice, kernels), left stamps, older, ops, (names, more), kept)
    TWO_RUNS_NEITHER_WHOLE = "two-runs-neither-whole"  # ((twice, kernels), early stamps, late stamps, (names, more))
    RANK_NOTE = "rank-note"  # (rank, the rank's note)
    COMM_NO_PEER = "comm-no-peer"  # (Send/Receive ops naming no peer rank)
    RANKS_INTERLEAVED = "ranks-interleaved"  # (the ranks' OrderSource)
    GRAPH_ORDER_CYCLE = "graph-order-cycle"  # (a cycle of op positions the two graphs' orders make)
    CARRIED_NOISE = "carried-noise"  # ((NaN/Inf positions, relative error) or None)
    SELECTION_TOO_LARGE = "selection-too-large"  # (elements, limit)
    SELECTION_NOT_JUDGED = "selection-not-judged"  # (why)
    NOISE = "noise"  # (ops on one side only, their op types (4 at most), outputs in another dtype, low dtype)
    NOISY_PAIR = "noisy-pair"  # (NOISE or None, rounded inputs/weights, transformed ones)
    DATAFLOW_INFERRED = "dataflow-inferred"  # ()
    CLEAN_PAIR = "clean-pair"  # ()
    COMPARE_READS_ALL = "compare-reads-all"  # ()
    # hints: known causes (compare/hints.py)
    HINT_MOD = "hint-mod"  # (whether the reference uses FloorMod here)
    HINT_CONV_FP16 = "hint-conv-fp16"  # ()
    HINT_SATURATES = "hint-saturates"  # ()
    HINT_DISCONTINUOUS = "hint-discontinuous"  # (the discontinuous op types)
    HINT_ATTRIBUTES = "hint-attributes"  # ((attribute, reference value, target value), ...)
    HINT_DISCONTINUOUS_ROOT = "hint-discontinuous-root"  # (op type)
    # a saved session file that is not resumed (search/bisect/sessionfile.py)
    SESSION_UNREADABLE = "session-unreadable"  # (Fault of the error)
    SESSION_NOT_JSON = "session-not-json"  # (the parser's text)
    SESSION_NO_STEPS = "session-no-steps"  # ()
    SESSION_INVALID = "session-invalid"  # (the first three field reasons below)
    SESSION_NOT_OBJECT = "session-not-object"  # (field, its type name)
    SESSION_NOT_STRING = "session-not-string"  # (field, its type name or "missing")
    SESSION_NOT_ONE_OF = "session-not-one-of"  # (field, repr of its value, the values allowed)
    SESSION_DUMPS = "session-dumps"  # (): dumps is not an object with two paths
    SESSION_OPTION_UNKNOWN = "session-option-unknown"  # (option)
    SESSION_OPTION_KIND = "session-option-kind"  # (option, its type name)
    SESSION_OPTION_NOT_STRINGS = "session-option-not-strings"  # (option)
    SESSION_OTHER_DUMPS = "session-other-dumps"  # (saved ref, saved target, ref now, target now)
    # joining reasons
    ALSO = "also"  # (reason, reason, ...): said one after the other


@dataclass(frozen=True, slots=True)  # every result and local error holds one: no __dict__ each
class Reason:
    """A code and the values it rests on (numbers, names, codes, other reasons): hashable, so reasons
    compare and deduplicate as values."""

    code: Why
    args: tuple[object, ...] = ()

    def __str__(self) -> str:
        # a reason has no words of its own: an f-string or str() of one is a view that forgot to word it
        raise TypeError(f"a Reason ({self.code}) is worded by dumptui.report.reasons.say, not str()")

    def __format__(self, spec: str) -> str:
        raise TypeError(f"a Reason ({self.code}) is worded by dumptui.report.reasons.say, not format()")

    def also(self, *more: Reason) -> Reason:
        """This reason followed by `more` (an ALSO of them all, flattened)."""
        parts: list[object] = list(self.args) if self.code == Why.ALSO else [self]
        for m in more:
            parts.extend(m.args if m.code == Why.ALSO else (m,))
        return Reason(Why.ALSO, tuple(parts))


def because(code: Why, *args: object) -> Reason:
    """A reason of `code` resting on `args` (lists become tuples: a reason is a value). One without values is
    one shared object per code (a value: tens of thousands of `bitwise-equal` results hold the same one)."""
    if not args:
        bare = _BARE.get(code)
        return bare if bare is not None else _BARE.setdefault(code, Reason(code))
    return Reason(code, tuple(tuple(a) if isinstance(a, list) else a for a in args))


_BARE: dict[Why, Reason] = {}


NO_REASON = Reason(Why.UNCOMPARED)  # an analysis not yet classified: nothing could be compared yet

# what the engine says where words and reasons still meet (a reader's message, a name): report/reasons.py says both
Said: TypeAlias = Reason | Fault | str
