"""Dump configurations for a second, narrower run: only the kernels of the suspect interval.

MindSpore `data_dump.json` (FORMATS.md §5) with `dump_mode: 1` and the interval's kernels, so the next run
of a model too large to dump whole dumps only what the bisection still suspects. Never written inside a dump.
"""

from __future__ import annotations

import json
import os

from .formats.files import read_json_object
from .model import Dump


def original_settings(dump: Dump) -> dict:
    """The dump's own config (`.dump_metadata/data_dump.json`), when it kept one."""
    return read_json_object(os.path.join(dump.root, ".dump_metadata", "data_dump.json"))


def mindspore_config(
    kernels: list[str],
    dump_path: str,
    like: Dump | None = None,
    iteration: str | None = None,
    saved_data: str = "tensor",
    input_output: int = 0,
) -> dict:
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


def inside_any(path: str, dumps: list[Dump]) -> str | None:
    """The dump folder `path` lies in, if any (we never write there)."""
    out = os.path.realpath(os.path.abspath(path))
    for d in dumps:
        for root in {os.path.realpath(d.root), os.path.realpath(os.path.abspath(d.path))}:
            if out == root or out.startswith(root.rstrip(os.sep) + os.sep):
                return root
    return None


def write_config(path: str, config: dict, dumps: list[Dump]) -> str:
    root = inside_any(path, dumps)
    if root is not None:
        raise ValueError(f"{path}: refusing to write inside the dump folder {root}")
    os.makedirs(os.path.dirname(os.path.abspath(path)) or ".", exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(config, fh, indent=4)
        fh.write("\n")
    return path
