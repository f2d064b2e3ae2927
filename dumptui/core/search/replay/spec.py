"""What a replay is asked to do, and how it says no."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


class ReplayUnsupported(Exception):
    """The op type, or a variant of its attributes, is not implemented; the message says why in plain words."""


@dataclass(frozen=True)
class ReplayInputs:
    """One dumped kernel, as much of it as a replay needs.

    `inputs` holds the dumped input tensors by slot (any dtype; attribute-like inputs are 0-d arrays).
    `constants` holds the IR text of inputs that are graph constants and were not dumped, e.g. Reshape's
    target shape `(I64(16), I64(16))`. A slot present in both is taken from `inputs`.
    `attrs` are the primitive attributes as IR text, e.g. `{'stride': '(1, 1, 2, 2)', 'pad_mode': '"pad"'}`.
    `out_shapes` are the dumped output shapes; each replayed output is reshaped to its own when the sizes agree.
    """

    op_type: str
    inputs: dict[int, np.ndarray] = field(default_factory=dict)
    attrs: dict[str, str] = field(default_factory=dict)
    constants: dict[int, str] = field(default_factory=dict)
    out_shapes: dict[int, tuple[int, ...]] = field(default_factory=dict)
