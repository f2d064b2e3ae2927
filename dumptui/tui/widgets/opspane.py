"""The main screen's left pane: the marks legend, the op tree or the flat list in execution order (one shown at
a time), and the `/` search box; its title says which list and which filter are on show."""

from __future__ import annotations

from collections.abc import Iterable

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.reactive import var
from textual.widgets import ContentSwitcher, Static

from dumptui.present.labels import legend_lines
from dumptui.present.tree import Folder, OpTreeModel
from dumptui.tui.styles import ThemeStyles
from dumptui.tui.widgets.flatlist import FlatOpList
from dumptui.tui.widgets.optree import OpTree
from dumptui.tui.widgets.searchbar import SearchBar

TALL_SCREEN = 36  # rows from which the legend takes two lines


class OpsPane(Vertical):
    # bound to the main screen's (`data_bind`), and on to both lists
    theme_styles: var[ThemeStyles] = var(ThemeStyles({}), init=False)
    tags: var[dict[int, str]] = var(dict, init=False)

    def __init__(self, *, id: str | None = None):
        super().__init__(id=id)
        self.flat_mode = False  # the flat list is shown, not the tree
        self.only_diverged = False  # both lists show the diverged ops only

    def compose(self) -> ComposeResult:
        yield Static("", id="legend")
        with ContentSwitcher(initial="tree", id="lists"):
            yield OpTree(id="tree").data_bind(OpsPane.theme_styles, OpsPane.tags)
            yield FlatOpList(id="flat").data_bind(OpsPane.theme_styles, OpsPane.tags)
        yield SearchBar(id="search")

    def on_mount(self) -> None:
        self.border_title = "ops"

    @property
    def op_tree(self) -> OpTree:
        return self.query_one(OpTree)

    @property
    def flat(self) -> FlatOpList:
        return self.query_one(FlatOpList)

    @property
    def search(self) -> SearchBar:
        return self.query_one(SearchBar)

    @property
    def shown(self) -> OpTree | FlatOpList:
        """The list on show: the tree or the flat list."""
        return self.flat if self.flat_mode else self.op_tree

    # ------------------------------------------------------------------ the legend
    def on_resize(self) -> None:
        self.call_after_refresh(self._draw_legend)  # after the layout: the legend's own width

    def watch_theme_styles(self) -> None:
        self._draw_legend()

    def _draw_legend(self) -> None:
        """One line on a short terminal, two on a tall one (all the marks with their words are in the help)."""
        legend = self.query_one("#legend", Static)
        width = max(10, legend.content_region.width or self.content_region.width - 2)
        lines = legend_lines(width, 1 if self.screen.size.height < TALL_SCREEN else 2)
        legend.update(Text("\n".join(lines), style=self.theme_styles.muted, no_wrap=True))

    # ------------------------------------------------------------------ the lists
    def show_preview(self, model: OpTreeModel) -> None:
        """The names only, while the dumps are indexed: browse and expand now."""
        self.op_tree.load(model)

    def show_opened(self, model: OpTreeModel, preview: OpTreeModel | None) -> None:
        """The aligned pairs; what the user opened and where the cursor was in the preview carry over."""
        expanded, cursor = set(), None
        if preview is not None:
            expanded = self.op_tree.expanded_paths()
            at = self.op_tree.selected_index
            cursor = model.index_named(preview.pairs[at].name) if at is not None else None
        self.op_tree.load(model, keep_expanded=expanded, cursor=cursor)
        self.flat.set_rows(model, model.rows())
        self._draw_title()

    def reload(self, model: OpTreeModel, only_diverged: bool, keep: int | None, empty_text: str) -> None:
        """Both lists again (the filter changed, or more ops diverged under it); `empty_text`: what a list
        says when the filter leaves nothing in it."""
        self.only_diverged = only_diverged
        self.op_tree.load(model, only_diverged, self.op_tree.expanded_paths(), cursor=keep, empty_text=empty_text)
        self.flat.empty_text = empty_text
        self.flat.set_rows(model, model.rows(only_diverged), keep=keep)
        self._draw_title()

    def relabel(self, ops: Iterable[int], folders: Iterable[Folder]) -> None:
        """New verdicts for these ops and folders."""
        self.op_tree.relabel(ops, folders)
        self.flat.refresh()

    def show_list(self, flat: bool, current: int | None) -> None:
        """The flat list or the tree, its cursor on `current`, with the keys."""
        self.flat_mode = flat
        self.query_one(ContentSwitcher).current = "flat" if flat else "tree"
        if current is not None:
            self.select(current)
        self.shown.focus()
        self._draw_title()

    def select(self, index: int) -> None:
        """The cursor of the list on show on an op (the tree expands its folders)."""
        if self.flat_mode:
            self.flat.select_index(index)
        else:
            self.op_tree.reveal(index)

    def _draw_title(self) -> None:
        kind = "in order" if self.flat_mode else "tree"
        self.border_title = f"ops · {kind}" + (" · only ✗" if self.only_diverged else "")
