"""Weights a compiler transforms on purpose, recognised and verified per output channel.

An Ascend310 inference graph does not carry the reference's weights as they are:
- **folded BatchNorm**: a Conv2D followed by an inference BatchNorm becomes one Conv2D with weight
  W·s and a BiasAdd with bias β − μ·s, where s = γ/√(σ² + ε) per output channel;
- **int8 weights**: the weight is stored as int8 with a scale per output channel (or one per tensor) and
  dequantised (a Cast and a Mul by the scale parameter, `<layer>.wscale` in AMCT's graphs) before use.

Both differ from the reference's weight by design. Here the transformation is recomputed from the reference's
own parameters (the conv weight, the BatchNorm's inputs 1-4 and its epsilon, as dumped) and compared channel
by channel with what the target holds: within the rounding of the target's dtype (float16, bfloat16), or
within half a quantisation step of an int8 weight, the weight is `benign` and says which transformation it
is. A channel outside that is named with numbers: for a fold, the variance (or epsilon) that channel's folded
scale implies against the reference's; for int8, the scale that channel would need against the one it has.
Only what no transformation explains is "weights differ".
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import cast

import numpy as np

from dumptui.core.compare.metrics import ElementTolerance, compare_arrays
from dumptui.core.compare.noise import ELEMENT_FACTOR, quantisation_floor
from dumptui.core.compare.results import TensorResult
from dumptui.core.compare.session import Session
from dumptui.core.compare.verdict import DIVERGED, judge
from dumptui.core.graph.align import OpPair
from dumptui.core.io import dtypes
from dumptui.core.model.dump import INPUT, OUTPUT, Dump, InOut, Op, SourceKind, TensorRef
from dumptui.core.model.reason import Reason, Said, Why, because
from dumptui.core.search.replay.args import OpArgs
from dumptui.core.search.replay.spec import ReplayInputs, ReplayUnsupported

# ops a weight passes through unchanged in value (Load is not a kernel; Cast and Reshape keep the values)
_PASS_THROUGH = frozenset({"Cast", "Load", "Reshape", "Identity", "TensorMove", "Depend"})
# ops whose input 1 is a weight with the output channel on axis 0 (MatMul with transpose_b, Dense, convs)
WEIGHTED = frozenset({"Conv2D", "Conv3D", "MatMul", "Dense", "BatchMatMul", "DepthwiseConv2dNative"})
_BATCHNORM = frozenset({"BatchNorm", "FusedBatchNorm", "BatchNormInfer", "BNInfer", "FusedBatchNormEx"})
_INTEGER_WEIGHT = frozenset({"int8", "uint8", "int4", "int16"})
MAX_WEIGHT_ELEMENTS = 1 << 24  # larger weights are not verified here (float64 copies of both sides)
ROUNDING_STEPS = 4.0  # a folded value may be off by this many units of the target dtype's rounding (the
# fold's own float32 arithmetic, then the rounding to the stored dtype: up to 2.4 units seen on real dumps)
STEP_SLACK = 1.05  # half a quantisation step, with room for the scale's own float32 rounding
NAMED_CHANNELS = 3  # channels named in a sentence; the rest are counted


@dataclass
class TransformCheck:
    """What the target did to a reference weight, and whether every channel agrees with it."""

    transform: str  # "folded BatchNorm", "int8 per-channel", "folded BatchNorm + int8 per-tensor", ...
    ok: bool
    detail: Said  # what was verified, or what is wrong (report/reasons.py words it)
    bad_channels: list[int] = field(default_factory=list)
    explains: dict[str, Said] = field(default_factory=dict)  # other parameters this accounts for -> why
    consumer_ref: str = ""  # key of the reference op that uses the weight
    consumer_target: str = ""
    floor: float = 0.0  # the int8 noise floor of the consumer's output (0 when not quantised)
    worst: Reason | None = None  # the largest deviation
    implied: np.ndarray | None = field(default=None, repr=False)  # per channel: target weight / expected
    expected: np.ndarray | None = field(default=None, repr=False)  # the reference's weight, transformed
    out_scale: np.ndarray | None = field(default=None, repr=False)  # folded BatchNorm: s per output channel


@dataclass
class _Chain:
    """A target weight's way to the op that uses it: the ops between, and a dequantisation scale if any."""

    consumer: Op
    slot: int
    scale: np.ndarray | None = None
    scale_name: str = ""


