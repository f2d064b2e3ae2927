"""The limits of what dumptui reads, and the checks every value read from a file passes before it is used.

A dump is evidence copied between machines, half-written by crashed jobs or edited by hand: a header, a file
name, a JSON document or a pickle may hold any value. Readers check each value here for type and range; a bad
one raises `BadValue` (a ValueError) saying what is wrong, and the reader turns it into a problem of that one
file, with its path, while the rest of the dump loads. docs/formats.md ("Damaged dumps") lists these limits.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

MAX_DIMS = 32  # dimensions of one tensor (numpy allows 64; no framework dumps more than 8)
MAX_ELEMENTS = 1 << 62  # elements of one tensor: beyond any file, and the product stays inside int64
MAX_NPY_HEADER = 1 << 16  # bytes of an .npy header (numpy writes about 120 for a tensor)
MAX_HEADER_NESTING = 4  # brackets nested in an .npy header that numpy did not write in its standard form
MAX_JSON_DEPTH = 64  # arrays and objects nested in a JSON document (a dump.json nests about 8)
MAX_TEXT_FILE = 1 << 30  # bytes of a side file read whole: JSON, csv, graph IR and protobuf, GE pbtxt, MindIR
MAX_GRAPH_LINE = 16 << 20  # bytes of one line of a text graph file (.ir): a node is a few KB
MAX_JSON_RECORD = 16 << 20  # bytes of one call of a streamed dump.json (msprobe writes a few KB per call)
MAX_OPTION_FILE = 64 << 20  # bytes of a file the user writes (config, --map, --ignore-file): far above any real one
# YAML and TOML are read far slower than a CSV (docs/speed.md): a large --map YAML would take minutes. Their
# files are written by hand and hold tens of lines
MAX_YAML_FILE = 4 << 20  # bytes of a --map YAML (about 50,000 tensor pairs): a larger mapping is a CSV's job
MAX_CONFIG_FILE = 1 << 20  # bytes of the TOML config (a dozen settings; long ignore lists go in --ignore-file)
MAX_PICKLE = 1 << 20  # bytes of the pickle inside a .pt file (a saved tensor's is a few hundred)
MAX_PICKLE_OPS = 100_000  # opcodes of that pickle
MAX_INT_DIGITS = 20  # digits of a number in a file name (uint64 has 20)
NUMERIC_KINDS = "biufc"  # numpy dtype kinds a tensor may have: bool, integers, floats, complex


class BadValue(ValueError):
    """A value read from a file that has the wrong type or is out of range; the message says which and why."""


def size_words(n: int) -> str:
    """A limit in bytes as a message says it: `16 MiB`, `4 KiB`, `1000 B`."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift} {unit}"
    return f"{n} B"


def brief(value: Any, room: int = 40) -> str:
    """A value as a message shows it: its repr, cut short (it came from a file and may be huge)."""
    try:
        text = repr(value)
    except Exception:  # a repr that fails is named by the type alone
        text = f"<{type(value).__name__}>"
    return text if len(text) <= room else text[: room - 3] + "..."


def cut(text: str, room: int = 200) -> str:
    """Text from a file, cut short for a message."""
    return text if len(text) <= room else text[: room - 3] + "..."


def kind_of(value: Any) -> str:
    """What a JSON-like value is, in words: `a list`, `a number`..."""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float, np.integer, np.floating)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, (list, tuple)):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    if value is None:
        return "null"
    return f"a {type(value).__name__}"


def integer(value: Any, what: str, low: int = 0, high: int = MAX_ELEMENTS) -> int:
    """`value` as an int in [low, high]; a bool, a float (even 2.0), a string or a list is refused."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise BadValue(f"{what} is {kind_of(value)} ({brief(value)}), not an integer")
    number = int(value)
    if number < low:
        raise BadValue(f"{what} {number} is below {low}")
    if number > high:
        raise BadValue(f"{what} {brief(number)} is beyond {high}")
    return number


def text(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise BadValue(f"{what} is {kind_of(value)} ({brief(value)}), not a string")
    return value


def shape(value: Any, what: str = "shape") -> tuple[int, ...]:
    """A tensor shape: a list or tuple of at most MAX_DIMS non-negative integers whose product is at most
    MAX_ELEMENTS. Negative, float, string, boolean, nested or overflowing dimensions are refused."""
    if not isinstance(value, (list, tuple)):
        raise BadValue(f"{what} is {kind_of(value)} ({brief(value)}), not a list of dimensions")
    if len(value) > MAX_DIMS:
        raise BadValue(f"{what} has {len(value)} dimensions (at most {MAX_DIMS})")
    dims = tuple(integer(d, f"{what} dimension", 0, MAX_ELEMENTS) for d in value)
    elements = math.prod(dims)
    if elements > MAX_ELEMENTS:
        raise BadValue(f"{what} {brief(list(dims))} holds {brief(elements)} elements, more than any file holds")
    return dims


def elements(dims: tuple[int, ...]) -> int:
    """The number of elements of a checked shape (exact: Python integers never overflow)."""
    return math.prod(dims)


def finite_number(value: Any) -> float | None:
    """A statistic from a file: a float (NaN and Inf included), or None when it is absent or not a number
    (a string, a list, an integer too large for a float)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        return float(value)
    except OverflowError:
        return None


def json_depth_ok(doc: Any, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether `doc` nests at most `limit` arrays and objects deep (iterative: a deep document must not
    exhaust the stack of whoever checks it)."""
    stack: list[tuple[Any, int]] = [(doc, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children = list(node.values())
        elif isinstance(node, list):
            children = node
        else:
            continue
        if depth > limit:
            return False
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return True


def bracket_depth(source: str) -> int:
    """The deepest nesting of (), [] and {} in `source` (brackets inside quotes count too: over-counting is
    the safe side of a limit)."""
    depth = deepest = 0
    for ch in source:
        if ch in "([{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in ")]}":
            depth -= 1
    return deepest


def numeric_dtype(dt: np.dtype, what: str = "dtype") -> np.dtype:
    """A tensor dtype numpy can compute with: bool, integer, float or complex, not structured or text."""
    if dt.kind not in NUMERIC_KINDS or dt.fields is not None or dt.subdtype is not None:
        raise BadValue(f"{what} {dt.str!r} is not a numeric tensor dtype")
    return dt
