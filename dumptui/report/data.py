"""Plain-data views of core results, shared by the JSON, CSV and table reports (and the UI)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from dumptui.core.compare.hints import for_root
from dumptui.core.compare.results import OpResult, TensorResult
from dumptui.core.compare.session import Session
from dumptui.core.compare.verdict import UNREADABLE
from dumptui.core.graph.pairedby import PairedBy
from dumptui.core.model.dump import Dump, Op, Problem, Severity, TensorRef
from dumptui.core.search.bisect import Bisection, CheckStatus, InputCheck, Root
from dumptui.core.search.localerror import LocalError
from dumptui.core.search.selection import FlipSite
from dumptui.report import selection as selection_words
from dumptui.report.cause import why
from dumptui.report.reasons import (
    INFERRED_FLOW,
    difference_words,
    replay_sentence,
    say,
    say_all,
    undefined_words,
)


def num(v: Any) -> Any:
    """A JSON number, or None (null) when undefined or not finite: JSON has no NaN or infinity, and a script
    reading a number column must never meet a word in it (report/jsonout.py)."""
    if v is None:
        return None
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def tensor_side(t: TensorRef | None) -> dict | None:
    if t is None:
        return None
    return {
        "path": t.path,
        "shape": list(t.shape) if t.shape is not None else None,
        "dtype": t.dtype,
        "format": t.fmt or None,
        "problem": say(t.problem) if t.has_data and t.problem else None,
        "repaired": say(t.repaired) if t.has_data and t.repaired else None,
    }


def tensor_result(r: TensorResult) -> dict:
    d = {
        "io": r.io,
        "slot": r.slot,
        "verdict": r.verdict,
        "reason": say(r.reason),
        "notes": say_all(r.notes),
        "ref": tensor_side(r.ref),
        "target": tensor_side(r.target),
        "statistics_only": r.statistics_only,
    }
    if r.stats is not None:
        s = r.stats.to_dict()
        stats: dict[str, object] = {
            k: (
                {kk: num(vv) for kk, vv in v.items()}
                if isinstance(v, dict)
                else (v if isinstance(v, (list, tuple)) else num(v))
            )
            for k, v in s.items()
        }
        stats["undefined"] = undefined_words(r.stats.undefined)
        d["stats"] = stats
    if r.stat_rel is not None:
        d["statistic_relative_differences"] = {k: num(v) for k, v in r.stat_rel.items()}
    if r.tolerance is not None:
        d["tolerance"] = {"atol": r.tolerance.atol, "rtol": r.tolerance.rtol, "rms_tol": r.tolerance.rms_tol}
    return d


def op_result(res: OpResult, is_root: bool = False) -> dict:
    """`is_root`: a discontinuity hint says "not benign" (as the text report and the app say it)."""
    p = res.pair
    return {
        "ref": p.ref.name if p.ref else None,
        "target": p.target.name if p.target else None,
        "op_type": p.op_type,
        "position": p.index + 1,  # 1-based, as `#N` in the text output
        "paired_by": say(p.how),
        "verdict": res.verdict,
        "input_verdict": res.input_verdict,
        "hints": [say(h.reason) for h in for_root(res.hints, is_root, p.op_type)],
        "inputs": [tensor_result(r) for r in res.inputs],
        "outputs": [tensor_result(r) for r in res.outputs],
    }


def local_error(le: LocalError | None) -> dict | None:
    """An op's local error: what it outputs, what its inputs carry, the gains, the replay proof."""
    if le is None:
        return None
    rp = le.replay
    return {
        "kind": le.kind,
        "rule": le.rule,  # which rule decided (localerror.LocalRule)
        "statistics_only": le.statistics_only,  # its error is of its statistics, not of its elements' RMS
        "why": say(le.why),
        "output_error": num(le.out_rel),
        "output_slot": le.out_slot,
        "input_error": num(le.data_in.worst_rel) if le.data_in is not None else None,
        "input_slot": le.in_slot,
        "gain": num(le.gain_rel),
        "gain_absolute": num(le.gain_abs),
        # the gain as every text says it ("inf" where no error came in: JSON has no infinity, `gain` is null)
        "gain_words": selection_words.gain_words(le),  # (a flip's code where a flip resized its inputs)
        "floor": num(le.floor),
        "floor_dtype": le.floor_dtype,
        "differs": [difference_words(d) for d in le.differs],
        "replay": None
        if rp is None
        else {
            "reference_deviation": num(rp.dev_ref),
            "target_deviation": num(rp.dev_target),
            "output_slot": rp.slot,
            "sampled_positions": rp.sample or None,
            "output_elements": rp.elements or None,
            "error_margin": num(rp.error_margin) if rp.sample else None,
            "sentence": replay_sentence(rp),
        },
        "replay_note": say(le.replay_note) or None,
        "selection": selection_words.proof_json(le.selection),
    }


def root(r: Root, session: Session, checks: Sequence[InputCheck] = ()) -> dict:
    res = r.result or session.op_result(r.pair)
    d = op_result(res, is_root=r.local is not None and r.local.is_root)
    d.update(
        {"kind": r.kind, "why": why(r, checks), "caveats": say_all(r.caveats), "local_error": local_error(r.local)}
    )
    return d


def flips_of(bi: Bisection) -> tuple[FlipSite, ...]:
    """The selections of the run that flipped on near-ties (found by its scan; none without one)."""
    return bi.scan_result.flips if bi.scan_result is not None else ()


