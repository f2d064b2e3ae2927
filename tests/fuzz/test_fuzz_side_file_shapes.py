"""Side files of any shape (issue 36): the `--map` YAML, the TOML config and the JSON files the app keeps
(sessions, autosaves, settings.json), each drawn with one class of damage: anchors and aliases (merge keys,
aliased keys), nesting depth, size, tags and odd scalars for YAML; depth, size, values of every TOML type and
paths for the config; depth, size, numbers beyond float and int, duplicate keys and bytes that are not UTF-8
for JSON. Every example answers within its time limit and a memory bound: read (the config then used as a
command uses it, a session replayed), or refused with the file's path and the reason (exit 2 in the CLI);
never another exception, and a YAML tag never runs code.

Sizes stay small under `make test`; `make fuzz` (DUMPTUI_FUZZ) draws files up to fifty times larger."""

from __future__ import annotations

import json
import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dumptui.core.io.errors import DumptuiError
from dumptui.options import config
from dumptui.options.mapfiles import read_pairs
from dumptui.options.pair import PairOptions, make_session
from dumptui.present import autosave
from fuzz.fuzzkit import FUZZ, READ, REFUSED, WORK, examples, memory_peak, record, time_limit

SCALE = 50 if FUZZ else 1  # make fuzz: larger files; make test: small ones (the suite stays fast)
MEMORY = 100 << 20  # bytes of Python allocations one example may peak at, over its file's own size
HERE = WORK / "side-file-shapes"
HERE.mkdir()
MARKER = HERE / "a-tag-ran"  # what a YAML tag that ran code would create

NAMES = st.from_regex(r"[A-Za-z][A-Za-z0-9_./-]{0,20}", fullmatch=True)
ODD_TEXT = st.sampled_from(["\x1b]0;PWNED\x07", "\u202e", "\x00", "[bold]x", "\\", '"', "'", "\n", "é", "🙂", ""])


def _tensor(name: str, io: int) -> str:
    return f"{name}.forward.{'input' if io == 0 else 'output'}.0"


# ---------------------------------------------------------------------------------------------- YAML


@st.composite
def yaml_files(draw) -> tuple[str, str]:
    """(class of damage, text of a --map YAML)."""
    damage = draw(st.sampled_from(["aliases", "merge keys", "aliased keys", "depth", "size", "tags", "scalars"]))
    if damage == "aliases":
        depth, width = draw(st.integers(1, 8)), draw(st.integers(1, 10))
        lines = ['a0: &a0 ["x.forward.input.0", "y.forward.input.0"]']
        lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * width)}]" for i in range(1, depth + 1)]
        return damage, "\n".join(lines) + "\n"
    if damage == "merge keys":
        n = draw(st.integers(1, 6))
        lines = ["base: &b {x.forward.input.0: y.forward.input.0}"]
        lines += [f"m{i}: {{<<: *b, k{i}.forward.input.0: v{i}.forward.input.0}}" for i in range(n)]
        return damage, "\n".join(lines) + "\n"
    if damage == "aliased keys":
        return damage, "? &k x.forward.input.0\n: y.forward.input.0\n? *k\n: z.forward.input.0\n"
    if damage == "depth":
        depth = draw(st.integers(1, 200 * SCALE))
        style = draw(st.sampled_from(["flow list", "flow map", "block"]))
        if style == "flow list":
            return f"depth ({style})", "[" * depth + "]" * depth + "\n"
        if style == "flow map":
            return f"depth ({style})", "{a: " * depth + "b" + "}" * depth + "\n"
        return f"depth ({style})", "".join("  " * i + f"k{i}:\n" for i in range(depth)) + "  " * depth + "v\n"
    if damage == "size":
        n = draw(st.integers(1, 2_000 * SCALE))
        kind = draw(st.sampled_from(["entries", "one long scalar"]))
        if kind == "entries":
            text = "".join(f"{_tensor(f'Functional.op.{i}', 0)}: {_tensor(f'NPU.op.{i}', 0)}\n" for i in range(n))
        else:
            text = f"{_tensor('a', 0)}: {'x' * (n * 50)}\n"
        return f"size ({kind})", text
    if damage == "tags":
        tag = draw(
            st.sampled_from(
                [
                    f"!!python/object/apply:os.system ['touch {MARKER}']",
                    f"!!python/object/apply:pathlib.Path.touch [!!python/object/apply:pathlib.Path ['{MARKER}']]",
                    "!!python/name:os.system",
                    "!!binary aGVsbG8=",
                    "!!set {a, b}",
                    "!!timestamp 2001-12-14",
                    "!!float .nan",
                    "!custom x",
                ]
            )
        )
        return damage, f"{_tensor('a', 0)}: {tag}\n"
    key = draw(st.one_of(NAMES, ODD_TEXT, st.sampled_from(["~", "yes", "1e999", "0x1F", "2001-12-14", "[a]"])))
    value = draw(st.one_of(NAMES, ODD_TEXT, st.sampled_from(["~", "no", "-.inf", "9" * 400, "{a: b}", "- x"])))
    return damage, f"{json.dumps(key)}: {json.dumps(value)}\n{_tensor('x', 1)}: {_tensor('y', 1)}\n"