@dataclass
class _Weights:
    """A paired weight worth verifying: both sides read, and the ops that use them found."""

    tt: TensorRef  # the target's weight as dumped
    ref_consumer: Op
    chain: _Chain  # the target's way from the weight to its consumer
    w_ref: np.ndarray
    w_tgt_raw: np.ndarray


def verify(session: Session, p: OpPair) -> TransformCheck | None:
    """The transformation explaining a paired weight that differs, checked per output channel; None when
    neither a fold nor a quantisation is recognised (the weight then simply differs)."""
    w = _paired_weights(session, p)
    if w is None or p.target is None:
        return None
    tt, chain = w.tt, w.chain
    quantised = (tt.dtype or "") in _INTEGER_WEIGHT
    if quantised and chain.scale is None:
        return None  # an integer weight whose scale is not found: nothing to verify it against
    bn = _folded_batchnorm(session, w.ref_consumer, chain.consumer)
    try:
        expected, fold = _fold(w.w_ref, bn) if bn is not None else (w.w_ref, None)
    except (ValueError, ReplayUnsupported):
        return None
    transform = _transform_name(fold is not None, quantised, tt.dtype, chain.scale)
    if not transform:
        return None
    out = TransformCheck(transform, True, "", consumer_ref=w.ref_consumer.key, consumer_target=chain.consumer.key)
    out.expected = expected
    out.out_scale = fold.scale if fold is not None else None
    try:
        effective = _check_channels(out, w, expected, quantised, fold is not None, p.target.name)
    except ValueError:
        return None
    out.implied = _implied_scale(expected, effective)
    if fold is not None and bn is not None:
        _check_fold_bias(out, fold, bn)
        for n in bn.param_names:
            out.explains.setdefault(n, because(Why.FOLDED_INTO, p.target.name))
    if out.ok:
        out.detail = _ok_sentence(out, fold is not None, quantised, tt.dtype, w.w_ref.shape[0])
    return out


def _paired_weights(session: Session, p: OpPair) -> _Weights | None:
    """Both sides' weights read, the reference op that uses the weight and the target's way to its own; None
    when either is missing, unreadable, too big, or the shapes differ."""
    ref_op, tgt_op = p.ref, p.target
    if ref_op is None or tgt_op is None:
        return None
    rt, tt = ref_op.outputs.get(0), tgt_op.outputs.get(0)
    if rt is None or tt is None or not _verifiable(rt, tt):
        return None
    ref_use = _ref_consumer(session.ref, ref_op.key)
    if ref_use is None:
        return None
    ref_consumer, _slot = ref_use
    chain = _target_chain(session.target, tgt_op.key, ref_consumer.op_type)
    if chain is None:
        return None
    try:
        return _Weights(tt, ref_consumer, chain, _read(rt), _read(tt))
    except (OSError, ValueError):
        return None


def _verifiable(rt: TensorRef, tt: TensorRef) -> bool:
    """Both readable, of one shape (at least one axis: the output channels), small enough to copy."""
    if rt.problem or tt.problem or not rt.has_data or not tt.has_data:
        return False
    return (
        (rt.size or 0) <= MAX_WEIGHT_ELEMENTS and rt.shape is not None and rt.shape == tt.shape and len(rt.shape) >= 1
    )


def _transform_name(folded: bool, quantised: bool, dtype: str | None, scale: np.ndarray | None) -> str:
    """ "folded BatchNorm", "int8 per-channel", "folded BatchNorm + int8 per-tensor"...; "" for neither."""
    names = []
    if folded:
        names.append("folded BatchNorm")
    if quantised:
        assert scale is not None
        names.append(f"{dtype} {'per-channel' if scale.size > 1 else 'per-tensor'}")
    return " + ".join(names)


def _check_channels(
    out: TransformCheck, w: _Weights, expected: np.ndarray, quantised: bool, folded: bool, target_name: str
) -> np.ndarray:
    """Each channel of the target's weight against the expected one (within half a quantisation step, or the
    rounding of its dtype); the weight the target computes with (dequantised), per channel."""
    if not quantised:
        _check_rounded(out, expected, w.w_tgt_raw, w.tt.dtype)
        return _channels(w.w_tgt_raw.astype(np.float64))
    assert w.chain.scale is not None
    scales = _channel_scales(w.chain.scale, w.w_tgt_raw.shape[0])
    effective: np.ndarray = _channels(w.w_tgt_raw.astype(np.float64)) * scales[:, None]
    _check_quantised(out, expected, w.w_tgt_raw, scales, folded)
    out.floor = quantisation_floor(scales, w.w_ref)
    if w.chain.scale_name:
        out.explains[w.chain.scale_name] = because(Why.SCALE_OF, out.transform, target_name)
    return effective


