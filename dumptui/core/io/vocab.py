"""The one base of the engine's vocabularies: a str Enum whose members are their own text, so JSON, session
files and literals in older files agree with them, and f-strings print the text (not `Kind.NAME`).

It lives at the bottom of the engine (io/) so that every stage, io's own file faults included, names its codes
with it; `dumptui.core.model.vocab` re-exports it."""

from __future__ import annotations

from enum import Enum


class Word(str, Enum):
    """A word of a vocabulary: equal to its text, printed as its text."""

    __str__ = str.__str__

    def __format__(self, format_spec: str) -> str:
        return str.__format__(self, format_spec)
