"""Every side input dumptui reads or writes, tried as what it must never wait on or swallow (issue 23.2-23.3):
a FIFO nobody writes (or reads), a link to /dev/zero, a loop of symlinks, a huge file, YAML nested beyond any
mapping; and output to /dev/full. Each answers at once with exit 2 and a message naming the path; nothing is
read into memory beyond the side-file limit (the process's memory is capped well below what /dev/zero
would take). Also: 100k ignore patterns are matched as a plain loop would, by the fast matcher.

The commands whose answer is their exit code and output run one after another in ONE capped process (`answers`,
below), each as `dumptui ARGV` in it, each timed: a Python start and imports once instead of once per command
(40 of them). What needs a process of its own keeps one: the standard output on /dev/full, a file-size cap, a
FIFO with a reader, an interpreter that runs out of memory, the cache and state folders set by the environment.
"""

from __future__ import annotations

import json
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
CONFIG_KEYS, CONFIG_BAD = ["ignore_file", "map"], ["fifo", "zero", "loop_a", "huge.csv"]
OUTPUTS, OUTPUT_BAD = ["--json", "--csv"], ["fifo", "loop_a"]
XLSX = __import__("importlib").util.find_spec("openpyxl") is not None
AT_ONCE = 20.0  # seconds: one command of the batch taking longer is waiting on its input, not working

# One process runs the commands given on its stdin (argv, environment), each as `dumptui ARGV` in it, and
# writes what each answered (exit code, stdout, stderr, seconds) to the file named by its argument, one JSON
# line per command as soon as it ends: a command that hangs is named by the lines before it.
BATCH = r"""
import contextlib, io, json, os, sys, time
sys.path.insert(0, sys.argv[2])
from dumptui import cli
cases = json.load(sys.stdin)
with open(sys.argv[1], "w") as answers:
    for argv, env in cases:
        saved = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        out, err = io.StringIO(), io.StringIO()
        start = time.monotonic()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = cli.main(argv)
            except SystemExit as e:
                code = e.code
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        answers.write(json.dumps([code, out.getvalue(), err.getvalue(), time.monotonic() - start]) + "\n")
        answers.flush()
"""


def _side_input_case(pair, hostile, where, bad):
    path = hostile / bad
    if where == "DUMPTUI_CONFIG":
        return ["bisect", *pair], {"DUMPTUI_CONFIG": str(path)}
    return ["bisect", *pair, where, str(path)], {}


def _config_case(pair, hostile, folder, key, bad):
    config = folder / f"config-{key}-{bad}.toml"
    if not config.exists():
        config.write_text(f"{key} = {str(hostile / bad)!r}\n")
    return ["bisect", *pair], {"DUMPTUI_CONFIG": str(config)}


def _output_case(pair, target, where):
    return ["compare" if where == "--csv" else "bisect", *pair, where, str(target)], {}


def _xlsx_case(pair, target):
    return ["compare", *pair, "--xlsx", str(target)], {}


def _inside_case(pair, command):
    """--json (bisect) or --csv (compare) aimed inside the target dump."""
    where, name = ("--json", "out.json") if command == "bisect" else ("--csv", "out.csv")
    return [command, *pair, where, os.path.join(pair[1], name)], {}


def _bad_map_case(pair, folder):
    bad = folder / "map.csv"
    if not bad.exists():
        bad.write_text("ref,target\n" + "a" * 1_000_000 + ",b\n")
    return ["bisect", *pair, "--map", str(bad)], {}


@pytest.fixture(scope="module")
def batch_folder(tmp_path_factory):
    return tmp_path_factory.mktemp("batch")


@pytest.fixture(scope="module")
def target_before(pair):
    """Every entry under the target dump before the module's commands ran."""
    return _files_under(pair[1])


@pytest.fixture(scope="module")
def answers(pair, hostile, batch_folder, target_before):
    """What each command of the module's batch answered: (argv, environment) -> (exit code, stdout, stderr).
    The batch runs in one process capped as `run` caps each of its commands."""
    folder = batch_folder
    cases = [_side_input_case(pair, hostile, w, b) for w in SIDE_INPUTS for b in BAD_FILES]
    cases += [_config_case(pair, hostile, folder, k, b) for k in CONFIG_KEYS for b in CONFIG_BAD]
    cases += [_output_case(pair, hostile / b, w) for w in OUTPUTS for b in OUTPUT_BAD]
    if os.path.exists("/dev/full"):
        cases += [_output_case(pair, "/dev/full", w) for w in OUTPUTS]
    if XLSX:
        cases += [_xlsx_case(pair, hostile / b) for b in OUTPUT_BAD]
    cases += [_bad_map_case(pair, folder), _inside_case(pair, "bisect"), _inside_case(pair, "compare")]
    env = dict(os.environ, PYTHONPATH=str(REPO), COLUMNS="200", XDG_CONFIG_HOME=str(REPO / "tests" / "no-config-here"))
    env.pop("DUMPTUI_CONFIG", None)
    done = folder / "answers.jsonl"
    p = subprocess.run(
        [sys.executable, "-c", BATCH, str(done), str(REPO)],
        input=json.dumps(cases),
        capture_output=True,
        text=True,
        env=env,
        timeout=60 + AT_ONCE * len(cases),  # a safety net only: each command is held to AT_ONCE below
        preexec_fn=_cap_memory,
    )
    lines = done.read_text().splitlines() if done.exists() else []
    assert p.returncode == 0 and len(lines) == len(cases), (
        f"the batch ended ({p.returncode}) after {len(lines)} of {len(cases)} commands; "
        f"the next was {cases[len(lines)] if len(lines) < len(cases) else None}: {p.stderr[-3000:]}"
    )
    got = {}
    for (argv, case_env), line in zip(cases, lines, strict=True):
        code, out, err, seconds = json.loads(line)
        assert seconds < AT_ONCE, (argv, case_env, seconds)
        got[json.dumps([argv, case_env])] = (code, out, err)
    return got


