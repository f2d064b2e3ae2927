"""Selection ops in words: a flip (near-tied scores that swapped places: TopK, Sort, ArgMax, NMS, Unique), a
selection that does not follow from its own inputs, the tensors a flip reaches. The engine
(core/search/selection.py) hands out codes and numbers; this is the one place that words them, for the text
reports, the JSON's sentences, the CSVs and the app."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from dumptui.core.compare.noise import fmt_rel
from dumptui.core.model.reason import Said
from dumptui.core.search.selection import (
    Flip,
    FlipKind,
    FlipReason,
    FlipSite,
    SelectionCode,
    SelectionProof,
    SelectionReason,
)
from dumptui.core.search.threshold import MASK_TYPES, THRESHOLD_TYPES
from dumptui.report.reasons import say

SAID_FLIPS = 3  # flips described one by one in a sentence (the rest are counted)


def _v(x: float) -> str:
    """A score as read: 4 significant digits."""
    return "NaN" if math.isnan(x) else f"{x:.4g}"


def _e(x: float) -> str:
    return "NaN" if math.isnan(x) else "inf" if math.isinf(x) else f"{x:.1e}"


def _against(margin: float, moved: float) -> str:
    """The margin beside the error that moved it: the flip's cause in numbers."""
    if math.isnan(margin):
        return ""
    if moved > margin:
        return f"margin {_e(margin)} < {_e(moved)}, the error its inputs carry there"
    if moved == margin:  # (the inputs' error made them equal: a tie the kernel broke its own way)
        return f"margin {_e(margin)} = {_e(moved)}, the error its inputs carry there: a tie"
    return f"margin {_e(margin)}, within its inputs' rounding"


def counts(p: SelectionProof) -> str:
    """`25 of 32 selections equal (30 of 32 as a set)`: the selections compared as selections."""
    if p.op_type in _BOXES:
        return f"{p.equal} of {p.selected} boxes kept on both sides ({p.differing} on one side only)"
    if p.op_type in MASK_TYPES:
        return f"{p.equal} of {p.selected} elements kept on both sides ({p.differing} on one side only)"
    if p.op_type in THRESHOLD_TYPES:
        return f"{p.equal} of {p.selected} elements equal"
    as_set = f" ({p.common} of {p.selected} as a set)" if p.common != p.equal else ""
    what = "values" if p.op_type in ("Unique", "unique") else "selections"
    return f"{p.equal} of {p.selected} {what} equal{as_set}"


_BOXES = frozenset(
    {"NMSWithMask", "NonMaxSuppressionV3", "NonMaxSuppressionV4", "NonMaxSuppression", "NonMaxSuppressionV6", "nms"}
)


def _rank_flips(flips: Sequence[Flip]) -> list[tuple[str, int]]:
    """Rank flips in words, with how many flips each says: two ranks that traded their elements are one swap
    (ranks are 1-based)."""
    out: list[tuple[str, int]] = []
    i = 0
    while i < len(flips):
        f = flips[i]
        row = f"row {f.row}, " if any(g.row for g in flips) else ""
        nxt = flips[i + 1] if i + 1 < len(flips) else None
        if (
            nxt is not None
            and nxt.row == f.row
            and nxt.rank == f.rank + 1
            and (nxt.index, nxt.other) == (f.other, f.index)
        ):
            words = (
                f"{row}ranks {f.rank + 1} and {f.rank + 2} swapped: scores {_v(f.value)} vs {_v(f.other_value)}, "
                f"{_against(f.margin, f.input_error)}"
            )
            out.append((words, 2))
            i += 2
            continue
        where = f"rank {f.rank + 1}" if f.rank >= 0 else "one of the selected"
        words = (
            f"{row}{where}: element {f.other} ({_v(f.other_value)}) for {f.index} ({_v(f.value)}), "
            f"{_against(f.margin, f.input_error)}"
        )
        out.append((words, 1))
        i += 1
    return out


