"""The replay's registry and entry points: every family's kernels by op type, `replay` (an op whole, float64)
and `replay_at` (a product at chosen positions). The package's face re-exports them; members import them
from here, never through the face."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import TypeVar

import numpy as np

from dumptui.core.search.replay import (
    activations,
    conv,
    elementwise,
    linalg,
    norm,
    reduce,
    selection,
    shape,
    torchcalls,
    torchfunctional,
)
from dumptui.core.search.replay.args import Kernel, OpArgs, SampledKernel
from dumptui.core.search.replay.spec import ReplayInputs, ReplayUnsupported

_KERNELS: dict[str, Kernel] = {}
for _module in (elementwise, activations, linalg, conv, norm, reduce, shape, selection, torchcalls, torchfunctional):
    _KERNELS.update(_module.kernels())
_SAMPLED: dict[str, SampledKernel] = {
    **elementwise.sampled_kernels(),
    **activations.sampled_kernels(),
    **linalg.sampled_kernels(),
    **conv.sampled_kernels(),
    **torchfunctional.sampled_kernels(),
}

SUPPORTED: frozenset[str] = frozenset(_KERNELS)


def supported(op_type: str) -> bool:
    """Whether `replay` implements this op type (some attribute variants may still be refused)."""
    return op_type in _KERNELS


def replay(spec: ReplayInputs) -> dict[int, np.ndarray]:
    """Recompute `spec`'s op: output slot -> array (float64, or bool/int64 where the op is such).

    Raises ReplayUnsupported when the op type or one of its attribute variants is not implemented, or when
    the inputs it needs are missing.
    """
    kernel = _KERNELS.get(spec.op_type)
    if kernel is None:
        raise ReplayUnsupported(f"no replay for op type {spec.op_type!r}")
    outputs = _as_computed(lambda: kernel(OpArgs(spec)))
    result: dict[int, np.ndarray] = {}
    for slot, value in outputs.items():
        value = np.array(value)  # a fresh array: a pass-through or reshape must not alias a dumped input
        want = spec.out_shapes.get(slot)
        if want is not None and tuple(value.shape) != tuple(want) and value.size == int(np.prod(want, dtype=np.int64)):
            value = value.reshape(want)
        result[slot] = value
    return result


def replay_at(spec: ReplayInputs, positions: np.ndarray, dumped: int) -> np.ndarray | None:
    """`spec`'s output.0 recomputed at `positions` (flat, C order) only, for a dumped output of `dumped`
    elements: the products (MatMul, BatchMatMul, Dense) cost positions x K there, whatever their size. None
    when the op is computed whole instead (`replay`). Raises as `replay` does, and ValueError when the
    product's size is not the dump's."""
    kernel = _SAMPLED.get(spec.op_type)
    if kernel is None:
        return None
    return _as_computed(lambda: kernel(OpArgs(spec), positions, dumped))


T = TypeVar("T")


def _as_computed(compute: Callable[[], T]) -> T:
    """Overflow, 0/0 and log(0) are part of what an op computes: inf and NaN are the answer, not an error."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return compute()