# ------------------------------------------------------------------------------------------- the graphs


def _ref_consumer(dump: Dump, key: str) -> tuple[Op, int] | None:
    """The reference op that uses this weight as its input 1 (through Load/Cast-like ops)."""
    found = _walk_to_weighted(dump, key, None)
    return (found.consumer, found.slot) if found is not None else None


def _target_chain(dump: Dump, key: str, op_type: str) -> _Chain | None:
    return _walk_to_weighted(dump, key, op_type)


def _walk_to_weighted(dump: Dump, key: str, op_type: str | None) -> _Chain | None:
    """Follow the weight down the graph through value-keeping ops and at most one Mul by a scale, to the op
    of `op_type` (any weighted op when None) that takes it as input 1."""
    graph = dump.graph
    if graph is None or key not in graph:
        return None
    scale: np.ndarray | None = None
    scale_name = ""
    here = key
    for _ in range(8):
        nexts = [dump.op(k) for k in graph.successors(here)]
        ops = [o for o in nexts if o is not None]
        if len(ops) != 1:
            target = [o for o in ops if o.op_type in WEIGHTED and (op_type is None or o.op_type == op_type)]
            if len(target) == 1 and _slot_of(target[0], here) == 1:
                return _Chain(target[0], 1, scale, scale_name)
            return None
        op = ops[0]
        slot = _slot_of(op, here)
        if op.op_type in WEIGHTED and (op_type is None or op.op_type == op_type):
            return _Chain(op, slot, scale, scale_name) if slot == 1 else None
        if op.op_type in _PASS_THROUGH:
            here = op.key
            continue
        if op.op_type == "Mul" and scale is None and slot in (0, 1):
            other = 1 - slot
            t = op.inputs.get(other)
            if t is None or t.problem or not t.has_data:
                return None
            try:
                scale = _read(t)
            except (OSError, ValueError):
                return None
            src = op.sources.get(other)
            scale_name = _parameter_behind(dump, src.ref) if src is not None else ""
            here = op.key
            continue
        return None
    return None


def _parameter_behind(dump: Dump, key: str) -> str:
    """The parameter a value comes from (through Cast/Load), or ''."""
    for _ in range(4):
        op = dump.op(key)
        if op is None:
            return key if key in dump.parameters else ""
        if op.kind == "parameter":
            return op.name
        src = op.sources.get(0)
        if src is None:
            return ""
        if src.kind == SourceKind.PARAMETER:
            return src.ref
        key = src.ref
    return ""


def _slot_of(op: Op, producer: str) -> int:
    for slot, src in op.sources.items():
        if src.ref == producer:
            return slot
    return -1


def _only_consumer(dump: Dump, op: Op, types: frozenset[str]) -> Op | None:
    graph = dump.graph
    if graph is None or op.key not in graph:
        return None
    for k in graph.successors(op.key):
        o = dump.op(k)
        if o is None:
            continue
        if o.op_type in _PASS_THROUGH and o.op_type != "Load":
            inner = _only_consumer(dump, o, types)
            if inner is not None:
                return inner
            continue
        if o.op_type in types and _slot_of(o, op.key) == 0:
            return o
    return None


# ------------------------------------------------------------------------------------------- folded BatchNorm


@dataclass
class _BatchNorm:
    gamma: np.ndarray
    beta: np.ndarray
    mean: np.ndarray
    var: np.ndarray
    eps: float
    param_names: list[str]
    bias: np.ndarray | None  # the target's BiasAdd bias (None when the target adds none)
    bias_name: str


