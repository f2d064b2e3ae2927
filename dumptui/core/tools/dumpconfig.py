"""Dump configurations written from scratch (docs/formats.md#dump-configurations): ACL's `acl.json` for an Ascend310 model, and
MindSpore's `data_dump.json` for given kernels.

The ACL config needs the model's graph name plus ".0" (a wrong name silently dumps nothing): we read it from
the MindIR file. ACL also writes nothing into a dump folder that does not exist yet, which the caller says.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

from dumptui.core.formats.mindir import read_graph_name
from dumptui.core.tools.redump import mindspore_config

ACL_DUMP_MODES = ("all", "input", "output")


@dataclass
class AclConfig:
    graph_name: str
    config: dict[str, Any]

    @property
    def model_name(self) -> str:
        return str(self.config["dump"]["dump_list"][0]["model_name"])


def _absolute(path: str, what: str) -> str:
    if not os.path.isabs(path):
        raise ValueError(f"{path}: the {what} must be an absolute path")
    return path


def acl_config(mindir: str, dump_path: str, ops: list[str] | None = None, mode: str = "all") -> AclConfig:
    """The acl.json that dumps the model of `mindir` (every op, or `ops`) into `dump_path`."""
    if mode not in ACL_DUMP_MODES:
        raise ValueError(f"dump mode {mode!r}: one of {', '.join(ACL_DUMP_MODES)}")
    dump_path = _absolute(dump_path, "dump path")
    try:
        graph_name = read_graph_name(mindir)
    except ValueError as e:
        raise ValueError(f"{mindir}: {e}") from None
    entry: dict[str, Any] = {"model_name": graph_name + ".0"}
    if ops:
        entry["layer"] = list(dict.fromkeys(ops))
    config = {"dump": {"dump_list": [entry], "dump_path": dump_path, "dump_mode": mode}}
    return AclConfig(graph_name, config)


def mindspore_dump_config(
    kernels: list[str], dump_path: str, net_name: str = "Net", iteration: str = "0", trans_flag: bool = True
) -> dict[str, Any]:
    """A data_dump.json that dumps `kernels` (every kernel when none is given) into `dump_path`."""
    config = mindspore_config(kernels, _absolute(dump_path, "dump path"), iteration=iteration)
    common = config["common_dump_settings"]
    common["net_name"] = net_name
    if not kernels:
        common["dump_mode"] = 0  # dump_mode 1 with no kernels would dump nothing
    config["e2e_dump_settings"]["trans_flag"] = trans_flag
    return config


def write_json(path: str, config: dict[str, Any]) -> str:
    """Write `config` to `path` (folders made as needed); returns the absolute path."""
    path = os.path.abspath(path)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(config, fh, indent=4)
        fh.write("\n")
    return path
