"""A scan's tensor pairs read and computed in the command's worker processes (core/compare/spread.py), its
replays sent to them as they are found (replays.ReplayStream): every answer exactly the one of one process —
each tensor's verdict, reason, notes and statistics, their order in the session, the reads booked, the local
errors and replay proofs, the roots, the whole compare document and the progress count — on a noisy pair with fp16 outputs,
NaN and Inf, empty and scalar pairs and files damaged after indexing; and ctrl+c ends the workers."""

from __future__ import annotations

import glob
import json
import os
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from helpers.common import REPO
from helpers.procs import wait_gone

from dumptui.core.compare import batch, spread
from dumptui.core.io import executor
from dumptui.core.io.executor import BatchPolicy, LocalProcesses
from dumptui.core.model.reason import Why
from dumptui.core.search import compare_all, replays, scan
from dumptui.core.search.bisect.types import CheckStatus
from dumptui.options.pair import PairOptions, make_session, open_pair
from dumptui.report.documents import compare_document


def _files(root: str, pattern: str) -> list[str]:
    return sorted(glob.glob(os.path.join(root, "rank_0", "Net", "0", "0", pattern)))


def _rewrite(path: str, values: np.ndarray) -> None:
    with open(path, "wb") as fh:  # np.save on a name would add .npy when it ends otherwise
        np.save(fh, values)


@pytest.fixture(scope="module")
def odd_pair(tmp_path_factory):
    """A noisy demo pair (fp16 region) with NaN/Inf in some outputs, a scalar and an empty input pair."""
    from dumptui.core.demo.residual import write_demo

    info = write_demo(str(tmp_path_factory.mktemp("spread")), n_ops=90, size=64)
    adds = _files(info.target, "Add.*output.0.*Float32.npy")
    for k, path in enumerate(adds[3:6]):  # NaN, +Inf and -Inf in the target's outputs
        a = np.load(path)
        a.reshape(-1)[k] = (np.nan, np.inf, -np.inf)[k]
        _rewrite(path, a)
    ref_add = os.path.join(info.ref, "rank_0", "Net", "0", "0", os.path.basename(adds[4]))
    if os.path.exists(ref_add):  # the same Inf on both sides, at the same place
        a = np.load(ref_add)
        a.reshape(-1)[1] = np.inf
        _rewrite(ref_add, a)
    for path in [p for p in _files(info.target, "*.Float16.npy") if not os.path.basename(p).startswith("Cast")][:2]:
        # fp16 outputs 0.5 % off: beyond float32's element tolerance, within float16's (the pair's, whose
        # statistics count the elements off with it: a worker must use the same one)
        a = np.load(path)
        _rewrite(path, (a.astype(np.float32) * 1.005).astype(np.float16))
    muls = [os.path.basename(p) for p in _files(info.ref, "Mul.*input.1.*Float32.npy")]
    for side in (info.ref, info.target):
        for name, values in ((muls[0], np.float32(0.5)), (muls[1], np.zeros((0,), np.float32))):
            path = os.path.join(side, "rank_0", "Net", "0", "0", name)
            if os.path.exists(path):
                _rewrite(path, np.asarray(values, dtype=np.float32))
    return info


def _session(pair):
    options = PairOptions(pair.ref, pair.target)
    ref, target = open_pair(options)
    return make_session(options, ref, target)


def _answer(session, comparison) -> dict:
    """Everything a compare says, in order: each tensor pair as the session keeps it, the reads, the local
    errors with their replays, the roots, and the compare document (as JSON text: NaN compares equal there)."""
    results = [
        (
            r.io,
            r.slot,
            r.ref.path if r.ref is not None else None,
            r.target.path if r.target is not None else None,
            r.verdict,
            r.reason,
            list(r.notes),
            r.tolerance,
            json.dumps(r.stats.to_dict(), sort_keys=True) if r.stats is not None else None,
        )
        for r in session.results()
    ]
    locals_ = [
        (i, le.kind, le.is_root, le.replay, le.replay_note, repr(le.out), repr(le.data_in))
        for i, le in sorted(comparison.locals.items())
    ]
    return {
        "results": results,
        "reads": (session.ledger.count, session.ledger.by_purpose()),
        "locals": locals_,
        "roots": [r.pair.name for r in comparison.roots],
        "checks": [(c.name, c.status, c.detail) for c in comparison.bisection.check_inputs()],
        "document": json.dumps(compare_document(session, comparison), sort_keys=True, default=str),
    }


