"""The one base of dumptui's vocabularies, engine and presenter alike (tests/test_vocabularies.py holds every
string enum to it): a str Enum whose members are their own text. Defined in io/vocab.py, the bottom of the
engine, so that io's own codes use it too; re-exported here."""

from __future__ import annotations

from dumptui.core.io.vocab import Word

__all__ = ["Word"]
