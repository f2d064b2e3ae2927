"""`dumptui open-result FILE`: an msprobe result in the terminal, as its own small app: the rows as a tree by op,
marked as the dump-pair app marks ops (✗ failing, ≈ passing: never by colour alone), the selected row's every
column, sorting, a jump to the first failing row in execution order, `/` search, `?` help and the command
palette with these commands. The model is present/msprobe_result.py."""

from __future__ import annotations

from functools import partial
from typing import ClassVar

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.containers import Horizontal
from textual.widgets import Footer, Header, Static, Tree
from textual.widgets.tree import TreeNode

from dumptui.present import msprobe_result as pm
from dumptui.present.types import Verdict
from dumptui.report.fmt import clean
from dumptui.report.looks import mark
from dumptui.report.msprobe_read import MsprobeResult, ResultRow
from dumptui.tui.keymap import binding_rows, widget_sections
from dumptui.tui.screens.help import HelpScreen
from dumptui.tui.widgets.searchbar import SearchBar

FAILING, PASSING = mark(Verdict.DIVERGED), mark(Verdict.CLOSE)
RESULT_MARKS = [
    (FAILING, "a row msprobe's Result column fails (or an op holding such rows)"),
    (PASSING, "a row that passes"),
]


RESULT_BINDINGS: list[Binding] = [
    Binding("f", "first_failing", "First failing", tooltip="the first failing row in execution order"),
    Binding("n", "next_failing", "Next failing", tooltip="the next failing row in execution order"),
    Binding("s", "sort", "Sort", tooltip="sort the ops by order, name, cosine or error"),
    Binding("slash", "search", "Search", tooltip="find rows by op or tensor name"),
    Binding("question_mark", "help", "Help", tooltip="every key and mark"),
    Binding("q,ctrl+c", "quit", "Quit", tooltip="leave"),
]


class ResultCommands(Provider):
    """The command palette (ctrl+p): the app's own commands, with their keys."""

    def commands(self) -> list[tuple[str, str, object]]:
        app = self.app
        out: list[tuple[str, str, object]] = []
        for b in RESULT_BINDINGS:
            if b.action in ("quit", "help") or not b.description:
                continue
            out.append(
                (b.description, f"{b.tooltip} · key {app.get_key_display(b)}", partial(app.run_action, b.action))
            )
        return out

    async def discover(self) -> Hits:
        for title, help_text, callback in self.commands():
            yield DiscoveryHit(title, callback, text=title, help=help_text)  # type: ignore[arg-type]

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for title, help_text, callback in self.commands():
            score = matcher.match(title)
            if score > 0:
                yield Hit(score, matcher.highlight(title), callback, text=title, help=help_text)  # type: ignore[arg-type]