def _folded_batchnorm(session: Session, ref_consumer: Op, tgt_consumer: Op) -> _BatchNorm | None:
    """The reference's BatchNorm behind its conv, when the target's conv is not followed by one (it was folded)."""
    bn = _only_consumer(session.ref, ref_consumer, _BATCHNORM)
    if bn is None or _only_consumer(session.target, tgt_consumer, _BATCHNORM) is not None:
        return None
    try:
        args = OpArgs(
            ReplayInputs(
                bn.op_type,
                {s: _read(t) for s, t in bn.inputs.items() if 1 <= s <= 8},
                dict(bn.attrs),
                {s: src.ref for s, src in bn.sources.items() if src.kind == SourceKind.CONSTANT},
            )
        )
        gamma, beta, mean, var = (args.float64(s).reshape(-1) for s in (1, 2, 3, 4))
        eps = _epsilon(args)
    except (OSError, ValueError, ReplayUnsupported):
        return None
    names = [bn.sources[s].ref for s in (1, 2, 3, 4) if s in bn.sources and bn.sources[s].kind == SourceKind.PARAMETER]
    bias, bias_name = None, ""
    add = _only_consumer(session.target, tgt_consumer, frozenset({"BiasAdd", "Add"}))
    if add is not None:
        t = add.inputs.get(1)
        if t is not None and not t.problem and t.has_data:
            try:
                bias = _read(t).reshape(-1)
            except (OSError, ValueError):
                bias = None
            src = add.sources.get(1)
            bias_name = _parameter_behind(session.target, src.ref) if src is not None else ""
    return _BatchNorm(gamma, beta, mean, var, eps, names, bias, bias_name)


def _epsilon(args: OpArgs) -> float:
    """BatchNorm's epsilon: input 6 (0-d, or a one-element array as some dumps hold it) or the attribute."""
    return args.number(6, ("epsilon",), 1e-5)


@dataclass
class _Fold:
    scale: np.ndarray  # s = γ/√(σ²+ε) per output channel
    bias: np.ndarray  # β − μ·s


def _fold(w: np.ndarray, bn: _BatchNorm) -> tuple[np.ndarray, _Fold]:
    c = w.shape[0]
    if any(v.shape != (c,) for v in (bn.gamma, bn.beta, bn.mean, bn.var)):
        raise ValueError(f"BatchNorm parameters do not fit {c} output channels")
    s = bn.gamma / np.sqrt(bn.var + bn.eps)
    return w * s.reshape((c,) + (1,) * (w.ndim - 1)), _Fold(s, bn.beta - bn.mean * s)


def _check_fold_bias(out: TransformCheck, fold: _Fold, bn: _BatchNorm) -> None:
    """The target's bias against β − μ·s, and for every wrong channel the variance (or epsilon) it implies."""
    if bn.bias is not None and bn.bias.shape == fold.bias.shape:
        tol = ROUNDING_STEPS * 2.0**-10 * (np.abs(bn.beta) + np.abs(bn.mean * fold.scale) + 1e-6)
        bad_bias = np.nonzero(np.abs(bn.bias - fold.bias) > tol)[0]
        for c in bad_bias:
            if int(c) not in out.bad_channels:
                out.bad_channels.append(int(c))
        out.bad_channels.sort()
        if bn.bias_name:
            out.explains[bn.bias_name] = because(Why.FOLDED_BIAS)
    if out.bad_channels:
        out.ok = False
        out.detail = _fold_sentence(out, fold, bn)


def _fold_sentence(out: TransformCheck, fold: _Fold, bn: _BatchNorm) -> Reason:
    """Which channels are folded wrong, with the variance (or epsilon) the target's numbers imply."""
    implied = out.implied * fold.scale if out.implied is not None else None  # the target's γ/√(σ²+ε)
    parts: list[tuple[object, ...]] = []
    eps_guess = _epsilon_guess(implied, bn, out.bad_channels) if implied is not None else None
    if eps_guess is not None:
        return because(Why.FOLD_EPSILON, eps_guess, bn.eps)
    for c in out.bad_channels[:NAMED_CHANNELS]:
        s_t = float(implied[c]) if implied is not None else math.nan
        if implied is None or not np.isfinite(s_t) or s_t == 0 or abs(s_t / fold.scale[c] - 1) < 1e-3:
            # the weight agrees: only the bias is off, which the mean (or beta) explains
            parts.append(("bias", c, float(_bias_of(bn, c)), float(fold.bias[c])))
            continue
        var_t = (bn.gamma[c] / s_t) ** 2 - bn.eps
        parts.append(("variance", c, float(var_t), float(bn.var[c]), _whose(bn.var, var_t, c), s_t / fold.scale[c]))
    return because(Why.FOLD_WRONG, parts, len(out.bad_channels) - NAMED_CHANNELS)


def _bias_of(bn: _BatchNorm, c: int) -> float:
    return float(bn.bias[c]) if bn.bias is not None else math.nan


def _whose(var: np.ndarray, v: float, c: int) -> int | None:
    """Another channel whose running variance is the one a wrong fold used."""
    if not np.isfinite(v):
        return None
    close = np.nonzero(np.abs(var - v) <= 2e-3 * np.maximum(np.abs(var), 1e-12))[0]
    others = [int(k) for k in close if int(k) != c]
    return min(others, key=lambda k: abs(k - c)) if others else None


