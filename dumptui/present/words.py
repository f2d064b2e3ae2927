"""Small words that must agree with the numbers beside them: plurals, how a pair was made, and metrics that
NaN/Inf make meaningless."""

from __future__ import annotations

from dumptui.core.compare.metrics import format_cos
from dumptui.core.compare.pairstats import PairStats, SideStats
from dumptui.core.graph.align import EXACT
from dumptui.core.graph.pairedby import PairedBy
from dumptui.report.reasons import say


def plural(n: int, word: str, many: str | None = None) -> str:
    """`1 step`, `2 steps`, `0 suspects` (`many` for irregular plurals: `1 match`, `3 matches`)."""
    return f"{n} {word if n == 1 else (many or word + 's')}"


def paired_words(how: PairedBy) -> str:
    """How an op pair was made, as a phrase that reads after `paired`."""
    return "paired by exact name" if how == EXACT else f"paired: {say(how)}"


def nonfinite_count(side: SideStats) -> tuple[int, int]:
    return side.nan, side.pos_inf + side.neg_inf


def nonfinite_words(stats: PairStats) -> str:
    """`216 Inf on target`, `3 NaN on ref, 216 Inf on target`; "" when both sides are finite."""
    parts = []
    for name, side in (("ref", stats.ref), ("target", stats.target)):
        nan, inf = nonfinite_count(side)
        what = " and ".join(w for w in (f"{nan} NaN" if nan else "", f"{inf} Inf" if inf else "") if w)
        if what:
            parts.append(f"{what} on {name}")
    return ", ".join(parts)


def cos_words(stats: PairStats | None) -> str:
    """The cosine, or why it means nothing here: NaN/Inf on either side make it (and KL) meaningless."""
    if stats is None:
        return "-"
    bad = nonfinite_words(stats)
    if bad:
        return f"n/a: {bad}"
    return format_cos(stats.cos)


def kl_words(stats: PairStats | None, fmt_number: str) -> str:
    """KL divergence as already formatted by the caller, or n/a with the reason."""
    if stats is None:
        return "-"
    bad = nonfinite_words(stats)
    return f"n/a: {bad}" if bad else fmt_number
