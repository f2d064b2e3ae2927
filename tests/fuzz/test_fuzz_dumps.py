"""Fuzz targets for whole dumps, through the headless commands (run in this process): file names, dump.json
documents, folder layouts, and a valid dump with files swapped for FIFOs, device links, loops or cut short.
Properties for every example: no exception escapes (no traceback, no internal error); the exit code is 2
with the path and the reason, or the damage is a per-file problem the output names; damage never makes
"divergence found" (exit 1); the output holds no terminal control character from a file; nothing is written
under the dump; each example ends within its time limit (a FIFO or a device is never waited on)."""

from __future__ import annotations

import io
import os
import re
import shutil
from pathlib import Path

import numpy as np
from helpers.damage import msprobe_dump, run_main, snapshot
from hypothesis import given
from hypothesis import strategies as st

from dumptui.core.formats import detect, open_dump
from dumptui.core.io.errors import DumpError
from dumptui.report.fmt import clean
from dumptui.report.reasons import say
from fuzz.fuzzgen import NAME_PART, dump_json_documents, file_names, npy_files, raw_dump_files
from fuzz.fuzzkit import READ, REFUSED, UNREADABLE, examples, memory_peak, record, time_limit
from fuzz.fuzzkit import WORK as FUZZ_WORK

WORK = FUZZ_WORK / "dumps"
WORK.mkdir()
# what a terminal must never get from a file: C0 controls but the newline, DEL, C1, line separators, bidi controls
RAW_CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def npy(arr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, arr)
    return buf.getvalue()


def fresh(name: str) -> Path:
    root = WORK / name
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    return root


def checked_run(*argv: object, codes: tuple[int, ...] = (0, 1, 2)) -> tuple[int, str, str]:
    """A command on damaged input: an allowed exit code, a message with path and reason when it is 2, no
    traceback, nothing from a file that a terminal would act on."""
    with time_limit():
        code, out, err = run_main(*argv)
    assert code in codes, (code, out, err)
    assert "internal error" not in err and "Traceback" not in err + out, err
    assert not RAW_CONTROL.search(out + err), repr(RAW_CONTROL.search(out + err))
    if code == 2:
        assert err.startswith("dumptui: ") and ": " in err[len("dumptui: ") :] or "Undecided" in out, (out, err)
    return code, out, err


def accounted(root: Path, path: Path, out: str) -> tuple[str, str | None]:
    """How `info` (exit 0) took a damaged file, and the reason it gave: a tensor it reads, a tensor or a file
    listed with its reason, or (a folder of .npy files only) not a dump file at all. Damage the output does
    not name is a failure."""
    dump = open_dump(str(root))  # info opened it: so does this
    tensors = {t.path: t for op in dump.ops for t in op.tensors()}
    problems = {p.path: p for p in dump.problems}
    if str(path) in problems:
        problem = problems[str(path)]
        assert f"{clean(str(path))}: {clean(say(problem.reason))}" in out, (
            f"{path} is a problem the output does not name"
        )
        return ("listed with its reason" if problem.severity == "error" else "listed as a warning"), say(problem.reason)
    if str(path) in tensors:
        t = tensors[str(path)]
        if t.problem:
            assert clean(str(path)) in out and clean(say(t.problem)) in out, f"{path}: {say(t.problem)} not named"
            return UNREADABLE, say(t.problem)
        return READ, None
    assert dump.format == "npy-folder" and not path.name.endswith(".npy"), f"{path} neither indexed nor named"
    return "not a dump file (ignored)", None


@given(file_names(), st.data())
def test_file_names(case, data):
    damage, name = case
    root = fresh("names")
    ok = "Add.Default_Add-op1.0.0.1700000000000001.{}.0.DefaultFormat.Float32.npy"
    for io_ in ("input", "output"):
        (root / ok.format(io_)).write_bytes(npy(np.ones(4, np.float32)))
    if damage == "raw name":
        content = data.draw(raw_dump_files())[1]
    elif damage == "bin name":
        content = data.draw(st.binary(max_size=64))
    else:
        content = data.draw(npy_files())[1]
    path = root / name
    if path.exists():
        return  # the name of a valid file: nothing damaged
    path.write_bytes(content)
    before = snapshot(root)
    code, out, err = checked_run("info", root, codes=(0, 2))
    outcome, reason = accounted(root, path, out) if code == 0 else (REFUSED, err)
    assert snapshot(root) == before
    record("file name", damage, outcome, reason)


