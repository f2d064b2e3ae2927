"""Every view of a pair (compare's JSON, both CSV profiles, the xlsx, the Markdown report, bisect's JSON) read
back as a user's script would read it (json, csv, openpyxl), not through the engine; and the contradictions
between them (tests/report/test_one_judgement*.py)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from dumptui import cli
from helpers.common import SHARED


def fixture_pairs() -> list[tuple[str, str, str]]:
    out = []
    ms = SHARED / "mindspore-2.10-cpu" / "dumps"
    for t in ("A_rerun", "B_pad", "B_mod", "C_fp16", "C_wround"):
        out.append((f"mindspore A vs {t}", ms / "A", ms / t))
    noisy = SHARED / "mindspore-2.10-noisy" / "dumps"
    for t in ("P0", "P1", "P2", "P3", "P4", "P5", "RERUN"):
        out.append((f"noisy REF vs {t}", noisy / "REF", noisy / t))
    tr = SHARED / "mindspore-2.10-transformed" / "dumps"
    for t in ("det_F16", "det_FOLD", "det_INT8", "det_BNVAR", "det_L2SAT"):
        out.append((f"transformed det_REF vs {t}", tr / "det_REF", tr / t))
    mp = SHARED / "msprobe-26.2-pytorch-cpu" / "dumps"
    for kind, t in (("tensor_mix", "diverge"), ("tensor_mix", "autocast_bf16"), ("statistics_L1", "diverge")):
        out.append((f"msprobe {kind} ref vs {t}", mp / kind / "ref", mp / kind / t))
    return [(n, str(r), str(t)) for n, r, t in out if Path(r).is_dir() and Path(t).is_dir()]


def _run(*argv: str) -> int:
    try:
        return cli.main([*argv])
    except SystemExit as e:  # (argparse)
        return int(e.code or 0)


def _tensor_key(op: dict, t: dict) -> tuple[int, str, int]:
    return op["position"], t["io"], t["slot"]


def views(ref: str, target: str, out: Path) -> dict[str, object]:
    """Every view of the pair, read back: {view: (verdicts by (position, io, slot), root positions)}."""
    out.mkdir(parents=True, exist_ok=True)
    cj, full, ms, xl, md, bj = (out / n for n in ("c.json", "full.csv", "ms.csv", "ms.xlsx", "r.md", "b.json"))
    rc = _run("compare", ref, target, "-q", "--json", str(cj), "--csv", str(full), "--csv-profile", "full")
    assert rc in (0, 1, 2), f"compare exit {rc}"  # 2: an answer that is incomplete (said so)
    assert _run("compare", ref, target, "-q", "--csv", str(ms), "--xlsx", str(xl)) == rc
    assert _run("report", ref, target, "-q", "-o", str(md)) == rc
    assert _run("bisect", ref, target, "-q", "--json", str(bj)) == rc
    doc = json.loads(cj.read_text())
    seen: dict[str, object] = {}

    # compare's JSON: every op's tensors, and its roots
    verdicts = {_tensor_key(op, t): t["verdict"] for op in doc["ops"] for t in op["inputs"] + op["outputs"]}
    seen["compare json"] = (verdicts, {r["position"] for r in doc["roots"]})
    order = [_tensor_key(op, t) for op in doc["ops"] for t in op["inputs"] + op["outputs"]]

    # the full CSV: a row per tensor pair with its op's position, io and slot; Root on the op's output row
    with open(full, newline="") as fh:
        rows = list(csv.DictReader(fh))
    seen["full csv"] = (
        {(int(r["Position"]), r["IO"], int(r["Slot"])): r["Verdict"] for r in rows},
        {int(r["Position"]) for r in rows if r["Root"] == "Yes"},
    )

    # msprobe's CSV and xlsx: rows in the order of the op's tensors (inputs, then outputs)
    def msprobe_rows(rows: list[dict[str, str]]) -> tuple[dict, set]:
        assert len(rows) == len(order), "a row per tensor pair"
        got = {}
        for key, r in zip(order, rows, strict=True):
            assert int(r["dumptui Position"]) == key[0]
            got[key] = r["dumptui Verdict"]
        return got, {int(r["dumptui Position"]) for r in rows if r["Root"] == "Yes"}

    with open(ms, newline="") as fh:
        seen["msprobe csv"] = msprobe_rows(list(csv.DictReader(fh)))
    openpyxl = pytest.importorskip("openpyxl", reason="the xlsx view needs openpyxl (dumptui[xlsx])")
    sheet = openpyxl.load_workbook(xl, read_only=True).worksheets[0]
    cells = [["" if c is None else str(c) for c in row] for row in sheet.iter_rows(values_only=True)]
    seen["xlsx"] = msprobe_rows([dict(zip(cells[0], row, strict=False)) for row in cells[1:]])

    # bisect's JSON: its roots, and its culprit the first of them
    b = json.loads(bj.read_text())
    b_roots = [r["position"] for r in b["roots"]]
    if b["culprit"] is None:
        assert not b_roots
    else:
        assert b["culprit"]["position"] == min(b_roots), "the culprit is the first root in execution order"
    seen["bisect json"] = (None, set(b_roots))

    # the report names every root by its position (#N) in its roots section
    text = md.read_text()
    seen["report"] = (None, {p for p in seen["compare json"][1] if f"#{p} " in text})  # type: ignore[index]
    return seen


def contradictions(seen: dict[str, object]) -> list[str]:
    ref_verdicts, ref_roots = seen["compare json"]  # type: ignore[misc]
    out = []
    for view, (verdicts, roots) in seen.items():  # type: ignore[misc]
        if roots != ref_roots:
            out.append(f"{view}: roots {sorted(roots)} vs compare's {sorted(ref_roots)}")
        if verdicts is not None:
            differ = [k for k in ref_verdicts if verdicts.get(k) != ref_verdicts[k]]
            if differ:
                k = differ[0]
                out.append(f"{view}: {len(differ)} verdicts differ, e.g. {k}: {verdicts.get(k)} vs {ref_verdicts[k]}")
    return out
