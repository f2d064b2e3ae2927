"""Finding ops: by name (`/`; `n` / `N` walk the matches while a search is active) and the next or previous
diverged one (`n` / `N` otherwise), in execution order, wrapping around, among the rows shown."""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Sequence

from dumptui.present.tree import TreePair, is_bad

TYPE_PREFIX = "type:"


def pair_matches(pair: TreePair, query: str) -> bool:
    """Case-insensitive substring of either side's full name or the op type; `type:Conv2D` matches that op
    type only (either side's, exactly)."""
    q = query.lower()
    if q.startswith(TYPE_PREFIX):
        want = q[len(TYPE_PREFIX) :].strip()
        types = {op.op_type.lower() for op in (pair.ref, pair.target) if op is not None} or {pair.op_type.lower()}
        return bool(want) and want in types
    names = [op.name for op in (pair.ref, pair.target) if op is not None] + [pair.op_type]
    return any(q in n.lower() for n in names)


def _ordered_after(rows: Sequence[int], current: int | None, forward: bool, inclusive: bool) -> Iterable[int]:
    """`rows` (ascending pair indices) starting next to `current`, wrapping around once."""
    if not rows:
        return []
    if current is None:
        start = 0 if forward else len(rows) - 1
    elif forward:
        start = bisect.bisect_left(rows, current) if inclusive else bisect.bisect_right(rows, current)
    else:
        start = (bisect.bisect_right(rows, current) if inclusive else bisect.bisect_left(rows, current)) - 1
    n = len(rows)
    if forward:
        return (rows[(start + k) % n] for k in range(n))
    return (rows[(start - k) % n] for k in range(n))


def find_op(
    pairs: Sequence[TreePair],
    rows: Sequence[int],
    query: str,
    current: int | None,
    forward: bool = True,
    inclusive: bool = False,
) -> int | None:
    """The next op (pair index) among `rows` whose name matches, after `current`, wrapping; None if none.
    `inclusive`: `current` itself counts (typing refines the query without leaving a match)."""
    if not query.strip():
        return None
    q = query.strip()
    for i in _ordered_after(rows, current, forward, inclusive):
        if pair_matches(pairs[i], q):
            return i
    return None


def count_matches(pairs: Sequence[TreePair], rows: Sequence[int], query: str) -> int:
    q = query.strip()
    return sum(1 for i in rows if pair_matches(pairs[i], q)) if q else 0


def next_diverged(
    rows: Sequence[int], verdict_of: Callable[[int], str | None], current: int | None, forward: bool = True
) -> int | None:
    """The next op after `current` in execution order whose known verdict is bad, wrapping; None if none."""
    for i in _ordered_after(rows, current, forward, inclusive=False):
        if is_bad(verdict_of(i)):
            return i
    return None


def next_root(roots: Iterable[int], current: int | None) -> int | None:
    """`r`: the first root (culprit or other root, by pair index) after the op shown, wrapping around."""
    ordered = sorted(set(roots))
    if not ordered:
        return None
    after = [i for i in ordered if current is None or i > current]
    return after[0] if after else ordered[0]


def match_words(matches: int) -> str:
    return f"{matches} match{'es' if matches != 1 else ''}"


WALK_HINT = "n/N walk · esc ends"  # what n / N and escape do once the search box gave the keys back


def matches_line(matches: int | None, scope: str = "", walking: bool = False) -> str:
    """The search's count under the list it searched: `matches` (None: no query), `scope` the rows searched
    when none matched ("among the diverged ops"); `walking`: the box gave the keys back, so it says what n / N
    and escape do now."""
    if matches is None:
        return ""
    found = match_words(matches) if matches else "no match" + (f" {scope}" if scope else "")
    return f"{found} · {WALK_HINT}" if walking else found
