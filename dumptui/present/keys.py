"""The one table of the app's commands: each action's id, keys, words, help section, whether the command
palette offers it, and when it is available. The key bindings, the command palette, the help screen and
`check_action` are all derived from it (dumptui/tui/keymap.py), so a command is declared once.

Keys that only move inside one widget (up/down in the tree, a table's columns) stay in that widget's own
BINDINGS: Textual's widgets handle them there, and the help screen reads them from the widget. The top and
bottom of whatever list is focused (`g` / `G`, home / end, as less, vim and lazygit have them) are the table's:
one binding for every list, the help screen's included.

Marking the probe good or bad is `+` / `-`: keys no common pager or TUI gives a frequent meaning (`g` is
"top" in less, vim, lazygit and k9s; `b` is "back a page" in less and "back a word" in vim), read as pass /
fail.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from dumptui.present.driver import BisectCommand, BisectState
from dumptui.present.progress import CANCELLED, DONE, FAILED, RUNNING, WAITING, StatisticsState

SCREEN, APP, PICKER = "screen", "app", "picker"  # where an action is bound and runs: the main screen, the app,
# or the picker of ranks and steps (tui/screens/picker.py)
ALWAYS_SHOWN = ("quit", "help")  # first in the footer, so a narrow terminal never cuts them


@dataclass(frozen=True)
class KeyContext:
    """What decides which commands make sense now: a snapshot of the main screen's state."""

    indexed: bool = False  # both dumps indexed and aligned: the tree has numbers
    bisection_ready: bool = False  # the bisection order is built
    bisect_task: BisectCommand | None = None  # what the bisection worker is doing (None idle, RUN while `a` steps)
    bisection: BisectState | None = None
    statistics: StatisticsState = WAITING  # the full compare
    searching: bool = False  # a `/` search holds a query: n / N walk its matches, escape ends it
    picked: bool = False  # this unit was opened from the ranks x steps picker: `U` goes back to it

    @property
    def idle(self) -> bool:
        """The bisection can take a command."""
        return self.bisection_ready and not self.bisect_task

    @property
    def started(self) -> bool:
        return self.bisection is not None and self.bisection.started


Condition = Callable[[KeyContext], bool]


def _can_accept(c: KeyContext) -> bool:
    return c.idle and (c.bisection is None or not c.bisection.started or c.bisection.can_mark)


def _can_mark(c: KeyContext) -> bool:
    return c.idle and c.bisection is not None and c.bisection.can_mark


def _can_run(c: KeyContext) -> bool:
    return c.idle and (c.bisection is None or not c.bisection.finished)


def _can_undo(c: KeyContext) -> bool:
    return c.idle and c.bisection is not None and c.bisection.can_undo


def _started_and_idle(c: KeyContext) -> bool:
    return c.idle and c.started


def _can_export(c: KeyContext) -> bool:
    return c.idle and c.bisection is not None and c.bisection.started and bool(c.bisection.candidates)


def _indexed(c: KeyContext) -> bool:
    return c.indexed


def _has_probe(c: KeyContext) -> bool:
    return c.bisection is not None and c.bisection.probe is not None and not c.bisection.finished


def _has_culprit(c: KeyContext) -> bool:
    return c.bisection is not None and c.bisection.culprit is not None


def _statistics_done(c: KeyContext) -> bool:
    return c.indexed and c.statistics == DONE


def _searching(c: KeyContext) -> bool:
    return c.indexed and c.searching


def _can_cancel(c: KeyContext) -> bool:
    return c.statistics == RUNNING or c.bisect_task == BisectCommand.RUN


def _can_compute_statistics(c: KeyContext) -> bool:
    return c.indexed and c.statistics in (CANCELLED, FAILED)


