"""The metric parts of the JSON schema (`stats` and `side_stats` in schemas/common.schema.json) from the one
metric table (core/compare/metrictable.py): `python -m dumptui.report.schemagen` rewrites them in place after a
metric changes; a test fails while the file and the table disagree."""

from __future__ import annotations

import json
import os
import sys

from dumptui.core.compare.metrictable import PAIR_METRICS, SIDE_METRICS, Kind, Metric

COMMON = os.path.join(os.path.dirname(__file__), "schemas", "common.schema.json")
STATS_EXTRA = ("ref", "target", "undefined", "notes")  # a pair's record beside its metrics

# what each metric means, for the JSON schema and the docs (the metric table itself holds no words)
METRIC_MEANINGS: dict[str, str] = {
    "n": "elements in the pair",
    "bitwise_equal": "both tensors hold the same bytes",
    "values_equal": "the same values (NaN where NaN), though the bytes may differ (-0.0, NaN payloads)",
    "compared": "elements finite on both sides, which the error metrics use",
    "nonfinite_mismatch": "elements NaN or infinite on one side only, or a different one",
    "n_diff": "elements that differ",
    "n_off": "elements off by more than the element tolerance, plus the non-finite mismatches",
    "cos": "cosine similarity of the two tensors (float64)",
    "max_abs": "largest |target - ref|",
    "max_abs_index": "where the largest |target - ref| is",
    "max_abs_ref": "largest |ref|",
    "max_abs_target": "largest |target|",
    "mean_abs": "mean |target - ref|",
    "mean_abs_trimmed": "mean |target - ref| without the largest 1 % (the verdict's error)",
    "rms_ref": "root mean square of the reference",
    "rmse": "root mean square of target - ref",
    "rel_euclid": "||target - ref|| / ||ref|| (msprobe's EucDist is the absolute one)",
    "max_rel": "largest |target - ref| / |ref| over the elements with |ref| > eps",
    "mean_rel": "mean |target - ref| / |ref| over the elements with |ref| > eps",
    "acc_rel": "sum of |target - ref| / |ref| over the elements with |ref| > eps",
    "thousandth": "share of elements with |target - ref| <= 0.001 max(|ref|, eps)",
    "five_thousandths": "share of elements with |target - ref| <= 0.005 max(|ref|, eps)",
    "kl": "Kullback-Leibler divergence of the min-max- and sum-normalised tensors (P ref, Q target)",
    "count": "elements",
    "finite": "finite elements",
    "nan": "NaN elements",
    "pos_inf": "+Inf elements",
    "neg_inf": "-Inf elements",
    "zeros": "elements equal to 0",
    "min": "smallest finite value",
    "max": "largest finite value",
    "mean": "mean of the finite values",
    "std": "standard deviation of the finite values",
    "l2": "L2 norm of the finite values",
}


def _property(m: Metric, side: bool = False) -> dict:
    if m.kind == Kind.FLAG:
        prop: dict = {"type": "boolean"}
    elif m.kind == Kind.INDEX:
        prop = {"type": ["array", "null"], "items": {"type": "integer"}}
    else:
        prop = {"$ref": "#/$defs/number"}
    words = [METRIC_MEANINGS[m.name]]
    if m.column:
        words.append(f"CSV columns 'NPU {m.column}', 'Bench {m.column}'" if side else f"CSV column {m.column!r}")
    if m.msprobe:
        words.append(f"msprobe's {m.msprobe!r}")
    prop["description"] = "; ".join(words)
    return prop


def with_metrics(schema: dict) -> dict:
    """`schema` (common.schema.json) with its metric properties made from the table."""
    defs = schema["$defs"]
    defs["side_stats"]["properties"] = {m.name: _property(m, side=True) for m in SIDE_METRICS}
    old = defs["stats"]["properties"]
    defs["stats"]["properties"] = {
        **{m.name: _property(m) for m in PAIR_METRICS},
        **{k: old[k] for k in STATS_EXTRA},
    }
    return schema


def text(schema: dict) -> str:
    return json.dumps(schema, indent=1, ensure_ascii=False) + "\n"


def main() -> int:
    with open(COMMON, encoding="utf-8") as fh:
        current = fh.read()
    new = text(with_metrics(json.loads(current)))
    if new != current:
        with open(COMMON, "w", encoding="utf-8") as fh:
            fh.write(new)
        print(f"rewrote {COMMON}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