def _box_flip(f: Flip) -> str:
    side = "the reference" if f.kept_by == "ref" else "the target"
    head = f"box {f.index} kept by {side} only"
    if f.kind == FlipKind.OVERLAP:
        return f"{head}: its overlap with box {f.other} crosses the threshold, {_against(f.margin, f.input_error)}"
    if f.kind == FlipKind.SCORE:
        return (
            f"{head}: it and box {f.other} overlap and their scores {_v(f.value)} vs {_v(f.other_value)} swapped "
            f"order, {_against(f.margin, f.input_error)}"
        )
    if f.kind == FlipKind.CASCADE and f.other >= 0:
        return f"{head}: box {f.other}, which decides it, flipped itself"
    if f.kind == FlipKind.MEMBER:
        return f"value {_v(f.value)} on {side}'s side only: {f.margin:.1e} from another value"
    if f.kind == FlipKind.KEPT:
        return f"element {f.index} ({_v(f.value)}) kept by {side} only: its mask differs there"
    if f.kind == FlipKind.THRESHOLD:
        return (
            f"element {f.index} crossed its threshold: {_v(f.value)} vs {_v(f.other_value)}, "
            f"{_against(f.margin, f.input_error)}"
        )
    return f"{head}: it follows another box's flip"


def flips_words(p: SelectionProof) -> str:
    """The flips of one op, SAID_FLIPS of them described."""
    if not p.flips:
        return ""
    rank_flips = p.flips[0].kind == FlipKind.RANK
    parts = _rank_flips(list(p.flips)) if rank_flips else [(_box_flip(f), 1) for f in p.flips]
    said = parts[:SAID_FLIPS]
    rest = p.differing - sum(n for _w, n in said)
    return "; ".join(w for w, _n in said) + (f"; and {rest} more" if rest > 0 else "")


def proof_sentence(p: SelectionProof) -> str:
    """What the selection judgement found, in one sentence (the op pane's and the reports' proof line)."""
    if p.code == SelectionCode.BROKEN:
        w = p.wrong[0] if p.wrong else None
        first = ""
        if w is not None and w.rank >= 0 and not math.isnan(w.expected):
            first = (
                f": rank {w.rank + 1}{f' of row {w.row}' if w.row else ''} holds element {w.index} "
                f"({_v(w.value)}) where its inputs give {_v(w.expected)}"
            )
        elif w is not None and w.index >= 0:
            first = f": box {w.index} (score {_v(w.value)}) is kept or left out against the overlaps of its inputs"
        total = f" ({p.wrong_count} of {p.selected} selections)" if p.selected else f" ({p.wrong_count} selections)"
        compared = f"; {counts(p)} on both sides" if p.selected else ""
        return f"its selection does not follow from its own inputs{first}{total}{compared}"
    if p.code == SelectionCode.UNMODELLED:
        return (
            f"the reference's own selection does not follow from its inputs as {p.op_type} is replayed here "
            f"({_unmodelled(p) or f'{p.ref_wrong} selections'}): nothing is concluded from it"
        )
    if p.code == SelectionCode.SAME:
        return f"each side's selection follows from its own inputs, and they agree ({counts(p)})"
    if p.op_type in MASK_TYPES:
        return f"each side keeps what its own mask says: {counts(p)}; {flips_words(p)}"
    if p.op_type in THRESHOLD_TYPES:
        return (
            f"each side's output follows from its own inputs; elements that nearly tie their threshold crossed "
            f"it: {counts(p)}; {flips_words(p)}"
        )
    return (
        f"each side's selection follows from its own inputs (ties within their rounding); near-ties flipped: "
        f"{counts(p)}; {flips_words(p)}"
    )


def site_sentence(s: FlipSite) -> str:
    """One flip of a run: where, what flipped and by how little, what it changes downstream, what feeds it."""
    out = f"{s.name} ({s.op_type}) flipped on near-ties: {counts(s.proof)}; {flips_words(s.proof)}"
    if s.reached:
        out += (
            f"; it changes {len(s.reached)} op{'s' if len(s.reached) != 1 else ''} downstream "
            f"(up to {fmt_rel(s.worst_error)} of their RMS, at {s.worst_name})"
        )
    if s.feeding:
        out += (
            f"; the precision that feeds the near-ties: {' <- '.join(s.feeding)} (keep "
            f"{'it' if len(s.feeding) == 1 else 'them'} in float32 to keep the reference's order)"
        )
    return out