@dataclass(frozen=True)
class Action:
    id: str  # the binding id: users remap keys by it
    action: str  # what runs, as Textual writes it: "mark('good')", "app.help"
    keys: str  # Textual key names, comma-separated; "" = from the command palette only
    label: str  # short, for the footer
    help: str  # one line, for the help screen and the command palette
    section: str  # the help screen's section
    palette: str = ""  # the command palette's title; "" = not offered there
    footer: bool = False  # shown in the footer
    when: Condition | None = None  # available only then; None = always
    on: str = SCREEN  # bound on the main screen, or on the app (available on every screen)
    priority: bool = False  # before the focused widget's own bindings
    # Not shown at all (footer, key dispatch) while unavailable, so the next binding of the same key answers
    # it: `n` walks the search's matches while a search is active, the diverged ops otherwise.
    hidden: bool = False

    @property
    def name(self) -> str:
        """The action's name as `check_action` receives it: `mark`, not `mark('good')`."""
        return self.action.partition("(")[0]

    @property
    def qualified(self) -> str:
        """The action as run from anywhere (the command palette): an app action with its `app.` namespace."""
        return f"app.{self.action}" if self.on == APP else self.action


def waiting_for(key: str, context: KeyContext) -> Action | None:
    """The bisection command bound to `key` when it waits for the bisection to be ready (the app answers
    "not ready: ..." instead of ignoring the key); None for any other key or state."""
    if context.idle:
        return None
    for a in ACTIONS:
        if a.on == SCREEN and a.id.startswith("bisect.") and key in a.keys.split(","):
            return a
    return None


BISECTION = "Bisection, navigation, views"
RANKS_AND_STEPS = "Ranks and steps (a pair with several)"
EVERYWHERE = "Everywhere"