def _one_process(pair, damage=None) -> dict:
    session = _session(pair)
    if damage:
        damage()
    counts: list[tuple[int, int]] = []
    answer = _answer(session, compare_all.compare_pair(session, progress=lambda *c: counts.append(c)))
    return dict(answer, progress=_progress_end(counts))


def _progress_end(counts: list[tuple[int, int]]) -> tuple[int, int]:
    """The count's last report, after checking that it never ran backwards and reported along the way."""
    assert len(counts) > 10
    assert all(a[0] <= b[0] for a, b in zip(counts, counts[1:]) if a[1] == b[1])
    return counts[-1]


def _spread(pair, monkeypatch, damage=None, chunk: int = 7) -> dict:
    """The answer with the pairs read and computed by two workers, `chunk` pairs a task; and how many replays
    ran in the task that compared their op ("alongside") or were sent after it ("sent")."""
    monkeypatch.setattr(batch, "MIN_PAIRS_TO_SPREAD", 0)  # a small pair: spread all the same
    # many chunks, more than are ever in flight at once
    monkeypatch.setattr(spread, "BATCH", BatchPolicy(items=chunk, most_items=chunk))
    replayed = {"alongside": 0, "sent": 0}
    known, add = replays.ReplayStream.known, replays.ReplayStream.add

    def counted_known(self, *args):
        replayed["alongside"] += 1
        return known(self, *args)

    def counted_add(self, *args):
        replayed["sent"] += 1
        return add(self, *args)

    monkeypatch.setattr(replays.ReplayStream, "known", counted_known)
    monkeypatch.setattr(replays.ReplayStream, "add", counted_add)
    monkeypatch.setattr(executor, "BATCH", BatchPolicy(items=3))  # the replays in several tasks
    session = _session(pair)
    if damage:
        damage()
    with LocalProcesses(2) as ex:
        ex.start()
        session.executor = ex
        spread_calls = []
        real = spread.evaluate_spread
        measured_while_spread: list[bool] = []  # per op measured: whether before the batch's end (early)
        real_measured = scan.measured

        def counted(*args, **kwargs):
            spread_calls.append(1)
            try:
                return real(*args, **kwargs)
            finally:
                spread_calls.append(0)

        def measured(*args, **kwargs):
            measured_while_spread.append(spread_calls[-1:] == [1])
            return real_measured(*args, **kwargs)

        monkeypatch.setattr(batch, "evaluate_spread", counted)
        monkeypatch.setattr(scan, "measured", measured)
        counts: list[tuple[int, int]] = []
        comparison = compare_all.compare_pair(session, progress=lambda *c: counts.append(c))
        answer = dict(_answer(session, comparison), progress=_progress_end(counts))
    assert spread_calls, "the scan was not spread over the workers"
    answer["measured early"] = (sum(measured_while_spread), len(measured_while_spread))
    answer.update(replayed)
    return answer


@pytest.mark.parametrize("chunk", [7, 160])
def test_the_spread_scan_gives_the_answer_of_one_process(odd_pair, monkeypatch, chunk):
    """Chunks of 7 pairs: most ops' tensors in two chunks, their replays sent after them; of 160: most
    replayed by the worker that compared the op (replays.ReplaysAlongside)."""
    alone = _one_process(odd_pair)
    spread_answer = _spread(odd_pair, monkeypatch, chunk=chunk)
    assert alone["roots"]  # a noisy pair with its planted root: the scan found it
    early, ops = spread_answer["measured early"]
    # the ops measured while the workers still computed (spread.py `ready`): the same answers
    assert ops > 50 and ops // 2 < early <= ops, (early, ops)
    verdicts = {r[4] for r in alone["results"]}
    assert {"diverged", "close"} <= verdicts
    assert any(r[8] is not None and '"nan": 1' in r[8] for r in alone["results"])  # NaN counted
    fp16 = [json.loads(r[8]) for r in alone["results"] if r[3] and "Float16" in r[3] and r[8] is not None]
    assert any(st["max_rel"] > 0.004 for st in fp16)  # the fp16 tensors 0.5 % off were compared
    replayed = [le for le in alone["locals"] if le[3] is not None]
    assert replayed  # replays ran, and the workers' proofs are the same
    assert spread_answer["alongside"] + spread_answer["sent"] >= len(replayed)
    if chunk > 100:
        assert spread_answer["alongside"] > spread_answer["sent"], spread_answer
    for key in alone:
        assert spread_answer[key] == alone[key], key


