"""A large JSON document read one member at a time: msprobe's dump.json, whose `data` holds a record per call.

`json.loads` of a 600 MB dump.json of a million calls holds every record as Python objects at once (4.4 GB
and more before anything was built from it). This reads the top-level object member by member and the members
of one named object (`data`) one at a time, each decoded by the standard library's decoder from a buffer that
holds the member and little more; a single member larger than `record_limit` is refused (an absurd record: a
one-gigabyte line would need several gigabytes to decode) instead of read.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Iterator
from typing import Any, BinaryIO

from dumptui.core.io.fault import Fault, Flaw, JsonPart, worded
from dumptui.core.io.limits import MAX_JSON_DEPTH, MAX_JSON_RECORD, BadValue, json_depth_ok

_CHUNK = 1 << 20
_WHITESPACE = " \t\n\r"
_NEAR_END = 64  # a decoding error this close to the buffer's end may only mean the buffer ends mid-value


class RecordTooLarge(BadValue):
    """One member of the document is larger than the limit: `fault` says which, where and the limit."""

    def __init__(self, why: Fault):
        super().__init__(worded(why))
        self.fault = why


class _Buffer:
    def __init__(self, fh: BinaryIO, record_limit: int):
        self.fh = fh
        self.limit = record_limit
        self.decoder = codecs.getincrementaldecoder("utf-8")("strict")
        self.text = ""
        self.pos = 0
        self.eof = False
        self.consumed = 0  # characters dropped from the front of `text`
        self.first = True

    def more(self, at_least: int = _CHUNK) -> bool:
        """Read more of the file (at least `at_least` bytes when it has them); False at its end."""
        if self.eof:
            return False
        if self.pos > _CHUNK:  # drop what is decoded already: the buffer holds about one member
            self.consumed += self.pos
            self.text = self.text[self.pos :]
            self.pos = 0
        data = self.fh.read(max(at_least, _CHUNK))
        try:
            piece = self.decoder.decode(data, final=not data)
        except UnicodeDecodeError as e:
            raise BadValue(f"not valid JSON: not UTF-8 ({e.reason})") from None
        if self.first:
            piece = piece.removeprefix("\ufeff")  # a UTF-8 byte order mark, as json.loads of bytes allows
            self.first = False
        self.text += piece
        if not data:
            self.eof = True
        return bool(data) or bool(piece)

    def skip_space(self) -> str:
        """The next character that is not white space ('' at the end of the file), not consumed."""
        while True:
            text, pos = self.text, self.pos
            while pos < len(text) and text[pos] in _WHITESPACE:
                pos += 1
            self.pos = pos
            if pos < len(text):
                return text[pos]
            if not self.more():
                return ""

    def expect(self, chars: str, what: str) -> str:
        ch = self.skip_space()
        if not ch or ch not in chars:
            raise BadValue(
                f"not valid JSON: expecting {what} at character {self.consumed + self.pos}, "
                f"found {repr(ch) if ch else 'the end of the file'}"
            )
        self.pos += 1
        return ch

    def value(self, part: JsonPart, key: str = "") -> Any:
        """The JSON value at the current position (`part`, named by `key` when it has one: a repr), decoded
        whole; RecordTooLarge past the limit."""
        self.skip_space()
        decoder = json.JSONDecoder()
        while True:
            try:
                value, end = decoder.raw_decode(self.text, self.pos)
            except RecursionError:
                raise BadValue(f"not read: JSON nested deeper than {MAX_JSON_DEPTH} levels") from None
            except json.JSONDecodeError as e:
                cut_short = e.pos >= len(self.text) - _NEAR_END or e.msg.startswith("Unterminated string")
                if cut_short and self._grow(part, key):
                    continue
                raise BadValue(f"not valid JSON: {e.msg} at character {self.consumed + e.pos}") from None
            if end == len(self.text) and self._grow(part, key):
                continue  # a number or literal at the buffer's end may go on in the file
            if end - self.pos > self.limit:
                raise self._too_large(part, key)
            self.pos = end
            return value

    def _too_large(self, part: JsonPart, key: str) -> RecordTooLarge:
        return RecordTooLarge(Fault(Flaw.RECORD_TOO_LARGE, (part, key, self.consumed + self.pos, self.limit)))

    def _grow(self, part: JsonPart, key: str) -> bool:
        held = len(self.text) - self.pos
        if held > self.limit:
            raise self._too_large(part, key)
        return self.more(at_least=held)  # double what is held: a large member costs a linear number of retries


def members(fh: BinaryIO, stream_key: str, record_limit: int = MAX_JSON_RECORD) -> Iterator[tuple[str, str, Any]]:
    """The document in `fh` (a JSON object) member by member: ("member", key, value) for each top-level member
    but `stream_key`; ("entry", name, value) for each member of the object under `stream_key`, one at a time;
    ("member", stream_key, value) when that value is not an object. BadValue when the document is not JSON,
    not an object, or nests deeper than the limit; RecordTooLarge for a member larger than `record_limit`."""
    buf = _Buffer(fh, record_limit)
    if buf.skip_space() != "{":
        doc = buf.value(JsonPart.DOCUMENT)  # not an object: decoded (within the limit) only to say what it is
        if buf.skip_space():
            raise BadValue(f"not valid JSON: extra data at character {buf.consumed + buf.pos}")
        yield ("document", "", doc)
        return
    buf.pos += 1
    if buf.skip_space() == "}":
        buf.pos += 1
    else:
        while True:
            key = buf.value(JsonPart.KEY)
            if not isinstance(key, str):
                raise BadValue(f"not valid JSON: a key that is {type(key).__name__}, not a string")
            buf.expect(":", "':'")
            if key == stream_key and buf.skip_space() == "{":
                buf.pos += 1
                yield from _entries(buf)
            else:
                value = buf.value(JsonPart.MEMBER, repr(key[:40]))
                if not json_depth_ok(value, MAX_JSON_DEPTH - 1):
                    raise BadValue(f"not read: JSON nested deeper than {MAX_JSON_DEPTH} levels")
                yield ("member", key, value)
            if buf.expect(",}", "',' or '}'") == "}":
                break
    if buf.skip_space():
        raise BadValue(f"not valid JSON: extra data at character {buf.consumed + buf.pos}")


def _entries(buf: _Buffer) -> Iterator[tuple[str, str, Any]]:
    if buf.skip_space() == "}":
        buf.pos += 1
        return
    while True:
        name = buf.value(JsonPart.KEY)
        if not isinstance(name, str):
            raise BadValue(f"not valid JSON: a key that is {type(name).__name__}, not a string")
        buf.expect(":", "':'")
        entry = buf.value(JsonPart.RECORD, repr(name[:80]))
        if not json_depth_ok(entry, MAX_JSON_DEPTH - 2):
            raise BadValue(f"not read: JSON nested deeper than {MAX_JSON_DEPTH} levels")
        yield ("entry", name, entry)
        if buf.expect(",}", "',' or '}'") == "}":
            return
