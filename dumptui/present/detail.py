"""The centre pane's decisions: which tensor pair of an op to detail first, and whether its elements can
be shown at all."""

from __future__ import annotations

from ..core.results import OpResult, TensorResult
from ..core.verdict import BAD


def default_row(res: OpResult) -> int:
    """The tensor to detail first: the first bad output, else the first bad input, else the first output."""
    rows = res.inputs + res.outputs
    for group in (res.outputs, res.inputs):
        for r in group:
            if r.verdict in BAD:
                return rows.index(r)
    return len(res.inputs) if res.outputs else 0


def element_detail_problem(r: TensorResult) -> str | None:
    """Why the worst elements and the error histogram of a tensor pair cannot be computed, or None."""
    ref, target = r.ref, r.target
    if ref is None or target is None:
        return r.reason
    if not ref.has_data or not target.has_data:
        return "statistics-only dump: no tensor data"
    if ref.problem or target.problem:
        return ref.problem or target.problem
    if (ref.size or 0) != (target.size or 0):
        return f"{ref.size} vs {target.size} elements"
    if not ref.size:
        return "empty tensor"
    return None
