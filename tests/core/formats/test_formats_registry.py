"""The readers' registry and what every reader shares: one Reader per format, detection by priority, the
choice among several ranks/iterations, and the public dump-folder helpers."""

from __future__ import annotations

import os

import numpy as np
import pytest
from helpers.common import write_npy
from helpers.msdumps import make_dump, small_dump

from dumptui.core.formats import FORMATS, READERS, detect, open_dump
from dumptui.core.formats.files import find_rank_dir, list_dir, numeric_key, read_json_object
from dumptui.core.formats.reader import choose_one
from dumptui.core.formats.survey import survey
from dumptui.core.io.errors import DumpError
from dumptui.core.io.fault import Fault, Flaw
from dumptui.report.reasons import EXPECTED_WORDS, say


def test_formats_are_the_readers_formats():
    assert FORMATS == (
        "mindspore-npy",
        "mindspore-statistic",
        "mindspore-bin",
        "msprobe",
        "msprobe-statistics",
        "cann-raw",
        "npy-folder",
    )
    assert [r.name for r in READERS] == ["mindspore-npy", "mindspore-bin", "msprobe", "cann-raw", "npy-folder"]
    for reader in READERS:
        assert reader.formats[0] == reader.name and EXPECTED_WORDS[reader.name]  # what it expects, in words


def test_detection_asks_the_most_specific_reader_first(tmp_path):
    """A 1.x device folder has graphs/ and execution_order/ beside its iteration folders, which the r1.3+ reader
    takes for a rank folder: the .bin reader, asked first, must win."""
    make_dump(tmp_path / "Net" / "device_0")
    device = str(tmp_path / "Net" / "device_0")
    by_name = {r.name: r for r in READERS}
    assert by_name["mindspore-npy"].looks_like(device) and by_name["mindspore-bin"].looks_like(device)
    assert detect(device) == "mindspore-bin"
    # a dump.json beside .npy files: msprobe, before the catch-all folder of .npy files
    write_npy(tmp_path / "m" / "x.npy", np.ones(2, np.float32))
    (tmp_path / "m" / "dump.json").write_text('{"task": "tensor", "data": {}}')
    assert detect(str(tmp_path / "m")) == "msprobe"


def test_no_dump_message_lists_every_reader(tmp_path):
    with pytest.raises(DumpError) as e:
        detect(str(tmp_path))
    # the readers' names as a code, worded by report/reasons.py (imported: its wording is registered)
    assert e.value.reason == say(Fault(Flaw.NO_DUMP_FOUND, tuple(r.name for r in READERS)))
    assert e.value.reason == (
        "no dump found: expected a MindSpore dump (rank_N/, .npy or statistic.csv files), "
        "a MindSpore 1.x .bin dump, an msprobe dump (dump.json), a CANN / ACL raw dump "
        "({op_type}.{op_name}.{task}.{stream}.{timestamp} files), or a folder of .npy files"
    )


def test_format_given_skips_detection_and_unknown_format_is_refused(tmp_path):
    root = small_dump(str(tmp_path / "a"))
    assert open_dump(root, fmt="mindspore-statistic").format == "mindspore-npy"  # the file listing decides
    with pytest.raises(DumpError, match="unknown format 'bogus'; known: mindspore-npy, "):
        open_dump(root, fmt="bogus")


def test_choose_one():
    found = {"0": "a", "3": "b"}
    assert choose_one("p", found, "3", "rank", "--rank N") == ("3", "b")
    assert choose_one("p", {"7": "x"}, None, "rank", "--rank N") == ("7", "x")
    with pytest.raises(DumpError, match=r"^p: no rank 5; ranks here: 0, 3$"):
        choose_one("p", found, "5", "rank", "--rank N")
    with pytest.raises(DumpError, match=r"^p: 2 ranks \(0, 3\): choose one with --rank N$"):
        choose_one("p", found, None, "rank", "--rank N")


def test_folder_helpers(tmp_path):
    root = small_dump(str(tmp_path / "a"))
    rank = os.path.join(root, "rank_0")
    assert find_rank_dir(os.path.join(rank, "Net", "0", "0")) == (rank, "0", "0")
    assert find_rank_dir(os.path.join(rank, "Net", "0")) == (rank, "0", None)
    assert find_rank_dir(rank) == (rank, None, None)
    assert find_rank_dir(str(tmp_path)) == (None, None, None)
    assert list_dir(str(tmp_path / "missing")) == [] and read_json_object(str(tmp_path / "missing.json")) == {}
    assert sorted(["10", "2", "x", "1"], key=numeric_key) == ["1", "2", "10", "x"]
    assert survey(root) == {"0": {"0": {"0": 6}}}
