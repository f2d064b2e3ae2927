"""What the readers hand out as codes (core/io/fault.py, the dumps' variants) is worded in report/reasons.py, in
the words the readers used to build themselves: each code here against its sentence, written out."""

from __future__ import annotations

import io

import pytest

from dumptui.core.io import jsonstream
from dumptui.core.io.fault import Fault, Flaw, JsonPart
from dumptui.report.reasons import _FAULT_WORDS, say


def test_every_fault_code_has_words():
    assert set(Flaw) == set(_FAULT_WORDS), set(Flaw) ^ set(_FAULT_WORDS)


@pytest.mark.parametrize(
    ("part", "key", "words"),
    [
        (JsonPart.DOCUMENT, "", "the document at character 7 is larger than 16 MiB"),
        (JsonPart.KEY, "", "a key at character 7 is larger than 16 MiB"),
        (JsonPart.MEMBER, "'task'", "member 'task' at character 7 is larger than 16 MiB"),
        (
            JsonPart.RECORD,
            "'Functional.linear.0'",
            "the record of 'Functional.linear.0' at character 7 is larger than 16 MiB",
        ),
    ],
)
def test_a_record_too_large_is_worded_with_its_part_place_and_limit(part, key, words):
    said = say(Fault(Flaw.RECORD_TOO_LARGE, (part, key, 7, 16 << 20)))
    assert said == words + " (not read: no valid record is that large)"


def test_a_streamed_record_too_large_carries_its_fault_and_says_it():
    text = '{"task": "x", "data": {"a": {"v": "' + "x" * 5000 + '"}}}'
    with pytest.raises(jsonstream.RecordTooLarge) as e:
        list(jsonstream.members(io.BytesIO(text.encode()), "data", 1000))
    assert e.value.fault == Fault(Flaw.RECORD_TOO_LARGE, (JsonPart.RECORD, "'a'", 28, 1000))
    assert (
        str(e.value)
        == "the record of 'a' at character 28 is larger than 1000 B (not read: no valid record is that large)"
    )


@pytest.mark.parametrize(
    ("fault", "words"),
    [
        (
            Fault(Flaw.CACHE_INSIDE_DUMP, ("/d/rank_0/dumptui",)),
            "the cache folder /d/rank_0/dumptui is inside the dump",
        ),
        (Fault(Flaw.DUMP_TOO_RECENT, (2.0,)), "the dump changed less than 2 s ago"),
        (Fault(Flaw.DUMP_TOO_RECENT, (0.5,)), "the dump changed less than 0.5 s ago"),
        (Fault(Flaw.DUMP_NOT_LOOKED_AT), "the dump folder cannot be looked at"),
        (Fault(Flaw.NOT_CACHED, ("OSError", "disk full")), "not cached: OSError: disk full"),
        (Fault(Flaw.NOT_STORED), "not stored in the index cache"),
        (Fault(Flaw.INDEXING_PROCESS_FAILED, ("killed",)), "indexing process failed: killed"),
    ],
)
def test_why_an_index_is_not_cached_is_worded(fault, words):
    assert say(fault) == words


def test_a_cann_data_type_not_decoded_is_worded_by_name_or_by_its_unsettled_number():
    assert say(Fault(Flaw.DTYPE_NOT_DECODED, ("STRING",))) == "data type STRING is not decoded (no numpy type holds it)"
    assert say(Fault(Flaw.DTYPE_NOT_DECODED, (Fault(Flaw.DTYPE_UNSETTLED, (29,)),))) == (
        "data type data type 29 (CANN releases disagree on types 28 and up) is not decoded (no numpy type holds it)"
    )


def test_a_folder_with_no_dump_is_worded_with_what_each_reader_expects():
    assert say(Fault(Flaw.NO_DUMP_FOUND, ("msprobe", "npy-folder"))) == (
        "no dump found: expected an msprobe dump (dump.json), or a folder of .npy files"
    )
    assert say(Fault(Flaw.NO_DUMP_FOUND, ("mindspore-bin", "cann-raw", "mindspore-npy"))) == (
        "no dump found: expected a MindSpore 1.x .bin dump, a CANN / ACL raw dump "
        "({op_type}.{op_name}.{task}.{stream}.{timestamp} files), or a MindSpore dump (rank_N/, .npy or "
        "statistic.csv files)"
    )
