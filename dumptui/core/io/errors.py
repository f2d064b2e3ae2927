"""The one error hierarchy of dumptui. The CLI and the app catch `DumptuiError` in one place each and show
`path: reason`; anything else escaping is a bug.

- `DumpError`: a dump that cannot be opened as asked (bad path, ambiguous rank/graph/iteration, no dump).
- `UsageError`: a request that makes no sense (bad arguments, a write inside a dump folder).
"""

from __future__ import annotations


class DumptuiError(Exception):
    """An expected failure with a path (may be empty) and a one-line reason."""

    def __init__(self, path: str, reason: str):
        super().__init__(f"{path}: {reason}" if path else reason)
        self.path = path
        self.reason = reason


class DumpError(DumptuiError):
    """A dump that cannot be opened as asked."""


class UsageError(DumptuiError):
    """Bad arguments or a refused request; `path` is empty when no path is involved."""

    def __init__(self, message: str, path: str = ""):
        super().__init__(path, message)
        self.args = (message,)

    def __str__(self) -> str:
        return self.reason
