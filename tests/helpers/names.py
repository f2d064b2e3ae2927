"""Whether every name a view shows is a real one: the name itself, or the name cut in the middle by the one rule
(report/names.py: the pieces around one `…` found in the real name, in its order). A view's text is split into
words; a word that looks like a name (it has a `/`, a `…`, an op index `-op0`, a call `.forward`, or a scope's
`name-Class` form) must come from a real name, a scope of one, or an op type."""

from __future__ import annotations

import re
from typing import Iterable

from dumptui.report.names import is_shown_from

_SPLIT = re.compile(r"[\s│┃╭╮╰╯─━├└┌┐┘┤┬┴┼▼▶◀▁▂▃▄▅▆▇█▔▏▕▐▌]+")  # spaces, borders, guides, scrollbars
_STRIP = "()[]{},;:'\"`"
_NAME_LIKE = re.compile(r"/|…|-op\d|\.(?:forward|backward)|^[A-Za-z_]\w*-[A-Z]\w*$")
# words of the app's own that look like names: the plot's legend, the bar's keys
UI_WORDS = {"G/B", "NaN/Inf", "…", "dumps…", "elements…", "▁..█", "max/min/mean/L2"}


def known_names(names: Iterable[str], types: Iterable[str] = ()) -> set[str]:
    """The real names, every scope of each, and the op types."""
    out = set(types)
    for name in names:
        out.add(name)
        out.update(p for p in name.split("/") if p)
    return out


def name_words(text: str) -> list[str]:
    words = (w.strip(_STRIP) for w in _SPLIT.split(text))
    return [w for w in words if w and w not in UI_WORDS and _NAME_LIKE.search(w)]


def not_real(texts: Iterable[str], known: set[str]) -> list[str]:
    """The name-like words of `texts` that are neither a real name nor one cut by the rule."""
    bad = []
    for text in texts:
        for word in name_words(text):
            if word not in known and not any(is_shown_from(word, k) for k in known):
                bad.append(f"{word!r} in {text!r}")
    return bad
