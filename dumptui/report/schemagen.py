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


def _property(m: Metric, side: bool = False) -> dict:
    if m.kind == Kind.FLAG:
        prop: dict = {"type": "boolean"}
    elif m.kind == Kind.INDEX:
        prop = {"type": ["array", "null"], "items": {"type": "integer"}}
    else:
        prop = {"$ref": "#/$defs/number"}
    words = [m.meaning]
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
