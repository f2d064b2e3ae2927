"""Damage on the engine's other paths to a file: the persistent index cache (a cached index keeps every
refusal and its reason), the same-file shortcut (never reads a FIFO or a device), msprobe's own records for
the CSV and a layer mapping's construct.json (no traceback, no wait); and two answers the fuzz suite found
wrong: a record without its data file made a network input "differ", a name ending in a backslash was shown
with two."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

import pytest
from helpers.damage import msprobe_dump, run_main, same_pair, snapshot, tensor_file

from dumptui.core.compare.samefiles import SameFiles
from dumptui.core.formats import open_dump
from dumptui.core.index import cache as indexcache
from dumptui.report.reasons import say

# many commands run in this process: one pool of worker processes for the module, not one per command
pytestmark = pytest.mark.usefixtures("commands_share_one_pool")


@contextlib.contextmanager
def within(seconds: float):
    """Fail instead of hanging when something waits on a FIFO or reads a device forever."""

    def expired(_signum, _frame):
        raise AssertionError(f"still running after {seconds} s: a read that blocks")

    old = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def age(root: Path, seconds: float = 60.0) -> None:
    """Every entry of `root` last changed a minute ago: a dump the cache may keep (not one still written)."""
    past = time.time() - seconds
    for folder, dirs, files in sorted(os.walk(root), key=lambda w: -len(w[0])):
        for name in files + dirs:
            os.utime(os.path.join(folder, name), (past, past), follow_symlinks=False)
    os.utime(root, (past, past))


def refusals(dump) -> dict[str, str]:
    return {f"{op.name} {t.io}.{t.slot}": say(t.problem) for op in dump.ops for t in op.tensors() if t.refused}


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_cached_index_keeps_its_refusals_and_reasons(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv(indexcache.DISABLE_ENV, raising=False)

    def mutate(doc):
        doc["data"]["Functional.relu.0.forward"]["output"][0]["shape"] = [-8]
        return doc

    ref = msprobe_dump(tmp_path / "ref")
    root = msprobe_dump(tmp_path / "target", mutate=mutate)
    fifo = root / "step0" / "rank0" / "dump_tensor_data" / "mul.out0.npy"
    fifo.unlink()
    os.mkfifo(fifo)
    age(root)
    fresh = open_dump(str(root), cache=True)
    expected = refusals(fresh)
    assert expected == {
        "Functional.relu.0.forward output.0": "Functional.relu.0.forward output.0: shape dimension -8 is below 0",
        "Tensor.mul.1.forward output.0": "not a regular file: a FIFO (named pipe), not read",
    }
    entry = indexcache.entry_path(str(root), None, (None, None, None))
    cached = indexcache.load(entry)
    assert cached is not None, "the index was not cached"
    assert refusals(cached) == expected
    assert [(p.path, p.reason) for p in cached.problems] == [(p.path, p.reason) for p in fresh.problems]
    with within(30):
        outputs = [run_main("compare", ref, root) for _ in range(2)]  # the second from the cache
    for code, out, _err in outputs:
        assert code == 2 and "Undecided" in out
        assert f"{fifo}: not a regular file: a FIFO (named pipe), not read" in out
        assert "shape dimension -8 is below 0" in out
    assert outputs[0][1] == outputs[1][1]


@pytest.mark.skipif(not hasattr(os, "mkfifo") or not os.path.exists("/dev/zero"), reason="needs FIFOs, /dev/zero")
def test_the_same_file_shortcut_never_reads_a_fifo_or_a_device(tmp_path):
    """Two FIFOs, or two links to /dev/zero, have equal sizes (0): read side by side they would block, or
    never end. Files swapped after indexing reach this check without a refusal, so it checks for itself."""
    ref, target = same_pair(tmp_path)
    a, b = tensor_file(ref, "block0-ResidualBlock_Add-op0"), tensor_file(target, "block0-ResidualBlock_Add-op0")
    same = SameFiles(ref, target)
    assert same.identical(str(a), str(b)) is True
    for make in (os.mkfifo, lambda p: p.symlink_to("/dev/zero")):
        for p in (a, b):
            p.unlink()
            make(p)
        with within(10):
            assert same.identical(str(a), str(b)) is None


def test_msprobe_records_of_a_damaged_dump_json_are_no_traceback(tmp_path):
    """compare --csv in msprobe's profile re-reads dump.json for its records: parameters that are a list
    are skipped there as the reader skips them (it names them), not an AttributeError."""

    def mutate(doc):
        doc["data"]["Module.fc.Linear.forward.0"] = {"parameters": [1, 2]}
        weight = dict(doc["data"]["Tensor.mul.1.forward"]["input_args"][0], data_name="mul.in0.npy")
        doc["data"]["Module.layers.0.attn.Linear.forward.0"] = {"parameters": {"weight": weight}}
        return doc

    ref = msprobe_dump(tmp_path / "ref", mutate=mutate)
    target = msprobe_dump(tmp_path / "target", mutate=mutate)
    before = snapshot(ref), snapshot(target)
    out_csv = tmp_path / "out.csv"
    code, out, err = run_main("compare", ref, target, "--csv", out_csv)
    assert code == 0, err
    assert "internal error" not in err and out_csv.stat().st_size > 0
    from dumptui.core.formats.msprobe_records import read_records

    dump = open_dump(str(target))
    records = read_records(dump)
    assert records is not None
    params = [op.name for op in dump.ops if op.kind == "parameter"]
    assert params == ["layers.0.attn.weight"]  # the records walk dump.json as the reader does
    assert records.get(params[0], "output", 0).name == "Module.layers.0.attn.Linear.forward.0.parameters.weight"
    assert (snapshot(ref), snapshot(target)) == before


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_construct_json_of_a_layer_mapping_a_fifo_or_too_deep(tmp_path):
    """--map with a layer mapping reads the dumps' construct.json: a FIFO there is refused at once, a
    document nested 100,000 deep is named, both exit 2 with the path and the reason."""
    from helpers.msprobe_write import DOC_YAML, write_megatron_pair

    ref, target = write_megatron_pair(tmp_path)
    mapping = tmp_path / "mapping.yaml"
    mapping.write_text(DOC_YAML)
    construct = tmp_path / "npu" / "step0" / "rank0" / "construct.json"
    construct.unlink()
    os.mkfifo(construct)
    with within(30):
        code, out, err = run_main("compare", ref, target, "--map", mapping)
    assert code == 2 and f"{construct}: not a regular file: a FIFO (named pipe), not read" in err, err
    construct.unlink()
    construct.write_bytes(b"[" * 100_000 + b"]" * 100_000)
    code, out, err = run_main("compare", ref, target, "--map", mapping)
    assert code == 2 and f"{construct}: not read: JSON nested deeper than 64 levels" in err, err


def _without_data_name(scale: float = 1.0):
    def mutate(doc):
        rec = doc["data"]["Functional.relu.0.forward"]["input_args"][0]
        rec["data_name"] = None  # statistics only for this tensor
        for key in ("Max", "Min", "Mean", "Norm"):
            rec[key] *= scale
        return doc

    return mutate


def test_statistics_only_network_input_agreeing_within_the_floor_is_no_divergence(tmp_path):
    """The target's network input has statistics but no data file: msprobe's float32 statistics and those
    computed from the reference's tensor differ by rounding (4.8e-09 of the L2 norm). That is no difference;
    10% off is one."""
    ref = msprobe_dump(tmp_path / "ref")
    target = msprobe_dump(tmp_path / "target", mutate=_without_data_name())
    for cmd in ("compare", "bisect"):
        code, out, err = run_main(cmd, ref, target)
        assert code == 0, out + err
        assert "statistics agree within the float32 noise floor (4.76e-09 <= 1.22e-04)" in out
    # 10 % off is a difference (said in the preconditions); relu's output staying bitwise equal, it goes no
    # further than the input record, and nothing is a root
    off = msprobe_dump(tmp_path / "off", mutate=_without_data_name(1.1))
    code, out, err = run_main("bisect", ref, off)
    assert code == 0 and "differs Functional.relu.0.forward.input.0: differs by more than" in out, out
    assert "it goes no further: every output of Functional.relu.0.forward is equal" in out


def test_a_name_ending_in_a_backslash_is_shown_as_written(tmp_path):
    """Rich halves backslashes only before a tag: the one rich.markup.escape adds showed `x\\\\: reason`."""
    import io

    from rich.console import Console

    from dumptui.report.fmt import markup

    for text in ("x\\", "x\\\\", "x\\\\\\", "[b]\\", "a\\[b]"):
        for template in ("{}", "{}: why", "[bold]{}[/bold]", "{}[red]z[/red]"):
            buf = io.StringIO()
            Console(file=buf, width=200, color_system=None).print(template.format(markup(text)))
            plain = template.replace("[bold]", "").replace("[/bold]", "").replace("[red]", "").replace("[/red]", "")
            assert buf.getvalue() == plain.format(text) + "\n", (text, template)
    ref, target = same_pair(tmp_path)
    odd = Path(target) / "rank_0" / "Net" / "0" / "0" / "odd\\"
    odd.write_bytes(b"x")
    code, out, err = run_main("info", target)
    assert code == 0 and f"warning {odd}: " in out, out


def test_an_invalid_escape_in_an_npy_header_is_damage_not_a_warning(tmp_path):
    """`'\\p'` in a header that is not numpy's own form: literal_eval warns (an error under -W error); the
    header is named as damage and nothing is printed besides."""
    import warnings

    from helpers.damage import npy_bytes

    from dumptui.core.io.npy import npy_layout

    f = tmp_path / "t.npy"
    f.write_bytes(npy_bytes("{'descr': '<f4\\p', 'fortran_order': False, 'shape': (2,), }", bytes(8)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert say(npy_layout(str(f)).problem) == "unknown npy dtype '<f4\\\\p'"
