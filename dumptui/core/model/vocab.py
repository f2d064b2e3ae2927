"""The one base of dumptui's vocabularies, engine and presenter alike (tests/test_vocabularies.py holds every
string enum to it): a str Enum whose members are their own text, so JSON, session files and literals in older
files agree with them, and f-strings print the text (not `Kind.NAME`). Python 3.11's `enum.StrEnum` does the
same; dumptui runs on 3.10."""

from __future__ import annotations

from enum import Enum


class Word(str, Enum):
    """A word of a vocabulary: equal to its text, printed as its text."""

    __str__ = str.__str__

    def __format__(self, format_spec: str) -> str:
        return str.__format__(self, format_spec)