def benign_lines(sites: Iterable[FlipSite]) -> list[str]:
    """The flips of a run as benign reasons: why the outputs differ although no op computes anything wrong."""
    return [site_sentence(s) for s in sites]


def reason_text(reason: Said) -> str:
    """A tensor's reason in words: a flip's code worded, any other reason by report/reasons.py."""
    if not isinstance(reason, FlipReason):
        return say(reason)
    err = "" if math.isnan(reason.error) else f"error {fmt_rel(reason.error)} of its RMS: "
    if reason.code == SelectionReason.FLIP:
        return f"{err}its selection flipped on near-ties, each side's following from its own inputs (no op is wrong)"
    return f"{err}carried from the selection {reason.site} flipped on near-ties (no op computes anything wrong)"


# ------------------------------------------------------------------------------------------------ JSON


def flip_json(f: Flip) -> dict:
    return {
        "kind": f.kind,
        "row": f.row,
        "rank": f.rank + 1 if f.rank >= 0 else None,  # 1-based, as the sentences say it
        "index": f.index,
        "other": f.other if f.other >= 0 else None,
        "value": _num(f.value),
        "other_value": _num(f.other_value),
        "margin": _num(f.margin),
        "input_error": _num(f.input_error),
        "kept_by": f.kept_by or None,
    }


def proof_json(p: SelectionProof | None) -> dict | None:
    if p is None:
        return None
    return {
        "code": p.code,
        "selected": p.selected,
        "equal": p.equal,
        "common": p.common,
        "differing": p.differing,
        "margin": _num(p.margin) if p.flips else None,
        "input_error": _num(p.input_error),
        "tolerance": _num(p.tolerance),
        "flips": [flip_json(f) for f in p.flips],
        "wrong": [
            {
                "row": w.row,
                "rank": w.rank + 1 if w.rank >= 0 else None,
                "index": w.index,
                "value": _num(w.value),
                "expected": _num(w.expected),
            }
            for w in p.wrong
        ],
        "wrong_count": p.wrong_count,
        "sentence": proof_sentence(p),
    }


def site_json(s: FlipSite) -> dict:
    return {
        "op": s.name,
        "op_type": s.op_type,
        "position": s.index + 1,
        "selection": proof_json(s.proof),
        "reached": len(s.reached),
        "worst": s.worst_name or None,
        "worst_error": _num(s.worst_error) if s.reached else None,
        "feeding": list(s.feeding),
        "sentence": site_sentence(s),
    }


def _num(x: float) -> float | None:
    return None if math.isnan(x) or math.isinf(x) else float(x)


# ------------------------------------------------------------------------------------------------ remedy


def near_tie_files(sites: Sequence[FlipSite]) -> dict[str, str]:
    """For a pair with no root whose selections flipped: the ops whose precision feeds the near-ties, kept in
    float32 (ATC's --keep_dtype and --op_precision_mode files, and what they are for): file name -> text."""
    names = list(dict.fromkeys(n for s in sites for n in s.feeding_target))
    if not names:
        return {}
    said = "\n".join(f"{s.name}: {counts(s.proof)}; {flips_words(s.proof)}" for s in sites)
    return {
        "keep_dtype.cfg": "".join(f"{n}\n" for n in names),
        "op_precision.ini": "[ByNodeName]\n" + "".join(f"{n}=high_precision\n" for n in names),
        "NEAR_TIES.txt": (
            "No culprit: no op computes anything wrong. Selections flipped on near-ties:\n"
            f"{said}\n\n"
            "Not a bug. If the reference's selections matter, keep the ops whose precision feeds the near-ties in "
            "float32 (atc ... --keep_dtype=keep_dtype.cfg, or --op_precision_mode=op_precision.ini); ties closer "
            "than their inputs' rounding may still be broken either way.\n"
        ),
    }


def _unmodelled(p: SelectionProof) -> str:
    """The reference's first selection its own inputs do not give, in numbers ("" when none is known)."""
    w = p.unmodelled
    if w is None:
        return ""
    if p.unmodelled_box:
        return f"group {w.row}: box {w.index} (score {w.value!r}) kept or left out against its own inputs"
    return f"row {w.row} rank {w.rank}: index {w.index} value {w.value!r}, expected {w.expected!r}"
