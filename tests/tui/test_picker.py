"""Several ranks or steps and none chosen: the app opens the ranks x steps picker (not an error per missing
choice). Its cells are the every-unit answer (`bisect --rank all --step all`), filled as each unit is searched,
the first divergence marked and the cursor moved there; Enter opens that unit as `--rank R --step S` does; `U`
brings the picker back. While it is up there is no main screen (no timer for a unit not opened) and the footer
shows the picker's keys only (issue 35, item 4)."""

from __future__ import annotations

import threading

import pytest
from helpers.app import make_app, run, wait_until
from helpers.common import SHARED
from helpers.ms_training import lr_changed_at_step_2
from helpers.msprobe_training import STEPS, WORLD, Change, write_training
from textual import events

from dumptui.present.picker import FIRST_MARK, WAITING, Unit
from dumptui.tui.messages import UnitAnswered, UnitStarted
from dumptui.tui.screens.main import MainScreen
from dumptui.tui.screens.picker import PickerScreen

# the apps of this module share one pool of worker processes (conftest.py), not one spawned per app
pytestmark = pytest.mark.usefixtures("apps_share_one_pool")


@pytest.fixture(scope="module")
def training(tmp_path_factory):
    """4 ranks x 3 steps; rank 1's `torch.mul(h, 0.5)` gets 0.25 at step 1."""
    root = tmp_path_factory.mktemp("picker")
    return write_training(root / "ref"), write_training(root / "target", Change("mul_scale", rank=1, step=1))


def _footer_keys(screen) -> set[str]:
    return {b.action for _node, b, _enabled, _tip in screen.active_bindings.values() if b.show}


def _pick(
    ref: str, target: str, first: Unit, moves: list[str], units: int, burst: bool = False
) -> tuple[Unit, list[str]]:
    """Open the app at 80x24, wait until the picker has every unit's answer (its cursor then on `first`,
    where the divergence was born first), press `moves` and enter (`burst`: all at once, as a terminal sends
    keys typed fast or pasted), wait for that unit's main screen, then `U` back to the picker: (the unit
    opened, what the picker was told, in order)."""
    told: list[str] = []

    def hook(message) -> None:
        if isinstance(message, UnitStarted):
            told.append(f"started {message.unit.label}")
        elif isinstance(message, UnitAnswered):
            told.append(f"answered {message.answer.unit.label}")

    async def go():
        app = make_app(ref, target)
        async with app.run_test(size=(80, 24), message_hook=hook) as pilot:
            await wait_until(lambda: isinstance(app.screen, PickerScreen), what="the picker")
            screen = app.screen
            picker = screen.picker
            # while the picker is up: no unit's screen (no timer runs), the picker's keys only
            assert app.main is None
            assert _footer_keys(screen) == {"open_unit", "quit", "help"}
            await wait_until(lambda: picker.complete, timeout=180, what="every unit searched")
            await pilot.pause()
            assert picker.done == units and WAITING not in {picker.cell(u) for u in picker.choice.common}
            assert picker.first_unit() == first and screen.highlighted() == first
            row, column = picker.position_of(first)
            assert screen.table.get_cell_at((row, column + 1)).plain.startswith(f"{FIRST_MARK} ✗ ")
            if burst:
                row, column = picker.position_of(first)
                step = {"up": (-1, 0), "down": (1, 0), "left": (0, -1), "right": (0, 1)}
                for key in moves:
                    row, column = row + step[key][0], column + step[key][1]
                chosen = picker.unit_at(row, column)
                for key in [*moves, "enter"]:  # queued together: none handled before the next arrives
                    app.post_message(events.Key(key, "\r" if key == "enter" else None))
            else:
                for key in moves:
                    await pilot.press(key)
                chosen = screen.highlighted()
                await pilot.press("enter")
            await wait_until(lambda: isinstance(app.screen, MainScreen), what="the unit opened")
            main = app.screen
            opened = Unit(main.options.rank, main.options.iteration)
            assert opened == chosen and main.key_context().picked
            await wait_until(lambda: main.model is not None, timeout=120, what="the unit indexed")
            assert main.status.unit == chosen.label  # the status line says which unit is open
            assert "pick_unit" in _footer_keys(main)
            await pilot.press("U")
            await wait_until(lambda: app.screen is screen, what="the picker again")
            assert app.main is None and picker.done == units  # the answers kept: not searched again
            return opened

    return run(go()), told


def test_the_table_fills_enter_opens_a_unit_and_u_comes_back(training):
    ref, target = training
    opened, told = _pick(ref, target, Unit("1", "1"), ["up"], WORLD * STEPS)
    assert opened == Unit("0", "1")  # one rank above the first divergence
    every = [Unit(str(r), str(s)) for s in range(STEPS) for r in range(WORLD)]
    assert told == [f"{kind} {u.label}" for u in every for kind in ("started", "answered")]


