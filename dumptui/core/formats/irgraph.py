"""A framework graph as read from a graph file (.ir text, .pb protobuf): nodes, their arguments, attributes.

Readers of graph files produce an `IRGraph`; `dumptui.core.graph` turns it into dataflow edges between the
ops that were dumped, looking through the graph's virtual nodes (Load, TupleGetItem, Depend...).
"""
from __future__ import annotations

from dataclasses import dataclass, field

# Nodes that move or group values but run no kernel: we look through them to find the real producer.
VIRTUAL_OPS = {
    "Load", "TupleGetItem", "Depend", "MakeTuple", "UpdateState", "Return", "tuple_getitem", "make_tuple",
    "depend", "load", "StopGradient", "stop_gradient", "MakeList", "ListGetItem", "RealMakeTuple",
    "RealTupleGetItem", "TensorMove", "InsertGradientOf", "HookBackward", "Partial", "Switch", "SwitchLayer",
    "J", "env_getitem", "EnvironGet", "UpdateStatePlaceholder", "TensorToTuple", "TupleToTensor",
    "ScalarToTensor", "TensorToScalar", "TupleToList", "ListToTuple",
}


@dataclass
class IRArg:
    kind: str   # "node" | "param" | "const"
    ref: str    # node id ("13"), parameter name ("conv1.weight"), or constant text ("I64(0)")


@dataclass
class IRNode:
    node_id: str
    op_type: str
    full_name: str = ""
    args: list[IRArg] = field(default_factory=list)
    attrs: dict[str, str] = field(default_factory=dict)
    in_types: list[tuple[str | None, tuple[int, ...] | None]] = field(default_factory=list)
    out_types: list[tuple[str | None, tuple[int, ...] | None]] = field(default_factory=list)
    code: list[str] = field(default_factory=list)

    @property
    def virtual(self) -> bool:
        return self.op_type in VIRTUAL_OPS


@dataclass
class IRParam:
    name: str
    dtype: str | None = None
    shape: tuple[int, ...] | None = None
    is_weight: bool = True


@dataclass
class IRGraph:
    name: str = ""
    nodes: dict[str, IRNode] = field(default_factory=dict)   # in file order
    params: dict[str, IRParam] = field(default_factory=dict)
    source: str = ""                                          # the file it came from

    def by_full_name(self) -> dict[str, IRNode]:
        return {n.full_name: n for n in self.nodes.values() if n.full_name}