ACTIONS: tuple[Action, ...] = (
    Action(
        "bisect.accept",
        "accept",
        "space",
        "Accept",
        "Accept the engine's verdict for the probe (starts the bisection if needed)",
        BISECTION,
        palette="Bisection: start / accept the computed verdict",
        footer=True,
        when=_can_accept,
    ),
    Action(
        "bisect.good",
        "mark('good')",
        "plus",
        "Good",
        "Mark the probe good (overrule)",
        BISECTION,
        palette="Bisection: mark the probe good",
        footer=True,
        when=_can_mark,
    ),
    Action(
        "bisect.bad",
        "mark('bad')",
        "minus",
        "Bad",
        "Mark the probe bad (overrule)",
        BISECTION,
        palette="Bisection: mark the probe bad",
        footer=True,
        when=_can_mark,
    ),
    Action(
        "bisect.run",
        "run_all",
        "a",
        "Run all",
        "Run the bisection to the end with the computed verdicts (escape stops)",
        BISECTION,
        palette="Bisection: run to the end",
        footer=True,
        when=_can_run,
    ),
    Action(
        "bisect.undo",
        "undo",
        "u",
        "Undo",
        "Undo the last mark",
        BISECTION,
        palette="Bisection: undo the last mark",
        footer=True,
        when=_can_undo,
    ),
    Action(
        "bisect.reset",
        "reset",
        "r",
        "Reset",
        "Start the bisection over (u brings the marks back)",
        BISECTION,
        palette="Bisection: start over",
        when=_started_and_idle,
    ),
    Action(
        "session.save",
        "save",
        "S",
        "Save",
        "Save the session (resume: dumptui REF TARGET --session FILE)",
        BISECTION,
        palette="Save the bisection session",
        when=_started_and_idle,
    ),
    Action(
        "bisect.export",
        "export",
        "e",
        "Export",
        "Export a MindSpore re-dump config (data_dump.json) for the current interval",
        BISECTION,
        palette="Export a re-dump config (data_dump.json) for the interval",
        when=_can_export,
    ),
    Action(
        "export.remedy",
        "export_remedy",
        "R",
        "Remedy",
        "Write the remedy of the culprits: precision (keep_dtype.cfg, op_precision.ini, converter_ascend.cfg, to_float32.py) or the op",
        BISECTION,
        palette="Export the remedy of the culprits (keep fp32, or the op)",
        when=_has_culprit,
    ),
    Action(
        "nav.units",
        "pick_unit",
        "U",
        "Units",
        "Back to the ranks x steps picker (several ranks or steps, none chosen): enter there opens another",
        BISECTION,
        palette="Choose another rank and step",
        footer=True,
        when=lambda c: c.picked,
        hidden=True,
    ),
    Action(
        "export.report",
        "export_report",
        "W",
        "Report",
        "Write the report to share: one HTML page (the answer, its proof, the error plot), as `dumptui report`",
        BISECTION,
        palette="Write the report (one HTML page to share)",
        when=_statistics_done,
    ),
    Action(
        "export.csv",
        "export_csv",
        "x",
        "CSV",
        "Export every compared tensor pair as CSV (the Ascend tools' columns, with the local error)",
        BISECTION,
        palette="Export the comparison as CSV",
        when=_statistics_done,
    ),
    Action(
        "nav.search",
        "search",
        "slash",
        "Search",
        "Search ops by name or type (type:Conv2D for that type only)",
        BISECTION,
        palette="Search ops by name or type",
        when=_indexed,
    ),
    Action(
        "search.next",
        "search_next",
        "n",
        "Next match",
        "Next match of the search (while a search is active; escape ends it, n is the next diverged op again)",
        BISECTION,
        footer=True,
        when=_searching,
        hidden=True,
    ),
    Action(
        "search.previous",
        "search_previous",
        "N",
        "Prev match",
        "Previous match of the search (while a search is active)",
        BISECTION,
        footer=True,
        when=_searching,
        hidden=True,
    ),
    Action(
        "search.end",
        "end_search",
        "escape",
        "End search",
        "End the search: clear the query, n / N walk the diverged ops again",
        BISECTION,
        footer=True,
        when=_searching,
        hidden=True,
    ),
    Action(
        "nav.first",
        "first",
        "g,home",
        "Top",
        "Go to the top of the focused list or pane (op tree, flat list, tensors, producers / consumers, bisection)",
        BISECTION,
    ),
    Action(
        "nav.last",
        "last",
        "G,end",
        "Bottom",
        "Go to the bottom of the focused list or pane",
        BISECTION,
    ),
    Action(
        "nav.probe",
        "goto_probe",
        "p",
        "Probe",
        "Go to the probe",
        BISECTION,
        palette="Go to the probe",
        when=_has_probe,
    ),
    Action(
        "nav.culprit",
        "goto_culprit",
        "c",
        "Culprit",
        "Go to the culprit",
        BISECTION,
        palette="Go to the culprit",
        when=_has_culprit,
    ),
    Action(
        "nav.next_root",
        "next_root",
        "o",
        "Next root",
        "Go to the next root of divergence (the culprit, then the other roots, in execution order)",
        BISECTION,
        palette="Go to the next root of divergence",
        when=_has_culprit,
    ),
    Action(
        "nav.next_diverged",
        "next_diverged",
        "n",
        "Next ✗",
        "Next diverged op",
        BISECTION,
        palette="Go to the next diverged op",
        when=_indexed,
    ),
    Action(
        "nav.previous_diverged",
        "previous_diverged",
        "N",
        "Prev ✗",
        "Previous diverged op",
        BISECTION,
        palette="Go to the previous diverged op",
        when=_indexed,
    ),
    Action(
        "view.only_diverged",
        "only_diverged",
        "f",
        "Only ✗",
        "Show only diverged ops (toggle)",
        BISECTION,
        palette="View: only diverged ops (toggle)",
        when=_indexed,
    ),
    Action(
        "view.toggle",
        "toggle_view",
        "t",
        "Tree/flat",
        "Toggle the op tree and the flat execution-order list",
        BISECTION,
        palette="View: toggle tree / flat execution-order list",
        when=_indexed,
    ),
    Action(
        "view.zoom",
        "zoom",
        "z",
        "Zoom",
        "Give the focused pane the whole screen (z again: back)",
        BISECTION,
        palette="View: zoom the focused pane (toggle)",
    ),
    Action(
        "edit.copy",
        "copy",
        "y",
        "Copy",
        "Copy the op's name, a tensor's file path or a value (OSC 52: the terminal's clipboard, also over SSH)",
        BISECTION,
        palette="Copy a name, a path or a value",
        when=_indexed,
    ),
    Action("focus.next", "app.focus_next", "tab", "Next pane", "Move the focus to the next pane", BISECTION),
    Action(
        "focus.previous",
        "app.focus_previous",
        "shift+tab",
        "Previous pane",
        "Move the focus to the previous pane",
        BISECTION,
    ),
    Action(
        "work.cancel",
        "cancel",
        "escape",
        "Cancel",
        "Cancel the background statistics / stop a running bisection",
        BISECTION,
        palette="Cancel the background work",
        when=_can_cancel,
    ),
    Action(
        "work.compute_statistics",
        "compute_statistics",
        "",
        "Compute statistics",
        "Compute every tensor pair's statistics again (after a cancel or an error)",
        BISECTION,
        palette="Compute all statistics (after a cancel)",
        when=_can_compute_statistics,
    ),
    Action(
        "picker.open",
        "open_unit",
        "enter",
        "Open",
        "Open the highlighted rank and step in the main view (in the picker)",
        RANKS_AND_STEPS,
        footer=True,
        on=PICKER,
    ),
    Action(
        "app.quit",
        "quit",
        "q",
        "Quit",
        "Quit at once (nothing to confirm: the bisection is autosaved after every mark)",
        EVERYWHERE,
        footer=True,
        on=APP,
    ),
    Action(
        "app.interrupt",
        "interrupt",
        "ctrl+c",
        "Interrupt",
        "Quit as an interrupted command does (exit code 130, as ctrl+c ends bisect and compare)",
        EVERYWHERE,
        on=APP,
        priority=True,
    ),
    Action(
        "app.help",
        "help",
        "question_mark",
        "Help",
        "Every key and what it does",
        EVERYWHERE,
        palette="Help: every key",
        footer=True,
        on=APP,
    ),
    Action(
        "app.command_palette",
        "command_palette",
        "ctrl+p",
        "Commands",
        "The command palette: the main actions, and the theme",
        EVERYWHERE,
        on=APP,
        priority=True,
    ),
)

