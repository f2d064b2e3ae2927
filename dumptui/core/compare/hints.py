"""Known causes (docs/formats.md#known-traps) that match an op pair: Mod on Ascend310, Conv2D in fp16, saturating Sigmoid,
discontinuous ops, graph attributes that differ. A hint explains; it never changes a verdict."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from dumptui.core.model.reason import Reason, Why, because


@dataclass(frozen=True)
class Hint:
    reason: Reason  # what it says (report/reasons.py words it)
    kind: str = "known cause"


DISCONTINUOUS = {
    "FloorMod",
    "Mod",
    "Floor",
    "Ceil",
    "Round",
    "Sign",
    "ArgMax",
    "ArgMin",
    "Argmax",
    "Argmin",
    "ArgMaxWithValue",
    "ArgMinWithValue",
    "Greater",
    "GreaterEqual",
    "Less",
    "LessEqual",
    "Equal",
    "NotEqual",
    "TopK",
    "Sort",
    "Cast_to_int",
    "FloorDiv",
    "TruncateDiv",
    "TruncateMod",
    "Rint",
}


def hints_for(
    op_type_ref: str | None,
    op_type_target: str | None,
    dtypes_ref: list[str | None],
    dtypes_target: list[str | None],
    attr_diff: dict[str, tuple[str, str]] | None = None,
    neighbour_types_target: set[str] | None = None,
) -> list[Hint]:
    """Known causes (docs/formats.md#known-traps) that match an op pair."""
    out: list[Hint] = []
    types = {t for t in (op_type_ref, op_type_target) if t}
    if "Mod" in types:
        out.append(Hint(because(Why.HINT_MOD, op_type_ref == "FloorMod" and op_type_target == "Mod")))
    if types & {"Conv2D", "Conv2d", "Conv3D", "DepthwiseConv2dNative", "Conv2DBackpropInput"}:
        low = {"float16", "bfloat16"}
        if (
            (low & set(dtypes_target))
            and not (low & set(dtypes_ref))
            or (neighbour_types_target and "Cast" in neighbour_types_target)
        ):
            out.append(Hint(because(Why.HINT_CONV_FP16), "precision"))
    low_precision = {"float16", "bfloat16"}
    in_fp16 = bool(low_precision & set(dtypes_target)) and not (low_precision & set(dtypes_ref))
    if types & {"Sigmoid", "Exp", "Softmax", "Tanh"} and (
        in_fp16 or bool(neighbour_types_target and "Cast" in neighbour_types_target)
    ):
        # only where the target computes it in fp16 (its dtype, or a Cast beside it): an fp32 Exp downstream
        # of the real bug is no saturation
        out.append(Hint(because(Why.HINT_SATURATES), "precision"))
    if types & DISCONTINUOUS:
        out.append(Hint(because(Why.HINT_DISCONTINUOUS, sorted(types & DISCONTINUOUS)), "discontinuous"))
    if attr_diff:
        items = [(k, str(a), str(b)) for k, (a, b) in sorted(attr_diff.items())]
        out.append(Hint(because(Why.HINT_ATTRIBUTES, items), "attributes"))
    return out


_VOLATILE_ATTRS = {
    "instance name",
    "input_names",
    "output_names",
    "IsFeatureMapInputList",
    "IsFeatureMapOutput",
    "checkpoint",
    "is_dynamic_len",
    "is_backend_cast",
}


def attribute_diff(a: Mapping[str, str], b: Mapping[str, str]) -> dict[str, tuple[str, str]]:
    """Attributes present on both sides with different values (bookkeeping attributes left out)."""
    out = {}
    for k in sorted(set(a) & set(b)):
        if k in _VOLATILE_ATTRS:
            continue
        if a[k] != b[k]:
            out[k] = (a[k], b[k])
    return out


def for_root(hints: list[Hint], is_root: bool, op_type: str) -> list[Hint]:
    """The hints of an op judged a root: the discontinuity hint would invite dismissing a real culprit, so
    it says instead that more changed here than noise through a discontinuity explains."""
    if not is_root:
        return hints
    out = []
    for h in hints:
        if h.kind == "discontinuous":
            out.append(Hint(because(Why.HINT_DISCONTINUOUS_ROOT, op_type), "discontinuous"))
        else:
            out.append(h)
    return out
