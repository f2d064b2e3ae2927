"""The headless commands end to end on the demo pair: as a process (`python -m dumptui ...`: the JSON and text
of bisect, bad input, --help, the streams) and, where the question is what a command answers, in the test's
process (`run_here`: the same code without a Python start per command)."""

from __future__ import annotations

import csv
import json
import os

import numpy as np
import pytest
from helpers.common import REPO, run_cli, run_here

# the in-process commands of the module share one pool of worker processes
pytestmark = pytest.mark.usefixtures("commands_share_one_pool")


def test_bisect_json_demo(demo_pair):
    rc, out, err = run_cli("bisect", demo_pair.ref, demo_pair.target, "--json")
    assert rc == 1, err
    d = json.loads(out)
    assert d["culprit"]["ref"] == demo_pair.planted == d["culprit"]["target"]
    assert d["roots"][0]["ref"] == demo_pair.planted
    assert d["tensors_read"] == sum(d["reads_by_purpose"].values())
    assert d["culprit"]["outputs"][0]["verdict"] == "diverged"
    assert {i["verdict"] for i in d["culprit"]["inputs"]} <= {"equal", "close"}
    assert d["unpaired"] and all(u["side"] == "target" and u["op_type"] == "Cast" for u in d["unpaired"])
    assert d["exit"] == 1


def test_bisect_text_demo(demo_pair):
    rc, out, err = run_cli("bisect", demo_pair.ref, demo_pair.target)
    assert rc == 1, err
    assert "Culprit:" in out and demo_pair.planted in out
    assert 'why: its definition differs (attribute format: "NCHW" vs "NHWC"), and its output is off by' in out
    assert "Preconditions" in out and "Tensor pairs read" in out


def test_bisect_no_divergence_exit_0(demo_pair):
    rc, out, err = run_here("bisect", demo_pair.ref, demo_pair.ref, "--json")
    assert rc == 0, err
    assert json.loads(out)["culprit"] is None


def test_thresholds_change_the_verdict(demo_pair):
    """Without the replay and with a gain of 0.5, an op of the benign fp16 region (where rounding error grows
    a little) becomes a root: the flags reach the verdict."""
    rc, out, err = run_here("bisect", demo_pair.ref, demo_pair.target, "--json", "--no-replay", "--gain", "0.5")
    assert rc == 1, err
    d = json.loads(out)
    assert d["culprit"]["ref"] != demo_pair.planted
    rc, out, err = run_here("bisect", demo_pair.ref, demo_pair.target, "--json", "--floor", "float16=nonsense")
    assert rc == 2 and "--floor float16=nonsense" in err


def test_ignore_option_hides_the_planted_divergence(demo_pair, tmp_path):
    ign = tmp_path / "ignore.txt"
    ign.write_text("# everything after the fp16 region is known noise here\n*:output.*\n")
    rc, out, err = run_here("bisect", demo_pair.ref, demo_pair.target, "--json", "--ignore-file", ign)
    # every output ignored: nothing judged is no answer (exit 2, issue 36), never "no divergence"
    assert rc == 2 and any("every op's outputs are ignored" in u for u in json.loads(out)["undecided"]), err
    rc, out, err = run_here("compare", demo_pair.ref, demo_pair.target, "--json", "--ignore", "*/Add-op0")
    d = json.loads(out)
    adds = [o for o in d["ops"] if o["ref"] and o["ref"].endswith("/Add-op0")]
    assert adds and all(t["verdict"] == "ignored" for o in adds for t in o["inputs"] + o["outputs"])