def benign_evidence(bi: Bisection) -> list[str]:
    """Why a pair with differences and no root is benign, in words: the flips of its selections first (why the
    outputs differ, when they do), then the engine's other reasons."""
    engine = say_all(bi.benign_evidence())
    if not engine:
        return []
    return [*engine[:1], *selection_words.benign_lines(flips_of(bi)), *engine[1:]]


def problem(p: Problem) -> dict:
    return {"path": p.path, "reason": say(p.reason), "severity": p.severity}


def dump_summary(d: Dump) -> dict:
    kinds: dict[str, int] = {}
    for op in d.ops:
        kinds[op.kind] = kinds.get(op.kind, 0) + 1
    return {
        "path": d.path,
        "root": d.root,
        "format": d.format,
        "variant": say(d.variant),
        "version": d.version,
        "device": d.device,
        "rank": d.rank,
        "graphs": d.graphs,
        "iterations": d.iterations,
        "ops": kinds,
        "tensors": d.tensor_count(),
        "order": say(d.order_source),
        "graph_file": INFERRED_FLOW if d.flow_inferred else d.graph_source,
        "notes": say_all(d.notes),
        "problems": [problem(p) for p in d.problems],
    }


def input_check(c: InputCheck, judged: Callable[[TensorResult], TensorResult] = lambda r: r) -> dict:
    """`judged`: the search's verdicts in context (a benign weight's tensor is close there, as everywhere)."""
    return {
        "name": c.name,
        "kind": c.kind,
        "status": c.status,
        "detail": say(c.detail),
        "consumers": [p.name for p in c.consumers],
        "result": tensor_result(judged(c.result)),
    }


def preconditions(checks: list[InputCheck], judged: Callable[[TensorResult], TensorResult] = lambda r: r) -> dict:
    """Counts for all, details for those that are not bitwise equal (a model has thousands of weights)."""
    by_status: dict[str, int] = {}
    for c in checks:
        by_status[c.status] = by_status.get(c.status, 0) + 1
    return {
        "checked": len(checks),
        "by_status": by_status,
        "not_equal": [input_check(c, judged) for c in checks if c.status != CheckStatus.EQUAL],
    }


def skipped(session: Session, results: list[TensorResult] | None = None) -> dict:
    """How much could not be read: files of each dump that could not be placed or opened, and tensor pairs
    compared so far (or among `results`) whose verdict is unreadable."""
    return {
        "files": {
            side: sum(1 for p in d.problems if p.severity == Severity.ERROR)
            for side, d in (("ref", session.ref), ("target", session.target))
        },
        "tensor_pairs": sum(
            1 for r in (results if results is not None else session.results()) if r.verdict == UNREADABLE
        ),
    }


def damaged_tensors(session: Session, results: list[TensorResult] | None = None) -> list[dict]:
    """Tensors seen so far that could not be read or were read as repaired data."""
    out = []
    seen = set()
    for r in results if results is not None else session.results():
        for side, t in (("ref", r.ref), ("target", r.target)):
            if t is None or not t.has_data or id(t) in seen:
                continue
            seen.add(id(t))
            if t.problem or t.repaired:
                problem, repaired = (say(f) if f else None for f in (t.problem, t.repaired))
                out.append({"side": side, "path": t.path, "problem": problem, "repaired": repaired})
    return out


def _name(op: Op | None) -> str | None:
    return op.name if op is not None else None


def bisect_report(bi: Bisection) -> dict:
    s = bi.session
    culprit = bi.first_root()
    roots = bi.roots()
    reads = s.ledger.by_purpose()
    return {
        "culprit": None
        if culprit is None
        else {
            **root(culprit, s, bi.checks or []),
            "ref": _name(culprit.pair.ref),
            "target": _name(culprit.pair.target),
        },
        "roots": [
            {
                "ref": r.pair.ref.name if r.pair.ref else None,
                "target": r.pair.target.name if r.pair.target else None,
                "kind": r.kind,
                "why": why(r, bi.checks or []),
                "position": r.pair.index + 1,
                "local_error": local_error(r.local),
            }
            for r in roots
        ],
        "search": {"kind": bi.search, "reason": say(bi.search_reason)},
        "benign": benign_evidence(bi) if culprit is None else [],
        "flips": [selection_words.site_json(f) for f in flips_of(bi)],
        "error_sources": [
            {"op": le.pair.name, "gain": num(le.gain_rel), "output_error": num(le.out_rel), "kind": le.kind}
            for le in bi.error_sources()
        ],
        "tensors_read": s.tensors_read,
        "reads_by_purpose": reads,
        "mode": bi.mode,
        "ops_bisected": len(bi.order),
        "steps": [
            {
                "op": bi.order[st.position].name,
                "position": bi.order[st.position].index + 1,  # the op's position, as in `ops` and `roots`
                "mark": st.mark,
                "source": st.source,
                "detail": say(st.detail),
                "candidates_before": st.candidates_before,
            }
            for st in bi.history
        ],
        "preconditions": preconditions(bi.checks or [], bi.judged),
        "alignment": {say(how): n for how, n in s.alignment.counts().items()},
        "unpaired": [
            {"side": "ref" if p.target is None else "target", "op": p.name, "op_type": p.op_type}
            for p in s.alignment.unpaired()
        ],
        "paired_not_by_name": [
            {"ref": _name(p.ref), "target": _name(p.target), "how": say(p.how)}
            for p in s.alignment.pairs
            if p.paired and p.how is not PairedBy.EXACT
        ],
        "damaged_tensors": damaged_tensors(s),
        "ref": dump_summary(s.ref),
        "target": dump_summary(s.target),
        "notes": say_all(bi.notes) + say_all(s.alignment.warnings),
    }
