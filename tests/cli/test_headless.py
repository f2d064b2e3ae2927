"""Headless output that scripts can trust: no hard wrap in pipes, `-` for stdout, versioned JSON that
validates against the schemas kept in the repo (errors too), one numbering, one exit-code rule, -q/-v.

What is about the process (a pipe's width, stdout and stderr as streams, progress on a terminal, bash running
the completion script) runs `dumptui` as a process of its own; what is about the documents' content runs it
in this process (`main`), the command's code the same, without a Python start and imports per command."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from helpers.common import REPO, run_cli, write_npy
from helpers.damage import run_main as main
from helpers.schemas import validator as _validator

from dumptui.report.jsonout import SCHEMA_VERSION

# many commands run in this process: one pool of worker processes for the module, not one per command
pytestmark = pytest.mark.usefixtures("commands_share_one_pool")

LONG = "Default/" + "/".join(f"very-long-scope-{i:02d}-Block" for i in range(9)) + "/Add-op0"


@pytest.fixture(scope="module")
def long_name_pair(tmp_path_factory):
    """A folder-of-npy pair whose one tensor name is over 200 characters, and differs."""
    root = tmp_path_factory.mktemp("long")
    fname = LONG.replace("/", "_") + ".npy"
    assert len(LONG) > 200
    rng = np.random.default_rng(0)
    x = rng.standard_normal(64).astype(np.float32)
    write_npy(root / "ref" / fname, x)
    write_npy(root / "target" / fname, x + 0.5)
    return root / "ref", root / "target", fname[:-4]


def _unbroken(name: str, out: str) -> bool:
    return any(name in line for line in out.splitlines())


def test_piped_output_never_breaks_a_long_name(long_name_pair, demo_pair):
    ref, target, name = long_name_pair
    env_cols = {"COLUMNS": "80"}  # what a pipe would get from rich's default
    for cmd in ("bisect", "compare"):
        rc, out, err = _run(env_cols, cmd, ref, target)
        assert rc == 1, err
        assert _unbroken(name, out), out
    rc, out, err = _run(env_cols, "compare", demo_pair.ref, demo_pair.target)
    planted_line = [line for line in out.splitlines() if demo_pair.planted in line]
    assert planted_line and all(len(line) > 0 for line in planted_line)
    rc, out, err = _run(env_cols, "bisect", demo_pair.ref, demo_pair.target)
    sentences = [line for line in out.splitlines() if line.startswith("  local error: output")]
    assert sentences and "(absolute" in sentences[0]  # a long sentence stays on its line


def _run(extra_env, *args):
    import subprocess
    import sys

    env = dict(os.environ, PYTHONPATH=str(REPO), XDG_CONFIG_HOME=str(REPO / "tests" / "no-config-here"), **extra_env)
    env.pop("DUMPTUI_CONFIG", None)
    p = subprocess.run([sys.executable, "-m", "dumptui", *map(str, args)], capture_output=True, text=True, env=env)
    return p.returncode, p.stdout, p.stderr


def test_json_to_stdout_is_versioned_and_valid(demo_pair):
    for command in ("bisect", "compare"):
        rc, out, err = main(command, demo_pair.ref, demo_pair.target, "--json", "-")
        assert rc == 1, err
        doc = json.loads(out)
        assert doc["schema_version"] == SCHEMA_VERSION and doc["command"] == command and doc["exit"] == 1
        _validator(command).validate(doc)
    rc, out, err = main("bisect", demo_pair.ref, demo_pair.ref, "--json")
    assert rc == 0 and json.loads(out)["culprit"] is None
    _validator("bisect").validate(json.loads(out))
    rc, out, err = main("bisect", "--json", demo_pair.ref, demo_pair.target)  # --json before the dumps
    assert rc == 1 and json.loads(out)["culprit"]["ref"] == demo_pair.planted


def test_json_errors_are_json_with_the_exit_code(tmp_path, demo_pair):
    missing = tmp_path / "nope"
    rc, out, err = main("bisect", demo_pair.ref, missing, "--json")
    assert rc == 2 and str(missing) in err
    doc = json.loads(out)
    _validator("error").validate(doc)
    assert doc["exit"] == 2 and doc["error"]["path"] == str(missing) and doc["error"]["reason"]
    rc, out, err = main("compare", "--json", "-", demo_pair.ref)  # usage error: a missing argument
    assert rc == 2
    doc = json.loads(out)
    _validator("error").validate(doc)
    assert "target" in doc["error"]["reason"]


def test_schema_rejects_what_it_should(demo_pair):
    """The schema is not a rubber stamp: a word in a number field, or a 0-based position, fails it."""
    jsonschema = pytest.importorskip("jsonschema")
    rc, out, _err = main("bisect", demo_pair.ref, demo_pair.target, "--json")
    doc = json.loads(out)
    v = _validator("bisect")
    bad = json.loads(out)
    bad["roots"][0]["local_error"]["gain"] = "inf"
    with pytest.raises(jsonschema.ValidationError):
        v.validate(bad)
    bad = json.loads(out)
    bad["steps"][0]["position"] = 0
    with pytest.raises(jsonschema.ValidationError):
        v.validate(bad)
    v.validate(doc)


def test_one_numbering_text_and_json(demo_pair):
    """Positions are 1-based everywhere: the culprit's `#N` in the text is its JSON `position`."""
    rc, out, _ = main("bisect", demo_pair.ref, demo_pair.target, "-q")
    assert rc == 1
    text_pos = int(out.split("#", 1)[1].split()[0])
    rc, out, _ = main("bisect", demo_pair.ref, demo_pair.target, "--json")
    d = json.loads(out)
    assert d["culprit"]["position"] == text_pos == d["roots"][0]["position"]
    step_line_positions = [s["position"] for s in d["steps"]]
    rc, out, _ = main("bisect", demo_pair.ref, demo_pair.target)
    for pos in step_line_positions:
        assert f"#{pos} " in out
    rc, out, _ = main("compare", demo_pair.ref, demo_pair.target, "--json")
    ops = json.loads(out)["ops"]
    assert [o["position"] for o in ops][:3] == [1, 2, 3]
    assert next(o for o in ops if o["ref"] == demo_pair.planted)["position"] == text_pos


