"""The one base of the engine's vocabularies (defined in io/vocab.py, the bottom of the engine, so that io's
own codes use it too)."""

from __future__ import annotations

from dumptui.core.io.vocab import Word

__all__ = ["Word"]
