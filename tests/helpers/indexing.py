"""The index cache as the tests age it (files older than the racy window, so the cache trusts them)."""

from __future__ import annotations

import os
import time


def age(root: str, seconds: float = 60.0) -> None:
    """Every file and folder of `root` last changed `seconds` ago (a dump written earlier, not a moment ago)."""
    past = time.time() - seconds
    for folder, _dirs, files in os.walk(root):
        for name in files:
            os.utime(os.path.join(folder, name), (past, past))
    for folder, _dirs, _files in sorted(os.walk(root), key=lambda w: -len(w[0])):  # deepest first
        os.utime(folder, (past, past))
