"""Dump configurations for a second, narrower run: only the kernels of the suspect interval.

MindSpore `data_dump.json` (docs/formats.md#dump-configurations) with `dump_mode: 1` and the interval's kernels, so the next run
of a model too large to dump whole dumps only what the bisection still suspects. Never written inside a dump.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

from dumptui.core.formats.files import read_json_object
from dumptui.core.model.dump import Dump

# a MindSpore dump config (data_dump.json) as JSON: common_dump_settings, e2e_dump_settings, whatever else it holds
DumpConfig = dict[str, Any]


def original_settings(dump: Dump) -> DumpConfig:
    """The dump's own config (`.dump_metadata/data_dump.json`), when it kept one."""
    return read_json_object(os.path.join(dump.root, ".dump_metadata", "data_dump.json"))


def mindspore_config(
    kernels: list[str],
    dump_path: str,
    like: Dump | None = None,
    iteration: str | None = None,
    saved_data: str = "tensor",
    input_output: int = 0,
) -> DumpConfig:
    """A data_dump.json that dumps only `kernels` (full scope names), inputs and outputs."""
    if not os.path.isabs(dump_path):
        raise ValueError(f"{dump_path}: MindSpore needs an absolute dump path")
    base = original_settings(like) if like is not None else {}
    common = dict(base.get("common_dump_settings") or {})
    e2e = dict(base.get("e2e_dump_settings") or {})
    common.update(
        {
            "dump_mode": 1,
            "path": dump_path,
            "net_name": common.get("net_name", "Net"),
            "iteration": iteration if iteration is not None else str(common.get("iteration", "0")),
            "saved_data": saved_data,
            "input_output": input_output,
            "kernels": list(dict.fromkeys(kernels)),
            "support_device": common.get("support_device", [0, 1, 2, 3, 4, 5, 6, 7]),
        }
    )
    common.setdefault("op_debug_mode", 0)
    e2e.setdefault("enable", True)
    e2e.setdefault("trans_flag", True)
    return {"common_dump_settings": common, "e2e_dump_settings": e2e}


# Folder levels of the dump trees above an indexed folder that are still the dump: MindSpore rank_N, msprobe
# stepN/rankN/procN, 1.x device_N and iteration_N; an ACL tree is recognised by its time folder.
_TREE_LEVEL = re.compile(r"^(rank_?\d+|proc\d+|step\d+|device_\d+|iteration_\d+)$")
_ACL_TIME = re.compile(r"^\d{14}$")  # {dump_path}/{YYYYMMDDhhmmss}/{device}/{model}/{model id}/{step}
_TREE_DEPTH = 7


def tree_top(dump: Dump) -> str:
    """The topmost folder of the dump tree the dump was indexed from: the folder above its highest tree
    level (at most one freely named folder, a net name, between two levels), or an ACL tree's dump path."""
    chain = [os.path.realpath(dump.root)]
    while len(chain) < _TREE_DEPTH and os.path.dirname(chain[-1]) != chain[-1]:
        chain.append(os.path.dirname(chain[-1]))
    for folder in chain[:6]:
        if _ACL_TIME.match(os.path.basename(folder)):
            return os.path.dirname(folder)
    top, free = chain[0], 0
    for folder in chain:
        if _TREE_LEVEL.match(os.path.basename(folder)):
            top, free = os.path.dirname(folder), 0
        else:
            free += 1
            if free > 1:
                break
    return top


def inside_any(path: str, dumps: list[Dump]) -> str | None:
    """The dump folder `path` lies in, if any (we never write there): the folder given, the folder indexed,
    or the top of the dump tree above them (a rank folder given: its dump root too)."""
    out = os.path.realpath(os.path.abspath(path))
    for d in dumps:
        for root in {os.path.realpath(d.root), os.path.realpath(os.path.abspath(d.path)), tree_top(d)}:
            if out == root or out.startswith(root.rstrip(os.sep) + os.sep):
                return root
    return None


def write_config(path: str, config: DumpConfig, dumps: list[Dump]) -> str:
    root = inside_any(path, dumps)
    if root is not None:
        raise ValueError(f"{path}: refusing to write inside the dump folder {root}")
    os.makedirs(os.path.dirname(os.path.abspath(path)) or ".", exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(config, fh, indent=4)
        fh.write("\n")
    return path
