"""Reductions (ReduceSum/Mean/Max/Min/Prod) and arg-reductions (ArgMax/ArgMin and the WithValue forms)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from dumptui.core.search.replay.args import Kernel, OpArgs, normalise_axes
from dumptui.core.search.replay.numeric import as_float64
from dumptui.core.search.replay.spec import ReplayUnsupported

Reducer = Callable[..., np.ndarray]

_REDUCERS: dict[str, Reducer] = {
    "ReduceSum": np.sum,
    "ReduceMean": np.mean,
    "ReduceMax": np.max,
    "ReduceMin": np.min,
    "ReduceProd": np.prod,
}
_EXACT_ON_INTEGERS = frozenset({"ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd"})


def _reduce_kernel(op_type: str) -> Kernel:
    reducer = _REDUCERS[op_type]

    def kernel(args: OpArgs) -> dict[int, np.ndarray]:
        """Input.1 = axes (an int array, or a constant), input.2 = keep_dims, ReduceSum input.3 = skip_mode;
        older graphs carry attributes axis / keep_dims / skip_mode. No axes means all axes, except that
        with skip_mode the op passes its input through."""
        raw = args.raw(0)
        axes = args.ints(1, ("axis", "axes"), ())
        keep = args.flag(2, ("keep_dims", "keepdims"), False)
        skip = args.flag(3, ("skip_mode",), False) if op_type == "ReduceSum" else False
        integers = np.issubdtype(raw.dtype, np.integer)
        if integers and op_type not in _EXACT_ON_INTEGERS:
            raise ReplayUnsupported(f"{op_type} of integers: its rounding is not established")
        x = raw.astype(np.int64) if integers else as_float64(raw)
        if not axes:
            if skip:
                return {0: x.copy()}
            axes = tuple(range(x.ndim))
        axes = normalise_axes(axes, x.ndim, op_type)
        if x.size == 0 and op_type in ("ReduceMax", "ReduceMin"):
            raise ReplayUnsupported(f"{op_type} of an empty tensor has no value")
        return {0: np.asarray(reducer(x, axis=axes, keepdims=keep))}

    return kernel


def _torch_number(args: OpArgs, position: int, name: str) -> object:
    """A number of a PyTorch call as msprobe records it: `scalar input N` by position, else the keyword."""
    for key in (f"scalar input {position}", name):
        value = args.attr(key)
        if value is not None:
            return value
    return None


def _torch_reduce_kernel(reducer: Reducer) -> Kernel:
    def kernel(args: OpArgs) -> dict[int, np.ndarray]:
        """torch.sum / torch.mean (input, dim=None, keepdim=False) as msprobe records them: no dim is every
        axis; a dtype argument is not replayed."""
        if "dtype" in args.spec.attrs:  # (a torch dtype's name: no number to read)
            raise ReplayUnsupported(f"{args.op_type} with a dtype is not replayed")
        raw = args.raw(0)
        if np.issubdtype(raw.dtype, np.integer) or raw.dtype == np.bool_:
            raise ReplayUnsupported(f"{args.op_type} of {raw.dtype}: torch's integer promotion is not replayed")
        x = as_float64(raw)
        dim = _torch_number(args, 1, "dim")
        keep = _torch_number(args, 2, "keepdim")
        if dim is None or dim == ():
            axes = tuple(range(x.ndim))
        elif isinstance(dim, (int, np.integer)) and not isinstance(dim, bool):
            axes = (int(dim),)
        elif isinstance(dim, tuple) and all(isinstance(d, int) and not isinstance(d, bool) for d in dim):
            axes = tuple(dim)
        else:
            raise ReplayUnsupported(f"{args.op_type} dim = {dim!r} is not a dimension")
        if not isinstance(keep, (bool, type(None))):
            raise ReplayUnsupported(f"{args.op_type} keepdim = {keep!r} is not a bool")
        axes = normalise_axes(axes, x.ndim, args.op_type) if x.ndim else ()
        with np.errstate(invalid="ignore", divide="ignore"):
            return {0: np.asarray(reducer(x, axis=axes, keepdims=bool(keep)))}

    return kernel


def _arg_axis(args: OpArgs, x: np.ndarray) -> int:
    (axis,) = normalise_axes((args.integer(1, ("axis", "dimension"), -1),), x.ndim, args.op_type)
    if x.ndim and x.shape[axis] == 0:
        raise ReplayUnsupported(f"{args.op_type} over an empty axis has no value")
    return axis


def _arg_kernel(op_type: str) -> Kernel:
    find = np.argmax if op_type == "ArgMax" else np.argmin

    def kernel(args: OpArgs) -> dict[int, np.ndarray]:
        """The index of the first maximum (minimum) along attribute axis (default the last). A NaN counts as
        the extreme, as in numpy. Indices come back as int64 whatever output_type the graph asked for."""
        x = args.raw(0)
        x = x.astype(np.int64) if np.issubdtype(x.dtype, np.integer) else as_float64(x)
        if x.ndim == 0:
            return {0: np.asarray(0, dtype=np.int64)}
        return {0: np.asarray(find(x, axis=_arg_axis(args, x))).astype(np.int64)}

    return kernel


def _arg_with_value_kernel(op_type: str) -> Kernel:
    find = np.argmax if op_type == "ArgMaxWithValue" else np.argmin

    def kernel(args: OpArgs) -> dict[int, np.ndarray]:
        """Output.0 = index of the first extreme along axis, output.1 = its value; keep_dims from input.2 or
        the attribute."""
        x = args.raw(0)
        x = x.astype(np.int64) if np.issubdtype(x.dtype, np.integer) else as_float64(x)
        keep = args.flag(2, ("keep_dims",), False)
        if x.ndim == 0:
            return {0: np.asarray(0, dtype=np.int64), 1: x.copy()}
        axis = _arg_axis(args, x)
        index = np.expand_dims(find(x, axis=axis), axis)
        value = np.take_along_axis(x, index, axis=axis)
        if not keep:
            index, value = np.squeeze(index, axis), np.squeeze(value, axis)
        return {0: index.astype(np.int64), 1: value}

    return kernel


def kernels() -> dict[str, Kernel]:
    """Every kernel of this module, by op type."""
    table = {name: _reduce_kernel(name) for name in _REDUCERS}
    table.update({name: _arg_kernel(name) for name in ("ArgMax", "ArgMin")})
    table.update({name: _arg_with_value_kernel(name) for name in ("ArgMaxWithValue", "ArgMinWithValue")})
    table.update({"sum": _torch_reduce_kernel(np.sum), "mean": _torch_reduce_kernel(np.mean)})  # msprobe
    return table
