"""Several ranks or steps and none chosen: the app opens the ranks x steps picker (not an error per missing
choice). Its rows are the every-unit answer (`bisect --rank all --step all`), filled as each unit is searched,
the first divergence marked; Enter opens that unit as `--rank R --step S` does; `U` brings the picker back."""

from __future__ import annotations

import json

import pytest
from helpers.app import make_app, run, wait_until
from helpers.common import SHARED, run_cli
from helpers.msprobe_training import Change, write_training

from dumptui.options.pair import PairOptions
from dumptui.present.picker import UnitPicker, wants_picker
from dumptui.tui.screens.main import MainScreen
from dumptui.tui.screens.picker import PickerScreen


@pytest.fixture(scope="module")
def training(tmp_path_factory):
    root = tmp_path_factory.mktemp("picker")
    return write_training(root / "ref"), write_training(root / "target", Change("mul_scale", rank=1, step=1))


def _headless(ref: str, target: str) -> dict:
    code, out, err = run_cli("bisect", ref, target, "--rank", "all", "--step", "all", "--json", "-")
    assert code == 1, err
    return json.loads(out)


def test_the_picker_is_wanted_only_when_a_choice_is_missing(training, demo_pair):
    ref, target = training
    assert wants_picker(PairOptions(ref=ref, target=target))
    assert not wants_picker(PairOptions(ref=ref, target=target, rank="1", iteration="0"))
    assert not wants_picker(PairOptions(ref=demo_pair.ref, target=demo_pair.target))  # one unit: no choice


def test_the_pickers_rows_are_the_every_unit_answer(training):
    ref, target = training
    picker = UnitPicker(PairOptions(ref=ref, target=target), cache=False)
    seen = []
    picker.search(seen.append)
    every = _headless(ref, target)
    assert picker.done == len(picker.common) == len(every["units"]) == 12 and seen  # each row said as it changed
    for unit in every["units"]:
        row = next(r for r in picker.rows.values() if (r.unit.rank, r.unit.step) == (unit["rank"], unit["step"]))
        roots = unit["report"]["roots"]
        if roots:
            assert row.state == "diverged" and row.first_root.startswith(f"#{roots[0]['position']} {roots[0]['ref']}")
            assert row.why == roots[0]["why"]
        else:
            assert row.state == "no divergence" and row.first_root == "-"
    firsts = [(r.unit.rank, r.unit.step) for r in picker.rows.values() if r.first]
    first = every["first_divergence"]
    assert firsts == [(f["rank"], first["step"]) for f in first["first"]] == [("1", "1")]


def _pick(ref: str, target: str, rows_down: int) -> tuple[str | None, str | None, bool]:
    """Open the app, wait for the picker to fill, open the unit `rows_down` below the first divergence, then
    `U` back to the picker: (the unit's rank, its step, whether the picker came back)."""

    async def go():
        app = make_app(ref, target)
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_until(lambda: isinstance(app.screen, PickerScreen), what="the picker")
            picker = app.screen.picker
            await wait_until(lambda: picker.result is not None, timeout=180, what="every unit searched")
            await pilot.pause()
            for _ in range(rows_down):
                await pilot.press("down")
            await pilot.press("enter")
            await wait_until(lambda: isinstance(app.screen, MainScreen), what="the unit opened")
            opened = app.screen.options.rank, app.screen.options.iteration
            await wait_until(lambda: app.screen.model is not None, timeout=120, what="the unit indexed")
            await pilot.press("U")
            await wait_until(lambda: isinstance(app.screen, PickerScreen), what="the picker again")
            return (*opened, app.screen.picker is picker)

    return run(go())


def test_enter_opens_the_first_divergence_and_u_comes_back(training):
    ref, target = training
    rank, step, back = _pick(ref, target, 0)  # the cursor starts on the first divergence
    assert (rank, step) == ("1", "1") and back


def test_the_picker_on_the_multi_rank_fixture():
    pair = SHARED / "msprobe-26.2-ranks-tp2" / "dumps" / "tp2_tensor_mix"
    if not pair.is_dir():
        pytest.skip(f"{pair} is absent (a clone without ../shared): the generated pair above covers the picker")
    rank, step, back = _pick(str(pair / "ref"), str(pair / "shard_r1"), 1)
    assert (rank, step) == ("0", "1") and back  # one row below the first divergence (rank 1, step 0)