@pytest.mark.parametrize(
    "which",
    ["demo", "demo-vs-itself", "A_rerun", "B_mod", "B_pad", "C_fp16", "C_wround"],
)
def test_compare_and_bisect_agree_on_exit_codes(which, demo_pair, request):
    """Both exit 1 exactly when a root of divergence is found (compare's roots, bisect's culprit)."""
    if which.startswith("demo"):
        ref, target = demo_pair.ref, demo_pair.ref if which == "demo-vs-itself" else demo_pair.target
    else:
        dumps = request.getfixturevalue("fixtures")
        ref, target = dumps / "A", dumps / which
    rc_b, out_b, err = main("bisect", ref, target, "--json")
    rc_c, out_c, err2 = main("compare", ref, target, "--json")
    assert rc_b in (0, 1) and rc_c in (0, 1), err + err2
    assert rc_b == rc_c
    b, c = json.loads(out_b), json.loads(out_c)
    assert (b["culprit"] is not None) == bool(c["roots"]) == (rc_c == 1)
    if b["culprit"] is not None:
        assert b["culprit"]["position"] == c["roots"][0]["position"]


def test_dash_means_stdout_for_csv(demo_pair, tmp_path):
    rc, out, err = run_cli("compare", demo_pair.ref, demo_pair.target, "--csv", "-", cwd=tmp_path)
    assert rc == 1, err
    assert out.startswith("NPU Name,Bench Name,") and not (tmp_path / "-").exists()
    assert "wrote" in err
    rc, out, err = run_cli("compare", demo_pair.ref, demo_pair.target, "--csv", "-", "--json", "-")
    assert rc == 2 and "both want stdout" in err
    rc, out, err = run_cli("compare", demo_pair.ref, demo_pair.target, "--json", tmp_path / "c.json")
    assert rc == 1 and "Roots of divergence" in out  # the text still goes to stdout
    assert json.loads((tmp_path / "c.json").read_text())["exit"] == 1


