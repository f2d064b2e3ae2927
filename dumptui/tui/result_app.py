"""`dumptui open-result FILE`: an msprobe result in the terminal, as its own small app (it shares nothing with
the dump-pair app but the styles): the rows as a tree by op, the selected row's every column, sorting, and a
jump to the first failing row in execution order. The model is present/msprobe_result.py."""

from __future__ import annotations

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.widgets import Footer, Header, Static, Tree
from textual.widgets.tree import TreeNode

from dumptui.present import msprobe_result as pm
from dumptui.report.fmt import clean
from dumptui.report.msprobe_read import MsprobeResult, ResultRow


class ResultApp(App[None]):
    TITLE = "dumptui open-result"
    CSS = """
    #rows { width: 3fr; }
    #detail { width: 2fr; border-left: solid $primary; padding: 0 1; overflow-y: auto; }
    #headline { height: auto; padding: 0 1; }
    """
    BINDINGS = [
        Binding("f", "first_failing", "First failing"),
        Binding("n", "next_failing", "Next failing"),
        Binding("s", "sort", "Sort"),
        Binding("q", "quit", "Quit"),
    ]

    def __init__(self, result: MsprobeResult):
        super().__init__()
        self.result = result
        self.sort = pm.SORTS[0]
        self.leaves: dict[int, TreeNode[ResultRow]] = {}  # row index -> its tree node

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(id="headline")
        with Horizontal():
            yield Tree[ResultRow]("ops", id="rows")
            yield Static(id="detail")
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
            node = tree.root.add(Text(clean(g.op), style="bold red" if g.failing else ""), expand=g.failing)
            for r in g.rows:
                label = Text(clean(pm.row_summary(r, self.result.header)), style="red" if r.failing else "")
                self.leaves[r.index] = node.add_leaf(label, data=r)
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

    def action_first_failing(self) -> None:
        first = self.result.first_failing()
        if first is not None:
            self.show(first)

    def action_next_failing(self) -> None:
        failing = sorted((r for r in self.result.rows if r.failing), key=lambda r: r.order)
        if not failing:
            return
        current = self.rows_tree.cursor_node.data if self.rows_tree.cursor_node is not None else None
        after = [r for r in failing if current is None or r.order > current.order]
        self.show(after[0] if after else failing[0])

    def action_sort(self) -> None:
        current = self.rows_tree.cursor_node.data if self.rows_tree.cursor_node is not None else None
        self.sort = pm.next_sort(self.sort)
        self.rebuild()
        if current is not None:
            self.show(current)


def run_result_app(result: MsprobeResult) -> int:
    ResultApp(result).run()
    return 0
