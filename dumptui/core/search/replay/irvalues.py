"""Values written as MindSpore IR text: attribute values and graph constants.

Forms understood (anything else raises ReplayUnsupported naming the text):
  I64(3)  F32(1e-05)  Bool(1)  U8(7) ...      typed scalars
  (1, 1, 2, 2)  (I64(16), I64(16))  (I64(0))  tuples; a one-element tuple needs no trailing comma
  [1, 2]                                      lists (returned as tuples)
  "NCHW"                                      strings
  F16  Float32  Int64 ...                     type names (returned as strings)
  None  True  False
  Tensor(shape=[], dtype=Float32, value=0.75)             scalars
  Tensor(shape=[2, 2], dtype=Int64, value=[[1 2] [3 4]])   arrays (commas or blanks between values)
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from dumptui.core.search.replay.numeric import BFLOAT16, TYPE_NAMES, dtype_name, round_to_bfloat16
from dumptui.core.search.replay.spec import ReplayUnsupported

_TOKEN = re.compile(
    r"""
    \s*(?:
      (?P<string>"[^"]*")
    | (?P<number>[-+]?(?:inf|nan)\b|[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)
    | (?P<word>[A-Za-z_][A-Za-z0-9_.]*)
    | (?P<punct>[()\[\],=])
    )""",
    re.VERBOSE | re.IGNORECASE,
)

# Short names that wrap a scalar, e.g. I64(3); the scalar's numpy type follows from the name.
_TYPED_SCALARS = frozenset({"Bool", "I8", "I16", "I32", "I64", "U8", "U16", "U32", "U64", "F16", "F32", "F64", "BF16"})


@dataclass(frozen=True)
class _Scalar:
    """A scalar whose IR text names its type, so that a constant can be rounded as the graph stored it."""

    value: bool | int | float
    dtype: str


@dataclass(frozen=True)
class _TensorText:
    """A `Tensor(shape=..., dtype=..., value=...)`: the values as written, their shape and type."""

    values: tuple[bool | int | float, ...]
    shape: tuple[int, ...]
    dtype: str

    def array(self) -> np.ndarray:
        if self.dtype == BFLOAT16:
            return round_to_bfloat16(np.array(self.values, dtype=np.float64)).reshape(self.shape)
        return np.array(self.values, dtype=np.float64).astype(self.dtype).reshape(self.shape)

    def plain(self) -> object:
        """A scalar as written (0.01 stays 0.01); an array in its own type."""
        if self.shape == ():
            v = self.values[0]
            if self.dtype == "bool":
                return bool(v)
            if self.dtype.startswith(("int", "uint")):
                return int(v)
            return float(v)
        return self.array()


def _tokens(text: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    pos = 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise ReplayUnsupported(f"cannot read the IR value {text!r} (at {text[pos : pos + 20]!r})")
        kind = m.lastgroup or ""
        out.append((kind, m.group(kind)))
        pos = m.end()
    return out


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.toks = _tokens(text)
        self.i = 0

    def fail(self, why: str) -> ReplayUnsupported:
        return ReplayUnsupported(f"cannot read the IR value {self.text!r}: {why}")

    def peek(self) -> tuple[str, str]:
        return self.toks[self.i] if self.i < len(self.toks) else ("end", "")

    def take(self, value: str | None = None) -> tuple[str, str]:
        tok = self.peek()
        if tok[0] == "end" or (value is not None and tok[1] != value):
            raise self.fail(f"expected {value or 'a value'}, found {tok[1] or 'the end'}")
        self.i += 1
        return tok

    def parse(self) -> object:
        v = self.value()
        if self.peek()[0] != "end":
            raise self.fail(f"unexpected {self.peek()[1]!r}")
        return v

    def value(self) -> object:
        kind, tok = self.peek()
        if kind == "string":
            self.take()
            return tok[1:-1]
        if kind == "number":
            self.take()
            return _number(tok)
        if tok in ("(", "["):
            return self.sequence()
        if kind == "word":
            self.take()
            if tok == "Tensor" and self.peek()[1] == "(":
                return self.tensor()
            if tok in _TYPED_SCALARS and self.peek()[1] == "(":
                return self.typed(tok)
            if tok == "None":
                return None
            if tok in ("True", "False"):
                return tok == "True"
            if tok in TYPE_NAMES:
                return tok
            raise self.fail(f"unknown word {tok!r}")
        if kind == "end":
            raise self.fail("it ends too early")
        raise self.fail(f"unexpected {tok!r}")

    def sequence(self) -> tuple[object, ...]:
        close = ")" if self.take()[1] == "(" else "]"
        items: list[object] = []
        while self.peek()[1] != close:
            if self.peek()[0] == "end":
                raise self.fail(f"no closing {close!r}")
            items.append(self.value())
            if self.peek()[1] == ",":
                self.take()
        self.take(close)
        return tuple(items)

    def typed(self, name: str) -> _Scalar:
        self.take("(")
        kind, tok = self.take()
        self.take(")")
        dtype = dtype_name(name)
        if kind == "word" and tok in ("True", "False"):
            number: float = 1.0 if tok == "True" else 0.0
        elif kind == "number":
            number = _number(tok)
        else:
            raise self.fail(f"{name}( ) holds {tok!r}, not a number")
        if dtype == "bool":
            return _Scalar(bool(number), dtype)
        if dtype.startswith(("int", "uint")):
            return _Scalar(int(number), dtype)
        return _Scalar(float(number), dtype)

    def tensor(self) -> _TensorText:
        self.take("(")
        fields: dict[str, object] = {}
        while self.peek()[1] != ")":
            key = self.take()[1]
            self.take("=")
            fields[key] = self.value()
            if self.peek()[1] == ",":
                self.take()
        self.take(")")
        if not {"shape", "dtype", "value"} <= set(fields):
            raise self.fail("a Tensor needs shape, dtype and value")
        shape = fields["shape"]
        dims = tuple(n for n in shape if type(n) is int and n >= 0) if isinstance(shape, tuple) else None
        if dims is None or isinstance(shape, tuple) and len(dims) != len(shape):
            raise self.fail("the Tensor shape is not a list of sizes")
        name = dtype_name(fields["dtype"])
        flat = list(_flatten(fields["value"]))
        if len(flat) != int(np.prod(dims, dtype=np.int64)):
            raise self.fail(f"{len(flat)} values for shape {list(dims)} (is the printed value cut short?)")
        return _TensorText(tuple(flat), dims, name)


def _number(tok: str) -> int | float:
    try:
        if re.fullmatch(r"[-+]?\d+", tok):
            return int(tok)
        return float(tok)
    except ValueError as e:  # pragma: no cover - the token pattern admits numbers only
        raise ReplayUnsupported(f"cannot read the number {tok!r}") from e


def _flatten(v: object) -> list[bool | int | float]:
    if isinstance(v, tuple):
        return [x for item in v for x in _flatten(item)]
    if isinstance(v, _Scalar):
        return [v.value]
    if isinstance(v, (bool, int, float)):
        return [v]
    raise ReplayUnsupported(f"{v!r} is not a number in a Tensor value")


def _plain(v: object) -> object:
    if isinstance(v, _Scalar):
        return v.value
    if isinstance(v, tuple):
        return tuple(_plain(x) for x in v)
    if isinstance(v, _TensorText):
        return v.plain()
    return v


def parse_value(text: str) -> object:
    """The Python value of an IR attribute or constant text: int, float, bool, str, None, tuple or ndarray."""
    return _plain(_Parser(text).parse())


def constant_array(text: str) -> np.ndarray:
    """A graph constant as the array the kernel received, in the type its text names.

    `F32(0.1)` becomes float32(0.1), not the float64 0.1, so that a replay multiplies by what the device did.
    """
    v = _Parser(text).parse()
    if isinstance(v, _TensorText):
        return v.array()
    if isinstance(v, _Scalar):
        return _scalar_array(v)
    if isinstance(v, tuple):
        items = list(v)
        types = {x.dtype for x in items if isinstance(x, _Scalar)}
        plain = [_plain(x) for x in items]
        if not all(isinstance(x, (bool, int, float)) for x in plain):
            raise ReplayUnsupported(f"the constant {text!r} is not a flat tuple of numbers")
        if len(types) == 1 and len(plain) == sum(isinstance(x, _Scalar) for x in items):
            only = types.pop()
            if only == BFLOAT16:
                return round_to_bfloat16(np.array(plain, dtype=np.float64))
            return np.array(plain).astype(only)
        # Untyped tuples such as (1, 2): shape-like, hence int64 when they are all integers.
        return np.array(plain, dtype=np.int64 if all(isinstance(x, int) for x in plain) else np.float64)
    if isinstance(v, bool):
        return np.array(v)
    if isinstance(v, (int, float)):
        return np.array(v, dtype=np.int64 if isinstance(v, int) else np.float64)
    raise ReplayUnsupported(f"the constant {text!r} is not a number or a tensor")


def _scalar_array(s: _Scalar) -> np.ndarray:
    if s.dtype == BFLOAT16:
        return round_to_bfloat16(np.array(s.value, dtype=np.float64))
    return np.array(s.value).astype(s.dtype)
