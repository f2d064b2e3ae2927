"""Typed access to one kernel's inputs, constants and attributes.

MindSpore moved most primitive attributes into inputs over the 2.x releases: a 2.10 MatMul carries its
transpose flags as 0-d inputs 2 and 3, an older one as attributes `transpose_a`/`transpose_b`. `option`
reads a setting from wherever this dump put it.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from dumptui.core.search.replay.irvalues import constant_array, parse_value
from dumptui.core.search.replay.numeric import as_float64
from dumptui.core.search.replay.spec import ReplayInputs, ReplayUnsupported

Kernel = Callable[["OpArgs"], dict[int, np.ndarray]]
# (args, flat positions of output.0, the dumped output's size) -> its values there; None: not here
SampledKernel = Callable[["OpArgs", np.ndarray, int], "np.ndarray | None"]


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED = _Required()  # `option(..., default=REQUIRED)`: absent everywhere is an error


def python_value(a: np.ndarray) -> object:
    """A 0-d array as a Python scalar, a 1-d one as a tuple (how attributes read once they are inputs)."""
    if a.ndim == 0:
        return a.item()
    return tuple(a.reshape(-1).tolist())


class OpArgs:
    """One kernel's inputs, constants and attributes, read on demand."""

    def __init__(self, spec: ReplayInputs):
        self.spec = spec
        self.op_type = spec.op_type
        self._arrays: dict[int, np.ndarray] = {}

    # --- inputs -------------------------------------------------------------------------------------
    def has(self, slot: int) -> bool:
        """Whether input `slot` was dumped or is a known constant (a `None` constant counts as absent)."""
        if slot in self.spec.inputs:
            return True
        text = self.spec.constants.get(slot)
        return text is not None and text.strip() != "None"

    def slots(self) -> list[int]:
        """Every input slot present, in order."""
        return sorted(s for s in set(self.spec.inputs) | set(self.spec.constants) if self.has(s))

    def raw(self, slot: int) -> np.ndarray:
        """Input `slot` in its own dtype: the dumped array, or the constant parsed in the type it names."""
        if slot not in self._arrays:
            if slot in self.spec.inputs:
                self._arrays[slot] = np.asarray(self.spec.inputs[slot])
            elif self.has(slot):
                self._arrays[slot] = constant_array(self.spec.constants[slot])
            else:
                raise ReplayUnsupported(f"{self.op_type} input.{slot} is neither dumped nor a known constant")
        return self._arrays[slot]

    def float64(self, slot: int) -> np.ndarray:
        """Input `slot` widened to float64 (exact for float16/float32 and integers up to 2**53)."""
        return as_float64(self.raw(slot))

    # --- settings -----------------------------------------------------------------------------------
    def attr(self, *names: str) -> object:
        """The first of `names` present among the attributes, parsed; None when none is present."""
        for name in names:
            if name in self.spec.attrs:
                return parse_value(self.spec.attrs[name])
        return None

    def option(self, slot: int | None, names: tuple[str, ...], default: object = REQUIRED) -> object:
        """A setting from input `slot` when present (2.x), else from the first attribute of `names` present.

        Values read from an input come back as Python scalars (0-d) or tuples (1-d), like parsed attributes.
        """
        if slot is not None and self.has(slot):
            if slot not in self.spec.inputs:
                plain = parse_value(self.spec.constants[slot])
                if isinstance(plain, str):  # a word such as a dtype name or a data format
                    return plain
            return python_value(self.raw(slot))
        value = self.attr(*names)
        if value is not None:
            return value
        if default is REQUIRED:
            where = f"input.{slot} or " if slot is not None else ""
            raise ReplayUnsupported(f"{self.op_type} needs {where}attribute {' / '.join(names)}, and it is absent")
        return default

    def flag(self, slot: int | None, names: tuple[str, ...], default: bool = False) -> bool:
        value = _one(self.option(slot, names, default))
        if not isinstance(value, (bool, int, np.bool_, np.integer)):
            raise ReplayUnsupported(f"{self.op_type} {' / '.join(names)} = {value!r} is not a boolean")
        return bool(value)

    def integer(self, slot: int | None, names: tuple[str, ...], default: object = REQUIRED) -> int:
        value = self.option(slot, names, default)
        if isinstance(value, tuple) and len(value) == 1:
            value = value[0]
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise ReplayUnsupported(f"{self.op_type} {' / '.join(names)} = {value!r} is not an integer")
        return int(value)

    def number(self, slot: int | None, names: tuple[str, ...], default: object = REQUIRED) -> float:
        value = _one(self.option(slot, names, default))
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
            raise ReplayUnsupported(f"{self.op_type} {' / '.join(names)} = {value!r} is not a number")
        return float(value)

    def ints(self, slot: int | None, names: tuple[str, ...], default: object = REQUIRED) -> tuple[int, ...]:
        """A setting that is an int or a tuple of ints (axis, perm, shape, stride...), as a tuple."""
        value = self.option(slot, names, default)
        items = value if isinstance(value, tuple) else (value,)
        out: list[int] = []
        for v in items:
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                raise ReplayUnsupported(f"{self.op_type} {' / '.join(names)} = {value!r} is not integers")
            out.append(int(v))
        return tuple(out)

    # --- outputs ------------------------------------------------------------------------------------
    def out_shape(self, slot: int = 0) -> tuple[int, ...] | None:
        return self.spec.out_shapes.get(slot)


def _one(value: object) -> object:
    """A setting dumped as a one-element array (some dumps hold 0-d inputs so) as its one value."""
    return value[0] if isinstance(value, tuple) and len(value) == 1 else value


def normalise_axes(axes: tuple[int, ...], ndim: int, what: str) -> tuple[int, ...]:
    """Axes made non-negative and checked against the rank."""
    out = []
    for a in axes:
        if not -max(ndim, 1) <= a < max(ndim, 1):
            raise ReplayUnsupported(f"{what} axis {a} is out of range for rank {ndim}")
        out.append(a % ndim if ndim else 0)
    return tuple(out)
