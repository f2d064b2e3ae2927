"""Every side input dumptui reads or writes, tried as what it must never wait on or swallow (issue 23.2-23.3):
a FIFO nobody writes (or reads), a link to /dev/zero, a loop of symlinks, a huge file, YAML nested beyond any
mapping; and output to /dev/full. Each answers at once with exit 2 and a message naming the path; nothing is
read into memory beyond the side-file limit (the subprocess's memory is capped well below what /dev/zero
would take). Also: 100k ignore patterns are matched as a plain loop would, by the fast matcher."""

from __future__ import annotations

import os
import random
import resource
import subprocess
import sys

import pytest
from helpers.common import REPO

from dumptui.core.compare.verdict import IgnoreMatcher, ignore_reason, parse_user_ignore
from dumptui.core.demo.residual import write_demo
from dumptui.core.io.limits import MAX_OPTION_FILE

MEMORY_CAP = 1 << 30  # address space of the dumptui process: /dev/zero read whole would pass it in a second


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    d = write_demo(str(tmp_path_factory.mktemp("demo")))
    return d.ref, d.target


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    root = tmp_path_factory.mktemp("side")
    os.mkfifo(root / "fifo")
    os.mkfifo(root / "fifo.yaml")
    os.symlink("/dev/zero", root / "zero")
    os.symlink("/dev/zero", root / "zero.yaml")
    os.symlink(root / "loop_b", root / "loop_a")
    os.symlink(root / "loop_a", root / "loop_b")
    with open(root / "huge.csv", "wb") as fh:  # sparse: no disk used
        fh.truncate(MAX_OPTION_FILE + 1)
    (root / "deep.yaml").write_text("[" * 50_000 + "]" * 50_000)
    return root


def _cap_memory():
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


