"""Two families of hand-made files (issue 36): session and autosave files of any JSON shape, and --map YAML
files built with anchors, aliases, nesting and size. Each example is refused with its path and what is wrong
(ValueError, the CLI's exit 2), or read as a session that replays on a real bisection without an error; a
YAML file answers within the example's time and memory bounds whatever its aliases."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dumptui.core.formats import open_dump
from dumptui.core.search.bisect import Bisection
from dumptui.core.search.bisect.sessionfile import read_session, session_problems
from dumptui.options.mapfiles import read_pairs
from dumptui.options.pair import PairOptions, make_session
from fuzz.fuzzkit import REFUSED, WORK, examples, memory_peak, record, time_limit

SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-5, 10**12), st.floats(allow_nan=False), st.text(max_size=12))
JSONISH = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
STEP = st.fixed_dictionaries(
    {},
    optional={
        "key": st.one_of(st.text(max_size=20), st.integers(), st.none()),
        "mark": st.one_of(st.sampled_from(["good", "bad", "skip", "maybe", ""]), st.integers(), st.none()),
        "source": st.one_of(st.sampled_from(["user", "computed", "start", "check", "x"]), st.none()),
        "detail": st.one_of(st.text(max_size=20), st.integers(), st.none()),
    },
)
SESSION = st.fixed_dictionaries(
    {"steps": st.lists(st.one_of(STEP, JSONISH), max_size=5)},
    optional={
        "dumps": JSONISH,
        "options": st.one_of(
            JSONISH, st.dictionaries(st.sampled_from(["cos", "gain", "floor", "rank", "rm"]), JSONISH)
        ),
        "mode": JSONISH,
        "saved_at": JSONISH,
    },
)


@pytest.fixture(scope="module")
def bisection_pair(tmp_path_factory):
    from dumptui.core.demo.residual import write_demo

    info = write_demo(str(tmp_path_factory.mktemp("demo")), n_ops=20, size=64)
    return info.ref, info.target


@examples(0.25)
@given(data=SESSION)
def test_a_session_of_any_shape_is_refused_or_replays(bisection_pair, data):
    path = WORK / "session.json"
    path.write_text(json.dumps(data))
    with time_limit():
        try:
            got = read_session(str(path))
        except ValueError as e:
            assert str(path) in str(e)
            record("session files", "hand-edited session", REFUSED, str(e))
            return
        assert session_problems(got) == []
        ref, target = bisection_pair
        options = PairOptions(ref=ref, target=target)
        bi = Bisection(make_session(options, open_dump(ref), open_dump(target), carried_from_step=None))
        bi.replay(got)  # marks of unknown keys are left out, said by the caller: never an internal error
        record("session files", "hand-edited session", "replayed")


def _yaml(depth: int, width: int, aliases: bool) -> str:
    lines = ['a0: &a0 ["Default/x-op0", "Default/y-op0"]']
    for i in range(1, depth):
        items = [f"*a{i - 1}" if aliases else f'"op{i}-{k}"' for k in range(width)]
        lines.append(f"a{i}: &a{i} [{', '.join(items)}]")
    return "\n".join(lines) + "\n"


@examples(0.25)
@given(depth=st.integers(1, 12), width=st.integers(1, 12), aliases=st.booleans())
def test_a_mapping_yaml_answers_in_bounds_whatever_its_aliases(bisection_pair, depth, width, aliases):
    path = WORK / "pairs.yaml"
    path.write_text(_yaml(depth, width, aliases))
    ref, target = (open_dump(p) for p in bisection_pair)
    with time_limit(), memory_peak() as peak:
        try:
            read_pairs(str(path), ref, target)
            outcome = "read"
        except ValueError as e:
            outcome = REFUSED
            if aliases and depth > 1:
                assert "aliases" in str(e)
    assert peak[0] < 100 << 20  # bytes: an expansion of width^depth entries would need far more
    record("mapping yaml", f"aliases={aliases}", outcome)
