"""The picker of ranks and steps, without Textual: which pairs get one, the every-unit search told unit by
unit (and stopped between units), and the table's words agreeing with `bisect --rank all --step all`
(issue 35, item 4)."""

from __future__ import annotations

import pytest
from helpers.common import json_answer
from helpers.ms_training import lr_changed_at_step_2, one_step
from helpers.msprobe_training import STEPS, WORLD, Change, write_training

from dumptui.options.pair import PairOptions
from dumptui.present.picker import (
    DIVERGED,
    FIRST_MARK,
    SAME,
    SEARCHING,
    WAITING,
    PickerCancelled,
    Unit,
    UnitPicker,
    search_every_unit,
    unit_options,
    units_to_pick,
    wants_picker,
)


@pytest.fixture(scope="module")
def ranks_pair(tmp_path_factory):
    """4 ranks x 3 steps; rank 1's `torch.mul(h, 0.5)` gets 0.25 at step 1."""
    root = tmp_path_factory.mktemp("picker")
    return write_training(root / "ref"), write_training(root / "target", Change("mul_scale", 1, 1))


def searched(options: PairOptions):
    """The picker after the whole search, with what it was told in order."""
    choice = units_to_pick(options)
    assert choice is not None
    picker = UnitPicker(choice)
    told: list[tuple[str, Unit]] = []

    def started(unit):
        told.append(("started", unit))
        picker.started(unit)
        assert picker.state(unit) == SEARCHING

    def answered(answer):
        told.append(("answered", answer.unit))
        picker.answered(answer)

    picker.finished(search_every_unit(options, choice, lambda: False, started, answered))
    return picker, told


def test_a_pair_of_ranks_and_steps_is_searched_unit_by_unit_as_the_headless_run_does(ranks_pair, capsys):
    ref, target = ranks_pair
    options = PairOptions(ref, target)
    picker, told = searched(options)
    units = [Unit(str(r), str(s)) for s in range(STEPS) for r in range(WORLD)]  # step then rank order
    assert told == [(kind, u) for u in units for kind in ("started", "answered")]
    assert picker.ranks == [str(r) for r in range(WORLD)] and picker.steps == [str(s) for s in range(STEPS)]
    assert picker.done == picker.total == WORLD * STEPS and picker.complete

    headless = json_answer(capsys, "bisect", ref, target, "--rank", "all", "--step", "all")
    first = headless["first_divergence"]
    born = {Unit(f["rank"], first["step"]) for f in first["first"]}
    assert picker.first == born == {Unit("1", "1")}
    for entry in headless["units"]:
        unit = Unit(entry["rank"], entry["step"])
        roots = entry["report"]["roots"]
        assert picker.state(unit) == (DIVERGED if roots else SAME), unit
        if roots:  # the first root and its why as the unit's own report says them
            answer = picker.answers[unit]
            assert answer.first_root.startswith(f"#{roots[0]['position']} {roots[0]['ref']}"), unit
            assert answer.root == roots[0]["ref"] and answer.why == roots[0]["why"], unit
    cell = picker.cell(Unit("1", "1"))
    assert cell.startswith(f"{FIRST_MARK} ✗ ") and "mul" in cell
    assert FIRST_MARK not in picker.cell(Unit("0", "1"))
    assert picker.progress().startswith(f"{FIRST_MARK} first divergence: rank 1, step 1: ")
    row, column = picker.position_of(Unit("1", "1"))
    assert picker.unit_at(row, column) == Unit("1", "1") and picker.can_open(Unit("1", "1"))
    chosen = unit_options(options, Unit("1", "1"))
    assert (chosen.rank, chosen.iteration, chosen.ref, chosen.target) == ("1", "1", ref, target)


def test_before_the_search_every_cell_waits_and_the_count_says_so(ranks_pair):
    picker = UnitPicker(units_to_pick(PairOptions(*ranks_pair)))
    assert {picker.cell(picker.unit_at(r, c)) for r in range(WORLD) for c in range(STEPS)} == {WAITING}
    assert picker.progress() == f"searching every rank and step: 0 of {WORLD * STEPS}"
    assert picker.describe(Unit("2", "0")).endswith("waiting · enter opens it now")


def test_the_search_stops_before_the_next_unit_once_cancelled(ranks_pair):
    options = PairOptions(*ranks_pair)
    choice = units_to_pick(options)
    answered: list[Unit] = []
    with pytest.raises(PickerCancelled):
        search_every_unit(
            options, choice, lambda: len(answered) >= 2, lambda u: None, lambda a: answered.append(a.unit)
        )
    assert answered == [Unit("0", "0"), Unit("1", "0")]


def test_steps_of_one_rank_get_a_picker_and_a_chosen_or_single_unit_none(tmp_path, ranks_pair):
    ref, target = lr_changed_at_step_2(tmp_path)
    picker, _told = searched(PairOptions(str(ref), str(target)))
    assert picker.ranks == ["0"] and picker.steps == ["0", "1", "2"]
    assert picker.first == {Unit("0", "2")}
    assert [picker.state(Unit("0", s)) for s in ("0", "1")] == [SAME, SAME]
    # one unit, or a unit chosen on the command line: the main screen opens at once
    assert units_to_pick(PairOptions(*map(str, one_step(tmp_path)))) is None
    assert units_to_pick(PairOptions(*ranks_pair, rank="1")) is None
    assert units_to_pick(PairOptions(*ranks_pair, iteration="2")) is None
    assert units_to_pick(PairOptions(*ranks_pair, ref_rank="0")) is None
    assert wants_picker(PairOptions(*ranks_pair)) and not wants_picker(
        PairOptions(*ranks_pair, rank="1", iteration="0")
    )