def run(*args, env_extra=None):
    env = dict(os.environ, PYTHONPATH=str(REPO), COLUMNS="200", XDG_CONFIG_HOME=str(REPO / "tests" / "no-config-here"))
    env.pop("DUMPTUI_CONFIG", None)
    env.update(env_extra or {})
    p = subprocess.run(
        [sys.executable, "-m", "dumptui", *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,  # a safety net only: a hang would otherwise stall the suite
        preexec_fn=_cap_memory,
    )
    return p.returncode, p.stdout, p.stderr


SIDE_INPUTS = ["--map", "--ignore-file", "DUMPTUI_CONFIG"]
BAD_FILES = ["fifo", "zero", "loop_a", "huge.csv", "fifo.yaml", "zero.yaml", "deep.yaml"]


@pytest.mark.parametrize("bad", BAD_FILES)
@pytest.mark.parametrize("where", SIDE_INPUTS)
def test_a_side_input_that_is_no_regular_file_is_refused_at_once(pair, hostile, where, bad):
    path = hostile / bad
    if where == "DUMPTUI_CONFIG":
        code, out, err = run("bisect", *pair, env_extra={"DUMPTUI_CONFIG": str(path)})
    else:
        code, out, err = run("bisect", *pair, where, path)
    if where == "--ignore-file" and bad == "deep.yaml":
        # one line of brackets is one (odd) glob, not nesting: a valid ignore file that matches nothing
        assert code == 1 and "Culprit" in out, err
        return
    assert code == 2, (code, err)
    assert str(path) in err and "Traceback" not in err
    assert "culprit" not in out


@pytest.mark.parametrize("bad", ["fifo", "zero", "loop_a", "huge.csv"])
@pytest.mark.parametrize("key", ["ignore_file", "map"])
def test_a_side_file_the_config_names_that_is_no_regular_file_is_refused_at_once(pair, hostile, tmp_path, key, bad):
    """The config file's own paths (`ignore_file`, `map`) go through the same check as the flags."""
    path = hostile / bad
    config = tmp_path / "config.toml"
    config.write_text(f"{key} = {str(path)!r}\n")
    code, out, err = run("bisect", *pair, env_extra={"DUMPTUI_CONFIG": str(config)})
    assert code == 2, (code, err)
    assert str(path) in err and "Traceback" not in err
    assert "culprit" not in out


@pytest.mark.parametrize("bad", ["fifo", "loop_a"])
@pytest.mark.parametrize("where", ["--json", "--csv"])
def test_an_output_nobody_reads_is_refused_at_once(pair, hostile, where, bad):
    command = "compare" if where == "--csv" else "bisect"
    code, out, err = run(command, *pair, where, hostile / bad)
    assert code == 2 and str(hostile / bad) in (err + out), (code, err)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full on this system")
@pytest.mark.parametrize("where", ["--json", "--csv"])
def test_a_full_device_is_an_error_naming_it(pair, where):
    command = "compare" if where == "--csv" else "bisect"
    code, out, err = run(command, *pair, where, "/dev/full")
    assert code == 2 and "/dev/full" in (err + out) and "No space left" in (err + out)


openpyxl_missing = pytest.mark.skipif(
    __import__("importlib").util.find_spec("openpyxl") is None, reason="--xlsx needs the xlsx extra (openpyxl)"
)


@openpyxl_missing
@pytest.mark.parametrize("bad", ["fifo", "loop_a"])
def test_an_xlsx_nobody_reads_is_refused_at_once(pair, hostile, bad):
    code, out, err = run("compare", *pair, "--xlsx", hostile / bad)
    assert code == 2 and str(hostile / bad) in err and "Traceback" not in err, (code, err)


@openpyxl_missing
@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full on this system")
def test_an_xlsx_on_a_full_device_is_exit_2_naming_it(pair):
    code, out, err = run("compare", *pair, "--xlsx", "/dev/full")
    assert code == 2 and "/dev/full" in err and "No space left" in err, (code, err)
    assert "Exception ignored" not in err and "Traceback" not in err


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full on this system")
@pytest.mark.parametrize("command", [["bisect"], ["bisect", "--json", "-"], ["compare", "--csv", "-"], ["info"]])
def test_standard_output_on_a_full_device_is_exit_2_naming_it(pair, command):
    dumps = pair if command[0] != "info" else pair[:1]
    env = dict(os.environ, PYTHONPATH=str(REPO), XDG_CONFIG_HOME=str(REPO / "tests" / "no-config-here"))
    env.pop("DUMPTUI_CONFIG", None)
    with open("/dev/full", "w") as full:
        p = subprocess.run(
            [sys.executable, "-m", "dumptui", command[0], *dumps, *command[1:]],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            timeout=120,  # a safety net only
        )
    assert p.returncode == 2, (p.returncode, p.stderr)  # never 120 (the interpreter's failed flush) nor 1
    assert "standard output: No space left on device" in p.stderr and "Traceback" not in p.stderr


def test_a_fifo_that_is_read_is_written(pair, hostile, tmp_path):
    """`--json >(jq .)` is a pipe with a reader: written as a file would be."""
    fifo = tmp_path / "read_fifo"
    os.mkfifo(fifo)
    reader = subprocess.Popen(["cat", str(fifo)], stdout=subprocess.PIPE, text=True)
    try:
        code, _out, err = run("bisect", *pair, "--json", fifo, "-q")
        text, _ = reader.communicate(timeout=120)
    finally:
        reader.kill()
    assert code == 1, err
    assert '"culprit"' in text and '"exit": 1' in text


def test_many_ignore_patterns_match_as_a_plain_loop_would():
    rng = random.Random(5)
    alphabet = "ab/-_Conv2D"
    names = ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 12))) for _ in range(300)]
    specs = []
    for _ in range(400):
        parts = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 3))) for _ in range(3)]
        glob = rng.choice(["*", "?", "[ab]", ""]).join(parts)
        specs.append(glob + rng.choice(["", ":output.0", ":input.*"]))
    rules = [parse_user_ignore(s) for s in specs if s.strip()]

    class Op:
        def __init__(self, name):
            self.name, self.op_type, self.inputs = name, "X", {}

    matcher = IgnoreMatcher(rules)
    for name in names:
        for io, slot in (("input", 0), ("output", 0), ("output", 1)):
            assert matcher.reason(Op(name), io, slot) == ignore_reason(rules, Op(name), io, slot), (name, io, slot)


def _files_under(root) -> set[str]:
    return {os.path.join(folder, name) for folder, _dirs, files in os.walk(root) for name in files + _dirs}


def test_nothing_is_written_inside_a_dump(tmp_path):
    """--json or --csv aimed inside the target dump: refused, and the refusal's own error document goes to
    stdout, not there; a cache or state folder set inside the target dump (XDG_*_HOME) is not written."""
    d = write_demo(str(tmp_path / "demo"))
    before = _files_under(d.target)
    code, out, err = run("bisect", d.ref, d.target, "--json", os.path.join(d.target, "out.json"))
    assert code == 2 and "refusing to write inside the dump folder" in err and '"error"' in out
    code, out, err = run("compare", d.ref, d.target, "--csv", os.path.join(d.target, "out.csv"))
    assert code == 2 and "refusing to write inside the dump folder" in err
    inside = {name: os.path.join(d.target, name) for name in ("XDG_CACHE_HOME", "XDG_STATE_HOME")}
    for command in ("bisect", "compare"):
        code, _out, err = run(command, d.ref, d.target, env_extra=inside)
        assert code == 1, err
    assert _files_under(d.target) == before


