"""Training dumps as msprobe writes them (helpers/msprobe_training.py, values computed with numpy): dataflow
rebuilt from the records through views and unrecorded casts, scalars and reduce ops compared, process groups
bounding where a divergence goes, backward records read, and the weights of a later step carrying an earlier
step's benign error. Each test plants one change and checks the every-rank answer of bisect and compare."""

from __future__ import annotations

import json

import pytest
from helpers.common import run_here
from helpers.msprobe_training import GROUPS, STEPS, WORLD, Change, write_training

from dumptui.core.formats import open_dump

# the commands run in this process (what they answer is the question here, not how a process starts),
# with one pool of worker processes for the module
pytestmark = pytest.mark.usefixtures("commands_share_one_pool")


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    return write_training(tmp_path_factory.mktemp("ref") / "dump")


def target(tmp_path, change: Change) -> str:
    return write_training(tmp_path / "target", change)


def every_unit(command: str, ref: str, tgt: str) -> tuple[int, dict]:
    code, out, err = run_here(command, ref, tgt, "--rank", "all", "--step", "all", "--json")
    assert out, err
    return code, json.loads(out)


def story(report: dict) -> tuple[str | None, set, set]:
    """(step, {(rank, op)} born there, {(rank, collective)} reached) of a --rank all document."""
    first = report["first_divergence"]
    if first is None:
        return None, set(), set()
    return (
        first["step"],
        {(f["rank"], f["op"]) for f in first["first"]},
        {(c["rank"], c["reached_at"]) for c in first["carried"]},
    )


def test_the_dataflow_goes_through_views_and_casts_msprobe_does_not_record(reference, tmp_path):
    """linear.0's input is a view of __sub__'s output (another shape); in the bf16 run the GeLU's input is
    the bf16 cast of mul's output and linear.1's input the float32 cast of the GeLU's: all are edges."""
    for root in (reference, target(tmp_path, Change("bf16"))):
        dump = open_dump(root, rank="0", iteration="0")
        source = {op.name: {s: (src.kind, src.ref) for s, src in op.sources.items()} for op in dump.kernels}
        assert source["Functional.linear.0.forward"][0] == ("op", "Tensor.__sub__.0.forward")
        assert source["Functional.linear.0.forward"][1] == ("parameter", "fc1.weight")
        assert source["Functional.gelu.0.forward"][0] == ("op", "Torch.mul.0.forward")
        assert source["Functional.linear.1.forward"][0] == ("op", "Functional.gelu.0.forward")
        # a backward call reads the gradient it is given and what its forward call saved
        assert source["Functional.linear.1.backward"][0] == ("op", "Functional.mse_loss.0.backward")
        assert source["Functional.linear.1.backward"][1] == ("op", "Functional.gelu.0.forward")


def test_scalars_reduce_ops_and_groups_are_attributes(reference):
    dump = open_dump(reference, rank="2", iteration="1")
    attrs = {op.name: dict(op.attrs) for op in dump.kernels}
    assert attrs["Torch.mul.0.forward"] == {"scalar input 1": "0.5"}
    assert attrs["Distributed.all_reduce.0.forward"] == {"op": "SUM", "group": "2,3"}


@pytest.mark.parametrize("command", ["bisect", "compare"])
def test_a_scalar_that_differs_is_the_root_and_its_group_alone_is_reached(reference, tmp_path, command):
    """Rank 2 multiplies by 0.25 at step 1: born there (the scalar named), carried to rank 3 by its group's
    all_reduce; ranks 0 and 1 are in the other group and never reached."""
    code, report = every_unit(command, reference, target(tmp_path, Change("mul_scale", rank=2, step=1)))
    assert code == 1
    step, born, reached = story(report)
    assert step == "1" and born == {("2", "Torch.mul.0.forward")}
    assert reached == {("3", "Distributed.all_reduce.0.forward")}
    unit = next(u for u in report["units"] if u["rank"] == "2" and u["step"] == "1")
    culprit = unit["report"]["culprit"] if command == "bisect" else unit["report"]["roots"][0]
    assert "scalar input 1" in json.dumps(culprit) and "0.25" in json.dumps(culprit)


@pytest.mark.parametrize("command", ["bisect", "compare"])
def test_another_reduce_op_in_one_group_is_concurrent_there_and_nowhere_else(reference, tmp_path, command):
    code, report = every_unit(command, reference, target(tmp_path, Change("reduce_max", rank=0, step=0)))
    assert code == 1
    step, born, reached = story(report)
    assert step == "0"
    assert born == {(str(r), "Distributed.all_reduce.0.forward") for r in GROUPS[0]}
    assert report["first_divergence"]["concurrent"] and not reached
    unit = next(u for u in report["units"] if u["rank"] == "0" and u["step"] == "0")
    assert "MAX" in json.dumps(unit["report"])


