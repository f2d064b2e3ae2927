"""Whether every name a view shows is a real one: the name itself, or the name cut in the middle by the one rule
(report/names.py: the pieces around one `…` found in the real name, in its order). A view's text is split into
words; a word that looks like a name (it has a `/`, a `…`, an op index `-op0`, a call `.forward`, or a scope's
`name-Class` form) must come from a real name, a scope of one, or an op type."""

from __future__ import annotations

import re
from collections.abc import Iterable

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


LONG_SCOPES = {
    "stage0-Stage": "stage0-TransformerEncoderStageWithPipelineParallelCell",
    "conv-Conv1x1": "conv-Conv2dBatchNormFoldedQuantCell",
}


def long_scope_pair(demo, root) -> tuple[str, str]:
    """The demo pair with long scopes (its names near 100 characters, as real models have them)."""
    from helpers.common import long_scopes_copy

    return (
        long_scopes_copy(demo.ref, str(root / "ref"), LONG_SCOPES),
        long_scopes_copy(demo.target, str(root / "target"), LONG_SCOPES),
    )


# (call, module, inputs, outputs): names that are long and differ only in their API or call index
MSPROBE_CALLS = [
    ("Functional.embedding.0.forward", "", [1.0], [2.0]),
    ("Tensor.__getitem__.0.forward", "", [2.0], [3.0]),
    ("Functional.scaled_dot_product_attention.0.forward", "", [3.0], [4.0]),
    ("Tensor.__add__.0.forward", "", [4.0, 3.0], [5.0]),
    ("Functional.layer_norm.0.forward", "", [5.0], [6.0]),
    ("Functional.conv2d.3.forward", "", [6.0], [7.0]),
    ("Functional.conv2d.4.forward", "", [7.0], [8.0]),
    ("Tensor.__mul__.0.forward", "", [8.0], [9.0]),
    ("Torch.matmul.12.forward", "", [9.0], [10.0]),
]


def msprobe_pair(root) -> tuple[str, str]:
    """An msprobe pair (PyTorch, statistics) whose target's attention output is 1.5 times off, and everything
    after it."""
    from helpers.msprobe_write import write_dump

    target = []
    off = False
    for name, module, ins, outs in MSPROBE_CALLS:
        ins = [v * 1.5 if off and v == ins[0] else v for v in ins]
        off = off or "attention" in name
        target.append((name, module, ins, [v * 1.5 for v in outs] if off else outs))
    return (
        write_dump(root / "ref", "Module", {}, MSPROBE_CALLS),
        write_dump(root / "target", "Module", {}, target),
    )
