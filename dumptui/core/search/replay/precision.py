"""Precision or semantics: an op replayed at the device's precision from the *reference's* inputs.

A culprit's output differs from the reference's. Either the device computes the same function in less
precision (fp16 or bf16 storage, fp16 accumulation, saturation at the format's largest value), or it computes
another function (Mod where the reference has FloorMod, a kernel with a bug). Replaying the reference's op
definition on the reference's own inputs, but rounded as the device rounds, tells them apart:

- the device replay **reproduces** the target's output (within the device dtype's floor, and closer to it
  than to the exact result), or its error is **of the same size** as the target's (a summation order we cannot
  know gives other roundings, not smaller ones): the cause is precision, and keeping the op in float32 fixes it;
- neither: the op's implementation or definition differs, and the remedy is the op, not its precision.

Device variants tried, each named in the answer:
- `io`: inputs rounded to the device dtype, computed exactly, the output rounded (saturating at the largest
  finite value, as Ascend's default overflow mode does, or to inf in IEEE mode);
- `accumulate`: ReduceSum/ReduceMean adding element after element in the device dtype;
- `unshifted`: Softmax/LogSoftmax computing exp(x) in the device dtype without subtracting the maximum.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from dumptui.core.model.reason import Said, Why, because
from dumptui.core.search.replay.args import OpArgs, normalise_axes
from dumptui.core.search.replay.run import replay
from dumptui.core.search.replay.spec import ReplayInputs, ReplayUnsupported

LOW = ("float16", "bfloat16")
LARGEST = {"float16": 65504.0, "bfloat16": 3.3895313892515355e38, "float32": 3.4028234663852886e38}
FLOOR = {"float16": 2.0**-10, "bfloat16": 2.0**-7, "float32": 2.0**-13}
SAME_SIZE = 2.0  # a replay whose error is within this factor of the target's has "the same size" of error


def round_to(a: np.ndarray, dtype: str, saturate: bool = True) -> np.ndarray:
    """float64 values stored in `dtype` and read back: overflow saturates at the largest finite value (or
    becomes inf when not `saturate`)."""
    a = np.asarray(a, dtype=np.float64)
    if dtype not in LARGEST:
        return a
    big = LARGEST[dtype]
    if saturate:
        a = np.clip(a, -big, big)
    with np.errstate(over="ignore", invalid="ignore"):
        if dtype == "float16":
            return a.astype(np.float16).astype(np.float64)
        if dtype == "float32":
            return a.astype(np.float32).astype(np.float64)
        bits = a.astype(np.float32).view(np.uint32).astype(np.uint64)
        rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
        return rounded.astype(np.uint32).view(np.float32).astype(np.float64)


@dataclass(frozen=True)
class Variant:
    name: str  # what the device does (report/reasons.py words it, with the dtype and its largest value)
    run: Callable[[ReplayInputs, str], np.ndarray]


def _io(saturate: bool) -> Callable[[ReplayInputs, str], np.ndarray]:
    def run(spec: ReplayInputs, dtype: str) -> np.ndarray:
        low = {
            s: round_to(v, dtype, saturate) if np.asarray(v).dtype.kind == "f" else v for s, v in spec.inputs.items()
        }
        out = replay(ReplayInputs(spec.op_type, low, spec.attrs, spec.constants, spec.out_shapes))[0]
        return round_to(out, dtype, saturate)

    return run


def _accumulate(spec: ReplayInputs, dtype: str) -> np.ndarray:
    """ReduceSum/ReduceMean adding element by element in `dtype`, each partial sum rounded (saturating)."""
    if spec.op_type not in ("ReduceSum", "ReduceMean"):
        raise ReplayUnsupported("fp16 accumulation is modelled for ReduceSum and ReduceMean")
    args = OpArgs(spec)
    x = round_to(args.float64(0), dtype)
    axes = args.ints(1, ("axis", "axes"), ())
    keep = args.flag(2, ("keep_dims", "keepdims"), False)
    axes = normalise_axes(axes or tuple(range(x.ndim)), x.ndim, spec.op_type)
    rest = [a for a in range(x.ndim) if a not in axes]
    moved = np.transpose(x, rest + list(axes)).reshape([x.shape[a] for a in rest] + [-1])
    total = np.zeros(moved.shape[:-1])
    for k in range(moved.shape[-1]):
        total = round_to(total + moved[..., k], dtype)
    if spec.op_type == "ReduceMean":
        total = round_to(total / max(moved.shape[-1], 1), dtype)
    if keep:
        total = total.reshape([1 if a in axes else x.shape[a] for a in range(x.ndim)])
    want = spec.out_shapes.get(0)
    return total.reshape(want) if want is not None and total.size == int(np.prod(want)) else total


def _unshifted(spec: ReplayInputs, dtype: str) -> np.ndarray:
    """Softmax/LogSoftmax with exp(x) in `dtype` (saturating) and no subtraction of the maximum."""
    if spec.op_type not in ("Softmax", "LogSoftmax"):
        raise ReplayUnsupported("an unshifted exp is modelled for Softmax and LogSoftmax")
    args = OpArgs(spec)
    x = round_to(args.float64(0), dtype)
    axes = normalise_axes(args.ints(1, ("axis",), (-1,)), x.ndim, spec.op_type)
    e = round_to(np.exp(np.minimum(x, 1e4)), dtype)
    total = np.sum(e, axis=axes, keepdims=True)
    out = e / total if spec.op_type == "Softmax" else np.log(e) - np.log(total)
    return round_to(out, dtype)


VARIANTS = (
    Variant("io", _io(True)),
    Variant("io-inf", _io(False)),
    Variant("accumulate", _accumulate),
    Variant("unshifted", _unshifted),
)


@dataclass(frozen=True)
class PrecisionFinding:
    """What a device-precision replay says about a culprit."""

    cause: str  # "precision" | "semantics" | "input" (a weight or input differs: `note`) | "wiring" | "unknown"
    dtype: str = ""
    variant: str = ""  # the name of the variant that explains it (VARIANTS; report/reasons.py words it)
    dev_device: float = math.nan  # target vs the device replay, relative error of the RMS
    dev_exact: float = math.nan  # target vs the exact replay (both from the reference's inputs)
    dev_replay: float = math.nan  # the device replay vs the exact one: the error that precision gives
    floor: float = math.nan
    how: str = ""  # "reproduces" | "same size"
    note: Said = ""  # why unknown, or what differs (a weight, the wiring): report/reasons.py words it


def deviation(want: np.ndarray, got: np.ndarray) -> float:
    """Relative error of `got` against `want`: mean |got - want| over the RMS of `want` (NaN/Inf at
    different places: inf)."""
    w = np.asarray(want, dtype=np.float64).reshape(-1)
    g = np.asarray(got, dtype=np.float64).reshape(-1)
    if w.size != g.size:
        raise ValueError(f"{w.size} vs {g.size} elements")
    bad_w, bad_g = ~np.isfinite(w), ~np.isfinite(g)
    if np.any(bad_w != bad_g) or np.any(w[bad_w] != g[bad_g]):
        return math.inf
    ok = ~bad_w
    if not ok.any():
        return 0.0
    rms = float(np.sqrt(np.mean(w[ok] ** 2)))
    err = float(np.mean(np.abs(g[ok] - w[ok])))
    return err / rms if rms else (0.0 if err == 0 else math.inf)


def judge_precision(spec: ReplayInputs, target_out: np.ndarray, dtypes: list[str]) -> PrecisionFinding:
    """Replay `spec` (the reference op on the reference's inputs) exactly and at each device dtype and
    variant; say whether precision explains `target_out`."""
    try:
        exact = replay(spec)[0]
    except ReplayUnsupported as e:
        return PrecisionFinding("unknown", note=because(Why.NO_REPLAY, str(e)))
    except (ValueError, FloatingPointError, KeyError) as e:
        return PrecisionFinding("unknown", note=because(Why.REPLAY_FAILED, str(e)))
    got = np.asarray(target_out, dtype=np.float64)
    try:
        dev_exact = deviation(exact, got)
    except ValueError as e:
        return PrecisionFinding("unknown", note=str(e))
    if all(dev_exact <= FLOOR.get(d, FLOOR["float32"]) for d in dtypes or ["float32"]):
        return PrecisionFinding(
            "unknown",
            dev_exact=dev_exact,
            note=because(Why.REPLAY_GIVES_TARGET, dev_exact),
        )
    best: PrecisionFinding | None = None
    closest: PrecisionFinding | None = None
    for dtype in dtypes:
        floor = FLOOR.get(dtype, FLOOR["float32"])
        for v in VARIANTS:
            try:
                dev_out = np.asarray(v.run(spec, dtype))
                dev_device = deviation(dev_out, got)
                dev_replay = deviation(exact, dev_out)
            except (ReplayUnsupported, ValueError, FloatingPointError, KeyError):
                continue
            found = PrecisionFinding("precision", dtype, v.name, dev_device, dev_exact, dev_replay, floor, "reproduces")
            if dev_device <= floor and dev_device < dev_exact:
                if best is None or dev_device < best.dev_device:
                    best = found
            elif (  # noqa: SIM102 (a case beside the if above; the inner test keeps that case's closest finding)
                math.isfinite(dev_replay)
                and dev_replay > floor
                and dev_exact <= SAME_SIZE * dev_replay
                and dev_replay <= SAME_SIZE * dev_exact
            ):
                if closest is None or abs(math.log(dev_replay / dev_exact)) < abs(
                    math.log(closest.dev_replay / closest.dev_exact)
                ):
                    closest = PrecisionFinding(
                        "precision", dtype, v.name, dev_device, dev_exact, dev_replay, floor, "same size"
                    )
    if best is not None:
        return best
    if closest is not None:
        return closest
    dtype = dtypes[0] if dtypes else "float16"
    try:
        dev_out = np.asarray(VARIANTS[0].run(spec, dtype))
        dev_replay = deviation(exact, dev_out)
    except (ReplayUnsupported, ValueError, FloatingPointError, KeyError):
        dev_replay = math.nan
    return PrecisionFinding(
        "semantics",
        dtype,
        VARIANTS[0].name,
        math.nan,
        dev_exact,
        dev_replay,
        FLOOR.get(dtype, FLOOR["float32"]),
    )
