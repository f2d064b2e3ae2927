"""The dump readers behind one registry: `detect(path)` names the format, `open_dump(path, ...)` indexes it.

Each format is a `Reader` (see `reader.py`) in its own module; READERS lists them. Adding a format is one
module and one line in READERS.
"""

from dumptui.core.formats.reader import Reader, Selection
from dumptui.core.formats.registry import FORMATS, READERS, detect, open_dump

__all__ = ["FORMATS", "READERS", "Reader", "Selection", "detect", "open_dump"]
