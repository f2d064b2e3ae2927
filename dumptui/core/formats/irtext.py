"""Parser for MindSpore's text IR (`ms_output_trace_code_graph_{g}.ir`, also older `.ir`/`.dat` spellings).

Each node is one line `%13(y) = Conv2D(%11, %12) {instance name: ...} primitive_attrs: {...}` followed by type
lines (`: (<Tensor[Float32], (1, 8, 16, 16)>, ...) -> (...)`), `# Fullname with scope: (Default/...)` and
source lines `# In file model.py:110 ...`. The parser is line-based and tolerant: what it cannot read it skips.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from functools import partial

from dumptui.core.io import dtypes, limits
from dumptui.core.io.indexing_progress import Stage, counted
from dumptui.core.io.safeio import bounded_lines
from dumptui.core.model.ir import ArgKind, IRArg, IRGraph, IRNode, IRParam, NodeTypes, TensorType

_PARAM = re.compile(r"^%para(\d+)_(.+?)\s*:\s*<(.*)$")
_NODE = re.compile(r"^%(\w+)(?:\([^)]*\))?\s*=\s*([A-Za-z_][\w:.\-]*)\s*\((.*)$")
_RETURN = re.compile(r"^Return\((.*)$")
_TENSOR_T = re.compile(r"Tensor\[(\w+)\]")
_SHAPE = re.compile(r"\(([\d,\s\-]*)\)")
_DEV_T = re.compile(r"<(\w+?)x(\w+)(?:\[[^\]]*\])?\{([\d,\s\-]*)\}>")
_PREFIXES = ("PrimFunc_", "S_Prim_", "S-Prim-", "Prim::", "prim::")
MONADS = {"U", "UMonad[U]", "IOMonad[IO]", "IO", "UMonad", "IOMonad"}
AttrsParser = Callable[[], dict[str, str]]
TypesParser = Callable[[], NodeTypes]


def strip_prefix(op: str) -> str:
    for p in _PREFIXES:
        if op.startswith(p):
            return op[len(p) :]
    return op


_PARAM_ARG = re.compile(r"%para\d+_(.+)$")
_BRACKETS = re.compile(r"[()\[\]{}<>]")


def split_top(text: str, sep: str = ",") -> list[str]:
    """Split on `sep` at bracket depth 0 (round, square, curly and angle brackets)."""
    if not _BRACKETS.search(text):
        return [p.strip() for p in text.split(sep) if p.strip()]  # the common case: `%11, %12`
    parts = text.split(sep)
    if all(
        p.count("(") == p.count(")")
        and p.count("[") == p.count("]")
        and p.count("{") == p.count("}")
        and p.count("<") == p.count(">")
        for p in parts
    ):
        return [p.strip() for p in parts if p.strip()]  # brackets, but no separator inside them
    out: list[str] = []
    cur: list[str] = []
    depth = 0
    for ch in text:
        if ch in "([{<":
            depth += 1
        elif ch in ")]}>":
            depth -= 1
        if ch == sep and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    tail = "".join(cur).strip()
    if tail:
        out.append(tail)
    return out


def _balanced(text: str) -> tuple[str, str]:
    """Given text just after an opening '(', return (inside, rest after the matching ')')."""
    close = text.find(")")
    if close >= 0 and "(" not in text[:close]:
        return text[:close], text[close + 1 :]  # the common case: `%11, %12) {...}`
    depth = 1
    for i, ch in enumerate(text):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                return text[:i], text[i + 1 :]
    return text, ""


def _parse_dims(s: str) -> tuple[int, ...] | None:
    """A shape from the IR text; None when it is not one (a dynamic -1, a number too large for a shape)."""
    s = s.strip()
    if not s:
        return ()
    try:
        return limits.shape([int(x) for x in s.split(",") if x.strip()])
    except ValueError:  # BadValue, or int() of a number with thousands of digits
        return None


def _parse_args(inner: str) -> list[IRArg]:
    args = []
    for a in split_top(inner):
        if not a or a in MONADS or a.startswith("UMonad") or a.startswith("IOMonad"):
            continue
        if a.startswith("%para"):
            m = _PARAM_ARG.match(a)
            args.append(IRArg(ArgKind.PARAM, m.group(1) if m else a[1:]))
        elif a.startswith("%"):
            args.append(IRArg(ArgKind.NODE, a[1:]))
        else:
            args.append(IRArg(ArgKind.CONST, a))
    return args


def _parse_attrs(rest: str) -> dict[str, str]:
    attrs: dict[str, str] = {}
    for label in ("primitive_attrs:", "attrs:"):
        i = rest.find(label)
        if i < 0:
            continue
        j = rest.find("{", i)
        if j < 0:
            continue
        inside, _ = _balanced(rest[j + 1 :])
        for item in split_top(inside):
            k, _, v = item.partition(":")
            k = k.strip()
            if k and k not in attrs:
                attrs[k] = v.strip()
        break
    return attrs


def _abstract_types(spec: str) -> list[TensorType]:
    """Types from the abstract line: `<Tensor[Float32], (1, 8)>` or `<Tuple[Tensor[Float32]*5], TupleShape(...)>`."""
    spec = spec.strip()
    if spec.startswith("(") and spec.endswith(")"):
        spec = spec[1:-1]
    out: list[TensorType] = []
    for item in split_top(spec):
        item = item.strip("<> ")
        if "TupleShape(" in item:
            dts = _TENSOR_T.findall(item)
            shape_part = item[item.index("TupleShape(") + len("TupleShape(") :]
            shapes = [_parse_dims(s) for s in _SHAPE.findall(shape_part)]
            rep = re.search(r"\*(\d{1,9})\]", item)
            if rep and len(dts) == 1:
                dts = dts * min(int(rep.group(1)), len(shapes))  # the count comes from a file: never more than shapes
            for i, shp in enumerate(shapes):
                out.append((dtypes.canonical(dts[i]) if i < len(dts) else None, shp))
            continue
        m = _TENSOR_T.search(item)
        dt = dtypes.canonical(m.group(1)) if m else None
        if dt is None:
            head = item.split(",", 1)[0].strip()
            dt = dtypes.canonical(head)
        shp_m = _SHAPE.search(item[item.find(">") + 1 :] if ">" in item else item.split(",", 1)[-1])
        shape: tuple[int, ...] | None = None
        if "NoShape" in item:
            shape = ()
        elif shp_m:
            shape = _parse_dims(shp_m.group(1))
        out.append((dt, shape))
    return out


def _device_types(spec: str) -> list[TensorType]:
    return [(dtypes.canonical(dt), _parse_dims(dims)) for dt, _fmt, dims in _DEV_T.findall(spec)]


def parse_types(lines: list[str]) -> NodeTypes:
    """(input types, output types) from a node's type lines: the abstract view, then the kernel's."""
    ins_t: list[TensorType] = []
    outs_t: list[TensorType] = []
    for n, spec in enumerate(lines):
        ins, _, outs = spec.partition("->")
        if n == 0:
            ins_t, outs_t = _abstract_types(ins), _abstract_types(outs)
        elif "x" in outs and "{" in outs:
            dev = _device_types(outs)
            if dev:
                outs_t = dev
            dev_in = _device_types(ins)
            if dev_in:
                ins_t = dev_in
    return ins_t, outs_t


def _param(line: str, m: re.Match[str]) -> IRParam:
    """A graph parameter line: `%para2_conv1.weight: <Ref[Tensor[Float32]], (2, 3, 1, 1), ...> : IsWeight: true`."""
    name, spec = m.group(2), m.group(3)
    tm = _TENSOR_T.search(spec)
    sm = _SHAPE.search(spec)
    return IRParam(
        name=name,
        dtype=dtypes.canonical(tm.group(1)) if tm else None,
        shape=_parse_dims(sm.group(1)) if sm else None,
        is_weight=("IsWeight: false" not in line) and ("is_parameter" in spec or "IsWeight: true" in line),
    )


class _Shared:
    """What the nodes of one graph file share: a parser per distinct attribute text and per distinct pair of
    type lines, and one string per op type and per type line (layers repeat; a 20,000-node graph has a few
    dozen of each, and the ops keep the attribute parsers for the whole session)."""

    def __init__(self) -> None:
        self.attrs: dict[str, AttrsParser] = {}
        self.types: dict[tuple[str, ...], TypesParser] = {}
        self.texts: dict[str, str] = {}

    def text(self, s: str) -> str:
        return self.texts.setdefault(s, s)

    def attrs_parser(self, rest: str) -> AttrsParser:
        found = self.attrs.get(rest)
        if found is None:
            found = self.attrs[rest] = partial(_parse_attrs, rest)
        return found

    def types_parser(self, lines: list[str]) -> TypesParser | None:
        if not lines:
            return None
        key = tuple(lines)
        found = self.types.get(key)
        if found is None:
            found = self.types[key] = partial(parse_types, list(key))
        return found


def _node(m: re.Match[str], shared: _Shared) -> IRNode:
    """A node line; its attributes, and its types from the type lines that follow (`set_types_parser` once
    they are read), are parsed on first use (by partials, not closures: a Dump can be pickled)."""
    inner, rest = _balanced(m.group(3))
    return IRNode(
        node_id=m.group(1),
        op_type=shared.text(strip_prefix(m.group(2))),
        args=_parse_args(inner),
        parse_attrs=shared.attrs_parser(rest),
    )


def _read_comment(node: IRNode, line: str) -> None:
    """A `#` line below a node: its full scope name, or a line of the user's source."""
    if line.startswith("# Fullname with scope:") or line.startswith("# scope:"):
        i = line.find("(")
        if i >= 0:
            node.full_name = line[i + 1 : line.rfind(")")].strip()
    elif line.startswith("# In file"):
        node.add_code(line[2:].strip())