def test_compare_table_csv_json(demo_pair, tmp_path):
    rc, out, err = run_here("compare", demo_pair.ref, demo_pair.target, "--only-diverged")
    assert rc == 1, err
    assert "diverged" in out and demo_pair.planted in out
    path = tmp_path / "out.csv"
    rc, _, err = run_here("compare", demo_pair.ref, demo_pair.target, "--csv", path, "--kl", "--csv-profile", "full")
    with open(path) as fh:
        rows = list(csv.DictReader(fh))
    assert {
        "NPU Name",
        "Bench Name",
        "Cosine",
        "MaxAbsErr",
        "MaxRelativeErr",
        "NPU Dtype",
        "Bench Tensor Shape",
        "One Thousandth Err Ratio",
    } <= set(rows[0])
    planted = [r for r in rows if r["Bench Name"] == demo_pair.planted and r["IO"] == "output"]
    assert planted[0]["Verdict"] == "diverged" and "Accuracy Reached or Not" not in planted[0]
    # an independent check of one printed number: the cosine of the planted output
    ref = next(
        f
        for f in os.listdir(os.path.join(demo_pair.ref, "rank_0", "Net", "0", "0"))
        if f.startswith("Add." + demo_pair.planted.replace("/", "_")) and ".output.0." in f
    )
    tgt = next(
        f
        for f in os.listdir(os.path.join(demo_pair.target, "rank_0", "Net", "0", "0"))
        if f.startswith("Add." + demo_pair.planted.replace("/", "_")) and ".output.0." in f
    )
    y = np.load(os.path.join(demo_pair.ref, "rank_0", "Net", "0", "0", ref)).astype(np.float64).ravel()
    x = np.load(os.path.join(demo_pair.target, "rank_0", "Net", "0", "0", tgt)).astype(np.float64).ravel()
    cos = x @ y / np.linalg.norm(x) / np.linalg.norm(y)
    assert abs(float(planted[0]["Cosine"]) - cos) < 1e-12
    assert abs(float(planted[0]["MaxAbsErr"]) - np.abs(x - y).max()) < 1e-12
    p = (y - y.min()) / (y.max() - y.min()) + 1e-12
    q = (x - x.min()) / (x.max() - x.min()) + 1e-12
    p, q = p / p.sum(), q / q.sum()
    assert abs(float(planted[0]["KullbackLeiblerDivergence"]) - float(np.sum(p * np.log(p / q)))) < 1e-9
    rc, out, err = run_here("compare", demo_pair.ref, demo_pair.target, "--json", "--only-diverged")
    d = json.loads(out)
    assert d["ops"] and all(
        o["verdict"] in ("diverged",) or any(t["verdict"] == "diverged" for t in o["inputs"]) for o in d["ops"]
    )


def test_compare_refuses_to_write_inside_a_dump(demo_pair):
    inside = os.path.join(demo_pair.ref, "rank_0", "out.csv")
    rc, out, err = run_here("compare", demo_pair.ref, demo_pair.target, "--csv", inside)
    assert rc == 2 and "refusing to write inside the dump folder" in err
    assert not os.path.exists(inside)


def test_info_and_inspect(demo_pair):
    rc, out, err = run_here("info", demo_pair.target)
    assert rc == 0, err
    assert "mindspore-npy" in out and "58 kernels" in out and "every tensor file is readable" in out
    d = os.path.join(demo_pair.ref, "rank_0", "Net", "0", "0")
    f = sorted(os.listdir(d))[0]
    rc, out, err = run_here("inspect", os.path.join(d, f), "--json")
    assert rc == 0, err
    info = json.loads(out)
    arr = np.load(os.path.join(d, f))
    assert info["shape"] == list(arr.shape) and info["fields"]["op type"] == f.split(".")[0]
    assert abs(info["stats"]["mean"] - float(arr.astype(np.float64).mean())) < 1e-12
    assert info["first_values"] == arr.reshape(-1)[:10].tolist()


def test_inspect_reports_header_payload_mismatch(tmp_path):
    p = tmp_path / "Conv2D.Default_c-op0.0.0.1.output.0.DefaultFormat.Float16.npy"
    with open(p, "wb") as fh:
        np.lib.format.write_array_header_1_0(fh, np.lib.format.header_data_from_array_1_0(np.zeros(4, np.float16)))
        fh.write(np.array([1, 2, 3, 4], np.float32).tobytes())
    rc, out, err = run_here("inspect", p)
    assert rc == 0, err
    assert "damaged" in out and "read as float32" in out and "1, 2, 3, 4" in out


def test_bad_input_exit_2_with_path_and_reason(tmp_path, demo_pair):
    rc, out, err = run_cli("bisect", tmp_path / "nope", demo_pair.target)
    assert rc == 2 and "nope" in err and "no such" in err
    empty = tmp_path / "empty"
    empty.mkdir()
    rc, out, err = run_cli("compare", empty, demo_pair.target)
    assert rc == 2 and "no dump found" in err
    rc, out, err = run_cli("inspect", tmp_path / "missing.npy")
    assert rc == 2 and "missing.npy" in err
    rc, out, err = run_cli("bisect", demo_pair.ref)
    assert rc == 2


def test_demo_command(tmp_path):
    rc, out, err = run_here("demo", tmp_path / "d", "--ops", "30", "--size", "64")
    assert rc == 0, err
    assert "planted divergence" in out
    assert os.path.isdir(tmp_path / "d" / "ref" / "rank_0" / "graphs")


def test_map_file_forces_pairs(demo_pair, tmp_path):
    """Force the fp16 region's Cast to pair with the reference's Conv2D: the pairing says 'map file'."""
    from dumptui.core.formats import open_dump
    from dumptui.core.graph.align import MAPPED, align

    ref, tgt = open_dump(demo_pair.ref), open_dump(demo_pair.target)
    cast = next(op for op in tgt.kernels if op.op_type == "Cast")
    relu = next(op for op in ref.kernels if op.op_type == "ReLU")
    m = tmp_path / "map.csv"
    m.write_text(f"ref_name,target_name\n{relu.name},{cast.name}\n")
    from dumptui.core.graph.align import read_map_file

    al = align(ref, tgt, read_map_file(str(m)))
    p = al.for_ref(relu.key)
    assert p.target is cast and p.how == MAPPED


