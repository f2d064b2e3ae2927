"""What to change on the device for a culprit: precision (keep the op in float32) or the op itself.

For each root, the reference op is replayed on the *reference's* inputs at the device's precision
(replay/precision.py). When that reproduces the target's output, the cause is precision and the remedy is to
keep the op in float32, written three ways:

- ATC (`atc --keep_dtype=keep_dtype.cfg`): one op name per line (or `OpType::ReduceSum` for every op of a
  type); ATC ignores it under `--precision_mode=must_keep_origin_dtype`, which already keeps everything;
- the MindSpore Lite converter (`converter_lite --configFile=...`): its `[ascend_context]` section takes a
  `precision_mode` for the whole model (`preferred_fp32`: float32 wherever the op supports it), not per op;
- MindSpore itself: the cell that holds the op, `to_float(mstype.float32)` (its scope names the cell path).

When the replay does not reproduce it, the op computes another function on the device (FloorMod vs Mod, a
kernel with a bug): the remedy is the op, and the text names what differs. After a re-dump with the remedy,
comparing again says whether the culprit is gone (the remedied target's bisection; a test does it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from dumptui.core.compare.hints import DISCONTINUOUS, attribute_diff
from dumptui.core.compare.session import Session
from dumptui.core.graph.align import OpPair
from dumptui.core.model.dump import SourceKind, TensorRef
from dumptui.core.model.reason import Reason, Said, Why, because
from dumptui.core.search.bisect.types import Root, RootKind
from dumptui.core.search.replay import ReplayInputs, supported
from dumptui.core.search.replay.precision import LOW, PrecisionFinding, RemedyCause, judge_precision

REMEDY_MAX_ELEMENTS = 1 << 24


@dataclass
class Remedy:
    """One culprit's cause (precision or semantics) and what to change."""

    ref_name: str
    target_name: str
    ref_type: str
    target_type: str
    finding: PrecisionFinding
    cell: str = ""  # the MindSpore cell path that holds the op ("head.l2"), '' at the top level
    change: Reason | None = None  # what to change (report/reasons.py words it)
    notes: list[str] = field(default_factory=list)
    attributes: str = ""  # graph attributes that differ, in words

    @property
    def cause(self) -> RemedyCause:
        return self.finding.cause


def remedy_for(session: Session, pair: OpPair, differs: Said = "", wiring: Reason | None = None) -> Remedy:
    """The cause of one culprit and its remedy (reads the reference's inputs and the target's output).
    `differs`: the root is a weight or network input that differs (the preconditions' sentence): the remedy
    is that input, not the op. `wiring`: the op gets other inputs than the reference's (localerror's
    words): the remedy is the graph."""
    ref, tgt = pair.ref, pair.target
    if wiring and ref is not None and tgt is not None:
        finding = PrecisionFinding(RemedyCause.WIRING, note=wiring)
        return Remedy(ref.name, tgt.name, ref.op_type, tgt.op_type, finding, cell=cell_path(tgt.name))
    if differs:
        finding = PrecisionFinding(RemedyCause.INPUT, note=differs)
        r_name, t_name = (pair.ref or pair.op).name, (pair.target or pair.op).name
        r_type, t_type = (pair.ref or pair.op).op_type, (pair.target or pair.op).op_type
        return Remedy(r_name, t_name, r_type, t_type, finding, cell=cell_path(t_name))
    if ref is None or tgt is None:
        finding = PrecisionFinding(RemedyCause.UNKNOWN, note=because(Why.ONE_SIDED))
        return Remedy(pair.name, pair.name, pair.op_type, pair.op_type, finding)
    base = Remedy(
        ref.name, tgt.name, ref.op_type, tgt.op_type, PrecisionFinding(RemedyCause.UNKNOWN), cell=cell_path(tgt.name)
    )
    out_r, out_t = ref.outputs.get(0), tgt.outputs.get(0)
    if not supported(ref.op_type):
        base.finding = PrecisionFinding(RemedyCause.UNKNOWN, note=because(Why.NO_REPLAY_FOR, ref.op_type))
    elif out_r is None or out_t is None or not out_t.has_data:
        base.finding = PrecisionFinding(RemedyCause.UNKNOWN, note=because(Why.OUTPUT_NOT_ON_BOTH))
    elif sum(t.size or 0 for t in ref.inputs.values()) > REMEDY_MAX_ELEMENTS:
        base.finding = PrecisionFinding(RemedyCause.UNKNOWN, note=because(Why.TOO_LARGE_TO_REPLAY))
    else:
        try:
            inputs = {s: _read(t) for s, t in ref.inputs.items()}
            constants = {
                s: src.ref for s, src in ref.sources.items() if src.kind == SourceKind.CONSTANT and s not in inputs
            }
            spec = ReplayInputs(
                ref.op_type,
                inputs,
                dict(ref.attrs),
                constants,
                {s: tuple(t.shape or ()) for s, t in tgt.outputs.items()},
            )
            base.finding = judge_precision(spec, _read(out_t), _device_dtypes(pair))
        except (OSError, ValueError) as e:
            base.finding = PrecisionFinding(RemedyCause.UNKNOWN, note=because(Why.COULD_NOT_READ, str(e)))
    diff = attribute_diff(ref.attrs, tgt.attrs)
    base.attributes = "; ".join(f"{k}: {a} vs {b}" for k, (a, b) in diff.items())
    base.change = _change(base)
    return base


