"""`--map FILE`: op pairs forced by the user, from a CSV (`ref_name,target_name`) or from msprobe's mapping
yamls, so a team that already keeps msprobe mappings does not write them twice.

msprobe's yamls map the NPU side (dumptui's target) to the bench side (dumptui's reference):
- data mapping (`--data_mapping`): `NPU tensor name: bench tensor name`, e.g.
  `Functional.flash_attention_score.4.forward.input.0: NPU.npu_fusion_attention.4.forward.input.0`;
  dumptui pairs ops, so the tensor names give the op pair (the part before `.input.`/`.output.`/`.parameters.`).
- API mapping (`--api_mapping`): a list of `{ms_api: Functional.conv2d, pt_api: Torch.conv2d, ...}`: every
  call `ms_api.N.forward` pairs with `pt_api.N.forward` when the reference has it. The argument lists
  (`ms_args`/`pt_args`, ...) are not applied: dumptui pairs an op's tensors slot by slot.
- cell mapping (`--cell_mapping`): `fc2.Dense: fc2.Linear` (cell path and class: module path and class): ops
  named under the cell path pair with the same names under the module path (module parameters:
  `fc2.weight` with `fc2.weight`, `layer.fc.bias` with `layers.fc.bias`).
- layer mapping (`--layer_mapping`): `ClassName: {npu module name: bench module name}` (`TopLayer` for the
  top level): module paths renamed by walking the target's construct.json, each API call then paired with the
  reference's call at the converted path (options/layermap.py says what is applied and what is not).

YAML is parsed with PyYAML (a runtime dependency: YAML is not a format to parse by hand).
"""

from __future__ import annotations

import os
import re
from typing import Any

from dumptui.core.graph.align import read_map_file
from dumptui.core.io.limits import MAX_JSON_DEPTH, MAX_OPTION_FILE, json_depth_ok
from dumptui.core.io.safeio import read_text
from dumptui.core.model.dump import Dump
from dumptui.options.layermap import layer_pairs

_TENSOR_SUFFIX = re.compile(r"\.(input|output|parameters|parameters_grad)(\.|$)")


def is_yaml(path: str) -> bool:
    return os.path.splitext(path)[1].lower() in (".yaml", ".yml")


def _check_events(yaml: Any, text: str) -> None:
    """The YAML's events, read once in linear time before anything is built: no alias (each repeats what its
    anchor holds, without bound: "billion laughs") and no nesting beyond MAX_JSON_DEPTH (50,000 brackets took
    PyYAML 86 s to build and refuse; stopping at the first event too deep takes milliseconds)."""
    depth = 0
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        if isinstance(event, yaml.AliasEvent):
            raise ValueError("YAML anchors and aliases (*name) are not accepted in a mapping file")
        if isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
            depth += 1
            if depth > MAX_JSON_DEPTH:
                raise ValueError(f"not a mapping: nested deeper than {MAX_JSON_DEPTH} levels")
        elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
            depth -= 1


def read_pairs(path: str, ref: Dump, target: Dump) -> list[tuple[str, str]]:
    """(ref op name, target op name) pairs from a map file; ValueError with the reason when it is malformed."""
    if not is_yaml(path):
        return read_map_file(path)
    import yaml

    text = read_text(path, MAX_OPTION_FILE)  # regular, bounded: never a FIFO or /dev/zero
    try:
        # an alias repeats what its anchor holds, without bound ("billion laughs": 30 lines, 10^9 entries
        # once walked): msprobe's mappings never need one, so none is accepted (the events, read in linear time)
        _check_events(yaml, text)
        doc = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise ValueError(f"not valid YAML: {e}") from None
    except RecursionError:
        raise ValueError("not a mapping: nested too deep to read") from None
    if not json_depth_ok(doc):
        raise ValueError(f"not a mapping: nested deeper than {MAX_JSON_DEPTH} levels")
    kind = mapping_kind(doc)
    if kind == "api":
        return api_pairs(doc, ref, target)
    if kind == "data":
        return data_pairs(doc)
    if kind == "cell":
        return cell_pairs(doc, ref, target)
    if kind == "layer":
        return layer_pairs(doc, ref, target)
    raise ValueError(
        "not an msprobe mapping: expected a data mapping (tensor: tensor), an API mapping "
        "(a list of ms_api/pt_api), a cell mapping (cell.Class: module.Class) or a layer mapping "
        "(ClassName: {npu_name: bench_name})"
    )


def mapping_kind(doc: Any) -> str | None:
    """Which of msprobe's mapping yamls this is, from its shape."""
    if isinstance(doc, list) and doc and all(isinstance(d, dict) and "ms_api" in d and "pt_api" in d for d in doc):
        return "api"
    if not isinstance(doc, dict) or not doc:
        return None
    if any(isinstance(v, dict) for v in doc.values()):
        return "layer"  # `ClassName: {...}`; parse_rules names an entry that is not a mapping
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in doc.items()):
        return None
    if all(_TENSOR_SUFFIX.search(k) and _TENSOR_SUFFIX.search(v) for k, v in doc.items()):
        return "data"
    return "cell"


def _op_of(tensor_name: str) -> str:
    m = _TENSOR_SUFFIX.search(tensor_name)
    return tensor_name[: m.start()] if m else tensor_name


def data_pairs(doc: dict[str, str]) -> list[tuple[str, str]]:
    pairs: dict[tuple[str, str], None] = {}
    for npu, bench in doc.items():
        pairs[(_op_of(bench), _op_of(npu))] = None
    return list(pairs)


def api_pairs(doc: list[dict[str, Any]], ref: Dump, target: Dump) -> list[tuple[str, str]]:
    ref_names = {op.name for op in ref.ops}
    pairs = []
    for entry in doc:
        ms_api, pt_api = str(entry["ms_api"]), str(entry["pt_api"])
        for op in target.ops:
            if op.name.startswith(ms_api + "."):
                candidate = pt_api + op.name[len(ms_api) :]
                if candidate in ref_names:
                    pairs.append((candidate, op.name))
    return pairs


def cell_pairs(doc: dict[str, str], ref: Dump, target: Dump) -> list[tuple[str, str]]:
    ref_names = {op.name for op in ref.ops}
    pairs = []
    for cell, module in doc.items():
        cell_path, module_path = _path_of(cell), _path_of(module)
        for op in target.ops:
            if op.name.startswith(cell_path + "."):
                candidate = module_path + op.name[len(cell_path) :]
                if candidate in ref_names and candidate != op.name:
                    pairs.append((candidate, op.name))
    return pairs


def _path_of(cell: str) -> str:
    """`fc2.Dense` -> `fc2`: msprobe's cell mapping keys end with the class name."""
    return cell.rsplit(".", 1)[0] if "." in cell else cell
