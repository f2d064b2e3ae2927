"""What the readers hand out as codes (core/io/fault.py, the dumps' variants) is worded in report/reasons.py, in
the words the readers used to build themselves: each code here against its sentence, written out."""

from __future__ import annotations

import io
import os

import pytest

from dumptui.core.formats.cann_file import RawLayout, RawNameStyle
from dumptui.core.formats.mindspore import DtypeSuffix
from dumptui.core.formats.statistic_csv import StatisticHeader
from dumptui.core.io import jsonstream
from dumptui.core.io.fault import Fault, Flaw, JsonPart
from dumptui.core.model.reason import Why, because
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
        "data type 29 (CANN releases disagree on types 28 and up) is not decoded (no numpy type holds it)"
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


# how each reader's variant code was worded when the readers built the words themselves
VARIANTS = [
    (
        because(Why.MINDSPORE_NPY_VARIANT, False, DtypeSuffix.WITH),
        "full scope names in file names, with .{dtype} suffix",
    ),
    (
        because(Why.MINDSPORE_NPY_VARIANT, True, DtypeSuffix.WITHOUT),
        "short op names in file names (r1.3-2.3 style), without .{dtype} suffix",
    ),
    (
        because(Why.MINDSPORE_NPY_VARIANT, False, DtypeSuffix.MIXED),
        "full scope names in file names, mixed .{dtype} suffix",
    ),
    (because(Why.STATISTIC_CSV_VARIANT, StatisticHeader.V16_22), "statistic.csv only (1.6-2.2)"),
    (because(Why.STATISTIC_CSV_VARIANT, StatisticHeader.L2_MD5), "statistic.csv only (1.6+ with L2 Value/MD5)"),
    (
        because(Why.STATISTIC_CSV_VARIANT, StatisticHeader.CONFIGURABLE),
        "statistic.csv only (2.4+ configurable statistic_category)",
    ),
    (because(Why.STATISTIC_CSV_VARIANT, StatisticHeader.EMPTY), "statistic.csv only (empty)"),
    (
        because(Why.MINDSPORE_BIN_VARIANT, False),
        "MindSpore 1.x synchronous dump (raw .bin files, dtype and shape in the file names)",
    ),
    (
        because(Why.MINDSPORE_BIN_VARIANT, True),
        "MindSpore 1.x synchronous dump (raw .bin files, dtype and shape in the file names), no device_{id} level (CPU)",
    ),
    (because(Why.MSPROBE_VARIANT, "tensor", "L1", "pytorch"), "msprobe task tensor, level L1, framework pytorch"),
    (because(Why.NPY_FOLDER_VARIANT), "one tensor per .npy file, op names from file names"),
    (
        because(Why.CANN_RAW_VARIANT, "acl", (RawNameStyle.CURRENT,), (RawLayout.LENGTH_PREFIXED,), None, 0),
        "CANN raw dump files, ACL dump tree; names: current; layout: length-prefixed header",
    ),
    (
        because(
            Why.CANN_RAW_VARIANT,
            "folder",
            (RawNameStyle.CURRENT, RawNameStyle.FFTS, RawNameStyle.NO_STREAM),
            (RawLayout.LENGTH_PREFIXED, RawLayout.WHOLE_FILE),
            None,
            3,
        ),
        "CANN raw dump files, a folder of raw files; names: FFTS+, current, no stream id (old CANN); "
        "layout: length-prefixed header, whole-file DumpData",
    ),
    (
        because(Why.CANN_RAW_VARIANT, "mindspore", (RawNameStyle.CURRENT,), (RawLayout.WHOLE_FILE,), "ge_graph.txt", 0),
        "CANN raw dump files, MindSpore async dump (rank tree); names: current; layout: whole-file DumpData; "
        "GE graph ge_graph.txt",
    ),
    (
        because(Why.CANN_RAW_VARIANT, "acl", (RawNameStyle.CURRENT,), (RawLayout.LENGTH_PREFIXED,), "g.pbtxt", 4),
        "CANN raw dump files, ACL dump tree; names: current; layout: length-prefixed header; GE graph g.pbtxt, "
        "4 fused ops",
    ),
]


@pytest.mark.parametrize(("variant", "words"), VARIANTS)
def test_a_dumps_variant_is_worded_as_the_readers_worded_it(variant, words):
    assert say(variant) == words


def test_every_variant_code_is_worded():
    codes = {v.code for v, _words in VARIANTS}
    assert codes == {w for w in Why if w.value.endswith("-variant")}
    assert {v.args[0] for v, _w in VARIANTS if v.code is Why.STATISTIC_CSV_VARIANT} == set(StatisticHeader)


def test_a_dumps_variant_survives_the_index_cache():
    """Its codes are allowed by the cache's restricted unpickler (else every cached dump is a miss)."""
    import pickle

    from dumptui.core.index import restricted

    for variant, words in VARIANTS:
        again = restricted.loads(pickle.dumps(variant, protocol=pickle.HIGHEST_PROTOCOL))
        assert again == variant and say(again) == words


def test_inspect_names_a_raw_files_layout(tmp_path):
    from helpers.cann_encode import RawOp, Tensor, step_folder, values, write

    from dumptui.report.fileinfo import inspect_file

    x = values((4,), "float32")
    folder = step_folder(tmp_path)
    current = write(folder, RawOp("Relu", "Default_Relu-op0", [Tensor(x)], [Tensor(x)], timestamp=1))
    whole = write(folder, RawOp("Add", "Default_Add-op1", [Tensor(x)], [Tensor(x)], timestamp=2), "whole")
    damaged = os.path.join(folder, "Mul.Default_Mul-op2.1.0.3")
    with open(damaged, "wb") as fh:
        fh.write(b"\xff" * 5)
    assert inspect_file(current).kind == "CANN raw dump file (length-prefixed header)"
    assert inspect_file(whole).kind == "CANN raw dump file (whole-file DumpData)"
    assert inspect_file(damaged).kind == "CANN raw dump file (unreadable)"
