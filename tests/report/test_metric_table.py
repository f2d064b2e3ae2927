"""One metric table (core/compare/metrictable.py): the pair statistics record, the CSV, the JSON schema and the
app's statistics table all follow it."""

from __future__ import annotations

import csv
import io
import json

import numpy as np

from dumptui.core.compare.metrics import compare_arrays
from dumptui.core.compare.metrictable import PAIR_METRICS, SIDE_METRICS, SIDE_VALUES, Kind
from dumptui.core.compare.pairstats import PairStats
from dumptui.present.detail import STATS_COLUMNS, side_stats_cells
from dumptui.report import fmt, schemagen
from dumptui.report.csvout import HEADER


def test_the_schema_file_is_the_one_the_table_makes():
    with open(schemagen.COMMON, encoding="utf-8") as fh:
        current = fh.read()
    assert schemagen.text(schemagen.with_metrics(json.loads(current))) == current, (
        "common.schema.json and core/compare/metrictable.py disagree: run python -m dumptui.report.schemagen"
    )
    stats = json.loads(current)["$defs"]["stats"]["properties"]
    assert [k for k in stats if k not in schemagen.STATS_EXTRA] == [m.name for m in PAIR_METRICS]


def test_a_records_fields_and_json_keys_are_the_tables():
    st = compare_arrays(np.arange(1.0, 7.0), np.arange(1.0, 7.0) * 1.01)
    d = st.to_dict()
    assert [k for k in d if k in {m.name for m in PAIR_METRICS}] == [m.name for m in PAIR_METRICS]
    assert set(d["ref"]) >= {m.name for m in SIDE_METRICS}
    for m in PAIR_METRICS:
        value = getattr(st, m.name)
        if m.kind == Kind.FLAG:
            assert isinstance(value, bool)
        elif m.kind == Kind.COUNT:
            assert isinstance(value, int)


def test_every_metric_with_a_column_is_in_the_csv_with_its_number():
    from dumptui.report.csvout import _METRIC_COLS

    for m in PAIR_METRICS:
        if m.column:
            assert m.column in HEADER, m
    for m in SIDE_METRICS:
        if m.column:
            assert f"NPU {m.column}" in HEADER and f"Bench {m.column}" in HEADER, m
    assert {name for _col, name in _METRIC_COLS} >= {"cos", "max_abs", "rmse", "kl", "n", "n_diff"}
    assert len(set(HEADER)) == len(HEADER)


def test_the_apps_statistics_columns_follow_the_table():
    headings = [label for label, _p, _right in STATS_COLUMNS]
    assert headings == ["", "shape dtype", *[m.heading for m in SIDE_VALUES], "nan/inf"]
    st = compare_arrays(np.array([1.0, -2.0, 4.0]), np.array([1.0, -2.0, 4.5]))
    cells = side_stats_cells(st.target)
    x = np.array([1.0, -2.0, 4.5])
    expected = [x.min(), x.max(), x.mean(), x.std(), np.sqrt((x * x).sum())]
    assert cells[:-1] == [fmt.g(float(v)) for v in expected]  # numpy's numbers, as the app prints numbers
    assert side_stats_cells(None) == ["-"] * (len(SIDE_VALUES) + 1)


def test_the_csv_row_of_a_pair_holds_the_records_numbers(tmp_path):
    from dumptui.report.csvout import _v

    st: PairStats = compare_arrays(np.linspace(-1, 1, 50), np.linspace(-1, 1, 50) + 1e-3)
    for m in PAIR_METRICS:
        if m.kind == Kind.VALUE:
            v = getattr(st, m.name)
            text = _v(v)
            assert text == "" if v is None else float(text) == v
    rows = list(csv.reader(io.StringIO(",".join(HEADER))))
    assert rows[0] == HEADER


def test_every_metric_has_its_meaning_in_words():
    assert set(schemagen.METRIC_MEANINGS) == {m.name for m in (*PAIR_METRICS, *SIDE_METRICS)}