class ResultApp(App[None]):
    TITLE = "dumptui open-result"
    CSS = """
    #rows { width: 3fr; }
    #detail { width: 2fr; border-left: solid $primary; padding: 0 1; overflow-y: auto; }
    #headline { height: auto; padding: 0 1; }
    #search { dock: bottom; }
    """
    HELP_SECTION = "open-result"
    BINDINGS: ClassVar[list[BindingType]] = list(RESULT_BINDINGS)
    COMMANDS = App.COMMANDS | {ResultCommands}
    AUTO_FOCUS = "#rows"  # the rows take the keys, never the (hidden) search box

    def __init__(self, result: MsprobeResult):
        super().__init__()
        self.result = result
        self.sort = pm.SORTS[0]
        self.leaves: dict[int, TreeNode[ResultRow]] = {}  # row index -> its tree node
        self.search_matches = 0

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(id="headline")
        with Horizontal():
            yield Tree[ResultRow]("ops", id="rows")
            yield Static(id="detail")
        yield SearchBar(id="search")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = clean(self.result.path)
        self.rebuild()
        self.call_after_refresh(self.action_first_failing)

    @property
    def rows_tree(self) -> Tree[ResultRow]:
        return self.query_one("#rows", Tree)

    def rebuild(self) -> None:
        tree = self.rows_tree
        tree.clear()
        tree.root.set_label(f"{len(self.result.rows)} rows by op, sorted by {self.sort.label}")
        tree.root.expand()
        self.leaves = {}
        for g in pm.group(self.result, self.sort):
            failing = sum(1 for r in g.rows if r.failing)
            label = Text.assemble(
                (f"{FAILING if g.failing else PASSING} ", "bold red" if g.failing else ""),
                (clean(g.op), "bold red" if g.failing else ""),
                (f" {failing}{FAILING}" if failing else "", "red"),
            )
            node = tree.root.add(label, expand=g.failing)
            for r in g.rows:
                mark = FAILING if r.failing else PASSING
                text = Text(f"{mark} {clean(pm.row_summary(r, self.result.header))}", style="red" if r.failing else "")
                self.leaves[r.index] = node.add_leaf(text, data=r)
        self.query_one("#headline", Static).update(
            Text(clean(pm.headline(self.result)) + "".join(f"\nnote: {clean(n)}" for n in self.result.notes))
        )

    def show(self, row: ResultRow) -> None:
        """Put the cursor on a row; its op is expanded first, and the tree lays out the new lines before the
        cursor can land there."""
        node = self.leaves[row.index]
        if node.parent is not None:
            node.parent.expand()
        self.call_after_refresh(self._move_to, node)

    def _move_to(self, node: TreeNode[ResultRow]) -> None:
        self.rows_tree.move_cursor(node)
        self.rows_tree.scroll_to_node(node)

    def on_tree_node_highlighted(self, event: Tree.NodeHighlighted[ResultRow]) -> None:
        row = event.node.data
        detail = self.query_one("#detail", Static)
        if row is None:
            detail.update("")
            return
        text = Text()
        for col, value in pm.detail_lines(row, self.result.header):
            text.append(f"{col}: ", style="bold")
            text.append(clean(value) + "\n")
        if not row.reachable:
            text.append("(the dump is not reachable from here)", style="dim")
        detail.update(text)

    def _current(self) -> ResultRow | None:
        node = self.rows_tree.cursor_node
        return node.data if node is not None else None

    def action_first_failing(self) -> None:
        first = self.result.first_failing()
        if first is not None:
            self.show(first)

    def action_next_failing(self) -> None:
        failing = sorted((r for r in self.result.rows if r.failing), key=lambda r: r.order)
        if not failing:
            return
        current = self._current()
        after = [r for r in failing if current is None or r.order > current.order]
        self.show(after[0] if after else failing[0])

    def action_sort(self) -> None:
        current = self._current()
        self.sort = pm.next_sort(self.sort)
        self.rebuild()
        if current is not None:
            self.show(current)

    # ------------------------------------------------------------------ / search
    def action_search(self) -> None:
        self.query_one(SearchBar).open(counted=self.rows_tree)

    def on_search_bar_query(self, msg: SearchBar.Query) -> None:
        current = self._current()
        row = pm.find_row(self.result, msg.text, current.order if current else None, msg.forward, msg.inclusive)
        self.search_matches = pm.count_rows(self.result, msg.text)
        self.query_one(SearchBar).show_matches(self.search_matches if msg.text.strip() else None)
        if row is not None:
            self.show(row)

    def on_search_bar_left(self, _msg: SearchBar.Left) -> None:
        """enter: the row found stays selected and the rows have the keys (n is the next failing row here)."""
        self.query_one(SearchBar).clear()
        self.rows_tree.focus()

    def on_search_bar_closed(self, _msg: SearchBar.Closed) -> None:
        self.rows_tree.focus()

    # ------------------------------------------------------------------ ? help
    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            sections = [("open-result", binding_rows(self, RESULT_BINDINGS)), *widget_sections(self, [SearchBar])]
            self.push_screen(HelpScreen(sections, marks=RESULT_MARKS))


def run_result_app(result: MsprobeResult) -> int:
    ResultApp(result).run()
    return 0