def test_the_first_divergence_opens_with_enter_alone(training):
    ref, target = training
    opened, _told = _pick(ref, target, Unit("1", "1"), [], WORLD * STEPS)
    assert opened == Unit("1", "1")


def test_keys_typed_in_one_burst_open_the_cell_they_lead_to(training):
    """Enter is a priority binding: it must not overtake the arrow keys still queued for the table."""
    ref, target = training
    opened, _told = _pick(ref, target, Unit("1", "1"), ["up", "right"], WORLD * STEPS, burst=True)
    assert opened == Unit("0", "2")


def test_the_picker_on_the_multi_rank_fixture():
    pair = SHARED / "msprobe-26.2-ranks-tp2" / "dumps" / "tp2_tensor_mix"
    if not pair.is_dir():
        pytest.skip(f"{pair} is absent (a clone without ../shared): the generated pair above covers the picker")
    # ground_truth.json: born at step 0 on rank 1 (its weight shard); 2 ranks x 3 steps
    opened, _told = _pick(str(pair / "ref"), str(pair / "shard_r1"), Unit("1", "0"), ["up", "right"], 6)
    assert opened == Unit("0", "1")


def test_the_steps_of_a_mindspore_training_run(tmp_path):
    """One rank, three iterations (MindSpore's rank_0/Net/0/<iteration>), the learning rate changed at 2."""
    ref, target = lr_changed_at_step_2(tmp_path)
    opened, told = _pick(str(ref), str(target), Unit("0", "2"), ["left"], STEPS)
    assert opened == Unit("0", "1")
    assert told == [f"{kind} rank 0, step {s}" for s in range(STEPS) for kind in ("started", "answered")]


def test_quitting_while_the_search_runs_stops_it_before_its_next_unit(training, monkeypatch):
    from dumptui.present import picker as picking

    searched: list[str] = []
    real = picking.search_unit

    def counted(options, unit, *args, **kwargs):
        searched.append(unit.label)
        return real(options, unit, *args, **kwargs)

    monkeypatch.setattr(picking, "search_unit", counted)
    ref, target = training

    async def go():
        app = make_app(ref, target)
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_until(lambda: isinstance(app.screen, PickerScreen), what="the picker")
            screen = app.screen
            await wait_until(lambda: screen.picker.searching is not None, what="a unit searched")
            await pilot.press("q")
        return app, screen

    app, screen = run(go())
    assert app.return_code == 0 and screen.stop.is_set()
    at_quit = len(searched)
    for thread in threading.enumerate():
        if thread.name == "dumptui-every-unit":
            thread.join(120)
            assert not thread.is_alive()
    assert len(searched) <= at_quit + 1 < WORLD * STEPS  # the unit under way ends; no other starts


def test_a_unit_that_cannot_be_read_is_said_so_and_enter_on_it_comes_back(tmp_path, training):
    """A damaged rank: its cell says unreadable; opened anyway, the open error's dialog goes back to the
    picker (not out of the app)."""
    from dumptui.present.picker import UNREADABLE
    from dumptui.tui.screens.error import OpenErrorScreen

    ref, _target = training
    target = write_training(tmp_path / "target", Change("mul_scale", rank=1, step=1))
    (tmp_path / "target" / "step0" / "rank0" / "dump.json").write_text("{ not json")

    async def go():
        app = make_app(ref, target)
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_until(lambda: isinstance(app.screen, PickerScreen), what="the picker")
            screen = app.screen
            await wait_until(lambda: screen.picker.complete, timeout=180, what="every unit searched")
            damaged = Unit("0", "0")
            assert screen.picker.state(damaged) == UNREADABLE and "unreadable" in screen.picker.cell(damaged)
            row, column = screen.picker.position_of(damaged)
            screen.table.move_cursor(row=row, column=column + 1)
            await pilot.pause()
            assert "dump.json" in screen.picker.describe(damaged)
            await pilot.press("enter")
            await wait_until(lambda: isinstance(app.screen, OpenErrorScreen), timeout=60, what="the open error")
            assert app.screen.back
            await pilot.press("enter")
            await wait_until(lambda: app.screen is screen, what="the picker again")
            assert app.main is None and app.return_code is None  # still running: not quit with exit 2

    run(go())


def test_help_on_the_picker_dims_the_keys_of_a_unit_not_opened(training):
    ref, target = training

    async def go():
        app = make_app(ref, target)
        async with app.run_test(size=(80, 24)):
            await wait_until(lambda: isinstance(app.screen, PickerScreen), what="the picker")
            rows = {bid: ok for _title, section in app.help_sections() for _keys, _desc, bid, ok in section if bid}
            assert rows["picker.open"] and rows["app.quit"] and rows["app.help"]
            assert not rows["bisect.accept"] and not rows["nav.search"] and not rows["nav.units"]

    run(go())