@pytest.fixture(scope="module")
def mlp_pair(tmp_path_factory):
    """bench/mlp.py's deep MLP in MindSpore 2.10's layout (Dense 64->64 + ReLU a layer: MatMul with its
    transpose flags as inputs, BiasAdd with its format, ReLU), 24 layers: a float16 target, one bias 2 % off."""
    import importlib.util
    import types

    sys.path.insert(0, os.path.join(str(REPO), "bench"))  # mlp.py imports its neighbour generated.py
    try:
        spec = importlib.util.spec_from_file_location("bench_mlp", os.path.join(str(REPO), "bench", "mlp.py"))
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.pop(0)
    info = module.write_mlp(str(tmp_path_factory.mktemp("mlp")), layers=24)
    return types.SimpleNamespace(**info)


def test_the_spread_mlp_gives_the_answer_of_one_process_with_no_weight_read_here(mlp_pair, monkeypatch):
    """The preconditions' rounding check of each weight that differs (rounding_explains) made by the worker
    that compared it, from the payloads it had just read: this process reads no weight again. The ops'
    replays run in the task that compared their tensors, and say what one process says."""
    from dumptui.core.compare import verdict

    alone = _one_process(mlp_pair)
    here: list[str] = []
    real = verdict.within_rounding
    monkeypatch.setattr(verdict, "within_rounding", lambda r, t, *a: (here.append(r.path), real(r, t, *a))[1])
    spread_answer = _spread(mlp_pair, monkeypatch, chunk=120)
    assert here == []  # (the workers, forked from this process, call their own copy)
    # each op's replay run where its tensors were read, but for the ops cut by a chunk's end
    assert spread_answer["alongside"] > 8 * spread_answer["sent"], spread_answer
    assert alone["roots"] == [mlp_pair.planted]
    rounded = [c for c in alone["checks"] if c[1] == CheckStatus.BENIGN and c[2].code == Why.ROUNDING_ONLY]
    # every weight, every bias but the one 2 % off, and the network input: float16's rounding explains them
    assert len(rounded) == 2 * 24
    for key in alone:
        assert spread_answer[key] == alone[key], key


def test_a_few_big_pairs_on_the_workers_are_measured_as_they_finish(odd_pair, monkeypatch):
    """Too few pairs to spread, each a task of its own on the workers (batch._in_executor: a few big tensors):
    each op is measured, and its replay sent, as soon as its pairs are known (not after them all), and every
    answer is the one of one process (the session keeps the results in the order they finished there)."""
    alone = _one_process(odd_pair)
    answer, copies = _big_pairs_on_workers(odd_pair, monkeypatch)
    assert copies == 0  # (inputs are compared with their producer's output files from COPIES_FROM bytes)
    for key in alone:
        if key == "results":
            assert sorted(answer[key], key=repr) == sorted(alone[key], key=repr)
        else:
            assert answer[key] == alone[key], key


@pytest.mark.parametrize("damaged", [False, True], ids=["copies", "a-copy-differs"])
def test_an_input_that_copies_its_producers_output_is_not_computed_again(odd_pair, monkeypatch, tmp_path, damaged):
    """A MindSpore dump holds each activation twice a side (its producer's output, its consumer's input): on
    the workers, an input pair whose files hold the same bytes as its producer's output files takes that
    pair's statistics (batch._copies, processes.run_units), computed once; one whose bytes differ is
    computed as itself. Every answer is the one of one process, which computes each pair."""
    import shutil

    backup = tmp_path / "backup"
    backup.mkdir()
    victim = _files(odd_pair.target, "ReLU.*input.0.*.npy")[4]
    shutil.copy(victim, backup / "victim.npy")

    def damage() -> None:  # the consumer's copy of an activation no longer its producer's bytes
        a = np.load(victim)
        a.reshape(-1)[0] += 1.0
        _rewrite(victim, a)

    def victims_statistics(answer: dict) -> str:
        found = [r[8] for r in answer["results"] if r[3] == victim]
        assert found and found[0] is not None
        return found[0]

    undamaged = victims_statistics(_one_process(odd_pair))
    try:
        if damaged:
            damage()
        alone = _one_process(odd_pair)
        monkeypatch.setattr(batch, "COPIES_FROM", 0)
        answer, copies = _big_pairs_on_workers(odd_pair, monkeypatch)
    finally:
        shutil.copy(backup / "victim.npy", victim)
    assert copies > 20, copies
    # damaged, the victim's own statistics differ from its producer's output's (which it copied before):
    # taking those would have differed from one process's answer below
    assert (victims_statistics(alone) != undamaged) == damaged
    for key in alone:
        if key == "results":
            assert sorted(answer[key], key=repr) == sorted(alone[key], key=repr)
        else:
            assert answer[key] == alone[key], key


