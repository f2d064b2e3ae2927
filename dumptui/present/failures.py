"""An error as the user is shown it: the path it concerns and the reason, never a traceback.

The app shows every failure through one place (`MainScreen.show_failure`), which words it with this.
"""

from __future__ import annotations

from dataclasses import dataclass

from dumptui.core.io.errors import DumptuiError

# what failed, by the work it interrupted (the main screen's worker groups, and its two file writes)
WORK_WORDS = {
    "open": "cannot open the dumps",
    "stats": "the statistics stopped",
    "bisect": "the bisection stopped",
    "detail": "cannot show the op",
    "tensor": "cannot show the tensor",
    "save": "cannot save the session",
    "export": "not exported",
}


@dataclass(frozen=True)
class Failure:
    path: str  # "" when it concerns no file
    reason: str

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}" if self.path else self.reason


def describe(error: BaseException, path: str = "") -> Failure:
    """The path and reason of `error`; `path` names the file when the error itself carries none. An error
    outside dumptui's own hierarchy is a bug: its type is named so it can be reported."""
    if isinstance(error, DumptuiError):
        return Failure(error.path or path, error.reason)
    if isinstance(error, OSError):
        return Failure(str(error.filename) if error.filename else path, error.strerror or str(error))
    if isinstance(error, ValueError):
        return Failure(path, str(error))
    return Failure(path, f"{type(error).__name__}: {error}")


def failure_line(work: str, failure: Failure) -> str:
    """One line for a notification: what failed, then the path and the reason."""
    return f"{WORK_WORDS.get(work, work + ' failed')}: {failure}"
