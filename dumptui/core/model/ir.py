"""A framework graph as read from a graph file (.ir text, .pb protobuf): nodes, their arguments, attributes.

The graph-file parsers (`formats.irtext`, `formats.anf_pb`) produce an `IRGraph`; `dumptui.core.graph.build` turns it
into dataflow edges between the ops that were dumped, looking through the graph's virtual nodes (Load,
TupleGetItem, Depend...). This model sits below both, so neither imports the other.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

# (dtype, shape) of one tensor as a graph file declares it; either may be unknown.
TensorType = tuple[str | None, tuple[int, ...] | None]
NodeTypes = tuple[list[TensorType], list[TensorType]]  # (input types, output types)

# Nodes that move or group values but run no kernel: we look through them to find the real producer.
VIRTUAL_OPS = {
    "Load",
    "TupleGetItem",
    "Depend",
    "MakeTuple",
    "UpdateState",
    "Return",
    "tuple_getitem",
    "make_tuple",
    "depend",
    "load",
    "StopGradient",
    "stop_gradient",
    "MakeList",
    "ListGetItem",
    "RealMakeTuple",
    "RealTupleGetItem",
    "TensorMove",
    "InsertGradientOf",
    "HookBackward",
    "Partial",
    "Switch",
    "SwitchLayer",
    "J",
    "env_getitem",
    "EnvironGet",
    "UpdateStatePlaceholder",
    "TensorToTuple",
    "TupleToTensor",
    "ScalarToTensor",
    "TensorToScalar",
    "TupleToList",
    "ListToTuple",
}


class IRArg(NamedTuple):
    """A node argument (a tuple: a 20,000-node graph makes tens of thousands of them)."""

    kind: str  # "node" | "param" | "const"
    ref: str  # node id ("13"), parameter name ("conv1.weight"), or constant text ("I64(0)")


class IRNode:
    """One graph node. Attributes and types may be given parsed, or as raw text parsed on first use:
    a 20,000-node graph is read for its dataflow, and only the few nodes shown need their details."""

    __slots__ = ("node_id", "op_type", "full_name", "args", "code", "_attrs", "_types", "_parse_attrs", "_parse_types")

    def __init__(
        self,
        node_id: str,
        op_type: str,
        full_name: str = "",
        args: list[IRArg] | None = None,
        attrs: dict[str, str] | None = None,
        in_types: list[TensorType] | None = None,
        out_types: list[TensorType] | None = None,
        code: Sequence[str] = (),
        parse_attrs: Callable[[], dict[str, str]] | None = None,
        parse_types: Callable[[], NodeTypes] | None = None,
    ):
        self.node_id = node_id
        self.op_type = op_type
        self.full_name = full_name
        self.args = args if args is not None else []
        self.code = code  # a tuple, or a list once `add_code` added a line
        self._attrs = attrs
        self._types: NodeTypes | None = None
        if in_types is not None or out_types is not None:
            self._types = (in_types or [], out_types or [])
        self._parse_attrs = parse_attrs  # () -> dict, when attrs were not given
        self._parse_types = parse_types  # () -> (in_types, out_types), when types were not given

    def __repr__(self) -> str:
        return f"IRNode(%{self.node_id} {self.op_type} {self.full_name!r})"

    @property
    def virtual(self) -> bool:
        return self.op_type in VIRTUAL_OPS

    @property
    def attrs(self) -> dict[str, str]:
        if self._attrs is None:
            self._attrs = self._parse_attrs() if self._parse_attrs else {}
            self._parse_attrs = None
        return self._attrs

    def add_code(self, line: str) -> None:
        """A line of the user's source, below the node in the graph file (no list for nodes without one)."""
        if isinstance(self.code, list):
            self.code.append(line)
        else:
            self.code = [*self.code, line]

    def set_types_parser(self, parse_types: Callable[[], NodeTypes] | None) -> None:
        """Types to parse on first use; a graph reader may give nodes with the same type text the same call."""
        if self._types is None:
            self._parse_types = parse_types

    def attrs_parser(self) -> Callable[[], dict[str, str]] | None:
        """The call that parses this node's attributes while they are not parsed yet (else None); a graph
        reader may give nodes with the same attribute text the same call."""
        return self._parse_attrs if self._attrs is None else None

    def _ensure_types(self) -> NodeTypes:
        if self._types is None:
            self._types = self._parse_types() if self._parse_types else ([], [])
            self._parse_types = None
        return self._types

    @property
    def in_types(self) -> list[TensorType]:
        return self._ensure_types()[0]

    @property
    def out_types(self) -> list[TensorType]:
        return self._ensure_types()[1]


@dataclass
class IRParam:
    name: str
    dtype: str | None = None
    shape: tuple[int, ...] | None = None
    is_weight: bool = True


@dataclass
class IRGraph:
    name: str = ""
    nodes: dict[str, IRNode] = field(default_factory=dict)  # in file order
    params: dict[str, IRParam] = field(default_factory=dict)
    source: str = ""  # the file it came from

    def by_full_name(self) -> dict[str, IRNode]:
        return {n.full_name: n for n in self.nodes.values() if n.full_name}