def _lines(path: str) -> Iterator[str]:
    """The lines of a graph file, read one at a time; a line longer than MAX_GRAPH_LINE (a node MindSpore writes
    is a few KB) is damage: ValueError naming the limit."""
    return bounded_lines(path, limits.MAX_GRAPH_LINE, limits.MAX_TEXT_FILE)


def parse_ir_text(path: str) -> IRGraph:
    """The graph of a text IR file; OSError when it cannot be read (what it cannot parse it skips)."""
    graph = IRGraph(source=path)
    node: IRNode | None = None  # the node whose type and comment lines follow
    type_lines: list[str] = []  # of `node`
    shared = _Shared()
    for raw in counted(Stage.GRAPH_FILES, _lines(path)):
        line = raw.strip()
        if not line:
            continue
        c = line[0]
        if c == "%":
            m = _PARAM.match(line)
            if m and node is None and "=" not in line.split(":", 1)[0]:
                param = _param(line, m)
                graph.params[param.name] = param
            elif m := _NODE.match(line):
                if node is not None:
                    node.set_types_parser(shared.types_parser(type_lines))
                type_lines = []
                node = _node(m, shared)
                graph.nodes[node.node_id] = node
        elif c == ":" and node is not None:
            spec = line[1:].strip()
            if "->" in spec and len(type_lines) < 2:
                type_lines.append(shared.text(spec))
        elif c == "#" and node is not None:
            _read_comment(node, line)
        elif line.startswith("Return(") or line.startswith("}"):
            if node is not None:
                node.set_types_parser(shared.types_parser(type_lines))
            node = None
        elif line.startswith("subgraph @") and not graph.name:
            graph.name = line[len("subgraph @") :].split("(")[0].strip()
    if node is not None:
        node.set_types_parser(shared.types_parser(type_lines))
    return graph