def _epsilon_guess(implied: np.ndarray, bn: _BatchNorm, bad: list[int]) -> float | None:
    """One epsilon for every channel, when all are off in the way a different epsilon makes them."""
    if len(bad) < max(2, len(bn.var) // 2):
        return None
    eps = (bn.gamma / implied) ** 2 - bn.var
    ok = np.isfinite(eps)
    if ok.sum() < 2:
        return None
    e = eps[ok]
    med = float(np.median(e))
    if med <= 0 or np.max(np.abs(e - med)) > 0.05 * med or abs(med - bn.eps) <= 0.05 * bn.eps:
        return None
    return med


# ------------------------------------------------------------------------------------------- per channel


def _channels(a: np.ndarray) -> np.ndarray:
    return a.reshape(a.shape[0], -1)


def _check_rounded(out: TransformCheck, expected: np.ndarray, got: np.ndarray, dtype: str | None) -> None:
    """A float target weight: each channel within the rounding of its dtype of the expected values."""
    unit = _unit(dtype)
    e, g = _channels(expected), _channels(got.astype(np.float64))
    # relative to each element, with a floor for values near zero (subnormals, a fold of a tiny weight)
    tiny = {"float16": 2.0**-24, "bfloat16": 2.0**-133}.get(dtype or "", 2.0**-149)  # the smallest subnormal
    tol = ROUNDING_STEPS * unit * (np.abs(e) + np.abs(e).max(axis=1, keepdims=True) * 2.0**-14) + tiny
    bad = np.nonzero((np.abs(g - e) > tol).any(axis=1))[0]
    out.bad_channels = [int(c) for c in bad]
    with np.errstate(all="ignore"):
        rel = np.abs(g - e) / (np.abs(e) + np.abs(e).max(axis=1, keepdims=True) * 2.0**-14 + 1e-30)
    worst = float(np.max(rel)) / unit if e.size else 0.0
    out.worst = because(Why.WORST_ROUNDING, worst, dtype or "float32")
    if out.bad_channels:
        out.ok = False


def _implied_scale(expected: np.ndarray, effective: np.ndarray) -> np.ndarray:
    """Per channel, the least-squares factor between the target's weight and the expected one."""
    e, g = _channels(expected), effective
    den = (e * e).sum(axis=1)
    with np.errstate(all="ignore"):
        ratio: np.ndarray = (e * g).sum(axis=1) / den
    return ratio


def _check_quantised(
    out: TransformCheck, expected: np.ndarray, q: np.ndarray, scales: np.ndarray, folded: bool
) -> None:
    """int8 × scale against the expected weight: each element within half a step of its channel's scale."""
    e = _channels(expected)
    qq = _channels(q.astype(np.float64))
    deq = qq * scales[:, None]
    half = 0.5 * np.abs(scales)[:, None] * STEP_SLACK + 1e-30
    over = np.abs(deq - e) / half  # in half steps
    bad = np.nonzero((over > 1).any(axis=1))[0]
    out.bad_channels = [int(k) for k in bad]
    out.worst = because(Why.WORST_STEP, float(over.max()) * 0.5 if over.size else 0.0)
    if not out.bad_channels:
        return
    out.ok = False
    parts: list[tuple[object, ...]] = []
    for k in out.bad_channels[:NAMED_CHANNELS]:
        den = float((qq[k] * qq[k]).sum())
        best = float((qq[k] * e[k]).sum() / den) if den else math.nan
        resid = np.abs(qq[k] * best - e[k]).max() if np.isfinite(best) else math.inf
        if np.isfinite(best) and resid <= 0.5 * abs(best) * STEP_SLACK * 1.5:
            parts.append(("scale", k, float(scales[k]), float(scales[k] / best), folded, best))
        else:
            parts.append(("steps", k, float(over[k].max()) * 0.5))
    out.detail = because(Why.QUANTISED_WRONG, out.transform, parts, len(out.bad_channels) - NAMED_CHANNELS)


def _channel_scales(scale: np.ndarray, c: int) -> np.ndarray:
    s = np.asarray(scale, dtype=np.float64).reshape(-1)
    if s.size == 1:
        return np.full(c, float(s[0]))
    if s.size != c:
        raise ValueError(f"{s.size} scales for {c} channels")
    return s


def _ok_sentence(out: TransformCheck, folded: bool, quantised: bool, dtype: str | None, channels: int) -> Reason:
    if quantised:
        return because(Why.QUANTISED_OK, out.transform, channels, folded, out.worst)
    return because(Why.FOLD_OK, channels, dtype or "float32", out.worst)


def _unit(dtype: str | None) -> float:
    """The relative rounding a stored weight of this dtype may carry (float32: a few ulps of a fold computed
    in another order)."""
    return {"float16": 2.0**-11, "bfloat16": 2.0**-8}.get(dtype or "float32", 2.0**-20)


def _read(t: TensorRef) -> np.ndarray:
    a = np.asarray(t.read())
    a = a.reshape(t.shape) if t.shape is not None and a.size == int(np.prod(t.shape)) else a
    if dtypes.is_float(str(a.dtype)) or a.dtype.kind == "f":
        return a.astype(np.float64)
    return a


# ------------------------------------------------------------------------------------------- the consumer


def compare_consumer(session: Session, found: TransformCheck) -> list[str]:
    """The op that uses a transformed weight, compared where the transformation says it must agree: its
    weight input against the reference's weight transformed, and (a fold) its output against the reference
    conv's output scaled per channel by γ/√(σ²+ε). Its results are replaced in the session, so the local-error
    rule judges the op like any other: by its own output error against its inputs'. Returns the slots done."""
    pair = session.alignment.for_ref(found.consumer_ref)
    if pair is None or pair.target is None or pair.target.key != found.consumer_target or pair.ref is None:
        return []
    done = []
    floor, kind = _consumer_floor(session, pair, found)
    if found.floor:
        session.op_floors[pair.key] = (found.floor, "int8")
    w_ref, w_tgt = pair.ref.inputs.get(1), pair.target.inputs.get(1)
    if found.expected is not None and w_ref is not None and w_tgt is not None:
        res = _against(session, INPUT, 1, w_ref, w_tgt, found.expected, None, floor, kind, found)
        if res is not None:
            done.append("input.1")
    y_ref, y_tgt = pair.ref.outputs.get(0), pair.target.outputs.get(0)
    if found.out_scale is not None and y_ref is not None and y_tgt is not None:
        res = _against(session, OUTPUT, 0, y_ref, y_tgt, None, found.out_scale, floor, kind, found)
        if res is not None:
            done.append("output.0")
    return done


def _consumer_floor(session: Session, pair: OpPair, found: TransformCheck) -> tuple[float, str]:
    names = [t.dtype for op in (pair.ref, pair.target) if op is not None for t in op.tensors()]
    floor, dt = session.thresholds.floor(*names)
    if found.floor > floor:
        return found.floor, "int8"
    return floor, dt or "float32"


def _against(
    session: Session,
    io: InOut,
    slot: int,
    ref: TensorRef,
    tgt: TensorRef,
    expected: np.ndarray | None,
    out_scale: np.ndarray | None,
    floor: float,
    kind: str,
    found: TransformCheck,
) -> TensorResult | None:
    """One tensor of the consumer compared with the reference transformed, judged and stored."""
    if (ref.size or 0) > MAX_WEIGHT_ELEMENTS * 4:
        return None
    try:
        want = expected if expected is not None else _read(ref)
        got = _read(tgt)
        if out_scale is not None:
            if want.ndim < 2 or want.shape[1] != out_scale.size:
                return None
            shape = [1] * want.ndim
            shape[1] = out_scale.size
            want = want * out_scale.reshape(shape)
        if want.size != got.size:
            return None
        tol = session.thresholds.tolerance(ref.dtype, tgt.dtype)
        if kind == "int8":  # per element, as for a dtype: 10x the floor (verdict.Thresholds.tolerance)
            tol = ElementTolerance(atol=0.0, rtol=floor * ELEMENT_FACTOR, rms_tol=floor * ELEMENT_FACTOR)
        st = compare_arrays(want.reshape(-1), got.astype(np.float64).reshape(-1), tol, kl=False)
    except (OSError, ValueError):
        return None
    tv = judge(st, session.thresholds, floor, kind)
    verdict, reason = tv.verdict, cast(Said, tv.reason)
    if not found.ok and io == INPUT:
        verdict, reason = DIVERGED, found.detail
    what = (
        because(Why.AGAINST_TRANSFORMED_WEIGHT, found.transform) if io == INPUT else because(Why.AGAINST_SCALED_OUTPUT)
    )
    res = TensorResult(io, slot, ref, tgt, verdict, reason, st, tol, (what,))
    session.substitute(res, final=not found.ok and io == INPUT)
    return res