@pytest.fixture(scope="module")
def small_pair(tmp_path_factory):
    from dumptui.core.demo.residual import write_demo
    from dumptui.core.formats import open_dump

    info = write_demo(str(tmp_path_factory.mktemp("demo")), n_ops=12, size=32)
    return info.ref, info.target, open_dump(info.ref), open_dump(info.target)


def _bounded(peak: int, size: int) -> None:
    assert peak < MEMORY + 16 * size, f"{peak} B allocated for a file of {size} B"


@examples(0.5)
@given(yaml_files())
def test_a_mapping_yaml_of_any_shape_answers_in_bounds(small_pair, case):
    damage, text = case
    path = HERE / "pairs.yaml"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    _ref, _target, ref, target = small_pair
    with time_limit(), memory_peak() as peak:
        try:
            read_pairs(str(path), ref, target)
            outcome = READ
        except ValueError as e:  # the CLI says it with the path, exit 2 (options.pair._read_option_file)
            assert str(e).strip()
            outcome = REFUSED
            if damage in ("aliases", "merge keys", "aliased keys"):
                assert "aliases" in str(e), str(e)
    assert not MARKER.exists(), "a YAML tag ran code"
    _bounded(peak[0], len(text))
    record("side file: mapping yaml", damage, outcome)


# ---------------------------------------------------------------------------------------------- TOML

KNOWN = list(config.KNOWN_KEYS)
TOML_VALUES = st.sampled_from(
    [
        "1.5",
        "0",
        "-1",
        "nan",
        "inf",
        "-inf",
        str(2**70),
        "1e999",
        "true",
        '"0.99"',
        '"\\u001b]0;PWNED\\u0007"',
        "1979-05-27T07:32:00Z",
        "{}",
        "{float16 = 2e-3}",
        '{float16 = "x"}',
        '["float16=2e-3"]',
        '["float16=oops", "=1"]',
        '["*Dropout*", "[", "a:input.x", ":output.0"]',
        "[1, 2]",
        "[]",
        '"/dev/zero"',
        '"."',
        '"does-not-exist.csv"',
        '""',
    ]
)


@st.composite
def toml_files(draw) -> tuple[str, str]:
    """(class of damage, text of a config file)."""
    damage = draw(st.sampled_from(["values", "unknown keys", "duplicate keys", "depth", "size", "text"]))
    if damage == "values":
        keys = draw(st.lists(st.sampled_from(KNOWN), min_size=1, max_size=5, unique=True))
        return damage, "".join(f"{k} = {draw(TOML_VALUES)}\n" for k in keys)
    if damage == "unknown keys":
        return damage, f"{draw(NAMES).replace('.', '_').replace('/', '_')} = 1\n"
    if damage == "duplicate keys":
        key = draw(st.sampled_from(KNOWN))
        return damage, f"{key} = 1.0\n{key} = 2.0\n"
    if damage == "depth":
        depth = draw(st.integers(1, 200 * SCALE))
        if draw(st.booleans()):
            return "depth (arrays)", "ignore = " + "[" * depth + '"x"' + "]" * depth + "\n"
        return "depth (tables)", "floor = " + "{a = " * depth + "1" + "}" * depth + "\n"
    if damage == "size":
        n = draw(st.integers(1, 2_000 * SCALE))
        if draw(st.booleans()):
            return "size (a long list)", "ignore = [" + ", ".join(f'"op{i}*"' for i in range(n)) + "]\n"
        return "size (a long string)", f'ignore = ["{"x" * (n * 50)}"]\n'
    return damage, draw(st.text(max_size=60))


