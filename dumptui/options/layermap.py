"""msprobe's layer mapping (`msprobe compare -lm`, `msprobe graph -lm`) read for `--map`.

A layer mapping renames module paths where two implementations of one model name their layers differently
(msprobe's docs/zh/examples/layer_mapping_example.md). Module calls are named
`{Module|Cell}.{module_name}.{class_name}.{forward|backward}.{call}`, e.g.
`Module.module.module.language_model.embedding.Embedding.forward.0`, and the yaml is keyed by the NPU-side
(target) class name, each key mapping module-name segments under a module of that class to the bench-side
(reference) ones; `TopLayer` (formerly `Cell`) holds the rules for the top level:

    TopLayer:
      module: model
    GPTModel:
      language_model.embedding: embedding     # a key may span several levels
    ParallelMLP:
      dense_h_to_4h: linear_fc1

What is applied, as msprobe's `core/compare/layer_mapping/` (layer_mapping.py, data_scope_parser.py,
postprocess_pass.py; msprobe 26.x) does it:
- Every API call (an op of dumptui) has a scope: its parent module's path, from `construct.json` beside
  `dump.json`, then its API name (`linear` in `Functional.linear.1.forward`); a call with no parent is at the
  top level. A backward call takes the scope of its forward call when that was dumped.
- The target scope is walked from the top: at each level the rules of the current module's class whose key
  starts with the next segment are tried, longest first; a match emits its value and skips the segments it
  spans, otherwise the segment is kept. A level whose class is unknown (a ModuleList such as `layers`) is
  keyed by its own name, as msprobe keys it. Values lose a `(...)` suffix, as msprobe's newer versions strip it. The last
  segment is the API name, so a rule may rename an API too (`FusedRMSNorm: {RmsNorm: npu_rms_norm}`).
- Calls with the same scope and direction are matched by their order: the k-th target call with the k-th
  reference call of the converted scope. Every such pair is a forced `--map` pair (`map file`), names equal
  or not, so what the mapping decided wins over names.
- The layers of a `ParallelTransformer` are renumbered from 0 on each side (msprobe's renumber pass, for
  pipeline stages numbered globally on one side and locally on the other).
- One difference, on purpose: a call the mapping finds no counterpart for is N/A in msprobe's table; dumptui
  leaves it to its usual rules among the calls the mapping left over too, and each such pair says how it was
  made (`exact name`, `position ...`), so whatever is not `map file` is dumptui's guess, not the mapping's.
- A dump without module structure (construct.json empty: msprobe's level L1) is refused: msprobe maps nothing
  there either (it builds no layer tree without construct.json and stack.json).

What is not applied, and why:
- The framework-function level msprobe inserts from `stack.json`: its layer mapping looks stacks up by call
  name, which only the old stack.json layout has; msprobe 26.x writes stacks keyed by index, so msprobe
  itself finds none there. Calls of one API under one module are matched by order.
- Module calls and module parameters get no pairs: dumptui's ops are the API calls; parameters are paired by
  name.
- Class names come from the module names in construct.json (keys and parents), so an API-level dump whose
  construct.json names the parent modules is mapped by class too; msprobe reads classes from dump.json's
  module entries only.
"""

from __future__ import annotations

import os
import re
from typing import Any

from dumptui.core.io.safeio import read_json
from dumptui.core.model.dump import KERNEL, MSPROBE_FORMATS, Dump, Op
from dumptui.core.ranks.merge import PREFIX

MERGED_RANK_PREFIX = PREFIX.split("{")[0]  # `rank_`: the ops of several ranks opened as one (the app's --rank all)

TOP_LAYER = "TopLayer"
_LEGACY_TOP_LAYER = "Cell"  # msprobe's older name for the top level's key
_MODULE_PREFIXES = ("Module", "Cell")
CONSTRUCT_JSON = "construct.json"
# msprobe renumbers the layers of this class (postprocess_pass.renumber_index_pass)
_RENUMBERED = ("ParallelTransformer", "layers")
_DIGITS = re.compile(r"\d+")

Path = tuple[str, ...]
# class name -> first segment of a key -> [(key segments, value segments)], longest key first
Rules = dict[str, dict[str, list[tuple[Path, Path]]]]
# (scope, direction): the scope is the module path, then the API name
Group = tuple[Path, str]


def parse_rules(doc: dict[Any, Any]) -> Rules:
    """The rules of a layer-mapping yaml; ValueError naming the entry that is malformed."""
    doc = dict(doc)
    if _LEGACY_TOP_LAYER in doc:
        doc[TOP_LAYER] = doc.pop(_LEGACY_TOP_LAYER)
    rules: Rules = {}
    for cls, names in doc.items():
        if not isinstance(cls, str) or not cls:
            raise ValueError(f"layer mapping: class name {cls!r} is not a name")
        if not isinstance(names, dict) or not names:
            raise ValueError(f"layer mapping: {cls} should map module names (npu_name: bench_name), got {names!r}")
        by_first: dict[str, list[tuple[Path, Path]]] = {}
        for key, value in names.items():
            origin = _segments(key, f"{cls}: module name {key!r}")
            target = _segments(value.split("(")[0] if isinstance(value, str) else value, f"{cls}: {key}: {value!r}")
            by_first.setdefault(origin[0], []).append((origin, target))
        for candidates in by_first.values():
            candidates.sort(key=lambda rule: -len(rule[0]))
        rules[cls] = by_first
    return rules


