"""The words of the engine's reasons: the one place a `Reason` (a code and its values) becomes a sentence.

The engine says which rule decided and with which numbers (core/model/reason.py); every view — text, JSON,
CSV, the report, the app through present/ — words it here, so the same code and numbers give the same words
everywhere and a sentence cannot drift from the decision beside it. Each function takes the values in the
order `Why`'s comment lists them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping

from dumptui.core.compare.metrics import format_cos
from dumptui.core.compare.metrictable import Undefined
from dumptui.core.compare.noise import fmt_rel
from dumptui.core.compare.verdict import Verdict
from dumptui.core.formats.cann_file import RawLayout, RawNameStyle
from dumptui.core.formats.mindspore import DtypeSuffix
from dumptui.core.formats.statistic_csv import StatisticHeader
from dumptui.core.graph.pairedby import PairedBy
from dumptui.core.io.fault import Fault, FileKind, Flaw, JsonPart, NamePattern, set_wording
from dumptui.core.io.indexing_progress import Stage
from dumptui.core.io.limits import size_words
from dumptui.core.model.dump import FormatName, NameSource, OrderSource, SourceKind
from dumptui.core.model.reason import Reason, Why
from dumptui.core.search.bisect.types import CheckKind
from dumptui.core.search.localerror import Difference, DiffKind, ReplayProof
from dumptui.core.search.remedy import Remedy
from dumptui.core.search.replay.precision import LARGEST, Fit, PrecisionFinding, RemedyCause

SPARSE = 0.25  # up to this share of elements far off, the share is what a sentence says of an error


def say(r: Reason | Fault | Undefined | PairedBy | NameSource | OrderSource | str | None) -> str:
    """The sentence of a reason (a plain string is already words: a name, a reader's message)."""
    if r is None:
        return ""
    if isinstance(r, Fault):
        return say_fault(r)
    if isinstance(r, Undefined):  # before str: a code is a str too, and its text is not its words
        return UNDEFINED_WORDS[r]
    if isinstance(r, PairedBy):
        return PAIRED_WORDS[r]
    if isinstance(r, NameSource):
        return NAME_SOURCE_WORDS[r]
    if isinstance(r, OrderSource):
        return ORDER_SOURCE_WORDS[r]
    if isinstance(r, str):
        return r
    return _WORDS[r.code](*(_worded(a) for a in r.args))


def _worded(arg: object) -> object:
    """A reason's value as its words take it: a nested reason (at any depth of a tuple) already said."""
    if isinstance(arg, Reason | Fault | Undefined | PairedBy | NameSource | OrderSource):
        return say(arg)
    if isinstance(arg, tuple):
        return tuple(_worded(a) for a in arg)
    return arg


def say_all(rs: Iterable[Reason | Fault | str]) -> list[str]:
    return [say(r) for r in rs]


# why a metric is undefined (a value None beside its reason)
UNDEFINED_WORDS: dict[Undefined, str] = {
    Undefined.EMPTY: "empty tensor",
    Undefined.NO_FINITE_PAIR: "no element is finite on both sides",
    Undefined.REF_ZEROS: "reference is all zeros",
    Undefined.TARGET_ZEROS: "target is all zeros",
    Undefined.NO_REF_ABOVE_EPS: "no reference element has |y| > eps",
    Undefined.KL_NOT_ASKED: "not computed (ask for it: --kl)",
    Undefined.REF_CONSTANT: "reference is constant",
    Undefined.TARGET_CONSTANT: "target is constant",
}


def undefined_words(undefined: Mapping[str, Undefined]) -> dict[str, str]:
    """A pair's reasons for its undefined values, metric by metric, in words."""
    return {metric: UNDEFINED_WORDS[why] for metric, why in undefined.items()}


def _two_runs(head: tuple[int, int]) -> str:
    twice, kernels = head
    return f"two runs in one folder: {twice} of its {kernels} kernels have their tensors twice"


def _span(stamps: tuple[int, int]) -> str:
    return f"{stamps[0]}..{stamps[1]}"


def _some(names: tuple[tuple[str, ...], int]) -> str:
    shown, more = names
    return ", ".join(shown) + (f" and {more} more" if more else "")


# how an op's name was recovered, what gave a dump's order
NAME_SOURCE_WORDS: dict[NameSource, str] = {
    NameSource.FILE_NAME: "file name",
    NameSource.GRAPH: "execution order / graph",
    NameSource.GRAPH_SHORT: "execution order / graph (short name)",
    NameSource.GRAPH_COUNTER_ORDER: "graph (-opN counters offset: paired in counter order)",
    NameSource.GRAPH_COUNTER_ONLY: "execution order / graph (counter match only)",
    NameSource.GRAPH_PARAMETER: "graph parameter",
    NameSource.MODULE_PARAMETER: "module parameter",
    NameSource.DUMP_JSON: "dump.json",
    NameSource.GE_GRAPH: "GE graph",
    NameSource.DUMPDATA: "DumpData.op_name",
    NameSource.FUSED_GROUP: "fused group of the reference",
}
ORDER_SOURCE_WORDS: dict[OrderSource, str] = {
    OrderSource.FILE_NAMES: "file names",
    OrderSource.FILE_TIMESTAMPS: "file timestamps",
    OrderSource.EXECUTION_CSV: "execution order csv",
    OrderSource.GRAPH_TOPOLOGICAL: "graph topological order",
    OrderSource.GRAPH_NODES: "graph node order",
    OrderSource.DUMP_JSON: "dump.json order",
    OrderSource.FILE_MTIMES: "file modification times",
}
INFERRED_FLOW = "inferred from matching statistics in dump.json"  # where a dump's dataflow came from


# how two ops were paired
PAIRED_WORDS: dict[PairedBy, str] = {
    PairedBy.EXACT: "exact name",
    PairedBy.NORMALISED: "normalised name",
    PairedBy.COUNTER: "same scope and type, -opN differs",
    PairedBy.POSITION: "position in execution order, same type and shapes",
    PairedBy.RENAMED: "renamed at the same position and scope, same shapes and input values",
    PairedBy.MAPPED: "map file",
    PairedBy.DATAFLOW: "dataflow: same paired producers and consumers",
    PairedBy.DATAFLOW_RETYPED: "dataflow: same paired producers and consumers, another op type",
    PairedBy.GROUPED: "dataflow: a group of ops between the same paired neighbours",
    PairedBy.FUSED: "fused op: several ref ops, one target op",
    PairedBy.ONLY_REF: "only in ref",
    PairedBy.ONLY_TARGET: "only in target",
}


# what indexing is doing (the status line's and the CLI's progress): the stage and what it counts
STAGE_WORDS: dict[Stage, tuple[str, str]] = {
    Stage.FORMAT: ("finding the format", "files"),
    Stage.LISTING: ("listing tensor files", "files"),
    Stage.DUMP_JSON: ("reading dump.json", "calls"),
    Stage.GRAPH_FILES: ("reading the graph files", "lines"),
    Stage.DATAFLOW: ("linking the dataflow", "nodes"),
    Stage.CHECKING: ("checking tensor files", "files"),
    Stage.STORING: ("storing the index", "ops"),
    Stage.CACHE: ("reading the index cache", "ops"),
}


# ------------------------------------------------------------------------------------------ numbers in words
# how a dump spells things (Dump.variant's values)
DTYPE_SUFFIX_WORDS: dict[DtypeSuffix, str] = {
    DtypeSuffix.WITH: "with .{dtype} suffix",
    DtypeSuffix.WITHOUT: "without .{dtype} suffix",
    DtypeSuffix.MIXED: "mixed .{dtype} suffix",
}
STATISTIC_HEADER_WORDS: dict[StatisticHeader, str] = {
    StatisticHeader.V16_22: "1.6-2.2",
    StatisticHeader.L2_MD5: "1.6+ with L2 Value/MD5",
    StatisticHeader.CONFIGURABLE: "2.4+ configurable statistic_category",
    StatisticHeader.EMPTY: "empty",
}
CANN_TREE_WORDS: dict[str, str] = {  # formats/cann_locate.py's StepFolder.tree
    "acl": "ACL dump tree",
    "mindspore": "MindSpore async dump (rank tree)",
    "folder": "a folder of raw files",
}
RAW_NAME_WORDS: dict[RawNameStyle, str] = {
    RawNameStyle.CURRENT: "current",
    RawNameStyle.NO_STREAM: "no stream id (old CANN)",
    RawNameStyle.FFTS: "FFTS+",
}
RAW_LAYOUT_WORDS: dict[RawLayout, str] = {
    RawLayout.LENGTH_PREFIXED: "length-prefixed header",
    RawLayout.WHOLE_FILE: "whole-file DumpData",
}


def floor_words(dtype: str, floor: float) -> str:
    return f"{dtype} floor {fmt_rel(floor)}" if dtype else f"floor {fmt_rel(floor)}"


def fmt_gain(g: float | None) -> str:
    """A gain: `inf` only where it is infinite (an error out of inputs that agree exactly); `-` for none."""
    if g is None:
        return "-"
    return "inf" if math.isinf(g) else f"{g:.3g}"


def _off(dev: float) -> str:
    """A deviation in words: `inf` only where it is infinite, and then why (a finite max beside "off by inf"
    read as a contradiction: the exact result overflows the dtype, or NaN/Inf stand against finite values)."""
    if math.isfinite(dev):
        return f"{fmt_rel(dev)} (of its RMS)"
    return "an infinite error (NaN/Inf on one side where the other is finite: an overflow of its dtype)"


def replay_sentence(p: ReplayProof, ref_name: str = "reference", target_name: str = "target") -> str:
    """What a replay proves: how far each side's output is from the op recomputed on its own inputs."""
    text = (
        f"given its own inputs, the {target_name} output is off by {_off(p.dev_target)} "
        f"from what the op computes; the {ref_name}'s by {_off(p.dev_ref)}"
    )
    if 0 < p.tail_target <= SPARSE or 0 < p.tail_ref <= SPARSE:  # a sparse error: its share says it
        text += f"; elements far off: {p.tail_target:.1%} of the {target_name}'s, {p.tail_ref:.1%} of the {ref_name}'s"
    if p.sample:
        text += f" ({sample_words(p)})"
    return text


def sample_words(p: ReplayProof) -> str:
    """How far a sampled proof's numbers can be from the whole output's: the shares far off within three
    binomial standard errors (99.7 %; at least 3/n, the rule of three, where none was seen)."""
    n = p.sample
    margin = max(3 * math.sqrt(max(t * (1 - t), 0.0) / n) for t in (p.tail_ref, p.tail_target))
    return (
        f"compared at {n:,} of {p.elements:,} output positions drawn at random, fixed seed: the errors "
        f"within ±{p.error_margin:.0%} and the shares far off within ±{max(margin, 3 / n):.1%} "
        "of the whole output's at 99.7 %"
    )


def difference_words(d: Difference) -> str:
    """One difference of an op's definition: `op type Floor vs Trunc`, `attribute format: "NCHW" vs "NHWC"`,
    `constant input.1: 0.5 vs 500`."""
    if d.kind == DiffKind.OP_TYPE:
        return f"op type {d.ref} vs {d.target}"
    if d.kind == DiffKind.ATTRIBUTE:
        return f"attribute {d.name}: {d.ref} vs {d.target}"
    return f"constant input.{d.slot}: {d.ref} vs {d.target}"


def differences_words(differs: Iterable[Difference]) -> str:
    return "; ".join(difference_words(d) for d in differs)


def _differs(differs: tuple[Difference, ...], lead: str = "; ") -> str:
    return f"{lead}{differences_words(differs)}" if differs else ""


def _then(r: Reason | None) -> str:
    return f"; {say(r)}" if r is not None else ""


def _inputs(carried: float, floor: float) -> str:
    """What the inputs carry, in words that agree with the numbers beside them: "agree" within the noise
    floor; beyond it, the error they carry (noise carried in: no root upstream)."""
    if carried <= floor:
        return "inputs agree"
    return f"inputs carry {fmt_rel(carried)} (noise carried in, no root upstream)"


# ------------------------------------------------------------------------------------ the local-error rule
def _wiring(wiring: str, out_rel: float) -> str:
    return f"its inputs are wired otherwise than the reference's: {wiring}; output error {fmt_rel(out_rel)}"


def _blind(out_rel: float, blind: str) -> str:
    return f"its output is off by {fmt_rel(out_rel)}, but {blind}: what came in could not be judged"


def _cos_alarm(out_cos: float, cos: float, in_cos: float | None) -> str:
    ins = "its inputs agree exactly" if in_cos is None else f"its data inputs' lowest is {format_cos(in_cos)}"
    return f"cosine {format_cos(out_cos)} < --cos {cos} here, {ins}: the cosine alarm given"


def _replay_broken(p: ReplayProof, differs: tuple[Difference, ...]) -> str:
    return replay_sentence(p) + _differs(differs)


def _replay_matches(p: ReplayProof, unjudged: Reason | None) -> str:
    return "matches the op recomputed on its own inputs: " + replay_sentence(p) + _then(unjudged)


def _sparse(
    out_tail: float,
    in_tail: float,
    dtype: str,
    floor: float,
    out_rel: float,
    differs: tuple[Difference, ...],
    note: str,
) -> str:
    src = "none of its inputs' elements are" if in_tail == 0 else f"{in_tail:.1%} of its inputs' are"
    extent = "a sparse error" if out_tail <= SPARSE else "an error"
    text = (
        f"{extent}: {out_tail:.1%} of its output elements are off by more than 10x the "
        f"{floor_words(dtype, floor)} ({src}); the trimmed mean error is {fmt_rel(out_rel)}"
    ) + _differs(differs)
    return text + (f" ({note})" if note else "")


def _gain(
    carried: float,
    out_rel: float,
    dtype: str,
    floor: float,
    g_rel: float,
    g_abs: float,
    differs: tuple[Difference, ...],
    replay: ReplayProof | None,
    note: str,
) -> str:
    src = "inputs agree" if carried == 0 else f"inputs carry {fmt_rel(carried)}"
    text = (
        f"{src}, output error {fmt_rel(out_rel)} > {floor_words(dtype, floor)}: error grows x{fmt_gain(g_rel)} "
        f"here (x{fmt_gain(g_abs)} in absolute terms)"
    ) + _differs(differs)
    if replay is not None:
        return text + f" (replay inconclusive: the reference deviates {fmt_rel(replay.dev_ref)} from it)"
    return text + (f" ({note})" if note else "")


def _gain_below(
    out_rel: float, g_rel: float, gain: float, differs: tuple[Difference, ...], unjudged: Reason | None
) -> str:
    text = f"output error {fmt_rel(out_rel)}, x{fmt_gain(g_rel)} what its inputs carry (< x{gain:g}): carried in"
    return text + _differs(differs, "; note: ") + _then(unjudged)


def _unjudged_carried(carried: float, where: str) -> str:
    return f"the error carried in ({fmt_rel(carried)}) comes {where}, which could not be judged"


def _blind_undecided(name: str, why: Reason) -> str:
    return (
        f"{name}: {say(why)}; whether its error is born there or came in cannot be told (see the files that "
        "could not be read or placed)"
    )


def _unjudged_undecided(name: str, carried: float, where: str) -> str:
    return (
        f"{name} carries {fmt_rel(carried)} of error that came {where}: an op on one side only, or one whose "
        "output one dump does not hold, cannot be judged (pair it with --map, dump it on both sides, or see the "
        "files that could not be read or placed)"
    )


# ---------------------------------------------------------------------------------------- the culprit check
def _output_unreadable_inputs_agree(label: str, why: str) -> str:
    return (
        f"{label} could not be judged: its output is unreadable ({why}); its inputs agree and the op that reads "
        "it diverges, so the divergence is born there or just after it"
    )


def _agrees_yet_read_differs(label: str, verdicts: tuple[str, ...]) -> str:
    return (
        f"{label} agrees ({', '.join(verdicts)} outputs), yet the op that reads it saw a differing input: that "
        "input is missing, unreadable or judged otherwise in one dump, so where the divergence is born cannot "
        "be told"
    )


def _output_unreadable(label: str, why: str, caveats: tuple[Reason, ...]) -> str:
    return f"{label} could not be judged: its output is unreadable ({why})" + "".join(f"; {say(c)}" for c in caveats)


def _only_carries(label: str, slots: tuple[int, ...], why: Reason) -> str:
    ins = ", ".join(f"input.{s}" for s in slots)
    return f"{label} only carries error that came in through {ins} ({say(why)})"


def _unproduced_differs(origin: str, names: tuple[str, ...], slot: int, why: str) -> str:
    origin = "input from outside the dump" if origin == SourceKind.INPUT else origin
    what = f"{origin} {'/'.join(names)} (input.{slot})" if names else f"{origin} input.{slot}"
    return f"{what} differs ({why})"


def _producer_one_sided(slot: int, ref_missing: bool, target_missing: bool, name: str) -> str:
    side = "target-only" if ref_missing else ("reference-only" if target_missing else "unprobed")
    return f"input.{slot} diverges; it is produced by {side} op {name}: that op is the likely cause"


def _producer_unknown(slot: int, why: str, has_graph: bool) -> str:
    return f"input.{slot} diverges ({why}) and its producer is unknown" + ("" if has_graph else " (no graph)")


def _output_unread_unknown(sink: str, why: str, agreeing: int) -> str:
    checked = f"the {agreeing} last readable outputs before it agree" if agreeing else "no readable output before it"
    return f"graph output {sink} cannot be read ({say(why)}) and {checked}: whether the network diverges is unknown"


def _beyond_rounding(numbers: Reason | str, kind: CheckKind) -> str:
    advice = {
        CheckKind.NETWORK_INPUT: "check the preprocessing (the field guide's first precondition)",
        CheckKind.PARAMETER: "check the checkpoint and its conversion",
    }.get(kind, "no dumped op produces it: a weight (check the checkpoint) or an input from outside the dump")
    return f"differs by more than fp16/bf16 rounding would explain; {say(numbers)}: {advice}"


def _probe(parts: tuple[tuple[object, ...], ...], op_verdict: Verdict) -> str:
    said = []
    for part in parts:
        if len(part) == 4:
            label, verdict, cos, max_abs = part
            big = f"{max_abs:.3g}" if isinstance(max_abs, float) else "undefined"
            said.append(f"{label} {verdict} (cos {format_cos(cos)}, max abs {big})")  # type: ignore[arg-type]
        else:
            label, verdict, why = part
            said.append(f"{label} {verdict}" + (f" ({say(why)})" if why is not None else ""))  # type: ignore[arg-type]
    return "; ".join(said) or op_verdict


def _blind_inputs(inputs: tuple[tuple[int, Verdict, Reason | str], ...]) -> str:
    said = []
    for slot, verdict, why in inputs:
        if verdict == Verdict.SHAPE_MISMATCH:
            said.append(f"input.{slot} differs in shape between the sides ({say(why)})")
            continue
        where = (
            "unreadable"
            if verdict == Verdict.UNREADABLE
            else f"dumped in the {'reference' if verdict == Verdict.ONLY_REF else 'target'} only"
        )
        said.append(f"input.{slot} is {where} ({say(why)})")
    return "; ".join(said)


# ----------------------------------------------------------------------------------------------- the remedy
def _f(v: float) -> str:
    return "inf" if math.isinf(v) else ("nan" if math.isnan(v) else f"{v:.2e}")


# what the device does in each precision variant (replay/precision.py VARIANTS), given its dtype
PRECISION_VARIANT_WORDS = {
    "io": "{dtype} inputs and output (saturating at {largest:g}), computed exactly between",
    "io-inf": "{dtype} inputs and output (overflow to inf), computed exactly between",
    "accumulate": "{dtype} accumulation, element after element (saturating)",
    "unshifted": "exp(x) in {dtype} without subtracting the maximum (saturating)",
}


def variant_words(f: PrecisionFinding) -> str:
    """The device-precision variant of a finding in words ("" when none)."""
    if not f.variant:
        return ""
    return PRECISION_VARIANT_WORDS[f.variant].format(dtype=f.dtype, largest=LARGEST.get(f.dtype, 0.0))


def finding_sentence(f: PrecisionFinding) -> str:
    """What the device-precision replay found (replay/precision.py), with its numbers."""
    if f.cause == RemedyCause.PRECISION:
        if f.how == Fit.REPRODUCES:
            return (
                f"precision: the op at {variant_words(f)}, from the reference's inputs, reproduces the target's "
                f"output (off by {_f(f.dev_device)} of its RMS, within the {f.dtype} floor "
                f"{_f(f.floor)}; the exact op is off by {_f(f.dev_exact)}): keep it in float32"
            )
        return (
            f"precision: the op at {variant_words(f)}, from the reference's inputs, errs by {_f(f.dev_replay)} "
            f"of its RMS, the same size as the target's {_f(f.dev_exact)} (another summation order rounds "
            "differently): keep it in float32"
        )
    if f.cause == RemedyCause.SEMANTICS:
        return (
            f"not precision: at {f.dtype} the op, from the reference's inputs, is off by "
            f"{_f(f.dev_replay)} of its RMS, the target by {_f(f.dev_exact)}; the target computes "
            "another function (its implementation or definition differs): the remedy is the op"
        )
    if f.cause == RemedyCause.INPUT:
        return f"not the op: {say(f.note)}"
    if f.cause == RemedyCause.WIRING:
        return (
            f"not the op: it computes what it should from what it gets, but the target's graph feeds it "
            f"other inputs ({say(f.note)}): the remedy is the graph (the converter, or the model code that "
            "builds it)"
        )
    return f"precision or semantics not decided: {say(f.note)}"


def remedy_sentence(r: Remedy) -> str:
    """A culprit's remedy: what the replay found, then what to change where the finding does not say it."""
    return finding_sentence(r.finding) + (f"; {say(r.change)}" if r.change is not None else "")


# ----------------------------------------------------------------------------------- transformed weights
def _g(v: float) -> str:
    return f"{v:.3g}" if math.isfinite(v) else "undefined"


def _channel(part: tuple) -> str:
    kind, c = part[0], part[1]
    if kind == "bias":
        return f"channel {c}: folded bias {_g(part[2])}, the reference's fold gives {_g(part[3])}"
    if kind == "variance":
        var, ref_var, whose, ratio = part[2:]
        return (
            f"channel {c}: folded with variance {_g(var)}, the reference's is {_g(ref_var)}"
            + (f" (channel {whose}'s)" if whose is not None else "")
            + f"; scale x{ratio:.3g} of γ/√(σ²+ε)"
        )
    if kind == "scale":
        scale, ratio, folded, best = part[2:]
        return (
            f"channel {c}: scale {_g(scale)} dequantises to x{ratio:.3g} the reference weight"
            f"{' (folded)' if folded else ''}; its int8 values imply scale {_g(best)}"
        )
    return f"channel {c}: off by {part[2]:.3g} quantisation steps, which no scale explains (the int8 values themselves differ)"


def _channels(parts: tuple, more: int) -> str:
    return "; ".join(_channel(p) for p in parts) + (f"; and {more} more channels" if more > 0 else "")


# ---------------------------------------------------------------------------------------------- the scan
def _error(err: tuple[int, float]) -> str:
    """A tensor's error: where NaN/Inf differ, else its trimmed mean error relative to its RMS."""
    nonfinite, rel = err
    return f"NaN/Inf differ at {nonfinite} positions" if nonfinite else f"error {fmt_rel(rel)} of its RMS"


def _noise(one_sided: int, types: tuple[str, ...], mixed: int, low: str | None) -> str:
    parts = []
    if one_sided:
        parts.append(f"{one_sided} ops on one side only ({', '.join(types)})")
    if mixed:
        parts.append(f"{mixed} outputs in another dtype on the target")
    if low is not None:
        parts.append(f"the target computes in {low}")
    return "; ".join(parts)


def _noisy_pair(noise: str | None, rounded: tuple[str, ...], transformed: tuple[str, ...]) -> str:
    parts = [noise] if noise else []
    for words, names in (("rounded", rounded), ("transformed", transformed)):
        if names:
            named = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
            parts.append(f"{len(names)} inputs/weights {words} ({named})")
    return "noisy pair: " + "; ".join(parts)


_WORDS: dict[Why, Callable[..., str]] = {
    Why.UNCOMPARED: lambda: "its outputs could not be compared",
    Why.WIRING: _wiring,
    Why.BLIND: _blind,
    Why.COS_ALARM: _cos_alarm,
    Why.WITHIN_FLOOR: lambda dtype, floor: f"output within the {floor_words(dtype, floor)}",
    Why.REPLAY_BROKEN: _replay_broken,
    Why.REPLAY_MATCHES: _replay_matches,
    Why.SPARSE: _sparse,
    Why.GAIN: _gain,
    Why.GAIN_BELOW: _gain_below,
    Why.SELECTION: str,  # report/selection.py says what the selection did, from its proof
    Why.UNJUDGED_CARRIED: _unjudged_carried,
    Why.BLIND_UNDECIDED: _blind_undecided,
    Why.UNJUDGED_UNDECIDED: _unjudged_undecided,
    Why.OUTPUT_UNREADABLE_INPUTS_AGREE: _output_unreadable_inputs_agree,
    Why.INPUT_CARRIES: lambda slot, name, why: f"input.{slot} of {name} carries the error ({why})",
    Why.AGREES_YET_READ_DIFFERS: _agrees_yet_read_differs,
    Why.OUTPUT_UNREADABLE: _output_unreadable,
    Why.ONLY_CARRIES: _only_carries,
    Why.INPUTS_AGREE_OUTPUTS_DIVERGE: lambda carried, floor: f"{_inputs(carried, floor)}, outputs diverge",
    Why.OUTPUTS_AND_UNPRODUCED_DIVERGE: lambda: (
        "its outputs diverge, and so do inputs it does not produce (see caveats)"
    ),
    Why.BORN_HERE: lambda why: "error is born here: " + say(why),
    Why.OUTPUTS_DIVERGE: lambda: "outputs diverge",
    Why.OWN_OUTPUT_UNREADABLE: lambda why: f"its output could not be read ({why})",
    Why.UNPRODUCED_DIFFERS: _unproduced_differs,
    Why.OTHER_INPUTS: lambda carried, floor: f"its other {_inputs(carried, floor)}",
    Why.DEFINITION_DIFFERS: lambda differs: f"its definition differs ({differences_words(differs)})",
    Why.OUTPUT_NOT_JUDGED: lambda label, tensor, why: (
        f"{label} {tensor} could not be read ({why}): that op could not be judged"
    ),
    Why.INPUT_NOT_GOOD: lambda slot, verdict, why: f"input.{slot}: {verdict} ({why})",
    Why.PRODUCER_MARKED_GOOD: lambda slot, name: (
        f"input.{slot} diverges, yet its producer {name} was marked good: check that mark (u undoes it)"
    ),
    Why.PRODUCER_ONE_SIDED: _producer_one_sided,
    Why.PRODUCER_UNKNOWN: _producer_unknown,
    Why.SIDE_INPUTS_UNCHECKED: lambda n: f"{n} more side inputs of the diverged region not checked",
    Why.USER_MARK_CONFLICT: lambda label, verdicts: (
        f"{label} was marked bad by you, but its outputs agree ({', '.join(verdicts)}): no root can be named "
        "below your mark (u undoes it)"
    ),
    Why.SEARCH_ENDED: lambda name, why: f"the search ended at {name}, no root: {say(why)}",
    Why.BIRTH_UNTOLD: lambda why: f"{say(why)}: where it is born could not be told",
    Why.CONTINUING: lambda why: f"{say(why)}: continuing from its producer",
    Why.EVERYTHING_IGNORED: lambda reasons: (
        f"every op's outputs are ignored ({'; '.join(say_all(reasons))}): nothing was judged, so there is no answer"
    ),
    Why.MORE_OUTPUTS_UNREAD: lambda n: f"{n} more outputs could not be read: those ops could not be judged",
    Why.FILE_UNREAD: lambda path, why: (
        f"{path} could not be read whole ({why}): the ops it holds could not all be judged"
    ),
    Why.MORE_FILES_UNREAD: lambda n: (
        f"{n} more files could not be placed or opened: the ops they belong to could not be judged"
    ),
    Why.NOTHING_PAIRED: lambda: "no op is dumped on both sides: nothing to bisect",
    Why.NOTHING_TO_BISECT: lambda: "nothing to bisect: no op is dumped with outputs on both sides",
    Why.MORE_SINKS_UNCHECKED: lambda n: f"{n} other graph outputs not checked (use `compare`)",
    Why.GRAPH_OUTPUT: lambda detail: "graph output: " + say(detail),
    Why.LAST_READABLE: lambda sink, detail: f"last readable output before {sink}: {say(detail)}",
    Why.SEARCHED_FROM: lambda sink, why, start: f"graph output {sink} unreadable ({say(why)}): searched from {start}",
    Why.OUTPUT_UNREAD_UNKNOWN: _output_unread_unknown,
    # a tensor pair's verdict
    Why.EMPTY_TENSOR: lambda: "empty tensor",
    Why.BITWISE_EQUAL: lambda: "bitwise equal",
    Why.VALUES_EQUAL: lambda: "values equal (dtypes or NaN payloads differ)",
    Why.NONFINITE_MISMATCH: lambda n: f"NaN/Inf at different positions ({n} elements)",
    Why.NO_FINITE_PAIR: lambda: "no element is finite on both sides",
    Why.COS_BELOW: lambda cos, limit: f"cosine {cos:.6f} < {limit}",
    Why.ERROR_ABOVE_FLOOR: lambda err, dtype, floor, zeros: (
        f"error {fmt_rel(err)} of its RMS > {floor_words(dtype, floor)}" + (f"; {zeros}" if zeros else "")
    ),
    Why.OFF_SHARE_ABOVE: lambda share, factor, dtype, floor, max_off: (
        f"{share:.1%} of elements off by more than {factor}x the {floor_words(dtype, floor)} (limit {max_off:.0%})"
    ),
    Why.ERROR_WITHIN_FLOOR: lambda err, dtype, floor: f"error {fmt_rel(err)} of its RMS <= {floor_words(dtype, floor)}",
    Why.STAT_NONFINITE: lambda key, a, b: f"{key} {a} vs {b}",
    Why.STAT_NONFINITE_COUNT: lambda key, a, b: f"{key} count {a} vs {b}",
    Why.NO_STATISTIC: lambda: "no statistic available on both sides",
    Why.STATISTICS_IDENTICAL: lambda: "all statistics identical",
    Why.STAT_WITHIN: lambda worst, key, lim: f"largest relative difference {worst:.3g} ({key}) <= {lim:.3g}",
    Why.STAT_DIFFERS: lambda key, worst, lim: f"{key} differs by {worst:.3g} relative (limit {lim:.3g})",
    Why.STATISTICS_ONLY: lambda why: "statistics only: " + say(why),
    Why.DTYPES_INCOMPARABLE: lambda rd, td: f"dtypes {rd} vs {td} cannot be compared",
    Why.SHAPES_INCOMPARABLE: lambda rs, ts, rn, tn: f"shapes {list(rs)} vs {list(ts)} ({rn} vs {tn} elements)",
    Why.SHAPES_DIFFER: lambda rs, ts, why: f"shapes {list(rs)} vs {list(ts)}; values: {say(why)}",
    Why.IGNORED_BY_USER: lambda spec: f"ignored by the user ({spec})",
    Why.BATCHNORM_UNINITIALISED: lambda: (
        "BatchNorm in inference: outputs 1-4 are uninitialised memory and differ run to run"
    ),
    # the preconditions
    Why.ONE_SIDED: lambda: "dumped on one side only",
    Why.CARRIED_FROM_STEP: lambda step, level, err, numbers: (
        f"carried from step {step}: this rank already differed there (up to {fmt_rel(level)}), and the optimizer "
        f"updated the weights with it; its error {fmt_rel(err)}; {say(numbers)}"
    ),
    Why.WRITTEN_AFTER_UPDATE: lambda op, numbers: (
        f"updated in this step: the file holds what {op} wrote (judged there), not the value the step read; "
        f"{say(numbers)}"
    ),
    Why.TRANSFORM_VERIFIED: lambda what, numbers: f"{say(what)}; {say(numbers)} against the untransformed weight",
    Why.TRANSFORM_WRONG: lambda what, transform: f"{say(what)}: check the conversion ({transform})",
    Why.CARRIED_FLOWING: lambda err, level, source, gain, numbers: (
        f"carried: its error {fmt_rel(err)} is at the level of the error already flowing "
        f"({fmt_rel(level)} at {source}, x{gain:g} allowed): computed outside the dump from what the network "
        f"carries (a view, a split, a cast msprobe does not record); {say(numbers)}"
    ),
    Why.STATISTICS_AGREE: lambda dtype, worst, floor: (
        f"statistics agree within the {dtype} noise floor ({fmt_rel(worst)} <= {fmt_rel(floor)}); "
        "statistics only, a weaker check than tensors"
    ),
    Why.CLOSE_LOWER_PRECISION: lambda low, numbers: (
        f"close; computed in {'/'.join(low)} on one side (a precision change upstream); {say(numbers)}"
    ),
    Why.ROUNDING_ONLY: lambda fmt, numbers: (
        f"differs only by {fmt} rounding (as a deliberate {fmt} conversion would give); {say(numbers)}"
    ),
    Why.BEYOND_ROUNDING: _beyond_rounding,
    Why.GOES_NO_FURTHER: lambda why, name: f"{say(why)}; it goes no further: every output of {name} is equal",
    Why.NETWORK_INPUT_DIFFERS: lambda name: f"the network input {name} differs: check the preprocessing",
    Why.TRANSFORMED_PARAMETER: lambda name, why: f"parameter {name}: {say(why)}",
    Why.PARAMETER_DIFFERS: lambda name: f"parameter {name} differs: check the checkpoint and its conversion",
    Why.UNPRODUCED_INPUT_DIFFERS: lambda name: (
        f"input {name}, which no dumped op produces, differs (a weight, or computed outside the dump)"
    ),
    Why.NUMBERS: lambda cos, max_abs: (
        f"cos {format_cos(cos)}, max abs {max_abs:.3g}" if max_abs is not None else f"cos {format_cos(cos)}"
    ),
    Why.PROBE: _probe,
    Why.BLIND_INPUTS: _blind_inputs,
    Why.RESIZED_BY_FLIP: lambda slots, site: (
        f"{', '.join(f'input.{s}' for s in slots)} differs in size between the sides as the selection {site} "
        "upstream flipped on near-ties (each side selecting from its own inputs): carried, not born here"
    ),
    Why.FOLLOWS_RESIZING_FLIP: lambda slots, site, note: (
        f"{', '.join(f'input.{s}' for s in slots)} differs in size between the sides as the selection {site} "
        "upstream flipped on near-ties: carried, following that flip's change of size, not born here (its "
        f"elements cannot be paired with the reference's, and no replay checks it{': ' + say(note) if note else ''})"
    ),
    Why.BENIGN_CHECK: lambda kind, name, why: f"{kind} {name}: {say(why)}",
    Why.LARGEST_CARRIED: lambda err, name: (
        f"largest output error {fmt_rel(err)} of its RMS at {name}, carried from precision noise (no op creates "
        "error beyond its inputs' noise)"
    ),
    Why.MARKED_BY_USER: lambda: "marked by the user",
    Why.NO_REPLAY_FOR: lambda op_type: f"no replay for {op_type}",
    Why.NO_REPLAY_WITHOUT_DATA: lambda: "no replay: statistics only (no tensor data)",
    Why.NO_REPLAY_BACKWARD: lambda op_type: f"no replay of a backward call (the gradients of {op_type})",
    Why.OUTPUT_NOT_ON_BOTH: lambda: "output.0 is not dumped on both sides",
    Why.TOO_LARGE_TO_REPLAY: lambda: "too large to replay here",
    Why.COULD_NOT_READ: lambda e: f"could not read: {e}",
    Why.NO_REPLAY: lambda e: f"no replay: {e}",
    Why.REPLAY_FAILED: lambda e: f"replay failed: {e}",
    Why.REPLAY_GIVES_TARGET: lambda dev: (
        f"from the reference's inputs the op gives the target's output (off by {_f(dev)}): the difference comes "
        "in through its inputs"
    ),
    Why.CHANGE_ATTRIBUTES: lambda attrs: (
        f"the target's op is defined with other graph attributes ({attrs}): fix its definition"
    ),
    Why.CHANGE_TO_FLOORMOD: lambda target, ref: (
        f"the target runs {target} where the reference runs {ref}; use ops.FloorMod (ops.Mod differs between "
        "Ascend310 and Ascend910)"
    ),
    Why.CHANGE_TO_REFERENCE_OP: lambda target, ref: (
        f"the target runs {target} where the reference runs {ref}: use the reference's op"
    ),
    Why.CHECK_DISCONTINUOUS: lambda target: f"check how the device's {target} is defined (a discontinuous op)",
    Why.KERNEL_DIFFERS: lambda target: (
        f"the device's {target} kernel computes another function: report it, or replace the op"
    ),
    Why.NO_SUCH_TENSOR: lambda ref_lacks: "no such tensor in the " + ("reference" if ref_lacks else "target"),
    Why.REPAIRED: lambda side, what: f"{side}: repaired data, {what}",
    Why.DTYPES_DIFFER: lambda rd, td: f"dtypes differ: {rd} vs {td} (compared as values)",
    Why.SHAPES_DIFFER_NOTE: lambda rs, ts: f"shapes differ: {list(rs)} vs {list(ts)}, compared element by element",
    Why.ON_STATISTICS: lambda: "compared on statistics (max/min/mean/L2), a weaker check than on tensors",
    Why.SCALE_OF: lambda transform, op: f"the {transform} scale of {op}, verified with it",
    Why.FOLDED_INTO: lambda op: f"folded into {op} by the target (verified with it)",
    Why.FOLDED_BIAS: lambda: "the folded BatchNorm's bias β − μ·γ/√(σ²+ε), verified",
    Why.FOLD_EPSILON: lambda eps, ref_eps: (
        f"folded BatchNorm with epsilon {eps:.3g}, the reference's is {ref_eps:.3g} (every channel's folded scale "
        "implies it)"
    ),
    Why.FOLD_WRONG: lambda parts, more: "folded BatchNorm wrong on " + _channels(parts, more),
    Why.WORST_ROUNDING: lambda worst, dtype: f"largest deviation {worst:.2g} units of {dtype} rounding",
    Why.WORST_STEP: lambda worst: f"largest deviation {worst:.2g} of a step",
    Why.QUANTISED_WRONG: lambda transform, parts, more: f"{transform} weight wrong on " + _channels(parts, more),
    Why.QUANTISED_OK: lambda transform, channels, folded, worst: (
        f"{transform}: dequantised with its scales, every one of {channels} channels is within half a "
        f"quantisation step of the reference's {'folded ' if folded else ''}weight ({worst})"
    ),
    Why.FOLD_OK: lambda channels, dtype, worst: (
        "folded BatchNorm (W·γ/√(σ²+ε), bias β − μ·γ/√(σ²+ε)) recomputed from the reference's parameters: "
        f"every one of {channels} channels agrees within {dtype} rounding ({worst})"
    ),
    Why.AGAINST_TRANSFORMED_WEIGHT: lambda transform: f"compared with the reference's weight transformed ({transform})",
    Why.AGAINST_SCALED_OUTPUT: lambda: (
        "compared with the reference's output scaled per channel by its BatchNorm's γ/√(σ²+ε) (folded)"
    ),
    Why.WIRED: lambda pairs: "; ".join(f"input.{k} carries the reference's input.{j}" for k, j in pairs),
    Why.OUTPUT_SLOT_NOT_ON_BOTH: lambda slot: f"output.{slot} is not dumped on both sides",
    Why.NOT_REPLAYED_SIZE: lambda n, limit: f"not replayed: {n} input elements (limit {limit})",
    Why.REPLAY_NO_OUTPUT: lambda op_type, slot: f"the replay of {op_type} gives no output.{slot}",
    Why.CARRIES_REF_INPUT: lambda j: f"carries the reference's input.{j}: wired otherwise",
    Why.THROUGH_ONE_SIDED_OP: lambda side, name: f"through the {side}-only op {name}",
    Why.OUTPUT_NOT_HELD: lambda name, slot, missing: (
        f"from {name}, whose output.{slot} the {' and '.join(missing)} dump does not hold"
    ),
    Why.UNJUDGED_ORIGINS: " and ".join,
    Why.INTO_INPUT: lambda slot, origins: " and ".join(f"into input.{slot} {words}" for words in origins),
    Why.MAP_OP_NOT_FOUND: lambda side, name: f"map file: {side} op {name} not found",
    Why.MAP_ALREADY_PAIRED: lambda a, b: f"map file: {a} or {b} is already paired",
    Why.IDENTICAL_FILES: lambda: "bitwise equal (identical files)",
    Why.MINDSPORE_NPY_VARIANT: lambda short, suffix: (
        ("short op names in file names (r1.3-2.3 style)" if short else "full scope names in file names")
        + ", "
        + DTYPE_SUFFIX_WORDS[suffix]
    ),
    Why.STATISTIC_CSV_VARIANT: lambda header: f"statistic.csv only ({STATISTIC_HEADER_WORDS[header]})",
    Why.MINDSPORE_BIN_VARIANT: lambda cpu: (
        "MindSpore 1.x synchronous dump (raw .bin files, dtype and shape in the file names)"
        + (", no device_{id} level (CPU)" if cpu else "")
    ),
    Why.MSPROBE_VARIANT: lambda task, level, framework: f"msprobe task {task}, level {level}, framework {framework}",
    Why.NPY_FOLDER_VARIANT: lambda: "one tensor per .npy file, op names from file names",
    Why.CANN_RAW_VARIANT: lambda tree, names, layouts, graph, fused: "; ".join(
        [
            f"CANN raw dump files, {CANN_TREE_WORDS[tree]}",
            "names: " + ", ".join(sorted(RAW_NAME_WORDS[n] for n in names)),
            "layout: " + ", ".join(sorted(RAW_LAYOUT_WORDS.get(lay, "") for lay in layouts)),
        ]
        + ([f"GE graph {graph}" + (f", {fused} fused ops" if fused else "")] if graph is not None else [])
    ),
    Why.NO_GRAPH_FILE: lambda: "no graph file: inputs cannot be traced to their producers",
    Why.ORDER_FROM_FILE_NAMES: lambda no_graph: (
        "no execution-order csv and no graph file: order follows file names"
        if no_graph
        else "no timestamps and no execution-order csv: order follows file names"
    ),
    Why.KERNELS_NOT_IN_ORDER: lambda n, source: f"{n} kernels not in the {source}: placed last, by file name",
    Why.OTHER_GRAPHS_LEFT_OUT: lambda n, graph: f"{n} ops of other graphs left out (--graph {graph})",
    Why.KERNELS_NOT_IN_GRAPH: lambda n, kept: (
        f"{n} kernels not found in the graph file" + (" (kept their file names)" if kept else "")
    ),
    Why.GRAPH_NOT_READ: lambda g: f"graph {g} not read (choose it with --graph {g})",
    Why.GE_GRAPH_UNUSED: lambda name: f"GE graph {name} names none of the dumped ops: not used",
    Why.OVERFLOW_RECORDS: lambda n: (
        f"{n} overflow record{'s' if n > 1 else ''} (Opdebug files): an op "
        "overflowed in this step; they are listed with the warnings, not compared"
    ),
    Why.DEVICE_LAYOUT_READ: lambda n: (
        f"{n} tensors stored in a device layout (trans_flag false): read in the graph's shape"
    ),
    Why.RANK_NOTE: lambda rank, note: f"rank {rank}: {note}",
    Why.OVERFLOW_RECORD: lambda: (
        "overflow record (Opdebug): an op overflowed in this step; listed here, not compared as an op"
    ),
    Why.TWO_RUNS_UNTOLD: lambda head, early, late, twice: (
        f"{_two_runs(head)} (every one), one set stamped {_span(early)}, the other {_span(late)}; which "
        "run this dump is cannot be told: the answer compares the earlier one only: remove the other run's "
        f"files and compare again (twice: {_some(twice)})"
    ),
    Why.TWO_RUNS_ONE_LEFT_OUT: lambda head, left, older, n, names, kept: (
        f"{_two_runs(head)}: the files stamped {_span(left)} ({'older' if older else 'newer'}, {n} ops) are "
        f"another run's and were left out: {_some(names)}; the run compared is the whole one, stamped "
        f"{_span(kept)}: remove the other run's files and compare again"
    ),
    Why.TWO_RUNS_NEITHER_WHOLE: lambda head, early, late, twice: (
        f"{_two_runs(head)}, one set stamped {_span(early)}, the other {_span(late)}, and neither run is whole: "
        f"both are compared as calls of the kernels: remove the other run's files and compare again (twice: "
        f"{_some(twice)})"
    ),
    Why.COMM_NO_PEER: lambda n: f"{n} Send/Receive ops name no peer rank (dest_rank/src_rank): not used to order ranks",
    Why.RANKS_INTERLEAVED: lambda source: f"{source}, ranks interleaved by communication ops",
    Why.GRAPH_ORDER_CYCLE: lambda cycle: (
        f"the graphs disagree on the order of some ops (cycle {[list(c) for c in cycle]}): bisecting linearly"
    ),
    Why.SINK_UNJUDGED: lambda name, paired: (
        f"{name} ends the reference's graph and is dumped "
        + ("without its outputs on both sides" if paired else "in the reference only")
        + ": whether the output diverges there could not be judged"
    ),
    Why.COMES_UNJUDGED: lambda err, where: (
        (f"{_error(err)}; " if err is not None else "") + f"it comes {where}, which could not be judged"
    ),
    Why.CARRIED_NOISE: lambda err: (
        (f"{_error(err)}, " if err is not None else "") + "carried precision noise (no root of divergence upstream)"
    ),
    Why.SELECTION_TOO_LARGE: lambda n, limit: f"selection not judged: {n} elements (limit {limit})",
    Why.SELECTION_NOT_JUDGED: lambda why: f"selection not judged: {why}",
    Why.NOISE: _noise,
    Why.NOISY_PAIR: _noisy_pair,
    Why.DATAFLOW_INFERRED: lambda: "the dataflow is inferred from the records, not read from a graph: every op judged",
    Why.CLEAN_PAIR: lambda: "clean pair: same dtypes, same ops, equal inputs and weights",
    Why.COMPARE_READS_ALL: lambda: "compare reads every op",
    Why.HINT_MOD: lambda floormod_in_ref: (
        "ops.Mod gives different results on Ascend310 and Ascend910 for the same inputs; ops.FloorMod is the "
        "suggested replacement" + (" (the reference uses FloorMod here)" if floormod_in_ref else "")
    ),
    Why.HINT_CONV_FP16: lambda: (
        "Ascend310 runs Conv2D in fp16 (a Cast to fp16 before it and back after): expect cosine about 0.9999, not 1"
    ),
    Why.HINT_SATURATES: lambda: (
        "through an fp16 Exp, Sigmoid saturates: many identical outputs, usually harmless for the final result"
    ),
    Why.HINT_DISCONTINUOUS: lambda types: (
        f"{'/'.join(types)} is discontinuous: tiny benign input noise can move some outputs by a whole step"
    ),
    Why.HINT_ATTRIBUTES: lambda items: (
        "graph attributes differ between the two sides: " + ", ".join(f"{k}: {a} vs {b}" for k, a, b in items)
    ),
    Why.HINT_DISCONTINUOUS_ROOT: lambda op_type: (
        f"{op_type} is discontinuous, yet more changed here than a whole-step jump on tiny noise explains (see the "
        "local error): not benign"
    ),
    Why.ALSO: lambda *parts: "; ".join(say(p) for p in parts),
    Why.SESSION_UNREADABLE: lambda why: why,
    Why.SESSION_NOT_JSON: lambda text: f"not a JSON file ({text})",
    Why.SESSION_NO_STEPS: lambda: "not a dumptui session (no list of steps)",
    Why.SESSION_INVALID: lambda wrong: "not a valid dumptui session: " + "; ".join(wrong),
    Why.SESSION_NOT_OBJECT: lambda field, kind: f"{field} is {kind}, not an object",
    Why.SESSION_NOT_STRING: lambda field, kind: f"{field} is {kind}, not a string",
    Why.SESSION_NOT_ONE_OF: lambda field, value, allowed: f"{field} is {value}, not one of {', '.join(allowed)}",
    Why.SESSION_DUMPS: lambda: "dumps is not an object with a ref and a target path",
    Why.SESSION_OPTION_UNKNOWN: lambda k: f"options.{k} is not an option a session keeps",
    Why.SESSION_OPTION_KIND: lambda k, kind: f"options.{k} is {kind}",
    Why.SESSION_OPTION_NOT_STRINGS: lambda k: f"options.{k} holds something other than strings",
    Why.SESSION_OTHER_DUMPS: lambda ref, target, ref_now, target_now: (
        f"it was saved for {ref} vs {target}, not {ref_now} vs {target_now}: open those dumps with it, "
        "or start over here"
    ),
    Why.UNREADABLE_SIDES: lambda sides: "; ".join(f"{side}: {why}" for side, why in sides),
}


# ------------------------------------------------------------------------ why a file cannot be read (io/fault.py)
KIND_WORDS: dict[FileKind, str] = {
    FileKind.FOLDER: "a folder",
    FileKind.FIFO: "a FIFO (named pipe)",
    FileKind.CHAR_DEVICE: "a character device",
    FileKind.BLOCK_DEVICE: "a block device",
    FileKind.SOCKET: "a socket",
    FileKind.OTHER: "not a regular file",
}


def _said_dims(dims: object) -> str:
    return str(list(dims)) if isinstance(dims, tuple | list) else str(dims)


_FAULT_WORDS: dict[Flaw, Callable[..., str]] = {
    Flaw.TEXT: lambda text: text,
    Flaw.CANNOT_READ: lambda text: f"cannot read: {text}",
    Flaw.READ_FAILED: lambda text: f"read failed: {text}",
    Flaw.NOT_FOUND: lambda: "file not found",
    Flaw.PERMISSION_DENIED: lambda: "permission denied",
    Flaw.IS_A_DIRECTORY: lambda: "is a directory",
    Flaw.NOT_REGULAR: lambda kind: f"not a regular file: {KIND_WORDS[kind]}, not read",
    Flaw.SYMLINK_LOOP: lambda: "a loop of symbolic links",
    Flaw.LINK_LOOP: lambda: "a loop of symbolic links: not read",
    Flaw.LINK_TO_NOTHING: lambda: "a symbolic link to nothing (its target does not exist)",
    Flaw.LINK_UNFOLLOWED: lambda text: f"a symbolic link that cannot be followed: {text}",
    Flaw.LINK_TO_NOT_REGULAR: lambda kind: f"a symbolic link to {KIND_WORDS[kind]}: not read",
    Flaw.LINK_OUTSIDE: lambda target: (
        f"a symbolic link to {target}, outside the dump folder (read, but not part of the dump)"
    ),
    Flaw.NOT_EXAMINED: lambda text: f"cannot be examined: {text}",
    Flaw.FOLDER_OUTSIDE: lambda real: (
        f"a tensor folder that leads to {real}, outside the dump folder (read, but not part of it)"
    ),
    Flaw.PAYLOAD_TWICE: lambda declared, expected: (
        f"the payload is the declared {declared} ({expected} B) written twice: damaged, not read "
        "(MindSpore's float16-header-over-float32-payload bug gives two halves that differ)"
    ),
    Flaw.F16_OVER_F32: lambda declared, expected, payload: (
        f"header declares {declared} ({expected} B) but the payload is {payload} B, twice that: "
        "MindSpore's float16-header-over-float32-payload bug, read as float32"
    ),
    Flaw.TRUNCATED: lambda declared, expected, payload: (
        f"truncated: header declares {declared} = {expected} B, payload is {payload} B"
    ),
    Flaw.PAYLOAD_MISMATCH: lambda payload, declared, expected: (
        f"payload {payload} B does not match header {declared} = {expected} B"
    ),
    Flaw.DTYPE_DISAGREES: lambda stored, recorded: (
        f"the file holds {stored} but its name or record says {recorded}: rewritten or damaged, not read "
        "(dump it again)"
    ),
    Flaw.STATISTICS_ONLY: lambda: "statistics only (no tensor data)",
    Flaw.FORTRAN_DEVICE_LAYOUT: lambda fmt: f"a Fortran-ordered payload in device layout {fmt}: not read",
    Flaw.SHAPE_DISAGREES: lambda shape, held: (
        f"dump.json says shape {_said_dims(shape)}, the file holds {_said_dims(held)}"
    ),
    Flaw.BAD_RECORD: lambda where, io, slot, why: f"{where} {io}.{slot}: {why}",
    Flaw.NO_STORAGE: lambda dtype: f"no numpy storage for dtype {dtype}",
    Flaw.NAME_PAYLOAD_MISMATCH: lambda payload, declared, expected, truncated: (
        ("truncated: " if truncated else "") + f"payload {payload} B, name says {declared} = {expected} B"
    ),
    Flaw.NAME_NOT_READ: lambda text: f"file name not read: {text}",
    Flaw.PT_UNREADABLE: lambda why: f"unreadable .pt file: {why}",
    Flaw.TOO_DEEP: lambda name: f"{name} (nested or sized beyond what a tensor file holds)",
    Flaw.PT_NO_PICKLE: lambda: "not a torch.save zip (no data.pkl)",
    Flaw.PT_NOT_TENSOR: lambda name: f"holds a {name}, not a tensor",
    Flaw.PT_COMPRESSED: lambda: "compressed storage (not written by torch.save)",
    Flaw.PT_NON_CONTIGUOUS: lambda strides: f"non-contiguous tensor (strides {strides}) not supported",
    Flaw.PT_STORAGE_SMALL: lambda: "storage smaller than the tensor",
    Flaw.PT_STORAGE_DECLARES: lambda declared, held: f"storage declares {declared} B, its zip member holds {held} B",
    Flaw.DTYPE_NOT_DECODED: lambda name: (
        f"{name if name.startswith('data type ') else 'data type ' + name} is not decoded (no numpy type holds it)"
    ),
    Flaw.DTYPE_UNSETTLED: lambda number: f"data type {number} (CANN releases disagree on types 28 and up)",
    Flaw.RAW_PAYLOAD_MISMATCH: lambda size, declared, expected: f"payload {size} B, but {declared} is {expected} B",
    Flaw.SHORT_FOR_HEADER: lambda size: f"file of {size} B is too short for the 8-byte header length",
    Flaw.HEADER_TOO_LONG: lambda length, size: f"header length {length} B does not fit in the file of {size} B",
    Flaw.RAW_SIZES_DISAGREE: lambda length, payloads, total, size: (
        f"damaged: 8 + header {length} B + payloads {payloads} B = {total} B, but the file is {size} B"
        + (" (truncated)" if total > size else "")
    ),
    Flaw.RAW_DATA_SIZE: lambda io, slot, held, size: (
        f"damaged: {io} {slot} holds {held} B of data, its size field says {size} B"
    ),
    Flaw.NOT_RAW_TOO_LARGE: lambda why: f"not a raw dump file: {why}; too large to be one whole DumpData",
    Flaw.NOT_RAW: lambda why: f"not a raw dump file: {why}; nor one whole DumpData",
}


NAME_PATTERN_WORDS: dict[NamePattern, str] = {
    NamePattern.MINDSPORE_NPY: (
        "MindSpore dump pattern {op_type}.{op_name}.{task}.{stream}.{timestamp}.{input|output}.{slot}.{format}[.{dtype}].npy"
    ),
    NamePattern.MINDSPORE_BIN: (
        "MindSpore 1.x dump pattern {op}_{input|output}_{slot}_shape_{dims}_{Dtype}_{Format}.bin"
    ),
    NamePattern.CANN_RAW: "CANN raw dump pattern {op_type}.{op_name}.{task_id}.{stream_id}.{timestamp}",
    NamePattern.CANN_RAW_UNMAPPED: (
        "CANN raw dump pattern {op_type}.{op_name}.{task_id}.{stream_id}.{timestamp} (and not in mapping.csv)"
    ),
}


# the part of a JSON document a fault names, its key (a repr) in `{key}`
JSON_PART_WORDS: dict[JsonPart, str] = {
    JsonPart.DOCUMENT: "the document",
    JsonPart.KEY: "a key",
    JsonPart.MEMBER: "member {key}",
    JsonPart.RECORD: "the record of {key}",
}


# what each reader recognises (formats/registry.py's readers, by the format they name), for a folder none does
EXPECTED_WORDS: dict[FormatName, str] = {
    FormatName.MINDSPORE_NPY: "a MindSpore dump (rank_N/, .npy or statistic.csv files)",
    FormatName.MINDSPORE_BIN: "a MindSpore 1.x .bin dump",
    FormatName.MSPROBE: "an msprobe dump (dump.json)",
    FormatName.CANN_RAW: "a CANN / ACL raw dump ({op_type}.{op_name}.{task}.{stream}.{timestamp} files)",
    FormatName.NPY_FOLDER: "a folder of .npy files",
}


def _no_dump_found(*formats: str) -> str:
    *others, last = [EXPECTED_WORDS[FormatName(f)] for f in formats]
    return f"no dump found: expected {', '.join(others)}, or {last}"


def _rows_not_read(n: int, first: tuple[str, ...]) -> str:
    more = f" (and {n - 3} more)" if n > 3 else ""
    return f"{n} row{'s' if n != 1 else ''} not read: {'; '.join(first)}{more}"


_FAULT_WORDS.update(
    {
        Flaw.FOREIGN_FILE: lambda: "not a dump tensor file (ignored)",
        Flaw.MISNAMED: lambda pattern: f"file name does not follow the {NAME_PATTERN_WORDS[pattern]}",
        Flaw.MIXED_RAW_FILE: lambda: (
            "a CANN raw dump file among MindSpore .npy files (two formats in one dump): not read; convert it with "
            "`dumptui convert` into a folder of its own, or dump again in one format"
        ),
        Flaw.GRAPH_FILE_UNREADABLE: lambda text: f"unreadable graph file: {text}",
        Flaw.GRAPH_PB_NO_PROTOBUF: lambda: "graph protobuf not readable (protobuf not installed)",
        Flaw.GRAPH_PB_UNREADABLE: lambda text: f"unreadable graph protobuf: {text}",
        Flaw.GE_GRAPH_UNREADABLE: lambda text: f"unreadable GE graph: {text}",
        Flaw.DUPLICATE_TENSOR: lambda io, slot, name: f"duplicate {io}.{slot} for {name} (ignored)",
        Flaw.ROWS_NOT_READ: _rows_not_read,
        Flaw.ROW_COLUMNS: lambda line, cut, n, header: (
            f"line {line}: {'cut short' if cut else 'too long'}: {n} columns, the header has {header}"
        ),
        Flaw.ROW_BAD: lambda line, text: f"line {line}: {text}",
        Flaw.META_NOT_STRING: lambda key, kind: f"{key} is {kind}, not a string (ignored)",
        Flaw.PARAMETERS_NOT_OBJECT: lambda name, kind: f"parameters of {name} are {kind}, not an object (ignored)",
        Flaw.CALL_FIELD_NOT_LIST: lambda key, name, kind, value: (
            f"{key} of {name} is {kind} ({value}), not a list of records (ignored)"
        ),
        Flaw.ENTRY_TWICE: lambda name: f"entry {name} appears twice (the first read, the second ignored)",
        Flaw.ENTRY_NOT_OBJECT: lambda name: f"entry {name} is not an object (ignored)",
        Flaw.HEADER_NAMES_OTHER_OP: lambda header, file: (
            f"its header names the op {header}, its file name {file}: named by its file name"
        ),
        Flaw.NO_TENSORS: lambda: "holds no input and no output: nothing to compare",
        Flaw.RECORD_TOO_LARGE: lambda part, key, at, limit: (
            f"{JSON_PART_WORDS[part].format(key=key)} at character {at} is larger than {size_words(limit)} "
            "(not read: no valid record is that large)"
        ),
        Flaw.NO_DUMP_FOUND: _no_dump_found,
        Flaw.CACHE_INSIDE_DUMP: lambda folder: f"the cache folder {folder} is inside the dump",
        Flaw.DUMP_TOO_RECENT: lambda seconds: f"the dump changed less than {seconds:g} s ago",
        Flaw.DUMP_NOT_LOOKED_AT: lambda: "the dump folder cannot be looked at",
        Flaw.NOT_CACHED: lambda name, text: f"not cached: {name}: {text}",
        Flaw.NOT_STORED: lambda: "not stored in the index cache",
        Flaw.INDEXING_PROCESS_FAILED: lambda text: f"indexing process failed: {text}",
    }
)


def say_fault(f: Fault) -> str:
    """Why a file cannot be read (or was read differently), in words."""
    return _FAULT_WORDS[f.code](*(_worded(a) for a in f.args))


set_wording(say_fault)  # io's exceptions that carry a fault (a refused file) say it in these words