def answer(answers, case):
    argv, env = case
    return answers[json.dumps([argv, env])]


@pytest.mark.parametrize("bad", BAD_FILES)
@pytest.mark.parametrize("where", SIDE_INPUTS)
def test_a_side_input_that_is_no_regular_file_is_refused_at_once(answers, pair, hostile, where, bad):
    path = hostile / bad
    code, out, err = answer(answers, _side_input_case(pair, hostile, where, bad))
    if where == "--ignore-file" and bad == "deep.yaml":
        # one line of brackets is one (odd) glob, not nesting: a valid ignore file that matches nothing
        assert code == 1 and "Culprit" in out, err
        return
    assert code == 2, (code, err)
    assert str(path) in err and "Traceback" not in err
    assert "culprit" not in out


@pytest.mark.parametrize("bad", CONFIG_BAD)
@pytest.mark.parametrize("key", CONFIG_KEYS)
def test_a_side_file_the_config_names_that_is_no_regular_file_is_refused_at_once(
    answers, batch_folder, pair, hostile, key, bad
):
    """The config file's own paths (`ignore_file`, `map`) go through the same check as the flags."""
    path = hostile / bad
    code, out, err = answer(answers, _config_case(pair, hostile, batch_folder, key, bad))
    assert code == 2, (code, err)
    assert str(path) in err and "Traceback" not in err
    assert "culprit" not in out


@pytest.mark.parametrize("bad", OUTPUT_BAD)
@pytest.mark.parametrize("where", OUTPUTS)
def test_an_output_nobody_reads_is_refused_at_once(answers, pair, hostile, where, bad):
    code, out, err = answer(answers, _output_case(pair, hostile / bad, where))
    assert code == 2 and str(hostile / bad) in (err + out), (code, err)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full on this system")
@pytest.mark.parametrize("where", OUTPUTS)
def test_a_full_device_is_an_error_naming_it(answers, pair, where):
    code, out, err = answer(answers, _output_case(pair, "/dev/full", where))
    assert code == 2 and "/dev/full" in (err + out) and "No space left" in (err + out)


openpyxl_missing = pytest.mark.skipif(not XLSX, reason="--xlsx needs the xlsx extra (openpyxl)")


@openpyxl_missing
@pytest.mark.parametrize("bad", OUTPUT_BAD)
def test_an_xlsx_nobody_reads_is_refused_at_once(answers, pair, hostile, bad):
    code, out, err = answer(answers, _xlsx_case(pair, hostile / bad))
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
    # the names with the same candidates share one tuple of them
    assert len({id(matcher.candidates(n)) for n in names}) == len({matcher.candidates(n) for n in names}) < len(names)


def _files_under(root) -> set[str]:
    return {os.path.join(folder, name) for folder, _dirs, files in os.walk(root) for name in files + _dirs}


def test_nothing_is_written_inside_a_dump(answers, target_before, pair):
    """--json or --csv aimed inside the target dump: refused, and the refusal's own error document goes to
    stdout, not there; a cache or state folder set inside the target dump (XDG_*_HOME) is not written. Nor
    did any command of the module's batch write there (`target_before` was taken before it ran)."""
    ref, target = pair
    code, out, err = answer(answers, _inside_case(pair, "bisect"))
    assert code == 2 and "refusing to write inside the dump folder" in err and '"error"' in out
    code, out, err = answer(answers, _inside_case(pair, "compare"))
    assert code == 2 and "refusing to write inside the dump folder" in err
    inside = {name: os.path.join(target, name) for name in ("XDG_CACHE_HOME", "XDG_STATE_HOME")}
    for command in ("bisect", "compare"):
        code, _out, err = run(command, ref, target, env_extra=inside)
        assert code == 1, err
    assert _files_under(target) == target_before


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


def test_a_map_file_the_csv_module_cannot_split_names_its_line(answers, batch_folder, pair):
    """A 1 MB field in a --map CSV (beyond the csv module's limit): exit 2 with the path and the line, never an
    internal error (issue 22.3)."""
    argv, env = _bad_map_case(pair, batch_folder)
    bad = argv[-1]
    code, out, err = answer(answers, (argv, env))
    assert code == 2 and f"{bad}: line 2: not a CSV line" in err and "internal error" not in err, (code, err)
