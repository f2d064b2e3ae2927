"""The op tree: scopes as folders, ops as leaves, filled lazily from `present.tree.OpTreeModel`.

Only expanded folders have nodes, and a folder adds its children a page at a time, so a 20,000-op dump
opens instantly and a scope holding thousands of ops stays responsive.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from rich.text import Text, TextType
from textual.binding import Binding
from textual.reactive import var
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from dumptui.present.labels import fit_label
from dumptui.present.tree import Folder, OpTreeModel, leaf_name
from dumptui.report import fmt
from dumptui.tui.messages import OpMessage
from dumptui.tui.styles import ThemeStyles

PAGE = 400


@dataclass(frozen=True)
class TreeItem:
    kind: str  # "folder" | "op" | "more" | "none" (the line saying the filter left nothing)
    path: str = ""  # folder path ("more": the folder it continues)
    index: int = -1  # op pair index


class OpTree(Tree[TreeItem], inherit_bindings=False):
    class OpHighlighted(OpMessage):
        """The cursor moved onto an op."""

    class OpActivated(OpMessage):
        """`enter` on an op: show it and move into its tables."""

    HELP_SECTION = "Op tree"
    BINDINGS = [
        Binding("up,k", "cursor_up", "Up", id="tree.up", show=False),
        Binding("down,j", "cursor_down", "Down", id="tree.down", show=False),
        Binding("left", "collapse_or_parent", "Collapse folder / go to parent", id="tree.left", show=False),
        Binding("right", "expand_folder", "Expand folder", id="tree.right", show=False),
        Binding("enter", "select_cursor", "Open folder / show the op's tables", id="tree.enter", show=False),
        Binding("pageup", "page_up", "Page up", id="tree.page_up", show=False),
        Binding("pagedown", "page_down", "Page down", id="tree.page_down", show=False),
    ]

    # bound to the main screen's (`data_bind`): the theme's styles; the ops the bisection tags (culprit, root, probe)
    theme_styles: var[ThemeStyles] = var(ThemeStyles({}), init=False)
    tags: var[dict[int, str]] = var(dict, init=False)

    def __init__(self, *, id: str | None = None):
        super().__init__("ops", data=TreeItem("folder", ""), id=id)
        self.show_root = False
        self.guide_depth = 2
        self.auto_expand = True
        self.model: OpTreeModel | None = None
        self.only_diverged = False
        self._folder_nodes: dict[str, TreeNode[TreeItem]] = {}
        self._op_nodes: dict[int, TreeNode[TreeItem]] = {}
        self._shown: dict[str, int] = {}

    # ------------------------------------------------------------------ labels
    def _room(self, depth: int, folder: bool) -> int:
        """Characters left for a label after the guides of `depth` levels, the mark and its space (and the
        expand icon of a folder); generous before the first layout."""
        width = self.scrollable_content_region.width or 200
        return max(4, width - self.guide_depth * depth - 2 - (2 if folder else 0) - 1)

    def _op_label(self, index: int) -> Text:
        model = self.model
        assert model is not None  # rows and labels exist only once a model is loaded
        pair = model.pairs[index]
        st = self.theme_styles
        tag = self.tags.get(index)
        parts = fit_label(
            fmt.clean(leaf_name(pair)), f" #{index + 1}", tag, self._room(len(model.path_to(index)), False)
        )
        label = Text.assemble(st.mark(model.verdict(index)), " ", parts.name, (parts.number, st.muted))
        if tag:
            label.append(parts.tag, style=st.error if tag == "culprit" else st.accent)
        return label

    def _folder_label(self, folder: Folder) -> Text:
        st = self.theme_styles
        count = f" {folder.diverged}✗" if folder.diverged else ""
        depth = len(folder.ancestors()) - 1
        parts = fit_label(fmt.clean(folder.name), count, None, self._room(depth, True))
        label = Text.assemble(st.mark(folder.verdict), " ")
        label.append(parts.name, style=st.muted if folder.synthetic else "")
        label.append(parts.number, style=st.verdict("diverged"))
        return label

    def on_resize(self) -> None:
        if self.model is not None:  # labels are fitted to the width
            self.relabel_all()
        # a pane that shrinks (the bisection panel grows at convergence, a zoom ends) keeps the cursor in sight
        if self.cursor_node is not None and not self.cursor_in_view():
            self.call_after_refresh(self._scroll_to_cursor, self.cursor_node)

    def relabel(self, ops: Iterable[int] = (), folders: Iterable[Folder] = ()) -> None:
        """New marks for the ops and folders that changed (only those that have nodes)."""
        for i in ops:
            node = self._op_nodes.get(i)
            if node is not None:
                node.set_label(self._op_label(i))
        for f in folders:
            node = self._folder_nodes.get(f.path)
            if node is not None:
                node.set_label(self._folder_label(f))

    def relabel_all(self) -> None:
        """Every existing node (after a theme change)."""
        if self.model is not None:
            self.relabel(list(self._op_nodes), [self.model.by_path[p] for p in self._folder_nodes])

    def watch_theme_styles(self) -> None:
        self.relabel_all()

    def watch_tags(self, before: dict[int, str], tags: dict[int, str]) -> None:
        if self.model is not None:
            self.relabel([i for i in set(before) | set(tags) if i in self._op_nodes])

    # ------------------------------------------------------------------ filling
    def load(
        self,
        model: OpTreeModel,
        only_diverged: bool = False,
        keep_expanded: set[str] | None = None,
        cursor: int | None = None,
        empty_text: str = "",
    ) -> None:
        """(Re)build from the model: the top level, then the folders that were expanded, then the cursor.
        `empty_text`: what the tree says when the filter leaves nothing in it (never an empty pane)."""
        self.model = model
        self.only_diverged = only_diverged
        self.clear()
        self._folder_nodes = {"": self.root}
        self._op_nodes = {}
        self._shown = {}
        self.root.data = TreeItem("folder", "")
        self._populate(self.root)
        if not self.root.children and empty_text:
            self.root.add_leaf(Text(empty_text, style=self.theme_styles.muted), TreeItem("none"))
        for path in sorted(keep_expanded or (), key=lambda p: p.count("/")):
            node = self._folder_nodes.get(path)
            if node is not None:
                self._populate(node)
                node.expand()
        if cursor is not None and not self.reveal(cursor):
            self.cursor_line = 0 if self.root.children else -1
        elif cursor is None and self.root.children:
            self.cursor_line = 0

    def _populate(self, node: TreeNode[TreeItem], until: Folder | int | None = None, more: bool = False) -> None:
        """Add a folder's children: the first page, the next page (`more`), or every page up to `until`
        (a sub-folder or an op that must get a node)."""
        item = node.data
        if item is None or item.kind != "folder" or self.model is None:
            return
        folder = self.model.by_path[item.path]
        children = self.model.children(folder, self.only_diverged)
        shown = self._shown.get(folder.path, 0)
        target = shown if shown else min(len(children), PAGE)
        if more:
            target = min(len(children), shown + PAGE)
        if until is not None:
            pos = next((k for k, c in enumerate(children) if c is until or c == until), None)
            if pos is not None and pos >= target:
                target = min(len(children), (pos // PAGE + 1) * PAGE)
        if target <= shown and shown:
            return
        for c in list(node.children):
            if c.data is not None and c.data.kind == "more":
                c.remove()
        for child in children[shown:target]:
            if isinstance(child, Folder):
                n = node.add(self._folder_label(child), TreeItem("folder", child.path), allow_expand=True)
                self._folder_nodes[child.path] = n
            else:
                self._op_nodes[child] = node.add_leaf(self._op_label(child), TreeItem("op", index=child))
        self._shown[folder.path] = target
        if target < len(children):
            node.add_leaf(
                Text(f"… {len(children) - target} more (enter)", style=self.theme_styles.muted),
                TreeItem("more", folder.path),
            )

    def expanded_paths(self) -> set[str]:
        return {p for p, n in self._folder_nodes.items() if p and n.is_expanded}

    def folder_label(self, path: str) -> TextType | None:
        """The label on show for a folder; None while it has no node (its parent never expanded)."""
        node = self._folder_nodes.get(path)
        return None if node is None else node.label

    def op_label(self, index: int) -> TextType | None:
        """The label on show for an op; None while it has no node."""
        node = self._op_nodes.get(index)
        return None if node is None else node.label

    @property
    def op_nodes_built(self) -> int:
        """How many ops have a node: only those in expanded folders, a page at a time (the tree is lazy)."""
        return len(self._op_nodes)

    @property
    def folder_nodes_built(self) -> int:
        return len(self._folder_nodes)

    # ------------------------------------------------------------------ navigation
    def reveal(self, index: int) -> bool:
        """Expand the op's folders and put the cursor on it; False when the filter hides it."""
        if self.model is None:
            return False
        node = self.root
        for folder in self.model.path_to(index):
            self._populate(node, until=folder)
            child = self._folder_nodes.get(folder.path)
            if child is None:
                return False
            child.expand()
            node = child
        self._populate(node, until=index)
        leaf = self._op_nodes.get(index)
        if leaf is None:
            return False
        _ = self.last_line  # lays the lines out now, so the node's line number is current
        self.move_cursor(leaf)
        # ...but the scroll range grows only with the next layout: a folder just expanded below the view
        # would leave the cursor out of sight (a culprit found by `a`), so scroll once more after it.
        self.call_after_refresh(self._scroll_to_cursor, leaf)
        return True

    def cursor_in_view(self) -> bool:
        top = self.scroll_offset.y
        return top <= self.cursor_line < top + self.scrollable_content_region.height

    def _scroll_to_cursor(self, leaf: TreeNode[TreeItem], tries: int = 3) -> None:
        if self.cursor_node is not leaf:
            return  # the user moved on
        self.scroll_to_node(leaf, animate=False)
        if tries > 1 and not self.cursor_in_view():  # the scroll range was still the old one: once more
            self.call_after_refresh(self._scroll_to_cursor, leaf, tries - 1)

    @property
    def selected_index(self) -> int | None:
        node = self.cursor_node
        if node is None or node.data is None or node.data.kind != "op":
            return None
        return node.data.index

    def action_first(self) -> None:
        """g / home (the screen's binding, for every list): the first line."""
        if self.root.children:
            self.action_scroll_home()

    def action_last(self) -> None:
        """G / end: the last line shown (a folder's "… more" line included: the tree adds pages lazily)."""
        if self.root.children:
            self.action_scroll_end()

    def action_collapse_or_parent(self) -> None:
        node = self.cursor_node
        if node is None:
            return
        if node.allow_expand and node.is_expanded:
            node.collapse()
        elif node.parent is not None and node.parent is not self.root:
            self.move_cursor(node.parent)

    def action_expand_folder(self) -> None:
        node = self.cursor_node
        if node is not None and node.allow_expand and not node.is_expanded:
            node.expand()

    # ------------------------------------------------------------------ events
    def on_tree_node_expanded(self, event: Tree.NodeExpanded[TreeItem]) -> None:
        self._populate(event.node)

    def on_tree_node_highlighted(self, event: Tree.NodeHighlighted[TreeItem]) -> None:
        data = event.node.data
        if data is not None and data.kind == "op":
            self.post_message(self.OpHighlighted(data.index))

    def on_tree_node_selected(self, event: Tree.NodeSelected[TreeItem]) -> None:
        data = event.node.data
        if data is None:
            return
        if data.kind == "more" and event.node.parent is not None:
            self._populate(event.node.parent, more=True)
        elif data.kind == "op":
            self.post_message(self.OpActivated(data.index))