@given(st.data())
def test_dump_json_documents(data):
    root = fresh("msprobe")
    ref = WORK / "msprobe-ref"
    if not ref.exists():
        msprobe_dump(ref)
    x = np.linspace(-1, 1, 8, dtype=np.float32)
    arrays = {"relu.in0": x, "relu.out0": np.maximum(x, 0), "mul.in0": np.maximum(x, 0), "mul.out0": np.maximum(x, 0)}
    damage, doc = data.draw(dump_json_documents(arrays))
    rank = root / "step0" / "rank0"
    (rank / "dump_tensor_data").mkdir(parents=True)
    for name, arr in arrays.items():
        (rank / "dump_tensor_data" / f"{name}.npy").write_bytes(npy(arr))
    (rank / "dump.json").write_bytes(doc)
    before = snapshot(root), snapshot(ref)
    with memory_peak() as peak:
        code, out, err = checked_run("info", root, codes=(0, 2))
    assert peak[0] < 64 << 20, f"{peak[0]} B allocated to read a dump.json of {len(doc)} B"
    if code == 2:
        assert clean(str(rank / "dump.json")) in err or clean(str(root)) in err, err
        loaded = REFUSED
    else:
        dump = open_dump(str(root))
        named = dump.problems or any(t.problem for op in dump.ops for t in op.tensors())
        loaded = "loaded, damage named" if named else "loaded, nothing to name"
    # the damaged dump holds the reference's values: "divergence found" (exit 1) would be an answer made by damage
    compare_code, _out, _err = checked_run("compare", ref, root, codes=(0, 2))
    assert (snapshot(root), snapshot(ref)) == before
    compared = (
        "compare exit 0 (still compared)" if compare_code == 0 else "compare exit 2 (undecided or nothing to compare)"
    )
    record("dump.json", damage, f"{loaded}; {compared}", err if code == 2 else None)


ENTRY_KINDS = [
    "folder",
    "tensor",
    "garbage",
    "fifo",
    "link to /dev/zero",
    "link loop",
    "link to parent",
    "dangling link",
    "dump.json",
    "statistic.csv",
    "mapping.csv",
    "config.json",
    "execution order",
    "graph ir",
    "graph pb",
    "raw dump",
]
LEVEL_NAMES = st.one_of(
    st.sampled_from(["rank_0", "rank_1", "Net", "0", "1", "constants", "graphs", "execution_order", ".dump_metadata"]),
    st.sampled_from(["step0", "rank0", "dump_tensor_data", "device_0", "iteration_0", "20240101120000"]),
    NAME_PART,
)


@st.composite
def folder_layouts(draw) -> list[tuple[list[str], str]]:
    """Entries of a folder tree: (path below the root, what is there)."""
    entries = []
    for _ in range(draw(st.integers(1, 10))):
        parts = draw(st.lists(LEVEL_NAMES, min_size=1, max_size=5))
        entries.append(
            ([p.replace("/", "_").replace("\x00", "_")[:60] or "x" for p in parts], draw(st.sampled_from(ENTRY_KINDS)))
        )
    return entries


NPY_TENSOR = "Add.Default_Add-op1.0.0.1700000000000001.output.0.DefaultFormat.Float32.npy"
SIDE_FILE = {
    "dump.json": "dump.json",
    "statistic.csv": "statistic.csv",
    "mapping.csv": "mapping.csv",
    "config.json": "config.json",
    "execution order": "ms_execution_order_graph_0.csv",
    "graph ir": "ms_output_trace_code_graph_0.ir",
    "graph pb": "ms_output_trace_code_graph_0.pb",
}


def _make(path: Path, kind: str, content: bytes) -> None:
    if kind == "folder":
        path.mkdir(parents=True, exist_ok=True)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind in SIDE_FILE:
        path = path.parent / SIDE_FILE[kind]
    if path.exists() or path.is_symlink():
        return
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "link to /dev/zero":
        path.symlink_to("/dev/zero")
    elif kind == "link loop":
        path.symlink_to(path.name)
    elif kind == "link to parent":
        path.symlink_to("..")
    elif kind == "dangling link":
        path.symlink_to("nowhere")
    elif kind == "tensor":
        (path.parent / NPY_TENSOR).write_bytes(npy(np.arange(4, dtype=np.float32)))
    else:
        path.write_bytes(content)


