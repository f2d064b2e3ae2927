"""The generic fallback: a folder (tree) of `.npy` files, one tensor each.

Each file is one op with one output, named by its path relative to the folder (without `.npy`); names of the
form `{op}.{input|output}.{slot}` or `{op}_{input|output}_{slot}` group into one op with several tensors.
Order: file modification time (the order they were written), then name.
"""
from __future__ import annotations

import os
import re
from collections import defaultdict

from ..model import KERNEL, Dump, DumpError, Op, Problem, TensorRef

_IO = re.compile(r"^(?P<op>.+?)[._](?P<io>input|output|in|out)[._](?P<slot>\d+)$")


def looks_like(path: str) -> bool:
    for _dirpath, _dirs, files in os.walk(path):
        if any(f.endswith(".npy") for f in files):
            return True
    return False


def open_npy_folder(path: str) -> Dump:
    if not os.path.isdir(path):
        raise DumpError(path, "not a folder")
    dump = Dump(path=path, root=os.path.abspath(path), format="npy-folder",
                variant="one tensor per .npy file, op names from file names")
    problems: list[Problem] = []
    groups: dict[str, list[tuple[float, str, int, str]]] = defaultdict(list)
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
                io = "input" if m.group("io").startswith("in") else "output"
                groups[m.group("op")].append((mtime, io, int(m.group("slot")), fp))
            else:
                groups[rel].append((mtime, "output", 0, fp))
    if not groups:
        raise DumpError(path, "no .npy files found")
    ops = []
    for name, recs in groups.items():
        op = Op(name=name, op_type=name.rsplit("/", 1)[-1].split(".")[0], kind=KERNEL, file_name=name)
        for _mtime, io, slot, fp in sorted(recs):
            side = op.inputs if io == "input" else op.outputs
            if slot in side:
                problems.append(Problem(fp, f"duplicate {io}.{slot} for {name} (ignored)", "warning"))
                continue
            side[slot] = TensorRef(fp, io, slot)
        op.timestamp = int(min(r[0] for r in recs) * 1e6)
        ops.append(op)
    ops.sort(key=lambda o: (o.timestamp, o.name))
    for i, op in enumerate(ops):
        op.order = i
    dump.ops = ops
    dump.order_source = "file modification times"
    dump.problems = problems
    dump.notes.append("no graph file: inputs cannot be traced to their producers")
    return dump
