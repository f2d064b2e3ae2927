"""Number and name formatting shared by every report and the UI (no rich import: the presenter uses it too).

Every string that comes from a file (op names, paths, reasons quoting a header, a version field) is data, and
reaches a terminal only through `clean` (plain text: Rich `Text`, Textual notifications without markup, plain
prints) or `markup` (text inside Rich markup). CSV and JSON reports keep the raw value, escaped by their own
writers.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable

from dumptui.core.compare.metrics import format_cos
from dumptui.core.compare.pairstats import SideStats

# Characters a name from a file must not bring to a terminal: C0 controls (newline and tab included: a name is
# one line, and a newline in it could forge a line of the report), DEL, C1 controls (ESC and CSI start
# terminal escape sequences), the Unicode line and paragraph separators (U+2028, U+2029: a line break to
# editors, pagers and str.splitlines, so they could forge a line too), the Unicode bidirectional controls that
# reorder what a terminal shows, and lone surrogates (bytes of a file name that are not UTF-8, which a strict
# UTF-8 stdout cannot print).
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
# Rich's markup escape (rich.markup.escape), here so that the presenter can use it without importing rich.
_MARKUP_TAG = re.compile(r"(\\*)(\[[a-z#/@][^[]*?])")
_TRAILING_BACKSLASHES = re.compile(r"\\+$")


def _visible(m: re.Match[str]) -> str:
    code = ord(m.group())
    if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8 (os.fsdecode's surrogateescape): that byte
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def clean(text: object) -> str:
    """Text from a file made safe for a terminal, as one line: each control character, bidirectional control
    and undecodable byte is shown as its escape (ESC as \\x1b, a newline as \\x0a, U+202E as \\u202e, an
    undecodable byte 0xff as \\xff)."""
    return _UNSAFE.sub(_visible, str(text))


# a vendor kernel's type carries a digest (`Custom_ReduceSum_2cb6b808…` + 64 hex digits): in text, its first
# four digits name it and the rest only takes lines (five of the app's nine at 80x24); JSON keeps it whole
_HASHED_TYPE = re.compile(r"\b([A-Za-z][A-Za-z0-9]*_[A-Za-z0-9_]*?_)([0-9a-f]{4})[0-9a-f]{28,}\b")


def short_types(text: str) -> str:
    """`text` with each hashed vendor kernel type cut to its first four digits: Custom_ReduceSum_2cb6…."""
    return _HASHED_TYPE.sub(lambda m: f"{m.group(1)}{m.group(2)}…", text)


def clean_lines(text: object) -> str:
    """`clean`, line by line: the line breaks stay, every other control character is shown escaped."""
    return "\n".join(clean(line) for line in str(text).split("\n"))


def markup(text: object) -> str:
    """Text from a file inside Rich markup: cleaned, and its `[tags]` escaped so they show as written."""

    def escape_backslashes(m: re.Match[str]) -> str:
        backslashes, tag = m.groups()
        return f"{backslashes}{backslashes}\\{tag}"

    out = _MARKUP_TAG.sub(escape_backslashes, clean(text))
    trailing = _TRAILING_BACKSLASHES.search(out)
    if trailing:
        # Rich halves backslashes only right before a tag, and what follows this text is not known: doubled
        # and closed by an empty tag, the run shows as written whether a tag, a colon or nothing comes next
        # (rich.markup.escape's single added backslash shows two for one when no tag follows)
        out += trailing.group() + "[dim][/dim]"
    return out


def g(v: object, digits: int = 4) -> str:
    if v is None:
        return "undefined"
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        if v == 0:
            return "0"
        if 1e-3 <= abs(v) < 1e5:
            return f"{v:.{digits}g}"
        return f"{v:.{max(digits - 1, 1)}e}"
    return str(v)


def cos(v: float | None) -> str:
    return format_cos(v)


def shape(s: Iterable[int] | None) -> str:
    if s is None:
        return "?"
    return "(" + ",".join(str(x) for x in s) + ")"


def nbytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if n < 1024 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


def nonfinite(side: SideStats) -> str:
    """'-' or e.g. 'nan 3, inf 1'."""
    parts = []
    if side.nan:
        parts.append(f"nan {side.nan}")
    inf = side.pos_inf + side.neg_inf
    if inf:
        parts.append(f"inf {inf}")
    return ", ".join(parts) or "-"