@examples(0.5)
@given(toml_files())
def test_a_config_of_any_shape_is_used_or_refused_with_its_path(small_pair, case):
    """Read as `main` reads it, then used as a command uses it (thresholds checked, ignore rules parsed, the
    map and ignore files read): a DumptuiError naming the file or a threshold (exit 2), or a session."""
    damage, text = case
    path = HERE / "config.toml"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    ref_path, target_path, ref, target = small_pair
    with time_limit(), memory_peak() as peak:
        try:
            values = config.load(str(path), env={})
        except DumptuiError as e:
            assert e.path == str(path) and e.reason.strip()
            record("side file: config toml", damage, REFUSED, e.reason)
            return
        try:
            make_session(PairOptions(ref=ref_path, target=target_path, **values), ref, target, carried_from_step=None)
            outcome = READ
        except DumptuiError as e:  # a threshold out of range, a map or ignore file refused: exit 2, said
            assert e.reason.strip()
            outcome = "used, a value refused (exit 2)"
    _bounded(peak[0], len(text))
    record("side file: config toml", damage, outcome)


# ---------------------------------------------------------------------------------------------- JSON

STEP = {"key": "Default/x-op0", "mark": "bad", "source": "user", "detail": "marked by the user"}


@st.composite
def json_files(draw) -> tuple[str, bytes]:
    """(class of damage, bytes of a session, autosave or settings file)."""
    damage = draw(st.sampled_from(["depth", "size", "numbers", "duplicate keys", "bytes", "odd text"]))
    base: dict = {"dumptui_session": 1, "version": 1, "mode": "graph", "steps": [dict(STEP)], "theme": "nord"}
    if damage == "depth":
        depth = draw(st.integers(1, 200 * SCALE))
        where = draw(st.sampled_from(["steps", "options", "theme", "top"]))
        nested = "[" * depth + "]" * depth
        text = json.dumps(base)[:-1] + f', "{where}": {nested}}}' if where != "top" else nested
        return f"depth ({where})", text.encode()
    if damage == "size":
        n = draw(st.integers(1, 2_000 * SCALE))
        if draw(st.booleans()):
            base["steps"] = [dict(STEP, key=f"Default/op{i}") for i in range(n)]
            return "size (steps)", json.dumps(base).encode()
        base["steps"][0]["detail"] = "x" * (n * 50)
        return "size (a long string)", json.dumps(base).encode()
    if damage == "numbers":
        number = draw(st.sampled_from(["1e999", "-1e999", "NaN", "Infinity", "9" * 5000, "-0", "1" * 20, "0.1e-400"]))
        field = draw(st.sampled_from(["version", "mode", "saved_at", "theme", "steps", "dumptui_session"]))
        return f"numbers ({field})", (json.dumps(base)[:-1] + f', "{field}": {number}}}').encode()
    if damage == "duplicate keys":
        return damage, (json.dumps(base)[:-1] + ', "steps": 3, "theme": {}}').encode()
    if damage == "bytes":
        raw = draw(st.sampled_from([b"\xef\xbb\xbf", b"\xff\xfe", b"\x80", b"\x00"]))
        return damage, raw + json.dumps(base).encode("utf-8")
    base["steps"][0]["detail"] = draw(ODD_TEXT)
    base["saved_at"] = draw(ODD_TEXT)
    base["theme"] = draw(ODD_TEXT)
    return damage, json.dumps(base).encode()


@examples(0.5)
@given(json_files())
def test_a_session_autosave_or_settings_file_of_any_shape_answers_in_bounds(tmp_path_factory, case):
    """The session (`--session FILE`): read, or refused naming its path. The autosave: offered, or set aside
    (NAME.invalid) and not offered. settings.json: its theme as a string, or the defaults."""
    from dumptui.core.search.bisect.sessionfile import SessionError, read_session, session_problems
    from dumptui.report.reasons import say

    damage, raw = case
    home = tmp_path_factory.mktemp("json")
    session = home / "session.json"
    session.write_bytes(raw)
    autosaved = home / "state" / "pair.json"
    autosaved.parent.mkdir()
    autosaved.write_bytes(raw)
    (home / "config" / "dumptui").mkdir(parents=True)
    (home / "config" / "dumptui" / "settings.json").write_bytes(raw)
    with time_limit(), memory_peak() as peak:
        try:
            data = read_session(str(session))
            assert session_problems(data) == []
            outcome = READ
        except SessionError as e:  # the app says "path: reason"
            assert e.path == str(session) and say(e.reason).strip(), e
            outcome = REFUSED
        offer = autosave.resumable(str(autosaved))
        settings = autosave.read_settings({"XDG_CONFIG_HOME": str(home / "config")})
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in settings.items())
    if outcome == REFUSED:  # what a session cannot be is no autosave either: set aside, never offered again
        assert offer is None and not autosaved.exists() and os.path.exists(f"{autosaved}.invalid")
    else:
        assert offer == (data if data.get("steps") else None)  # an autosave without marks is no offer
    _bounded(peak[0], len(raw))
    record("side file: session json", damage, outcome)
