"""The counting numbers 0, 1, 2... as one set of int objects for the whole process.

A session keeps several maps and fields over its ops by number (an op's order in its dump, an op pair's index,
a dataflow graph's node numbers, the bisection's positions), each made by its own `enumerate`: an int above
256 is an object of its own (28 bytes), so the same numbers were held once per map (~3 MB of the 20,000-op
demo pair). Taken from here, they are held once.
"""

from __future__ import annotations

_COUNTING: list[int] = []


def counting(n: int) -> list[int]:
    """At least the numbers 0 .. n-1 (a list to read, never to change: zip it with what it numbers)."""
    have = len(_COUNTING)
    if have < n:
        _COUNTING.extend(range(have, n))
    return _COUNTING


def shared(i: int) -> int:
    """`i` as the shared object when it is one of the counting numbers made so far."""
    return _COUNTING[i] if 0 <= i < len(_COUNTING) else i
