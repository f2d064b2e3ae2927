"""What a replay is asked to do, and how it says no."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


class ReplayUnsupported(Exception):
    """The op type, or a variant of its attributes, is not implemented; the message says why in plain words."""


# A replay is a proof that should cost well under a second: above these it is refused, and said so (the op's
# note: "no replay: over the replay budget: ..."). Shapes read from a damaged graph (a pad_list of 10^6), or a
# MatMul of a large model, would otherwise take minutes or ask for terabytes.
MAX_OUTPUT_ELEMENTS = 1 << 26  # float64: 512 MB
MAX_MULTIPLY_ADDS = 4_000_000_000  # about half a second of single-threaded float64 BLAS here


def within_budget(op_type: str, needs: list[tuple[str, int, int]]) -> None:
    """Raises ReplayUnsupported naming the first of `needs` (what, how many, limit) over its limit."""
    for what, value, limit in needs:
        if value > limit:
            raise ReplayUnsupported(f"over the replay budget: {op_type} needs {value:,} {what} (limit {limit:,})")


def products_within_budget(op_type: str, out_elements: int, multiply_adds: int) -> None:
    """A product's output and its multiply-adds within the replay budget."""
    within_budget(
        op_type,
        [("output elements", out_elements, MAX_OUTPUT_ELEMENTS), ("multiply-adds", multiply_adds, MAX_MULTIPLY_ADDS)],
    )


@dataclass(frozen=True)
class ReplayInputs:
    """One dumped kernel, as much of it as a replay needs.

    `inputs` holds the dumped input tensors by slot (any dtype; attribute-like inputs are 0-d arrays).
    `constants` holds the IR text of inputs that are graph constants and were not dumped, e.g. Reshape's
    target shape `(I64(16), I64(16))`. A slot present in both is taken from `inputs`.
    `attrs` are the primitive attributes as IR text, e.g. `{'stride': '(1, 1, 2, 2)', 'pad_mode': '"pad"'}`.
    `out_shapes` are the dumped output shapes; each replayed output is reshaped to its own when the sizes agree.
    `out_dtypes` are the dumped outputs' dtypes where known (an autocast product computes in its output's).
    """

    op_type: str
    inputs: dict[int, np.ndarray] = field(default_factory=dict)
    attrs: dict[str, str] = field(default_factory=dict)
    constants: dict[int, str] = field(default_factory=dict)
    out_shapes: dict[int, tuple[int, ...]] = field(default_factory=dict)
    out_dtypes: dict[int, str | None] = field(default_factory=dict)
