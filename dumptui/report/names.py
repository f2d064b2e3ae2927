"""The one rule for showing an op's name in fewer columns than it has, in every pane of the app and every
headless table: cut in the middle with one `…`, never elsewhere, nothing dropped without the `…` saying so.

What is shown is `A…B`, where A and B are pieces of the real name in its order (A its start, B its end, unless
even the op's own name does not fit): each can be found with grep, and the op's own name is kept whole
whenever it fits:

- a scope path (MindSpore, CANN: `Default/stage0-Stage/block6-ResidualBlock/Add-op0`): the end from a `/`
  on, as many whole scopes as fit before the op's own name (`Add-op0`), then as much of the start as fits
  (`Default/st…/block6-ResidualBlock/Add-op0`, `…Add-op0`);
- an msprobe name (`Functional.conv2d.3.forward`, `Tensor.__add__.0.forward`,
  `Module.layer1.0.conv1.Conv2d.forward.0`): the API, its call index and direction kept, the family before
  them giving way first (`Fu….conv2d.3.forward`, `….__add__.0.forward`);
- the op's own name longer than the room: its head (the type, the API: what tells ops apart) and its index
  (`-op12`, `.3.forward`) around the cut (`Conv2D…2`, `conv2d….forward`); any other name: its head up to its
  first `-` or `.` (`block12` of `block12-ResidualBlock`), then its end.

Widths are counted in characters (names are cleaned for the terminal first, `fmt.clean`).
"""

from __future__ import annotations

import re

ELLIPSIS = "…"

# msprobe: `Family.api.N.forward` (API calls) or `Family.path.Class.forward.N` (module calls)
_MSPROBE = re.compile(
    r"^[A-Z][A-Za-z0-9_]*\.(?P<own>.+?(?P<index>\.\d+\.(?:forward|backward)|\.(?:forward|backward)\.\d+))$"
)
# the index that ends an op's own name: MindSpore `-op12`, a GE/CANN `_12`
_OP_INDEX = re.compile(r"(?:-op\d+|_\d+)$")
_HEAD_END = re.compile(r"[-.]")


def _parts(name: str) -> tuple[int, str, int]:
    """(where the op's own name starts, the separator of the scopes before it, the length of its index)."""
    m = _MSPROBE.match(name)
    if m:
        return m.start("own"), ".", len(m.group("index"))
    start = name.rfind("/") + 1
    index = _OP_INDEX.search(name, start)
    return start, "/", (len(index.group()) if index and index.start() > start else 0)


def _cut_own(own: str, width: int, index: int) -> str:
    """An op's own name in `width` (≥ 2) characters: its head (type, API) and its end (its index)."""
    room = width - 1
    first = _HEAD_END.search(own, 1)
    key = first.start() if first else (room + 1) // 2  # `Conv2D` of `Conv2D-op12`, `conv2d` of `conv2d.3.forward`
    if index:
        if key + index <= room or (key > room - 3 and room - index >= room // 2):
            head = room - index  # the index whole, and the type or API whole when it fits
        elif key <= room - 1:
            head = key  # the type or API whole, the end of the index after it (`Cast…1`: op0 or op1)
        else:
            head = room - min(index, 3)
    else:  # no index: the head up to its first separator, the rest from the end
        head = max(min(key, room - 1), room // 2)
    head = max(1, min(head, room - 1)) if room >= 2 else room
    tail = room - head
    return own[:head] + ELLIPSIS + (own[len(own) - tail :] if tail else "")


def cut_name(name: str, width: int) -> str:
    """`name` in at most `width` characters by the rule above: itself when it fits, else `A…B`."""
    if len(name) <= width:
        return name
    if width <= 0:
        return ""
    if width == 1:
        return ELLIPSIS
    start, sep, index = _parts(name)
    own_len = len(name) - start
    if own_len + 1 > width:
        return _cut_own(name[start:], width, index)
    # the longest end that starts at a separator before the own name and fits with the `…`; else the own name
    tail_at = start
    pos = name.find(sep, 0, start)
    while pos != -1:
        if len(name) - pos + 1 <= width:
            tail_at = pos
            break
        pos = name.find(sep, pos + 1, start)
    head = width - 1 - (len(name) - tail_at)
    return name[:head] + ELLIPSIS + name[tail_at:]


def _common_ends(a: str, b: str) -> tuple[int, int]:
    """How many characters `a` and `b` share at their start, and at their end."""
    n = min(len(a), len(b))
    start = next((i for i in range(n) if a[i] != b[i]), n)
    end = next((i for i in range(n) if a[-1 - i] != b[-1 - i]), n)
    return start, end


def _cut_head(name: str, width: int) -> str:
    """`name`'s start and `…`: what is left of two names that end alike (`FloorMod-op0`, `Mod-op0`)."""
    return name if len(name) <= width else name[: width - 1] + ELLIPSIS


def cut_pair(a: str, b: str, width: int, between: str = " ↔ ") -> str:
    """Two names of one op (a rename: the reference's, the target's) in `width`; two op names that end alike
    (`-op0`) keep their starts, where they differ (`Floor… ↔ Mod-op0`), others are each cut by the rule; the
    reference's alone (cut) when there is no room for both."""
    whole = a + between + b
    if len(whole) <= width:
        return whole
    room = width - len(between)
    if room < 8:
        return cut_name(a, width)
    wa = min(len(a), max(room // 2, room - len(b)))
    same_start, same_end = _common_ends(a, b)
    if "/" not in a + b and same_end >= 2 and same_end > same_start:
        if room - wa < len(b):  # the target's cut anyway: its type and `…` (`Mod…`), the rest to the reference
            first = _HEAD_END.search(b, 1)
            wa = max(wa, min(len(a), room - (first.start() + 1 if first else (room + 1) // 2)))
        return _cut_head(a, wa) + between + _cut_head(b, room - wa)
    return cut_name(a, wa) + between + cut_name(b, room - wa)


_LONG_WORD = re.compile(r"\S+")
_PUNCTUATION = "()[]{},;:.'\"`"


def word_core(word: str) -> tuple[int, int]:
    """Where a word's core (a name) starts and ends inside the punctuation around it: `(Default/Add-op0),`."""
    core = word.strip(_PUNCTUATION)
    left = word.index(core) if core else 0
    return left, left + len(core)


def cut_word(word: str, room: int) -> str:
    """A word of running text (its trailing spaces kept) in `room` columns: its core cut by the rule, the
    punctuation around it kept."""
    text = word.rstrip()
    start, end = word_core(text)
    fitted = cut_name(text[start:end], max(1, room - start - (len(text) - end)))
    return text[:start] + fitted + text[end:] + word[len(text) :]


def cut_long_words(text: str, width: int) -> str:
    """Running text (a reason, a hint) whose words longer than `width` (names: nothing else is that long) are cut
    by `cut_word`: wrapped at spaces, it never folds a name over lines."""
    if len(text) <= width or width <= 0:
        return text
    return _LONG_WORD.sub(lambda m: cut_word(m.group(), width) if len(m.group()) > width else m.group(), text)


def is_shown_from(shown: str, name: str) -> bool:
    """Whether `shown` is `name` or `name` cut by the rule: the pieces around its one `…` in the name's
    order, together shorter than it (the check of tests and of a user's grep)."""
    if shown == name:
        return True
    if shown.count(ELLIPSIS) != 1 or ELLIPSIS in name:
        return False
    a, b = shown.split(ELLIPSIS)
    at = name.find(a)
    return at >= 0 and name.find(b, at + len(a)) >= 0 and len(a) + len(b) < len(name)
