"""`dumptui REF TARGET`: a thin App that pushes the main screen. Launched by `cli/app.py` via `run_app`."""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path
from typing import Any, NoReturn

from textual.app import App
from textual.theme import Theme

from dumptui.options.pair import PairOptions
from dumptui.present import autosave as saved
from dumptui.present.keys import APP, KeyContext
from dumptui.present.picker import units_to_pick
from dumptui.report.fmt import clean_lines
from dumptui.tui import keymap
from dumptui.tui.commands import DumpCommands
from dumptui.tui.keymap import HelpSection
from dumptui.tui.screens.copy import CopyScreen
from dumptui.tui.screens.help import HelpScreen
from dumptui.tui.screens.main import MainScreen
from dumptui.tui.screens.paths import ExportScreen, SaveScreen
from dumptui.tui.screens.picker import PickerScreen
from dumptui.tui.widgets.bisectpanel import BisectPanel
from dumptui.tui.widgets.flatlist import FlatOpList
from dumptui.tui.widgets.opdetail import RelationList, TensorTable
from dumptui.tui.widgets.optree import OpTree
from dumptui.tui.widgets.searchbar import SearchBar

EXIT_INTERRUPTED = 130  # 128 + SIGINT, what bisect and compare give for ctrl+c (headless.py, a layer above)

# The widgets and dialogs with keys of their own, in the help screen's order (after the action table's).
KEYED_WIDGETS = (
    OpTree,
    FlatOpList,
    TensorTable,
    RelationList,
    BisectPanel,
    SearchBar,
    SaveScreen,
    ExportScreen,
    CopyScreen,
    HelpScreen,
)


class DumpTuiApp(App[None]):
    CSS_PATH = Path(__file__).with_name("dumptui.tcss")  # absolute: subclasses elsewhere find it too
    TITLE = "dumptui"

    def notify(self, message: str, *args: Any, **kwargs: Any) -> None:
        """Every toast escaped: its words may hold paths from a session file, and a terminal escape in one
        (an OSC title sequence) was written raw and obeyed."""
        if isinstance(kwargs.get("title"), str):
            kwargs["title"] = clean_lines(kwargs["title"])
        super().notify(clean_lines(message), *args, **kwargs)

    COMMANDS = App.COMMANDS | {DumpCommands}
    MAIN_SCREEN = MainScreen  # a subclass may hook the main screen's events (bench/bench_tui.py)
    BINDINGS = keymap.bindings(APP)

    def __init__(self, options: PairOptions, session_file: str | None = None):
        super().__init__()
        self.options = options
        self.session_file = session_file

    def on_mount(self) -> None:
        theme = saved.read_settings().get("theme")
        if theme and theme in self.available_themes:
            self.theme = theme
        self.theme_changed_signal.subscribe(self, self._save_theme)
        # several ranks or steps and none chosen: the picker first (its table fills as each unit is searched)
        choice = units_to_pick(self.options) if self.session_file is None else None
        if choice is not None:
            self.push_screen(PickerScreen(self.options, choice))
            return
        self.push_screen(self.MAIN_SCREEN(self.options, self.session_file))

    def open_unit(self, options: PairOptions, label: str) -> None:
        """The picker's Enter: that (rank, step) in the main view, as `--rank R --step S` opens it."""
        self.push_screen(self.MAIN_SCREEN(options, picked=True))
        self.notify(f"opening {label}", timeout=3)

    def back_to_picker(self) -> None:
        """`U` in the main view: its unit let go (its worker processes ended), the picker shown again."""
        main = self.main
        if self.picker is None or main is None or self.screen is not main:
            return
        main.controller.close()
        self.pop_screen()

    @property
    def picker(self) -> PickerScreen | None:
        return next((s for s in self.screen_stack if isinstance(s, PickerScreen)), None)

    def _stop_work(self) -> None:
        """Quitting: the main screen's worker processes ended, the picker's search told to stop."""
        main = self.main
        if main is not None:
            main.controller.close()
        picker = self.picker
        if picker is not None:
            picker.stop.set()

    def _save_theme(self, theme: Theme) -> None:
        """The theme chosen (ctrl+p) is the next launch's theme too."""
        try:
            saved.write_settings({"theme": theme.name})
        except OSError as e:
            self.notify(f"settings not saved: {e.filename or ''} {e.strerror or e}", severity="warning", markup=False)

    @property
    def main(self) -> MainScreen | None:
        return next((s for s in self.screen_stack if isinstance(s, MainScreen)), None)

    def help_sections(self) -> list[HelpSection]:
        """Every key of the app, the main screen and its widgets, with whether it is available now (on the
        picker, no unit open: the main screen's keys dimmed)."""
        main = self.main
        context = main.key_context() if main is not None else KeyContext() if self.picker is not None else None
        return keymap.table_sections(self, context) + keymap.widget_sections(self, KEYED_WIDGETS)

    async def action_quit(self) -> None:
        """Quit at once: the worker processes are ended, not waited for (nothing they do is saved work: the
        bisection is autosaved after every mark)."""
        self._stop_work()
        self.exit()

    async def action_interrupt(self) -> None:
        """ctrl+c: quit as `q` does, with the exit code of an interrupted command (130, as bisect and compare
        give): a script that started the app can tell it was interrupted."""
        self._stop_work()
        self.exit(return_code=EXIT_INTERRUPTED)

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(self.help_sections()))


def run_app(options: PairOptions, session_file: str | None = None) -> int:
    """Run the app; the exit code is 2 when the dumps could not be opened, else 0."""
    app = DumpTuiApp(options, session_file)
    app.run()
    return app.return_code or 0


def end_process(code: int) -> NoReturn:
    """End the process once the app has quit, without the interpreter's teardown: freeing a large pair's
    index takes seconds (bench/bench_tui.py), and `q` must return the terminal at once.
    Nothing is lost by it: the bisection is autosaved after every mark, the settings when they change, the
    terminal was restored by the app, the worker processes were ended by `q` (or end with their parent)."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # closed or gone (a browser session's pipe): nothing left to say
            stream.flush()
    os._exit(code)
