"""The generic fallback: a folder (tree) of `.npy` files, one tensor each.

Each file is one op with one output, named by its path relative to the folder (without `.npy`); names of the
form `{op}.{input|output}.{slot}` or `{op}_{input|output}_{slot}` group into one op with several tensors.
Order: file modification time (the order they were written), then name.
"""

from __future__ import annotations

import os
import re
from collections import defaultdict

from dumptui.core.formats.reader import Selection
from dumptui.core.io.errors import DumpError
from dumptui.core.io.fault import Fault, Flaw
from dumptui.core.model.dump import (
    INPUT,
    KERNEL,
    OUTPUT,
    Dump,
    FormatName,
    InOut,
    Op,
    OrderSource,
    Problem,
    Severity,
    TensorRef,
)
from dumptui.core.model.reason import Why, because

# DOTALL and \Z: a name may hold a newline (a file name can), and it must not split one op in two
_IO = re.compile(r"^(?P<op>.+?)[._](?P<io>input|output|in|out)[._](?P<slot>\d+)\Z", re.DOTALL)

# One file: (modification time, io, slot, path).
_File = tuple[float, InOut, int, str]


def looks_like(path: str) -> bool:
    return any(f.endswith(".npy") for _dirpath, _dirs, files in os.walk(path) for f in files)


def _group_files(path: str, problems: list[Problem]) -> dict[str, list[_File]]:
    """{op name: its files}, walking the folder tree in name order."""
    groups: dict[str, list[_File]] = defaultdict(list)
    for dirpath, dirs, files in os.walk(path):
        dirs.sort()
        for f in sorted(files):
            if not f.endswith(".npy"):
                continue
            fp = os.path.join(dirpath, f)
            rel = os.path.relpath(fp, path)[:-4].replace(os.sep, "/")
            try:
                mtime = os.stat(fp).st_mtime
            except OSError as e:
                problems.append(Problem(fp, f"cannot stat: {e.strerror}"))
                continue
            m = _IO.match(rel)
            if m:
                io = INPUT if m.group("io").startswith("in") else OUTPUT
                groups[m.group("op")].append((mtime, io, int(m.group("slot")), fp))
            else:
                groups[rel].append((mtime, OUTPUT, 0, fp))
    return groups


def _op(name: str, files: list[_File], problems: list[Problem]) -> Op:
    op = Op(name=name, op_type=name.rsplit("/", 1)[-1].split(".", maxsplit=1)[0], kind=KERNEL, file_name=name)
    for _mtime, io, slot, fp in sorted(files):
        side = op.inputs if io == INPUT else op.outputs
        if slot in side:
            problems.append(Problem(fp, Fault(Flaw.DUPLICATE_TENSOR, (io, slot, name)), Severity.WARNING))
            continue
        op.put(io, slot, TensorRef(fp, io, slot))
    op.timestamp = int(min(f[0] for f in files) * 1e6)
    return op


def open_npy_folder(path: str) -> Dump:
    if not os.path.isdir(path):
        raise DumpError(path, "not a folder")
    dump = Dump(
        path=path,
        root=os.path.abspath(path),
        format=FormatName.NPY_FOLDER,
        variant=because(Why.NPY_FOLDER_VARIANT),
    )
    groups = _group_files(path, dump.problems)
    if not groups:
        raise DumpError(path, "no .npy files found")
    ops = sorted(
        (_op(name, files, dump.problems) for name, files in groups.items()), key=lambda o: (o.timestamp, o.name)
    )
    for i, op in enumerate(ops):
        op.order = i
    dump.ops = ops
    dump.order_source = OrderSource.FILE_MTIMES
    dump.notes.append(because(Why.NO_GRAPH_FILE))
    return dump


class NpyFolderReader:
    """The Reader of last resort: any folder tree with .npy files in it (rank, graph and iteration do not apply)."""

    name = FormatName.NPY_FOLDER
    formats = (FormatName.NPY_FOLDER,)
    priority = 0

    def looks_like(self, path: str) -> bool:
        return looks_like(path)

    def open(self, path: str, selection: Selection) -> Dump:
        return open_npy_folder(path)
