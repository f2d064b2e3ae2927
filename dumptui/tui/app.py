"""`dumptui REF TARGET`: a thin App that pushes the main screen. Launched by `cli.cmd_app` via `run_app`."""
from __future__ import annotations

from pathlib import Path

from textual.app import App
from textual.binding import Binding

from ..pairing import PairOptions
from .commands import DumpCommands
from .screens.help import HelpScreen, HelpSection, binding_rows
from .screens.main import MainScreen


class DumpTuiApp(App[None]):
    CSS_PATH = Path(__file__).with_name("dumptui.tcss")   # absolute: subclasses elsewhere find it too
    TITLE = "dumptui"
    COMMANDS = App.COMMANDS | {DumpCommands}
    MAIN_SCREEN = MainScreen          # a subclass may hook the main screen's events (bench/bench_tui.py)
    BINDINGS = [
        Binding("q", "quit", "Quit", id="app.quit"),
        Binding("question_mark", "help", "Help", id="app.help", tooltip="Every key and what it does"),
        Binding("ctrl+p", "command_palette", "Commands", id="app.command_palette", show=False, priority=True,
                tooltip="The command palette: the main actions"),
    ]

    def __init__(self, options: PairOptions, session_file: str | None = None):
        super().__init__()
        self.options = options
        self.session_file = session_file

    def on_mount(self) -> None:
        self.push_screen(self.MAIN_SCREEN(self.options, self.session_file))

    @property
    def main(self) -> MainScreen | None:
        return next((s for s in self.screen_stack if isinstance(s, MainScreen)), None)

    def help_sections(self) -> list[HelpSection]:
        """Every binding of the app, the main screen and its widgets, with whether it is available now."""
        from .screens.paths import ExportScreen, SaveScreen
        from .widgets.bisectpanel import BisectPanel
        from .widgets.flatlist import FlatOpList
        from .widgets.opdetail import RelationList, TensorTable
        from .widgets.optree import OpTree
        from .widgets.searchbar import SearchBar
        main = self.main

        def enabled(b: Binding):
            if main is None or b.action.startswith("app."):
                return True
            name, _, _ = b.action.partition("(")
            return main.check_action(name, ())
        return [
            ("Bisection, navigation, views", binding_rows(self, MainScreen.BINDINGS, enabled)),
            ("Everywhere", binding_rows(self, self.BINDINGS)),
            ("Op tree", binding_rows(self, OpTree.BINDINGS)),
            ("Flat execution-order list", binding_rows(self, FlatOpList.BINDINGS)),
            ("Tensor table (centre)", binding_rows(self, TensorTable.BINDINGS)),
            ("Producers / consumers (centre)", binding_rows(self, RelationList.BINDINGS)),
            ("Bisection panel", binding_rows(self, BisectPanel.BINDINGS)),
            ("Search box", binding_rows(self, SearchBar.BINDINGS)),
            ("Dialogs", binding_rows(self, SaveScreen.BINDINGS + ExportScreen.BINDINGS)),
            ("This help", binding_rows(self, HelpScreen.BINDINGS)),
        ]

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(self.help_sections()))


def run_app(options: PairOptions, session_file: str | None = None) -> int:
    """Run the app; the exit code is 2 when the dumps could not be opened, else 0."""
    app = DumpTuiApp(options, session_file)
    app.run()
    return app.return_code or 0
