"""Every rank and step: the generated 4-rank x 2-step pair (its values recomputed here), the cross-rank first
divergence it leads to, the ordering of ranks by communication ops, and the listing of ranks and steps."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

import numpy as np
import pytest
from helpers.common import run_here

from dumptui.core.demo.ranks import ALLGATHER, MATMUL1, write_ranks_demo
from dumptui.core.io.errors import DumpError
from dumptui.core.ranks.commorder import comm_events, comm_kind, first_divergence, reach
from dumptui.core.ranks.units import Unit, layout, pair_units, units
from dumptui.report.reasons import say

# the commands run in this process (what they answer is the question here, not how a process starts),
# with one pool of worker processes for the module
pytestmark = pytest.mark.usefixtures("commands_share_one_pool")


def units_validator():
    """The JSON Schema of a --rank all / --step all document, kept in the repo (test_headless checks the others)."""
    from helpers.schemas import validator as _validator

    return _validator("units")


@pytest.fixture(scope="module")
def ranks_pair(tmp_path_factory):
    return write_ranks_demo(str(tmp_path_factory.mktemp("ranks")))


def load(side_root: str, rank: int, step: int, op: str, io: str, slot: int) -> np.ndarray:
    folder = os.path.join(side_root, f"rank_{rank}", "Net", "0", str(step))
    leaf = op.replace("/", "_")
    hits = [n for n in os.listdir(folder) if f".{leaf}." in n and f".{io}.{slot}." in n]
    assert len(hits) == 1, (op, io, slot, hits)
    return np.load(os.path.join(folder, hits[0]))


def test_generated_values_are_the_collectives_of_the_ranks(ranks_pair):
    d = ranks_pair
    for side in (d.ref, d.target):
        for step in range(d.steps):
            relu = [load(side, r, step, "Default/layer0-Dense/ReLU-op0", "output", 0) for r in range(d.ranks)]
            mm1 = [load(side, r, step, MATMUL1, "output", 0) for r in range(d.ranks)]
            for r in range(d.ranks):
                total = load(side, r, step, "Default/grad-Sync/AllReduce-op0", "output", 0)
                np.testing.assert_allclose(total, sum(x.astype(np.float64) for x in relu), rtol=1e-5, atol=1e-6)
                gathered = load(side, r, step, ALLGATHER, "output", 0)
                assert np.array_equal(gathered, np.concatenate(mm1))
                src = (r - 1) % d.ranks
                assert np.array_equal(
                    load(side, r, step, "Default/pipe-Pipe/Receive-op0", "output", 0),
                    load(side, src, step, "Default/pipe-Pipe/Send-op0", "input", 0),
                )
                assert np.array_equal(
                    load(side, r, step, "Default/head-Dense/Broadcast-op0", "output", 0),
                    load(side, 0, step, "Default/head-Dense/Add-op0", "output", 0),
                )
    # the planted bug: one rank, one step, the weight read transposed
    for r in range(d.ranks):
        mean = load(d.target, r, d.bug_step, "Default/grad-Sync/Mul-op0", "output", 0).astype(np.float64)
        w1 = load(d.target, r, d.bug_step, MATMUL1, "input", 1).astype(np.float64)
        out = load(d.target, r, d.bug_step, MATMUL1, "output", 0)
        np.testing.assert_allclose(out, mean @ (w1.T if r == d.bug_rank else w1), rtol=1e-4, atol=1e-5)
        assert np.array_equal(out, load(d.ref, r, d.bug_step, MATMUL1, "output", 0)) == (r != d.bug_rank)


def test_cross_rank_first_divergence_names_the_rank_step_and_op(ranks_pair):
    d = ranks_pair
    code, out, err = run_here("bisect", d.ref, d.target, "--rank", "all", "--step", "all", "--json")
    assert code == 1, err
    report = json.loads(out)
    assert report["command"] == "bisect" and report["exit"] == 1 and report["schema_version"] == 1
    units_validator().validate(report)
    first = report["first_divergence"]
    assert first["step"] == str(d.bug_step) and not first["concurrent"]
    assert [(f["rank"], f["op"]) for f in first["first"]] == [(str(d.bug_rank), d.planted)]
    others = sorted(str(r) for r in range(d.ranks) if r != d.bug_rank)
    assert sorted(c["rank"] for c in first["carried"]) == others
    assert {(c["reached_at"], c["from_rank"]) for c in first["carried"]} == {(d.carried_at, str(d.bug_rank))}
    # positions are 1-based places in each rank's execution order (its csv, read here)
    csv = os.path.join(d.ref, f"rank_{d.bug_rank}", "execution_order", "ms_execution_order_graph_0.csv")
    with open(csv) as fh:
        order = fh.read().split()[1:]
    assert first["first"][0]["position"] == order.index(d.planted) + 1
    assert {c["position"] for c in first["carried"]} == {order.index(d.carried_at) + 1}
    assert len(report["units"]) == d.ranks * d.steps
    for u in report["units"]:
        culprit = u["report"]["culprit"]
        if u["step"] != str(d.bug_step):
            assert culprit is None, u
        else:
            assert culprit["ref"] == (d.planted if u["rank"] == str(d.bug_rank) else d.carried_at)
    code, text, _ = run_here("bisect", d.ref, d.target, "--rank", "all", "--step", "all")
    assert code == 1 and f"step {d.bug_step}, rank {d.bug_rank}: {d.planted}" in text


def test_another_rank_diverging_first_is_named(tmp_path):
    d = write_ranks_demo(str(tmp_path / "r"), ranks=3, steps=1, bug_rank=0, bug_step=0)
    code, out, err = run_here("bisect", d.ref, d.target, "--rank", "all", "--json")
    assert code == 1, err
    first = json.loads(out)["first_divergence"]
    assert [(f["rank"], f["op"]) for f in first["first"]] == [("0", d.planted)]


def test_a_clean_pair_of_every_rank(tmp_path):
    d = write_ranks_demo(str(tmp_path / "r"), ranks=2, steps=2, bug_step=-1)
    code, out, err = run_here("compare", d.ref, d.target, "--rank", "all", "--step", "all", "--json")
    assert code == 0, err
    report = json.loads(out)
    units_validator().validate(report)
    assert report["command"] == "compare" and report["first_divergence"] is None
    assert all(u["report"]["roots"] == [] for u in report["units"])


def test_rank_all_on_a_dump_without_ranks(tmp_path):
    plain = tmp_path / "plain"
    os.makedirs(plain)
    np.save(plain / "x.npy", np.arange(4, dtype=np.float32))
    code, _out, err = run_here("bisect", plain, plain, "--rank", "all")
    assert code == 2 and "--rank all: no rank folders found" in err and str(plain) in err


# ---------------------------------------------------------------------------------------- listing units


def test_layout_and_units_of_mindspore_and_msprobe_trees(ranks_pair, tmp_path):
    assert layout(ranks_pair.ref) == {str(r): ["0", "1"] for r in range(ranks_pair.ranks)}
    assert units(ranks_pair.ref, "all", "1") == [Unit(str(r), "1") for r in range(ranks_pair.ranks)]
    assert units(ranks_pair.ref, "2", "all") == [Unit("2", "0"), Unit("2", "1")]
    assert units(ranks_pair.ref, None, None) == [Unit(None, None)]
    for step in ("0", "3"):
        for rank in ("rank0", "rank1"):
            os.makedirs(tmp_path / "probe" / f"step{step}" / rank)
            (tmp_path / "probe" / f"step{step}" / rank / "dump.json").write_text("{}")
    os.makedirs(tmp_path / "probe" / "step3" / "rank7")  # no dump.json: not a rank
    assert layout(str(tmp_path / "probe")) == {"0": ["0", "3"], "1": ["0", "3"]}
    with pytest.raises(DumpError, match="no rank folders"):
        units(str(tmp_path), "all", None)


def test_units_only_on_one_side_are_kept_apart():
    ref = [Unit("0", "0"), Unit("1", "0"), Unit("0", "1")]
    target = [Unit("1", "0"), Unit("0", "0"), Unit("2", "0")]
    assert pair_units(ref, target) == ([Unit("0", "0"), Unit("1", "0")], [Unit("0", "1")], [Unit("2", "0")])


# ---------------------------------------------------------------------------------------- communication order


@dataclass
class FakeOp:
    op_type: str
    name: str = ""
    attrs: dict = field(default_factory=dict)


def program(*types: str, **attrs: dict) -> list[FakeOp]:
    return [FakeOp(t, f"{t}-{i}", attrs.get(t, {})) for i, t in enumerate(types)]


def test_comm_kinds_across_spellings():
    assert [comm_kind(t) for t in ("AllReduce", "HcomAllReduce", "Distributed.all_reduce", "ReduceScatter")] == [
        "collective"
    ] * 4
    assert [comm_kind(t) for t in ("Send", "Distributed.isend", "Receive", "Distributed.irecv")] == [
        "send",
        "send",
        "receive",
        "receive",
    ]
    assert comm_kind("MatMul") is None and comm_kind("Add") is None


def test_ranks_diverging_before_the_same_collective_are_concurrent():
    ops = {r: program("MatMul", "Add", "AllReduce", "Mul") for r in range(3)}
    events = comm_events(ops)
    cross = first_divergence(events, {0: 1, 2: 0, 1: 2})  # rank 1's root is the AllReduce itself
    assert cross.first == [0, 2] and cross.concurrent
    assert cross.explained[1].via == "AllReduce-2" and cross.explained[1].from_rank in (0, 2)


def test_a_root_at_a_collective_does_not_spread_through_it():
    ops = {r: program("MatMul", "AllReduce", "Mul") for r in range(2)}
    events = comm_events(ops)
    assert set(reach(events, 0, 1)) == {0}  # diverged at the collective's output: the others' outputs agree
    assert reach(events, 0, 0)[1].position == 1


def test_send_and_receive_order_ranks_one_way():
    send = {"Send": {"dest_rank": "I64(1)", "sr_tag": "I64(3)"}}
    recv = {"Receive": {"src_rank": "I64(0)", "sr_tag": "I64(3)"}}
    ops = {0: program("MatMul", "Send", "Add", **send), 1: program("Receive", "MatMul", **recv), 2: program("Tanh")}
    events = comm_events(ops)
    assert reach(events, 0, 0)[1].via == "Receive-0"
    assert 0 not in reach(events, 1, 0)  # a receiver never reaches its sender
    cross = first_divergence(events, {0: 0, 1: 1, 2: 0})
    assert cross.first == [0, 2] and cross.explained[1].from_rank == 0
    late = first_divergence(events, {0: 2, 1: 1})  # rank 0 diverged after its Send: rank 1 is on its own
    assert late.first == [0, 1]


def test_send_without_a_peer_is_named_not_guessed():
    ops = {0: program("Send", "Add"), 1: program("Receive", "Add")}
    events = comm_events(ops)
    assert events.unmatched == 2 and "name no peer rank" in say(events.notes[0])
    assert first_divergence(events, {0: 1, 1: 1}).first == [0, 1]


# ---------------------------------------------------------------------------------------- the app, every rank


def test_every_rank_merged_bisects_to_the_first_rank_and_the_tree_starts_with_ranks(ranks_pair):
    from dumptui.core.search.bisect import Bisection
    from dumptui.options.pair import PairOptions, make_session, open_pair
    from dumptui.present.tree import OpTreeModel, preview_pairs

    d = ranks_pair
    options = PairOptions(d.ref, d.target, rank="all", iteration=str(d.bug_step))
    session = make_session(options, *open_pair(options), kl=False)
    bi = Bisection(session)
    bi.run()
    assert bi.mode == "graph" and bi.search == "bisection"
    # the communication ops join the ranks' graphs: the other ranks' AllGathers are downstream of the culprit
    assert [r.pair.name for r in bi.roots()] == [f"rank_{d.bug_rank}/{d.planted}"]
    model = OpTreeModel(session.alignment.pairs)
    top = [c.name for c in model.children(model.root) if not isinstance(c, int)]
    assert top[: d.ranks] == [f"rank_{r}" for r in range(d.ranks)]
    preview = preview_pairs(d.ref, "all")
    assert [p.name for p in preview[:2]] == [
        "rank_0/Default/layer0-Dense/MatMul-op0",
        "rank_0/Default/layer0-Dense/BiasAdd-op0",
    ]
    assert len(preview) == d.ranks * d.n_kernels
    # every step: the first step with a divergence is opened, and the note says why (the same search as
    # `bisect --rank all --step all`)
    said: list[str] = []
    ref, _target = open_pair(PairOptions(d.ref, d.target, rank="all", iteration="all"), progress=said.append)
    n = d.ranks * d.steps  # the search is counted, one line per unit
    assert said == [f"searching every rank and step: {k} of {n} ({u})" for k, u in enumerate(_unit_labels(d), 1)]
    assert ref.selection_note.startswith(
        f"--step all: step {d.bug_step} is the first with a divergence (rank {d.bug_rank})"
    )
    assert all(op.name.startswith("rank_") for op in ref.kernels)
    assert ref.iterations == open_pair(options)[0].iterations


def test_the_app_shows_ranks_at_the_top_and_finds_the_first_rank(ranks_pair):
    import asyncio

    from helpers.app import opened, wait_until

    d = ranks_pair

    async def go():
        async with opened(d.ref, d.target, "--rank", "all", "--step", str(d.bug_step)) as (app, pilot, scr):
            top = [n.data.path for n in scr.op_tree.root.children]
            assert top[: d.ranks] == [f"rank_{r}" for r in range(d.ranks)]
            await pilot.press("a")
            await wait_until(lambda: scr.bstate.finished and not scr.bisect_task, what="run to the end")
            culprit = scr.bstate.culprit
            assert scr.controller.session.alignment.pairs[culprit.index].name == f"rank_{d.bug_rank}/{d.planted}"
            # the cross-rank story, as the headless every-rank report tells it: every other rank reached by
            # its AllGather
            others = [str(r) for r in range(d.ranks) if r != d.bug_rank]
            assert culprit.rank == str(d.bug_rank)
            assert [r for r, _via in culprit.reaches] == others
            assert all(via == f"rank_{r}/{d.carried_at}" for r, via in culprit.reaches)
            from dumptui.present.panel import culprit_lines, plain

            text = " ".join(plain(line) for line in culprit_lines(culprit, 200))
            assert f"rank {d.bug_rank} first; reaches: rank {others[0]} by {d.carried_at}" in text

    asyncio.run(go())


def test_the_report_says_how_a_divergence_came_in():
    from rich.console import Console

    from dumptui.core.ranks.allunits import AllUnits, StepVerdict, UnitOutcome, UnitRoot
    from dumptui.core.ranks.commorder import CrossRank, Reach
    from dumptui.report.ranks import print_allranks

    units = {0: Unit("0", "5"), 1: Unit("1", "5")}
    roots = {
        0: UnitRoot(2, "Default/Mul-op0", "Mul", "inputs agree, outputs diverge"),
        1: UnitRoot(9, "Default/Tanh-op3", "Tanh", "inputs agree, outputs diverge"),
    }
    cross = CrossRank([0], {1: Reach(4, "Default/AllReduce-op0", 0)})
    outcomes = [UnitOutcome(units[r], r, [roots[r]], 10) for r in (0, 1)]
    result = AllUnits(outcomes, [StepVerdict("5", cross, roots, units)])
    con = Console(record=True, width=200)
    print_allranks(con, result, {units[0]: 3, units[1]: 4})
    text = con.export_text()
    assert "First divergence: step 5, rank 0: Default/Mul-op0 (Mul), position 3" in text
    assert (
        "rank 1: Default/Tanh-op3 (position 10) after rank 0's divergence came in by Default/AllReduce-op0 (position 5)"
        in text
    )


def test_the_app_takes_every_step_and_opens_the_first_that_diverged(ranks_pair):
    import asyncio

    from helpers.app import opened, wait_until

    d = ranks_pair

    async def go():
        async with opened(d.ref, d.target, "--rank", "all", "--step", "all") as (app, pilot, scr):
            await pilot.press("a")
            await wait_until(lambda: scr.bstate.finished and not scr.bisect_task, what="run to the end")
            culprit = scr.bstate.culprit
            assert scr.controller.session.alignment.pairs[culprit.index].name == f"rank_{d.bug_rank}/{d.planted}"
            assert scr.bstate.notes[0].startswith(f"--step all: step {d.bug_step} is the first with a divergence")
            assert culprit.rank == str(d.bug_rank) and culprit.reaches

    asyncio.run(go())


def _unit_labels(d) -> list[str]:
    return [f"rank {r}, step {s}" for s in range(d.steps) for r in range(d.ranks)]
