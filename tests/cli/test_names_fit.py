"""The headless answers on an 80-column terminal: a name longer than the line is cut in the middle by the one rule
of names (report/names.py), never folded over lines; every name shown is a real one or one cut so. Piped, the
same names stay whole (test_headless.py)."""

from __future__ import annotations

import pytest
from helpers.names import known_names, long_scope_pair, msprobe_pair, not_real

from dumptui import cli
from dumptui.core.formats import open_dump
from dumptui.report import console as console_module

# many commands run in this process: one pool of worker processes for the module, not one per command
pytestmark = pytest.mark.usefixtures("commands_share_one_pool")


@pytest.fixture(scope="module")
def long_pair(demo_pair, tmp_path_factory):
    return long_scope_pair(demo_pair, tmp_path_factory.mktemp("long_scopes"))


@pytest.fixture(scope="module")
def msprobe(tmp_path_factory):
    return msprobe_pair(tmp_path_factory.mktemp("msprobe_names"))


def on_terminal(monkeypatch, capsys, *argv) -> str:
    """`dumptui ARGV` in this process, its answer written as to an 80-column terminal."""
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setattr(console_module, "is_terminal", lambda stream: True)
    capsys.readouterr()
    code = cli.main([*map(str, argv), "-q"])
    out, err = capsys.readouterr()
    assert code == 1, err  # a root found
    return out


def real_names(*dumps: str) -> set[str]:
    names, types = [], []
    for path in dumps:
        d = open_dump(str(path))
        names += [op.name for op in d.ops]
        types += [op.op_type for op in d.ops]
    return known_names(names, types)


@pytest.mark.parametrize("command", [("bisect",), ("compare",), ("compare", "--only-diverged")])
def test_long_scopes_are_cut_in_the_middle_at_80_columns(monkeypatch, capsys, long_pair, command):
    ref, target = long_pair
    out = on_terminal(monkeypatch, capsys, command[0], ref, target, *command[1:])
    lines = out.splitlines()
    assert lines and all(len(line) <= 80 for line in lines), [line for line in lines if len(line) > 80]
    assert any("…/block6-ResidualBlock/Add-op0" in line for line in lines), out  # the culprit, its op whole
    bad = not_real(lines, real_names(ref, target) | {str(ref), str(target)})
    assert bad == [], "\n".join(bad)


def test_msprobe_names_keep_their_api_at_80_columns(monkeypatch, capsys, msprobe):
    ref, target = msprobe
    for command in ("bisect", "compare"):
        lines = on_terminal(monkeypatch, capsys, command, ref, target).splitlines()
        assert all(len(line) <= 80 for line in lines)
        bad = not_real(lines, real_names(ref, target) | {str(ref), str(target)})
        assert bad == [], "\n".join(bad)
        assert any("Functional.scaled_dot_product_attention.0.forward" in line for line in lines)  # fits: whole


def test_piped_names_stay_whole(capsys, long_pair):
    ref, target = long_pair
    capsys.readouterr()
    cli.main(["bisect", str(ref), str(target), "-q"])
    out = capsys.readouterr().out
    assert "…" not in out
    assert any(name in out for name in real_names(ref) if "TransformerEncoderStage" in name and "/Add-op0" in name)


def test_the_every_unit_table_fits_80_columns(monkeypatch, capsys, tmp_path):
    """`--rank all --step all` on a terminal: its table (the why wrapped) within COLUMNS, every name real."""
    from helpers.msprobe_training import Change, write_training

    ref = write_training(tmp_path / "ref")
    target = write_training(tmp_path / "target", Change("mul_scale", rank=1, step=2))
    out = on_terminal(monkeypatch, capsys, "bisect", ref, target, "--rank", "all", "--step", "all")
    lines = out.splitlines()
    assert len(lines) > 6 and all(len(line) <= 80 for line in lines), [line for line in lines if len(line) > 80]
    assert any("rank 1, step 2" in line for line in lines), out
    names = set()
    for unit in sorted((tmp_path / "ref").glob("step*/rank*")):
        names |= real_names(unit)
    bad = not_real(lines, names | {str(ref), str(target)})
    assert bad == [], "\n".join(bad)