@given(folder_layouts(), st.data())
@examples(0.5)
def test_folder_layouts(entries, data):
    """The same damaged tree compared with itself never diverges: 0, or 2 when something could not be read."""
    root = fresh("layout")
    for parts, kind in entries:
        content = data.draw(st.one_of(st.binary(max_size=80), npy_files().map(lambda c: c[1])))
        try:
            _make(root.joinpath(*parts), kind, content)
        except OSError:
            continue  # a path the tree cannot hold (a file where a folder is wanted): not made
    before = snapshot(root)
    code, out, err = checked_run("info", root, codes=(0, 2))
    compare_code, _out, _err = checked_run("compare", root, root, codes=(0, 2))
    assert snapshot(root) == before
    try:
        fmt = detect(str(root))
    except DumpError:
        fmt = "no dump"
    hostile = {kind for _parts, kind in entries} & {"fifo", "link to /dev/zero", "link loop", "link to parent"}
    record(
        "folder layout",
        f"{fmt}, " + ("with a FIFO, device or looping link" if hostile else "plain entries"),
        f"info exit {code}, compare exit {compare_code}",
        err or _err or None,
    )


HOSTILE = ["fifo", "link to /dev/zero", "link loop", "link to parent", "dangling link", "cut short"]
_BASE: list[Path] = []  # a valid MindSpore dump (rank tree, graphs, execution order), made once


def base_dump() -> Path:
    if not _BASE:
        from helpers.damage import same_pair

        ref, _copy = same_pair(WORK / "base", n_ops=6)
        _BASE.append(Path(ref))
    return _BASE[0]


@given(st.data())
@examples(0.25)  # each example copies a dump and compares it whole
def test_entries_in_a_valid_dump(data):
    """A valid dump with 1-6 of its tensor files swapped for a FIFO, a link to /dev/zero, a loop, a link out,
    or cut short, and new entries of any kind in its folders: the rest still loads and every swapped file is
    named; compared with the intact dump it is undecided (exit 2), never "divergence found"."""
    ref = base_dump()
    root = WORK / "valid"
    shutil.rmtree(root, ignore_errors=True)
    shutil.copytree(ref, root, symlinks=True)
    tensors = sorted(p.relative_to(root) for p in root.rglob("*.npy"))
    folders = sorted({p.parent for p in root.rglob("*") if p.is_file()} - {root})
    swapped = data.draw(st.lists(st.sampled_from(tensors), min_size=0, max_size=6, unique=True))
    for rel in swapped:
        path = root / rel
        how = data.draw(st.sampled_from(HOSTILE))
        if how == "cut short":
            path.write_bytes(path.read_bytes()[: data.draw(st.integers(0, 127))])  # npy headers are 128 B
        else:
            path.unlink()
            _make(path, how, b"")
    added = data.draw(
        st.lists(st.tuples(st.sampled_from(folders), NAME_PART, st.sampled_from(ENTRY_KINDS)), max_size=4)
    )
    for folder, name, kind in added:
        content = data.draw(st.one_of(st.binary(max_size=80), npy_files().map(lambda c: c[1])))
        try:
            _make(folder / _safe_part(name), kind, content)
        except OSError:
            continue
    before = snapshot(root), snapshot(ref)
    code, out, err = checked_run("info", root, codes=(0, 2))
    compare_code, _out, compare_err = checked_run("compare", ref, root, codes=(0, 2))
    assert (snapshot(root), snapshot(ref)) == before
    reasons = [err, compare_err]
    if code == 2:
        outcome = REFUSED
    else:
        dump = open_dump(str(root))
        readable = {t.path for op in dump.ops for t in op.tensors() if t.problem is None}
        named = {p.path: say(p.reason) for p in dump.problems} | {
            t.path: say(t.problem) for op in dump.ops for t in op.tensors()
        }
        for rel in tensors:
            if rel in swapped:
                assert clean(str(root / rel)) in out, f"{rel}, swapped, not named"
                reasons.append(named.get(str(root / rel)))
            elif dump.format == "mindspore-npy":
                assert str(root / rel) in readable, f"{rel} intact but not read"
        if swapped and dump.format == "mindspore-npy":
            assert compare_code == 2, "a pair could not be read: undecided, not no divergence"
        outcome = ("swapped files named, the rest loaded" if swapped else "loaded") + f"; compare exit {compare_code}"
    swaps = "no swap" if not swapped else "1 swapped tensor" if len(swapped) == 1 else "2-6 swapped tensors"
    record("entries in a valid dump", f"{swaps}, {'entries added' if added else 'nothing added'}", outcome, *reasons)


def _safe_part(name: str) -> str:
    name = name.replace("/", "_").replace("\x00", "_")[:60] or "x"
    return "x" + name if name in (".", "..") else name