def test_python_m_dumptui_help():
    rc, out, err = run_cli("--help")
    assert rc == 0 and "bisect" in out
    rc, out, err = run_cli("bisect", "--help")
    assert rc == 0 and "--json" in out and "--cos" in out
    assert (REPO / "dumptui" / "__main__.py").exists()


def test_pair_options_from_the_command_line_per_side():
    """`--ref-rank` wins over `--rank` for its side only; the options keep the command line's names."""
    from dumptui.cli import build_parser
    from dumptui.options.pair import DumpSelection, PairOptions

    args = build_parser(None).parse_args(
        ["r", "t", "--rank", "1", "--ref-rank", "0", "--iteration", "3", "--cos", "0.9", "--ignore", "*Dropout*"]
    )
    options = PairOptions.from_namespace(args)
    assert options.selection("ref") == DumpSelection(rank="0", iteration="3")
    assert options.selection("target") == DumpSelection(rank="1", iteration="3")
    assert (options.cos, options.ignore, options.map) == (0.9, ["*Dropout*"], None)


def test_unreadable_option_file_names_the_file(demo_pair, tmp_path):
    """A --map or --ignore-file that cannot be read: the path and the reason, exit 2."""
    missing = tmp_path / "no-map.csv"
    rc, out, err = run_here("bisect", demo_pair.ref, demo_pair.target, "--map", missing)
    assert rc == 2 and f"{missing}: No such file or directory" in err


def test_bisect_history_numbers_ops_as_everywhere_else(demo_pair):
    """One numbering: a step's `#N` is the op's number in the app, `compare` and the culprit's "position N"
    (its place among all paired ops), not its place in the bisection's own order (kernels paired on both
    sides only: the demo's unpaired Casts shift the two apart)."""
    import re

    from dumptui.options.pair import PairOptions, make_session, open_pair

    rc, out, err = run_here("bisect", demo_pair.ref, demo_pair.target)
    assert rc == 1, err
    options = PairOptions(demo_pair.ref, demo_pair.target)
    pairs = make_session(options, *open_pair(options)).alignment.pairs
    steps = re.findall(r"\[\d+ candidates\] #(\d+) (\S+):", out)
    assert len(steps) >= 3
    for number, name in steps:
        assert pairs[int(number) - 1].name == name, (number, name)
    position = re.search(r"position (\d+) of \d+ in execution order", out)
    assert position and pairs[int(position.group(1)) - 1].name == demo_pair.planted


def test_stdout_discipline(demo_pair, tmp_path):
    """(issue 21.6) --xlsx - is refused (a spreadsheet is binary; no file named '-'); -q with -v is refused,
    not one of them dropped; -v says the alignment in words, not as a Python dict; the app checks its paths
    and refuses a stdout that is no terminal (it would write escape codes into the pipe and wait for keys)."""
    rc, out, err = run_cli("compare", demo_pair.ref, demo_pair.target, "--xlsx", "-", cwd=tmp_path)
    assert rc == 2 and "--xlsx writes a file" in err and not (tmp_path / "-").exists()
    rc, out, err = run_cli("bisect", demo_pair.ref, demo_pair.target, "-q", "-v")
    assert rc == 2 and "-q (only the answer) and -v" in err and not out
    rc, out, err = run_cli("bisect", demo_pair.ref, demo_pair.target, "-v")
    assert rc == 1 and "indexed and aligned in" in err and "{" not in err and " exact name" in err
    rc, out, err = run_cli("/nonexistent", demo_pair.target)
    assert rc == 2 and "/nonexistent: no such file or folder" in err and "\x1b[" not in out
    rc, out, err = run_cli(demo_pair.ref, demo_pair.target)
    assert rc == 2 and "needs a terminal" in err and "dumptui bisect" in err and "\x1b[" not in out


def test_demo_says_how_much_it_writes_and_refuses_what_does_not_fit(tmp_path, monkeypatch, capsys):
    """(issue 21.11) `demo --ops N` says about how much it will write before writing (--ops 20000 is
    gigabytes), within 25 % of what it then writes; a pair larger than the free space is refused, exit 2."""
    import shutil
    from collections import namedtuple

    from dumptui.cli import demo as demo_cmd

    for ops, size in ((60, 4096), (300, 1000)):
        out = tmp_path / f"d{ops}"
        rc, _out, err = run_here("demo", out, "--ops", ops, "--size", size)
        assert rc == 0 and "writing about" in err
        written = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
        assert 0.75 * written <= demo_cmd.estimated_bytes(ops, size) <= 1.25 * written, (ops, size, written)
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda path: usage(10**9, 10**9, 10**6))
    from dumptui.cli.main import main

    assert main(["demo", str(tmp_path / "big"), "--ops", "20000"]) == 2
    assert "needs about" in capsys.readouterr().err and not (tmp_path / "big").exists()