def test_out_of_memory_is_exit_2_with_what_to_do(pair, tmp_path):
    """A dump too large for the memory the process may use (here: indexing raises MemoryError, as it does
    under a memory cap) ends with exit 2 and advice, never a traceback or exit 1."""
    script = tmp_path / "oom.py"
    script.write_text(
        "import importlib, sys\n"
        "def boom(*a, **k):\n"
        "    raise MemoryError()\n"
        "import dumptui.headless as h\n"
        "h.open_pair = boom  # where indexing a huge dump would run out\n"
        "m = importlib.import_module('dumptui.cli.main')\n"
        "sys.exit(m.main(['bisect', sys.argv[1], sys.argv[2]]))\n"
    )
    env = dict(os.environ, PYTHONPATH=str(REPO))
    done = subprocess.run([sys.executable, str(script), *pair], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 2 and "out of memory" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("bad", BAD_FILES)
def test_a_session_file_that_is_no_small_regular_file_is_refused_with_its_path(hostile, bad):
    """`dumptui --session FILE` (and the autosaved sessions): refused at once, the path and the reason said;
    the app shows that sentence and starts the bisection afresh."""
    from dumptui.core.search.bisect.sessionfile import SessionError, read_session
    from dumptui.report.reasons import say

    path = str(hostile / bad)
    with pytest.raises(SessionError) as refused:
        read_session(path)
    assert refused.value.path == path and say(refused.value.reason).strip()  # the app says "path: reason"


@pytest.mark.parametrize("bad", BAD_FILES)
def test_a_settings_file_that_is_no_small_regular_file_gives_the_defaults(hostile, tmp_path, bad):
    """settings.json (the theme) as a FIFO, a device, a loop, huge or nested: the defaults, at once."""
    from dumptui.present.autosave import read_settings

    (tmp_path / "dumptui").mkdir()
    os.symlink(hostile / bad, tmp_path / "dumptui" / "settings.json")
    assert read_settings({"XDG_CONFIG_HOME": str(tmp_path)}) == {}
    (tmp_path / "dumptui" / "settings.json").unlink()
    (tmp_path / "dumptui" / "settings.json").write_text('{"theme": "nord"}')
    assert read_settings({"XDG_CONFIG_HOME": str(tmp_path)}) == {"theme": "nord"}


def _cap_file_size():
    import signal

    _cap_memory()
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the cap fails with EFBIG, as on a full disk
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))


@pytest.mark.parametrize("existing", [True, False])
def test_a_csv_that_cannot_be_written_whole_leaves_no_half_file(pair, tmp_path, existing):
    """Disk full (here: a file-size cap the CSV outgrows) while writing --csv: exit 2 naming the path; the
    previous file is left as it was, or no file at all; no temporary file stays behind (issue 23.9)."""
    out = tmp_path / "out.csv"
    if existing:
        out.write_text("the previous comparison\n")
    env = dict(os.environ, PYTHONPATH=str(REPO), COLUMNS="200", XDG_CACHE_HOME=str(tmp_path / "cache"))
    env.pop("DUMPTUI_CONFIG", None)
    p = subprocess.run(
        [sys.executable, "-m", "dumptui", "compare", *pair, "--csv", str(out), "--no-config"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        preexec_fn=_cap_file_size,
    )
    assert p.returncode == 2 and str(out) in p.stderr and "Traceback" not in p.stderr, (p.returncode, p.stderr)
    if existing:
        assert out.read_text() == "the previous comparison\n"
    else:
        assert not out.exists()
    assert sorted(f.name for f in tmp_path.iterdir() if f.name != "cache") == (["out.csv"] if existing else [])


def test_a_map_file_the_csv_module_cannot_split_names_its_line(pair, tmp_path):
    """A 1 MB field in a --map CSV (beyond the csv module's limit): exit 2 with the path and the line, never an
    internal error (issue 22.3)."""
    bad = tmp_path / "map.csv"
    bad.write_text("ref,target\n" + "a" * 1_000_000 + ",b\n")
    code, out, err = run("bisect", *pair, "--map", bad)
    assert code == 2 and f"{bad}: line 2: not a CSV line" in err and "internal error" not in err, (code, err)