def test_numbers_are_numbers_in_the_full_csv(demo_pair, tmp_path):
    import csv

    path = tmp_path / "full.csv"
    rc, _out, err = main("compare", demo_pair.ref, demo_pair.target, "--csv", path, "--csv-profile", "full")
    assert rc == 1, err
    with open(path) as fh:
        rows = list(csv.DictReader(fh))
    numeric = ["Cosine", "MaxAbsErr", "RMSE", "RelEucDist", "MaxRelativeErr", "KullbackLeiblerDivergence", "NPU max"]
    for r in rows:
        for col in numeric:
            if r[col] != "":
                float(r[col])  # a number, or empty (the reason is in Err_message)
    assert any(r["KullbackLeiblerDivergence"] == "" and "--kl" in r["Err_message"] for r in rows)


def test_quiet_and_verbose(demo_pair):
    rc, out, err = run_cli("compare", demo_pair.ref, demo_pair.target, "-q")
    assert rc == 1 and len(out.strip().splitlines()) == 1 and demo_pair.planted in out and err == ""
    rc, out, err = run_cli("bisect", demo_pair.ref, demo_pair.ref, "-q")
    assert rc == 0 and out.strip() == "no root of divergence"
    rc, out, err = run_cli("bisect", demo_pair.ref, demo_pair.target, "-v")
    assert rc == 1 and "indexed and aligned in" in err and "bisected in" in err and "Culprit:" in out


def test_progress_only_on_a_terminal(demo_pair, tmp_path):
    """Piped stderr gets no progress bar (no carriage returns, no escape codes)."""
    rc, out, err = run_cli("compare", demo_pair.ref, demo_pair.target, "-q")
    assert "\r" not in err and "\x1b" not in err
    rc, out, err = run_cli("demo", tmp_path / "d", "--ops", "30")
    assert rc == 0 and "\x1b" not in err and "\x1b" not in out


def test_completion_scripts():
    pytest.importorskip("shtab")
    for shell in ("bash", "zsh"):
        rc, out, err = main("completion", shell)
        assert rc == 0, err
        for word in ("bisect", "compare", "open-result", "--csv-profile", "--no-replay"):
            assert word in out, (shell, word)
    rc, out, err = main("completion", "powershell")  # a shell it has no script for: refused, exit 2
    assert rc == 2


def test_bash_completes_subcommands_dump_folders_and_files(tmp_path):
    """The completion script run by bash itself: the first word completes to a subcommand, a dump argument
    to folders only, a file argument to files, options to option names."""
    import shutil
    import subprocess

    if shutil.which("bash") is None:
        pytest.skip("no bash on this machine")
    rc, script, err = run_cli("completion", "bash")
    assert rc == 0, err
    (tmp_path / "dumpA").mkdir()
    (tmp_path / "dumpB").mkdir()
    (tmp_path / "dump.npy").write_bytes(b"")
    (tmp_path / "comp.bash").write_text(script)
    probe = (
        "source comp.bash\n"
        't() { COMP_WORDS=("$@"); COMP_CWORD=$(($#-1)); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}; COMPREPLY=();\n'
        '  _shtab_dumptui dumptui "${@: -1}" "${@: -2:1}"; echo "$*|$(printf "%s\\n" "${COMPREPLY[@]}" | sort | xargs)"; }\n'
        "t dumptui bi\nt dumptui bisect du\nt dumptui bisect dumpA du\nt dumptui inspect du\nt dumptui info du\n"
        "t dumptui compare --onl\n"
    )
    out = subprocess.run(["bash", "--norc", "-c", probe], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    got = dict(line.split("|", 1) for line in out.stdout.splitlines())
    assert got["dumptui bi"] == "bisect"
    assert got["dumptui bisect du"] == "dumpA dumpB"  # folders only: never dump.npy
    assert got["dumptui bisect dumpA du"] == "dumpA dumpB"
    assert got["dumptui inspect du"] == "dump.npy dumpA dumpB"  # a file (folders to walk into)
    assert got["dumptui info du"] == "dumpA dumpB"
    assert got["dumptui compare --onl"] == "--only-diverged"
