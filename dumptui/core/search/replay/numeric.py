"""Number types: how MindSpore names them, and how a float64 value is rounded to one of them."""

from __future__ import annotations

import numpy as np

from dumptui.core.search.replay.spec import ReplayUnsupported

BFLOAT16 = "bfloat16"  # numpy has no bfloat16: values are rounded to it and kept in a wider float

# Every spelling of a number type met in MindSpore IR text, mapped to a numpy dtype name.
# F16/I64... are the IR's short names (attributes such as Cast's dst_type); Float16/Int64... appear in
# `Tensor(..., dtype=Float32, ...)`; bool_/float16... are numpy's own names.
TYPE_NAMES = {
    "Bool": "bool",
    "bool": "bool",
    "bool_": "bool",
    "I8": "int8",
    "I16": "int16",
    "I32": "int32",
    "I64": "int64",
    "U8": "uint8",
    "U16": "uint16",
    "U32": "uint32",
    "U64": "uint64",
    "F16": "float16",
    "F32": "float32",
    "F64": "float64",
    "BF16": BFLOAT16,
    "Int8": "int8",
    "Int16": "int16",
    "Int32": "int32",
    "Int64": "int64",
    "UInt8": "uint8",
    "UInt16": "uint16",
    "UInt32": "uint32",
    "UInt64": "uint64",
    "Float16": "float16",
    "Float32": "float32",
    "Float64": "float64",
    "BFloat16": BFLOAT16,
}
TYPE_NAMES.update(
    {
        n: n
        for n in (
            "int8",
            "int16",
            "int32",
            "int64",
            "uint8",
            "uint16",
            "uint32",
            "uint64",
            "float16",
            "float32",
            "float64",
            BFLOAT16,
        )
    }
)

# MindSpore's TypeId enum (mindapi/base/type_id.h), which an older Cast carries as `dst_type: I64(42)`.
# 42 (Float16) and 43 (Float32) are confirmed by real dumps; the run 30..44 is the same in every MindSpore
# release. Later numbers (BFloat16, Complex...) moved between releases, so they are not guessed.
_TYPE_IDS = {
    30: "bool",
    32: "int8",
    33: "int16",
    34: "int32",
    35: "int64",
    37: "uint8",
    38: "uint16",
    39: "uint32",
    40: "uint64",
    42: "float16",
    43: "float32",
    44: "float64",
}

FLOAT_NAMES = frozenset({"float16", "float32", "float64", BFLOAT16})


def dtype_name(value: object) -> str:
    """The numpy name of a MindSpore type given as a name (`F16`, `Float32`) or a TypeId number (42)."""
    if isinstance(value, (bool, np.bool_)):
        raise ReplayUnsupported(f"{value!r} is not a number type")
    if isinstance(value, (int, np.integer)):
        name = _TYPE_IDS.get(int(value))
        if name is None:
            raise ReplayUnsupported(f"type id {int(value)} is not a known MindSpore number type")
        return name
    if isinstance(value, str) and value in TYPE_NAMES:
        return TYPE_NAMES[value]
    raise ReplayUnsupported(f"{value!r} is not a known MindSpore number type")


def is_integral(a: np.ndarray) -> bool:
    """Integers or booleans: values that float64 arithmetic need not touch."""
    return bool(np.issubdtype(a.dtype, np.integer) or a.dtype == np.bool_)


def as_float64(a: np.ndarray) -> np.ndarray:
    """The values in float64 (exact for every float16/float32 and for integers up to 2**53)."""
    return np.asarray(a, dtype=np.float64)


def round_to_bfloat16(values: np.ndarray) -> np.ndarray:
    """Round to bfloat16 (nearest, ties to even), returned as float32.

    Rounds via float32 first: exact when the input already is float32 (what a device casts from);
    a float64 input may be rounded twice, which can differ from one direct rounding by one bfloat16 step.
    """
    f32 = np.asarray(values, dtype=np.float32)
    bits = f32.view(np.uint32).astype(np.uint64)
    # Add half a bfloat16 step, plus one when the kept part is odd (ties to even), then cut the low 16 bits.
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
    out = rounded.astype(np.uint32).view(np.float32)
    # NaN must stay NaN: rounding could carry its payload into the infinity pattern.
    return np.where(np.isnan(f32), np.float32(np.nan), out)


def round_to(values: np.ndarray, name: str) -> np.ndarray:
    """`values` rounded to the float type `name`, returned as float64 (the replay's common currency)."""
    if name == BFLOAT16:
        return as_float64(round_to_bfloat16(values))
    if name not in FLOAT_NAMES:
        raise ReplayUnsupported(f"{name} is not a float type")
    return np.asarray(values).astype(name).astype(np.float64)


def to_integer(values: np.ndarray, name: str) -> np.ndarray:
    """Convert to an integer type the way a C cast does: truncate toward zero.

    A C cast of NaN, of an infinity or of a value outside the type's range is undefined, and devices differ,
    so such values are refused rather than guessed.
    """
    a = np.asarray(values)
    if is_integral(a):
        info = np.iinfo(name)
        if a.size and (a.min() < info.min or a.max() > info.max):
            raise ReplayUnsupported(f"a value is outside the range of {name}; wrap-around is not replayed")
        return a.astype(name)
    f = as_float64(a)
    if not np.all(np.isfinite(f)):
        raise ReplayUnsupported(f"NaN or infinity cast to {name}: undefined in C, device-dependent")
    t = np.trunc(f)
    info = np.iinfo(name)
    if t.size and (t.min() < info.min or t.max() > info.max):
        raise ReplayUnsupported(f"a value is outside the range of {name}: undefined in C, device-dependent")
    return np.asarray(t.astype(name))
