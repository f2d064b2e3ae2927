"""What `y` offers to copy (the terminal's clipboard through OSC 52, which works over SSH): the op's names on
both sides, the highlighted tensor's files, each of its numbers, and the culprit's sentence."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from dumptui.core.compare.results import TensorResult
from dumptui.core.graph.align import OpPair
from dumptui.present.detail import TENSOR_COLUMNS, tensor_row
from dumptui.present.driver import BisectState


@dataclass(frozen=True)
class CopyChoice:
    label: str  # what the dialog lists
    text: str  # what goes to the clipboard


def copy_choices(
    pair: OpPair | None,
    tensor: TensorResult | None,
    state: BisectState | None,
    number: Callable[[float | None], str],
) -> list[CopyChoice]:
    out: list[CopyChoice] = []
    if pair is not None:
        names = [op.name for op in (pair.ref, pair.target) if op is not None]
        if len(set(names)) > 1 and pair.ref is not None and pair.target is not None:
            out.append(CopyChoice("op name (ref)", pair.ref.name))
            out.append(CopyChoice("op name (target)", pair.target.name))
            out.append(CopyChoice("both op names", f"{pair.ref.name} {pair.target.name}"))
        elif names:
            out.append(CopyChoice("op name", names[0]))
    if tensor is not None:
        for side, t in (("ref", tensor.ref), ("target", tensor.target)):
            if t is not None and t.path:
                out.append(CopyChoice(f"{tensor.label} file ({side})", t.path))
        row = tensor_row(tensor, number)
        for key, label, _priority in TENSOR_COLUMNS:
            if key != "tensor" and row[key] not in ("-", ""):
                out.append(CopyChoice(f"{tensor.label} {label}: {row[key]}", row[key]))
    if state is not None and state.culprit is not None:
        c = state.culprit
        out.append(CopyChoice("the culprit's name", c.ref_name or c.label))
        out.append(CopyChoice("why it is the culprit", c.why))
    return out
