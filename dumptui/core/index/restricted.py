"""Reading the index cache's columns without running code from the file.

The columns hold a few objects of dumptui's own (a Dump's metadata, its graph, an op's input sources, the
parse call of its attributes, how a tensor's layout is read). Pickle would rebuild them by calling whatever
the file names: a pickle planted in the user's cache folder would run on the next `dumptui`. This unpickler
rebuilds only the classes and functions in `ALLOWED` (data classes, and the readers' own pure functions that a
lazy field calls), and refuses the file otherwise: the entry is then a miss, removed, and the dump indexed
again. `builtins.getattr`, `eval`, `os.system` and anything else not listed never load.
"""

from __future__ import annotations

import io
import os
import pickle
from typing import Any, BinaryIO

AUDIT_ENV = "DUMPTUI_CACHE_AUDIT"  # development only: a file to list what the whitelist refused

ALLOWED: frozenset[tuple[str, str]] = frozenset(
    {
        ("array", "array"),
        ("array", "_array_reconstructor"),
        ("functools", "partial"),
        ("dumptui.core.model.dump", "Dump"),
        ("dumptui.core.model.dump", "InputSource"),
        ("dumptui.core.model.dump", "Problem"),
        ("dumptui.core.model.dump", "Severity"),
        ("dumptui.core.model.dump", "InOut"),
        ("dumptui.core.model.dump", "SourceKind"),
        ("dumptui.core.model.dump", "OpKind"),
        ("dumptui.core.model.dump", "FormatName"),
        ("dumptui.core.model.dump", "NameSource"),  # codes (enums pickle as their class and value)
        ("dumptui.core.model.dump", "OrderSource"),
        ("dumptui.core.model.reason", "Reason"),  # a dump's notes
        ("dumptui.core.model.reason", "Why"),
        ("dumptui.core.model.flowgraph", "FlowGraph"),
        ("dumptui.core.model.slotmap", "slot_map"),
        ("dumptui.core.model.recordstats", "record_stats"),
        ("dumptui.core.graph.build", "LazyAttrs"),
        ("dumptui.core.formats.irtext", "_parse_attrs"),
        # how a tensor's layout is found when its file is first read (readers' own functions, their data)
        ("dumptui.core.formats.cann", "_fixed"),
        ("dumptui.core.formats.mindspore_bin", "_raw_layout"),
        ("dumptui.core.formats.msprobe", "_as_recorded"),
        ("dumptui.core.formats.msprobe", "_pt_file_layout"),
        ("dumptui.core.io.npy", "npy_layout"),
        ("dumptui.core.io.npy", "Layout"),
        ("dumptui.core.io.fault", "Fault"),  # why a file cannot be read (a Layout's problem, a Problem's reason)
        ("dumptui.core.io.fault", "Flaw"),
        ("dumptui.core.io.fault", "FileKind"),
        ("dumptui.core.io.fault", "NamePattern"),  # the pattern a misnamed file does not follow
        # how a dump spells things (Dump.variant, a Reason): the readers' codes among its values
        ("dumptui.core.formats.cann_file", "RawNameStyle"),
        ("dumptui.core.formats.cann_file", "RawLayout"),
        ("dumptui.core.formats.mindspore", "DtypeSuffix"),
        ("dumptui.core.formats.statistic_csv", "StatisticHeader"),
        ("numpy", "dtype"),
        ("dumptui.core.io.devicelayout", "DeviceLayout"),  # tensors stored in a device layout (CANN raw)
        ("dumptui.core.io.devicelayout", "DevicePayload"),
        ("dumptui.core.formats.cann_file", "EmbeddedPayload"),
    }
)


class RefusedClass(pickle.UnpicklingError):
    pass


class _Restricted(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in ALLOWED:
            audit = os.environ.get(AUDIT_ENV)
            if audit:
                with open(audit, "a") as fh:
                    fh.write(f"{module} {name}\n")
            raise RefusedClass(f"{module}.{name} is not allowed in an index cache entry")
        return super().find_class(module, name)


def load(fh: BinaryIO) -> Any:
    """One pickled object from `fh`, rebuilt from allowed classes only (RefusedClass otherwise)."""
    return _Restricted(fh).load()


def loads(data: bytes) -> Any:
    return load(io.BytesIO(data))