_BY_NAME = {(a.on, a.name): a for a in ACTIONS}
_OF_THE_MOMENT = frozenset(a.action for a in ACTIONS if a.hidden)


def actions_on(on: str) -> list[Action]:
    """The actions bound on the main screen (`SCREEN`), the app (`APP`) or the picker (`PICKER`), in the
    table's order."""
    return [a for a in ACTIONS if a.on == on]


def by_id(action_id: str) -> Action:
    """The table's action of that id (the help screen binds `nav.first` / `nav.last` too)."""
    return next(a for a in ACTIONS if a.id == action_id)


def action_named(name: str, on: str = SCREEN) -> Action | None:
    return _BY_NAME.get((on, name))


def available(action: Action, context: KeyContext) -> bool:
    return action.when is None or action.when(context)


def state(action: Action, context: KeyContext) -> bool | None:
    """What Textual's `check_action` answers: True available; None shown dimmed; False not there at all (a
    `hidden` action, so the key's next binding answers)."""
    if available(action, context):
        return True
    return False if action.hidden else None


def footer_rank(action: str) -> int:
    """Where a footer key goes (`action` as a binding names it): q and ? first, never cut on a narrow
    terminal; then the keys of the moment (a `hidden` action is on show only while it applies: the search's
    n / N / escape); then the rest in the table's order."""
    if action in ALWAYS_SHOWN:
        return 0
    return 1 if action in _OF_THE_MOMENT else 2


def available_now(context: KeyContext) -> frozenset[str]:
    """The ids of every action available in `context` (what the footer and the help dim by)."""
    return frozenset(a.id for a in ACTIONS if available(a, context))


def palette(context: KeyContext) -> list[Action]:
    """What the command palette offers now: the available actions that have a palette title."""
    return [a for a in ACTIONS if a.palette and available(a, context)]


def sections() -> list[tuple[str, list[Action]]]:
    """The help screen's sections of the table, in order of first appearance."""
    out: dict[str, list[Action]] = {}
    for a in ACTIONS:
        out.setdefault(a.section, []).append(a)
    return list(out.items())