def _big_pairs_on_workers(pair, monkeypatch) -> tuple[dict, int]:
    """compare_pair with too few pairs to spread, each a task of its own on two workers; (its answer, how many
    pairs were taken as copies of another's files)."""
    monkeypatch.setattr(batch, "MIN_PAIRS_TO_SPREAD", 1 << 30)
    monkeypatch.setattr(batch, "MIN_BYTES_FOR_PROCESSES", 0)
    monkeypatch.setattr(executor, "BATCH", BatchPolicy(items=1, most_items=1))  # a pair (or a replay) a task
    real_outcomes = batch.computed_or_same_on
    copies = [0]

    def counted_copies(*args, **kwargs):
        for outcome in real_outcomes(*args, **kwargs):
            copies[0] += outcome[3]
            yield outcome

    monkeypatch.setattr(batch, "computed_or_same_on", counted_copies)
    session = _session(pair)
    inside: list[int] = []  # 1 while _in_executor runs
    measured_inside: list[bool] = []
    real_in_executor, real_measured = batch._in_executor, scan.measured

    def counted(*args, **kwargs):
        inside.append(1)
        try:
            return real_in_executor(*args, **kwargs)
        finally:
            inside.append(0)

    def measured(*args, **kwargs):
        measured_inside.append(inside[-1:] == [1])
        return real_measured(*args, **kwargs)

    monkeypatch.setattr(batch, "_in_executor", counted)
    monkeypatch.setattr(scan, "measured", measured)
    with LocalProcesses(2) as ex:
        ex.start()
        session.executor = ex
        counts: list[tuple[int, int]] = []
        comparison = compare_all.compare_pair(session, progress=lambda *c: counts.append(c))
        answer = dict(_answer(session, comparison), progress=_progress_end(counts))
    assert inside, "the pairs were not computed on the workers"
    early, ops = sum(measured_inside), len(measured_inside)
    assert ops > 50 and ops // 2 < early <= ops, (early, ops)
    assert [le for le in answer["locals"] if le[3] is not None]  # replays ran
    return answer, copies[0]


def test_replays_a_worker_could_not_run_alongside_are_sent_as_before(mlp_pair, monkeypatch):
    """A worker whose replays alongside fail with an error of their own (not a replay's "failed": a kernel's
    bug) keeps none: the scan plans and sends each replay it asks for, as without them, and the compare
    goes on (an op the scan never asks to replay must not fail it)."""
    from dumptui.core.compare.smallpairs import compare_tensor_pairs
    from dumptui.core.search.measure import input_roles

    session = _session(mlp_pair)
    jobs = [(p, io, slot, r, t) for p in scan.kernel_order(session) for io, slot, r, t in session.tensor_pairs(p)]
    fn, arg, _reread = replays.ReplaysAlongside(session, input_roles).task(jobs)
    refs = [(r, t) for _p, _io, _s, r, t in jobs]
    th = session.thresholds
    stats = [st for st, _err in compare_tensor_pairs([(r, t, th.tolerance(r.dtype, t.dtype)) for r, t in refs])]
    assert len(fn(arg, refs, stats)) > 30

    def broken(*args):
        raise RuntimeError("a kernel's own error")

    monkeypatch.setattr(replays, "_alongside_plans", broken)
    assert fn(arg, refs, stats) == []  # what such a worker sends back
    monkeypatch.undo()
    alone = _one_process(mlp_pair)
    # the workers (forked, or spawned when a thread runs: then a patch here never reaches them) send nothing
    monkeypatch.setattr(replays.ReplaysAlongside, "got", lambda self, jobs, result: None)
    spread_answer = _spread(mlp_pair, monkeypatch, chunk=120)
    assert spread_answer["alongside"] == 0 and spread_answer["sent"] > 30, spread_answer
    for key in alone:
        assert spread_answer[key] == alone[key], key


