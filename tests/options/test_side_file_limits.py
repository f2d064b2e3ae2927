"""Side files written by hand are read within a second or refused at once (issue 36): a --map YAML over 4 MiB
(YAML reads a hundred times slower than CSV: a 64 MiB one took minutes) and a TOML config over 1 MiB are
refused naming the file and the limit, exit 2; the largest YAML allowed is read in about a second (the fuzz
family of tests/fuzz/test_fuzz_side_file_shapes.py bounds the memory)."""

from __future__ import annotations

import time

import pytest
import yaml
from helpers.common import run_here

from dumptui.core.io.limits import MAX_CONFIG_FILE, MAX_YAML_FILE
from dumptui.core.model.dump import Dump
from dumptui.options import config
from dumptui.options.mapfiles import read_pairs

# the commands run in this process (what they answer is the question here, not how a process starts),
# with one pool of worker processes for the module
pytestmark = pytest.mark.usefixtures("commands_share_one_pool")


def _mapping(limit: int) -> str:
    """A data mapping of as many tensor pairs as fit in `limit` bytes."""
    lines, size, i = [], 0, 0
    while True:
        line = f"Functional.conv2d.{i}.forward.input.0: NPU.conv2d.{i}.forward.input.0\n"
        if size + len(line) > limit:
            return "".join(lines)
        lines.append(line)
        size, i = size + len(line), i + 1


def test_a_mapping_yaml_over_the_limit_is_refused_naming_it_and_the_csv(demo_pair, tmp_path):
    big = tmp_path / "pairs.yaml"
    with open(big, "w") as fh:
        fh.write("a.forward.input.0: b.forward.input.0\n")
        fh.truncate(MAX_YAML_FILE + 1)  # sparse: refused by its size before a byte is read
    code, _out, err = run_here("bisect", demo_pair.ref, demo_pair.target, "--map", big, "-q")
    assert code == 2 and str(big) in err and "4 MiB" in err and "as a CSV" in err, err


def test_a_config_over_the_limit_is_refused_naming_it(tmp_path):
    big = tmp_path / "config.toml"
    big.write_text("gain = 10.0\n# " + "x" * MAX_CONFIG_FILE + "\n")
    with pytest.raises(config.ConfigError) as refused:
        config.load(str(big), env={})
    assert refused.value.path == str(big) and "1 MiB" in refused.value.reason


@pytest.mark.skipif(not yaml.__with_libyaml__, reason="PyYAML without libyaml reads ten times slower")
def test_the_largest_mapping_yaml_allowed_is_read_in_about_a_second(tmp_path):
    path = tmp_path / "pairs.yaml"
    path.write_text(_mapping(MAX_YAML_FILE))
    empty = Dump(path="", root="", format="")
    start = time.process_time()  # CPU time: the other processes of a busy machine do not count
    pairs = read_pairs(str(path), empty, empty)
    took = time.process_time() - start
    assert len(pairs) > 50_000
    assert took < 5, took  # about 0.8 s here (libyaml); the pure-Python parser took 12 s, and 3 minutes at 64 MiB


def test_a_yaml_error_is_said_on_one_line(demo_pair, tmp_path):
    """PyYAML's messages span lines; on stderr they were one line with `\\x0a` escapes in it."""
    bad = tmp_path / "pairs.yaml"
    bad.write_text("a: [1, 2\nb: c\n")
    code, _out, err = run_here("bisect", demo_pair.ref, demo_pair.target, "--map", bad, "-q")
    assert code == 2 and "not valid YAML: while parsing a flow sequence; at line 1" in err, err
    assert "\\x0a" not in err and len(err.strip().splitlines()) == 1