@pytest.mark.parametrize("command", ["bisect", "compare"])
def test_a_backward_seed_is_the_root_not_its_consumers(reference, tmp_path, command):
    """The doubled gradient enters at mse_loss's backward: its output differs while what it was given (the
    seed it records as input) differs too, so the root is that call; no other call of rank 1 is a root
    (before the backward inputs were read, each said 'inputs agree exactly: gain x inf')."""
    code, report = every_unit(command, reference, target(tmp_path, Change("grad_seed", rank=1, step=0)))
    assert code == 1
    step, born, reached = story(report)
    assert step == "0" and born == {("1", "Functional.mse_loss.0.backward")}
    assert reached == {("0", "Distributed.all_reduce.0.forward")}
    unit = next(u for u in report["units"] if u["rank"] == "1" and u["step"] == "0")
    roots = unit["report"]["roots"]
    assert {r["ref"] if "ref" in r else r["name"] for r in roots} == {"Functional.mse_loss.0.backward"}


@pytest.mark.parametrize("command", ["bisect", "compare"])
def test_bf16_everywhere_is_benign_at_every_step(reference, tmp_path, command):
    """Every step differs (bf16 GeLU) and the weights of later steps were updated with that: no root."""
    code, report = every_unit(command, reference, target(tmp_path, Change("bf16")))
    assert story(report) == (None, set(), set()), report["first_divergence"]
    assert code == 0
    assert len(report["units"]) == WORLD * STEPS


def _scaled_weight(tmp_path, factor: float) -> str:
    """The bf16 run with rank 0's fc2 weight at step 1 scaled by `factor` (all its statistics)."""
    tgt = target(tmp_path, Change("bf16"))
    path = tmp_path / "target" / "step1" / "rank0" / "dump.json"
    doc = json.loads(path.read_text())
    w = doc["data"]["Module.fc2.Linear.forward.0"]["parameters"]["weight"]
    for k in ("Max", "Min", "Mean", "Norm"):
        w[k] *= factor
    path.write_text(json.dumps(doc))
    return tgt


def test_a_weight_within_the_error_of_the_step_before_is_carried(reference, tmp_path):
    """A weight of step 1 that differs beyond any rounding, but by less than what step 0 already carried on
    that rank: the optimizer updated it with step 0's error; said so, and no root."""
    tgt = _scaled_weight(tmp_path, 1.01)
    code, report = every_unit("bisect", reference, tgt)
    assert story(report) == (None, set(), set()) and code == 0
    unit = next(u for u in report["units"] if u["rank"] == "0" and u["step"] == "1")
    checks = {c["name"]: c for c in unit["report"]["preconditions"]["not_equal"]}
    assert checks["fc2.weight"]["status"] == "benign"
    assert checks["fc2.weight"]["detail"].startswith("carried from step 0")


def test_a_weight_beyond_the_error_of_the_step_before_is_a_root(reference, tmp_path):
    """The carried-weights rule has a bound: the weight scaled x1.05 at step 1 (far above what step 0's bf16
    error moves it by) is a root, named as the weight."""
    code, report = every_unit("bisect", reference, _scaled_weight(tmp_path, 1.05))
    assert code == 1
    step, born, _ = story(report)
    assert step == "1" and ("0", "Functional.linear.1.forward") in born
    unit = next(u for u in report["units"] if u["rank"] == "0" and u["step"] == "1")
    assert "fc2.weight" in unit["report"]["culprit"]["why"]


def test_the_forms_users_type(reference, tmp_path):
    """`--rank all` alone covers every step too, `--step all` alone every rank; `--rank all` takes one step's
    folder (msprobe's own compare's form); `info` lists ranks and steps without flags; messages say --step."""
    tgt = target(tmp_path, Change("mul_scale", rank=2, step=1))
    whole = every_unit("bisect", reference, tgt)[1]
    for flags in (["--rank", "all"], ["--step", "all"]):
        code, out, err = run_here("bisect", reference, tgt, *flags, "--json")
        assert code == 1, err
        assert story(json.loads(out)) == story(whole)
        assert len(json.loads(out)["units"]) == WORLD * STEPS
    code, out, err = run_here("bisect", f"{reference}/step1", f"{tgt}/step1", "--rank", "all", "--json")
    assert code == 1, err
    _step, born, reached = story(json.loads(out))
    assert born == {("2", "Torch.mul.0.forward")} and reached == {("3", "Distributed.all_reduce.0.forward")}
    code, text, err = run_here("info", reference)
    assert code == 0, err
    for r in range(WORLD):
        assert f"rank {r}: steps 0, 1, 2" in text
    assert "choose one with --step N" in text and "None" not in text
    code, _out, err = run_here("bisect", reference, tgt, "--rank", "0")
    assert code == 2 and "choose one with --step N" in err