def test_a_proof_alongside_is_the_one_here_and_taken_only_for_the_same_plan(mlp_pair):
    """ReplaysAlongside, its two halves in this process: the proof of a MatMul replayed from its chunk's
    tensors is replay_proof's (the one-process answer); the scan takes it for the same roles and slot and
    sizes, and for nothing else. The MatMuls before the 2 % bias are within their floor: not replayed."""
    import dataclasses

    from dumptui.core.compare.smallpairs import compare_tensor_pairs
    from dumptui.core.search.measure import input_roles

    session = _session(mlp_pair)
    th = session.thresholds

    def worker_result(along, pair, jobs):
        fn, arg, reread = along.task(jobs)
        assert [c[0] for c in arg[1]] == [pair.index] and reread == list(range(len(jobs)))
        refs = [(r, t) for _p, _io, _s, r, t in jobs]
        stats = [st for st, _err in compare_tensor_pairs([(r, t, th.tolerance(r.dtype, t.dtype)) for r, t in refs])]
        return fn(arg, refs, stats)

    replayed = []
    for pair in [p for p in scan.kernel_order(session) if p.ref.op_type == "MatMul"]:
        jobs = [(pair, io, slot, r, t) for io, slot, r, t in session.tensor_pairs(pair)]
        along = replays.ReplaysAlongside(session, input_roles)
        result = worker_result(along, pair, jobs)
        assert [index for index, _sized, _outcome in result] in ([], [pair.index])
        if result:
            replayed.append((pair, jobs, along, result))
    assert 5 < len(replayed) < 24
    pair, jobs, along, result = replayed[0]
    along.got(jobs, result)
    roles = along.roles_of(pair)
    here = replays.replay_proof(session, pair, roles, 0)
    assert here[0] is not None and along.take(pair, roles, 0) == here
    assert along.take(pair, roles, 0) is None  # taken once
    (index, (shapes, tolerances, floors), outcome) = worker_result(along, pair, jobs)[0]
    roles = along.roles_of(pair)  # made again with the chunk sent again: the definition's
    wider = dataclasses.replace(tolerances[1], rtol=tolerances[1].rtol * 2)
    for sized, asked_roles, slot in (
        ((shapes, (tolerances[0], wider), floors), roles, 0),  # a tolerance the scan would not use
        ((shapes, tolerances, (floors[0], floors[1] * 2)), roles, 0),
        ((({0: (64,)}, shapes[1]), tolerances, floors), roles, 0),  # another output shape
        ((shapes, tolerances, floors), dict(roles), 0),  # roles made again, not those the definition was made for
        ((shapes, tolerances, floors), roles, 1),  # another output slot
    ):
        along.got(jobs, [(index, sized, outcome)])
        assert along.take(pair, asked_roles, slot) is None
    along.got(jobs, [(index, (shapes, tolerances, floors), outcome)])
    assert along.take(pair, roles, 0) == here  # and the same again is taken