def remedy_of_root(session: Session, root: Root) -> Remedy:
    """A root's remedy, the one rule every report uses: a root made by a weight or an input that differs is
    remedied there (the preconditions' sentence), one whose inputs are wired otherwise by the graph, else by
    the op's precision or definition."""
    differs = root.why if root.kind != RootKind.OUTPUTS else ""
    return remedy_for(session, root.pair, differs, root.local.wiring if root.local else None)


def _device_dtypes(pair: OpPair) -> list[str]:
    """The device precisions to try: the target's own low-precision dtypes, else fp16 then bf16."""
    assert pair.target is not None
    low = [d for d in LOW if any(t.dtype == d for t in pair.target.tensors())]
    return low or list(LOW)


def _change(r: Remedy) -> Reason | None:
    """What to change on the target, where the finding alone does not say it (precision says: float32)."""
    if r.cause != RemedyCause.SEMANTICS:
        return None
    if r.attributes:
        return because(Why.CHANGE_ATTRIBUTES, r.attributes)
    if r.ref_type != r.target_type:
        if {"Mod", "FloorMod"} >= {r.ref_type, r.target_type}:
            return because(Why.CHANGE_TO_FLOORMOD, r.target_type, r.ref_type)
        return because(Why.CHANGE_TO_REFERENCE_OP, r.target_type, r.ref_type)
    if r.ref_type in DISCONTINUOUS:
        return because(Why.CHECK_DISCONTINUOUS, r.target_type)
    return because(Why.KERNEL_DIFFERS, r.target_type)


def cell_path(name: str) -> str:
    """`Default/head-DetHead/l2-L2Norm/ReduceSum-op0` -> `head.l2`: the attribute path of the cell that holds
    the op (MindSpore scopes are `attr-CellClass` per level under Default)."""
    parts = [p for p in name.split("/") if p]
    if parts and parts[0] in ("Default", "Gradients"):
        parts = parts[1:]
    cells = [re.sub(r"-[A-Za-z_][\w]*$", "", p) for p in parts[:-1] if "-" in p]
    return ".".join(c for c in cells if c)


def _read(t: TensorRef) -> np.ndarray:
    a = np.asarray(t.read())
    shape = t.shape
    return a.reshape(shape) if shape is not None and a.size == int(np.prod(shape)) else a


def remedies(session: Session, roots: list[Root]) -> list[Remedy]:
    """One remedy per root, first in execution order first; a root made by a weight or an input that
    differs is remedied there (the preconditions' sentence), not by the op's precision."""
    return [remedy_of_root(session, r) for r in roots]