def _segments(name: Any, where: str) -> Path:
    if isinstance(name, (int, float)) and not isinstance(name, bool):
        raise ValueError(f"layer mapping: {where} is a number; quote it ('{name}'): module names are text")
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"layer mapping: {where} is not a module name")
    parts = tuple(name.strip().split("."))
    if not all(parts):
        raise ValueError(f"layer mapping: {where} has an empty segment")
    return parts


def read_parents(dump: Dump, side: str) -> dict[str, str]:
    """construct.json of an msprobe dump: {node name: parent module call}, nodes without a parent left out."""
    if dump.format not in MSPROBE_FORMATS:
        raise ValueError(f"a layer mapping needs msprobe dumps (construct.json): the {side} is {dump.format}")
    if any(op.name.startswith(MERGED_RANK_PREFIX) and "/" in op.name for op in dump.ops[:1]):  # msprobe: no `/`
        raise ValueError("a layer mapping reads one rank's construct.json: choose the rank with --rank N")
    path = os.path.join(dump.root, CONSTRUCT_JSON)
    try:  # a file of the dump: through safeio (a FIFO is refused, not waited on; depth and size limited)
        doc = read_json(path)
    except OSError as e:
        raise ValueError(f"a layer mapping needs the {side}'s {path}: {e.strerror or e}") from None
    except ValueError as e:
        raise ValueError(f"{path}: {e}") from None
    if not isinstance(doc, dict):
        raise ValueError(f"{path}: not a JSON object of node: parent")
    parents = {}
    for node, parent in doc.items():
        if isinstance(parent, list) and parent:  # megatron micro steps: [parent, micro step]
            parent = parent[0]
        if isinstance(parent, str) and parent:
            parents[str(node)] = parent
    if not doc:
        raise ValueError(f"{path}: empty, the {side} has no module structure (dump at level mix or L0)")
    return parents


def _module_path(name: str) -> tuple[Path, str] | None:
    """`Module.a.b.Linear.forward.0` -> (('a', 'b'), 'Linear'); None for a name that is no module call."""
    parts = name.split(".")
    if parts[0] in _MODULE_PREFIXES and len(parts) >= 5:
        return tuple(parts[1:-3]), parts[-3]
    return None


class Hierarchy:
    """One dump's modules and API calls as msprobe's layer mapping sees them."""

    def __init__(self, dump: Dump, side: str) -> None:
        parents = read_parents(dump, side)
        self.classes: dict[Path, str] = {}
        for name in (*parents, *parents.values()):
            module = _module_path(name)
            if module is not None:
                self.classes.setdefault(*module)
        calls = sorted((op for op in dump.ops if op.kind == KERNEL), key=lambda op: op.order)
        names = {op.name for op in calls}
        self.scope: dict[str, Group] = {}
        for op in calls:
            parts = op.name.split(".")
            direction = parts[-1]
            own = op.name
            if direction == "backward":  # no scope of its own in msprobe: its forward call's is taken
                forward = ".".join(parts[:-1] + ["forward"])
                own = forward if forward in names else own
            parent = parents.get(own)
            module = _module_path(parent) if parent else None
            api = parts[-3] if len(parts) >= 4 else op.name
            self.scope[op.name] = ((module[0] if module else ()) + (api,), direction)
        self._renumber_layers()
        self.groups: dict[Group, list[Op]] = {}
        for op in calls:
            self.groups.setdefault(self.scope[op.name], []).append(op)

    def _renumber_layers(self) -> None:
        """Layer indices under each ParallelTransformer from 0 (the last number of the segment after `layers`)."""
        cls, child = _RENUMBERED
        for path in [p for p, c in self.classes.items() if c == cls]:
            prefix = path + (child,)
            # each distinct path once: thousands of calls share a few hundred scopes
            distinct = set(self.classes) | {scope for scope, _ in self.scope.values()}
            numbers = {p: n for p in distinct if (n := _layer_number(p, prefix)) is not None}
            if not numbers:
                continue
            low = min(numbers.values())
            new = {p: p[: len(prefix)] + (str(n - low),) + p[len(prefix) + 1 :] for p, n in numbers.items()}
            self.classes = {new.get(p, p): c for p, c in self.classes.items()}
            self.scope = {k: (new.get(s, s), d) for k, (s, d) in self.scope.items()}

    def class_at(self, path: Path) -> str:
        return self.classes.get(path, path[-1]) if path else TOP_LAYER


def _layer_number(path: Path, prefix: Path) -> int | None:
    if len(path) <= len(prefix) or path[: len(prefix)] != prefix:
        return None
    digits = _DIGITS.findall(path[len(prefix)])
    return int(digits[-1]) if digits else None


def to_reference(scope: Path, target: Hierarchy, rules: Rules) -> Path:
    """A target scope in the reference's naming (msprobe's convert_scope)."""
    out: list[str] = []
    i = 0
    while i < len(scope):
        step, emitted = 1, scope[i : i + 1]
        for origin, value in rules.get(target.class_at(scope[:i]), {}).get(scope[i], ()):
            if scope[i : i + len(origin)] == origin:
                step, emitted = len(origin), value
                break
        out.extend(emitted)
        i += step
    return tuple(out)


def layer_pairs(doc: dict[Any, Any], ref: Dump, target: Dump) -> list[tuple[str, str]]:
    """(reference op, target op) for every target API call the layer mapping finds a reference call for."""
    rules = parse_rules(doc)
    tgt, rfr = Hierarchy(target, "target"), Hierarchy(ref, "reference")
    pairs: list[tuple[str, str]] = []
    for (scope, direction), calls in tgt.groups.items():
        counterparts = rfr.groups.get((to_reference(scope, tgt, rules), direction), [])
        pairs += [(r.name, t.name) for t, r in zip(calls, counterparts)]
    return pairs