@pytest.mark.parametrize("io", ["output", "input"])
def test_files_damaged_after_indexing_are_found_and_said_alike(odd_pair, monkeypatch, tmp_path, io):
    """Damage between the index and the scan: a payload cut short, a header overwritten, a file gone. The
    workers find it, this process says it with the path and the reason as one process does."""
    import shutil

    backup = tmp_path / "backup"
    backup.mkdir()
    relus = _files(odd_pair.target, f"ReLU.*{io}.0.*.npy")
    chosen = relus[2:5]
    for p in chosen:
        shutil.copy(p, backup / os.path.basename(p))

    def damage():
        with open(chosen[0], "r+b") as fh:  # the payload cut in half
            fh.truncate(os.path.getsize(chosen[0]) // 2 + 64)
        with open(chosen[1], "r+b") as fh:  # not an npy header any more
            fh.write(b"garbage!" * 8)
        os.unlink(chosen[2])

    def restore():
        for p in chosen:
            shutil.copy(backup / os.path.basename(p), p)

    try:
        alone = _one_process(odd_pair, damage)
        restore()
        spread_answer = _spread(odd_pair, monkeypatch, damage)
    finally:
        restore()
    unreadable = [r for r in alone["results"] if r[4] == "unreadable"]
    assert len(unreadable) >= 3 and all(r[5] for r in unreadable)
    early, ops = spread_answer["measured early"]
    if io == "input":  # an op with a damaged input is measured after the batch (its producer's result is asked)
        assert ops // 2 < early <= ops - 3, (early, ops)
    else:
        assert early == ops, (early, ops)
    for key in alone:
        assert spread_answer[key] == alone[key], key


CTRL_C = textwrap.dedent(
    """
    import os, signal, sys

    # ctrl+c as in a terminal's foreground job: a shell without job control starts background commands (and
    # so this suite, when it runs in one) with SIGINT ignored, which every child inherits
    signal.signal(signal.SIGINT, signal.default_int_handler)
    import dumptui.cli
    from dumptui.core.compare import batch, spread

    batch.MIN_PAIRS_TO_SPREAD = 0

    def tell(line):
        fd = os.open(os.environ["SPREAD_FIFO"], os.O_WRONLY)
        os.write(fd, f"{line}\\n".encode())
        os.close(fd)

    def stuck(chunk):
        # the worker says who it is, then waits for good on a pipe nobody writes (only its parent ends it)
        tell(os.getpid())
        never, _w = os.pipe()
        os.read(never, 1)

    spread.read_and_compare = stuck
    if os.environ.get("SWALLOW_CTRL_C"):
        # Python swallows a KeyboardInterrupt raised inside a finaliser (a __del__, a weakref callback: it
        # prints "Exception ignored" and goes on): here every one raised while the scan waits for a chunk
        from dumptui.core.io.executor import Runs

        wait_for_task = Runs._await

        def swallowing(self, *args):
            while True:
                try:
                    tell("waiting")  # within the try: ctrl+c from here on is swallowed
                    return wait_for_task(self, *args)
                except KeyboardInterrupt:
                    pass

        Runs._await = swallowing
    sys.argv = ["dumptui", "bisect", sys.argv[1], sys.argv[2], "-q"]
    from dumptui.cli import command_line

    command_line()
    """
)


@pytest.mark.parametrize("swallowed", [False, True], ids=["interrupt", "interrupt-swallowed"])
def test_ctrl_c_during_the_spread_scan_ends_the_workers(odd_pair, tmp_path, swallowed):
    """Ctrl+C ends the command with 130 and its workers with it, also when the KeyboardInterrupt never reaches
    the code that ends the pool (swallowed on the way): the signal handler itself kills the workers."""
    import select

    fifo = str(tmp_path / "pids")
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    keep_open = os.open(fifo, os.O_WRONLY)  # a writer always there: select wakes on data, never on an EOF
    env = dict(os.environ, SPREAD_FIFO=fifo, PYTHONPATH=str(REPO), SWALLOW_CTRL_C="1" if swallowed else "")
    proc = subprocess.Popen(
        [sys.executable, "-c", CTRL_C, odd_pair.ref, odd_pair.target],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # its own process group: ctrl+c reaches it and its workers, as in a terminal
    )
    try:
        got = b""

        def told() -> list[bytes]:
            return got[: got.rfind(b"\n") + 1].split()

        # woken when a worker (or the command, waiting) writes to the FIFO, never by polling: ctrl+c once a
        # worker runs the scan and, in the swallowed case, once the command waits where it swallows it
        while not any(w.isdigit() for w in told()) or (swallowed and b"waiting" not in told()):
            ready, _w, _x = select.select([reader], [], [], 60)
            assert ready, f"the scan did not start: {got!r}"
            got += os.read(reader, 64)
        pid = int(next(w for w in told() if w.isdigit()))
        os.killpg(proc.pid, signal.SIGINT)  # ctrl+c in the terminal: the whole foreground group
        out, err = proc.communicate(timeout=60)
    finally:
        os.close(reader)
        os.close(keep_open)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, err.decode()
    assert b"Traceback" not in err, err.decode()
    assert wait_gone([pid], 30) == []  # the worker ignores SIGINT: its parent ended it
