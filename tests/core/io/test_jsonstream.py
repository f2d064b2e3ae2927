"""dump.json read a call at a time (core/io/jsonstream.py): the same values as json.loads, in the same order,
whatever the buffer boundaries; a call larger than the limit refused with the path, the limit and what to do."""

from __future__ import annotations

import io
import json

import pytest
from helpers.msprobe_write import record

from dumptui.cli.main import main as cli_main
from dumptui.core.formats import open_dump
from dumptui.core.io import jsonstream, limits
from dumptui.core.io.errors import DumpError


def _streamed(text: str, limit: int = 1 << 20) -> tuple[dict, dict]:
    fields, entries = {}, {}
    for kind, key, value in jsonstream.members(io.BytesIO(text.encode()), "data", limit):
        (entries if kind == "entry" else fields)[key] = value
    return fields, entries


@pytest.mark.parametrize("chunk", [1, 3, 7, 64, 1 << 20])
def test_streamed_members_equal_json_loads_at_any_buffer_boundary(monkeypatch, chunk):
    monkeypatch.setattr(jsonstream, "_CHUNK", chunk)
    doc = {
        "task": "statistics",
        "level": [1, {"a": None}],
        "data": {
            f"Functional.f{i}.{i}.forward": {"input_args": [record(i + 0.5), {"type": "int", "value": 12345 + i}]}
            for i in range(40)
        }
        | {"ünï\u202e": {"x": '\\"é\u0000'}, "n": 1e300, "t": True},
        "framework": 123456789,
    }
    for text in (json.dumps(doc), json.dumps(doc, indent=1), "\ufeff" + json.dumps(doc, indent=3)):
        fields, entries = _streamed(text)
        assert entries == doc["data"] and list(entries) == list(doc["data"])
        assert fields == {k: v for k, v in doc.items() if k != "data"}


@pytest.mark.parametrize(
    "text",
    ['{"data": {"a": 1,}}', '{"data": {"a": 1} "b": 2}', '{"data": {"a": 1}} x', '{"data": {"a": [1, 2}}', "{", ""],
)
def test_invalid_json_is_a_bad_value_not_an_endless_read(text):
    with pytest.raises(limits.BadValue):
        _streamed(text)


def test_a_document_that_is_no_object_is_named():
    assert list(jsonstream.members(io.BytesIO(b" [1, 2] "), "data")) == [("document", "", [1, 2])]


def test_a_call_larger_than_the_limit_is_refused_without_reading_on():
    text = '{"data": {"a": {"v": "' + "x" * 5000 + '"}, "b": {}}}'
    with pytest.raises(jsonstream.RecordTooLarge, match="larger than"):
        _streamed(text, limit=1000)


def test_nesting_beyond_the_limit_is_refused():
    deep = "[" * (limits.MAX_JSON_DEPTH + 5) + "]" * (limits.MAX_JSON_DEPTH + 5)
    with pytest.raises(limits.BadValue, match="nested deeper"):
        _streamed('{"data": {"a": ' + deep + "}}")


def _msprobe_dump(tmp_path, value_bytes: int) -> str:
    d = tmp_path / "dump" / "step0" / "rank0"
    d.mkdir(parents=True)
    big = {"input_args": [record(1.0), {"type": "str", "value": "x" * value_bytes}], "output": [record(2.0)]}
    doc = {"task": "statistics", "data": {"Functional.linear.0.forward": big}}
    (d / "dump.json").write_text(json.dumps(doc))
    return str(tmp_path / "dump")


def test_an_absurd_call_in_dump_json_is_exit_2_with_the_path_the_limit_and_what_to_do(tmp_path, monkeypatch, capsys):
    # the same knob the reader uses, made small: the 1 GB line of the issue, at 64 KiB
    monkeypatch.setattr(limits, "MAX_JSON_RECORD", 1 << 16)
    dump = _msprobe_dump(tmp_path, 200_000)
    with pytest.raises(DumpError) as e:
        open_dump(dump)
    assert e.value.path.endswith("dump.json") and "larger than 0 MiB" not in e.value.reason
    assert cli_main(["info", dump]) == 2
    err = capsys.readouterr().err
    assert "dump.json" in err and "larger than" in err and "msprobe writes a few KB per call" in err
    assert open_dump(_msprobe_dump(tmp_path / "small", 1000)).ops  # below the limit: read
