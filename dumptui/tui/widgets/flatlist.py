"""The flat execution-order list: one line per op, rendered line by line for the visible rows only.

DataTable and OptionList measure every row when filled (about 5 s and 4 s for 29,000 ops here); this list
only knows the row count, so filling it is instant and a key press repaints the ~20 visible lines.
"""

from __future__ import annotations

import bisect

from rich.segment import Segment
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.geometry import Size
from textual.reactive import reactive, var
from textual.scroll_view import ScrollView
from textual.strip import Strip

from dumptui.present.labels import fit_label
from dumptui.present.tree import OpTreeModel
from dumptui.report import fmt
from dumptui.tui.messages import OpMessage
from dumptui.tui.styles import ThemeStyles


class FlatOpList(ScrollView, can_focus=True, inherit_bindings=False):
    class OpHighlighted(OpMessage):
        """The cursor moved onto an op."""

    class OpActivated(OpMessage):
        """`enter` on an op: show it and move into its tables."""

    HELP_SECTION = "Flat execution-order list"
    COMPONENT_CLASSES = {"flat-list--cursor"}
    BINDINGS = [
        Binding("up,k", "cursor_up", "Up", id="flat.up", show=False),
        Binding("down,j", "cursor_down", "Down", id="flat.down", show=False),
        Binding("pageup", "page_up", "Page up", id="flat.page_up", show=False),
        Binding("pagedown", "page_down", "Page down", id="flat.page_down", show=False),
        Binding("enter", "activate", "Show the op's tables", id="flat.enter", show=False),
    ]

    cursor: reactive[int] = reactive(0, always_update=False)
    # bound to the main screen's (`data_bind`): the theme's styles; the ops the bisection tags (culprit, root, probe)
    theme_styles: var[ThemeStyles] = var(ThemeStyles({}), init=False)
    tags: var[dict[int, str]] = var(dict, init=False)

    def __init__(self, *, id: str | None = None):
        super().__init__(id=id)
        self.model: OpTreeModel | None = None
        self.rows: list[int] = []
        self.empty_text = ""  # said on the first line when no op is listed (the filter hides every one)

    # ------------------------------------------------------------------ content
    def set_rows(self, model: OpTreeModel, rows: list[int], keep: int | None = None) -> None:
        self.model = model
        self.rows = rows
        self.virtual_size = Size(self.size.width, len(rows))
        pos = self._position(keep) if keep is not None else None
        self.set_reactive(FlatOpList.cursor, 0 if pos is None else pos)
        self._scroll_to_cursor()
        self.refresh()

    def _position(self, index: int) -> int | None:
        k = bisect.bisect_left(self.rows, index)
        return k if k < len(self.rows) and self.rows[k] == index else None

    def select_index(self, index: int) -> bool:
        pos = self._position(index)
        if pos is None:
            return False
        self.cursor = pos
        return True

    @property
    def selected_index(self) -> int | None:
        return self.rows[self.cursor] if 0 <= self.cursor < len(self.rows) else None

    def watch_theme_styles(self) -> None:
        self.refresh()

    def watch_tags(self) -> None:
        self.refresh()

    # ------------------------------------------------------------------ rendering
    def _row_text(self, index: int, width: int) -> Text:
        model = self.model
        assert model is not None  # rows exist only once a model is loaded
        st = self.theme_styles
        pair = model.pairs[index]
        tag = self.tags.get(index)
        digits = len(str(len(model.pairs)))
        number = f" #{index + 1:<{digits}} "
        text = Text.assemble(st.mark(model.verdict(index)), (number, st.muted))
        parts = fit_label(fmt.clean(pair.label), "", tag, max(4, width - text.cell_len))
        text.append(parts.name)
        if tag:
            text.append(parts.tag, style=st.error if tag == "culprit" else st.accent)
        return text

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width or self.size.width
        row = y + self.scroll_offset.y
        base = self.rich_style
        if self.model is not None and not self.rows and row == 0 and self.empty_text:
            return Strip([Segment(self.empty_text[:width], base + self.theme_styles.muted)]).extend_cell_length(
                width, base
            )
        if self.model is None or not 0 <= row < len(self.rows):
            return Strip.blank(width, base)
        text = self._row_text(self.rows[row], width)
        if row == self.cursor:
            text.stylize(self.get_component_rich_style("flat-list--cursor"))
        segments = [Segment(s.text, base + s.style if s.style else base) for s in text.render(self.app.console)]
        return Strip(segments).extend_cell_length(width, base).crop(0, width)

    def on_resize(self) -> None:
        self.virtual_size = Size(self.size.width, len(self.rows))

    # ------------------------------------------------------------------ cursor
    def validate_cursor(self, value: int) -> int:
        return max(0, min(value, len(self.rows) - 1)) if self.rows else 0

    def watch_cursor(self, old: int, new: int) -> None:
        self._scroll_to_cursor()
        self.refresh()
        index = self.selected_index
        if index is not None:
            self.post_message(self.OpHighlighted(index))

    def _scroll_to_cursor(self) -> None:
        height = self.scrollable_content_region.height or 1
        top = self.scroll_offset.y
        if self.cursor < top:
            self.scroll_to(y=self.cursor, animate=False, immediate=True)
        elif self.cursor >= top + height:
            self.scroll_to(y=self.cursor - height + 1, animate=False, immediate=True)

    def action_cursor_up(self) -> None:
        self.cursor -= 1

    def action_cursor_down(self) -> None:
        self.cursor += 1

    def action_page_up(self) -> None:
        self.cursor -= max(1, self.scrollable_content_region.height - 1)

    def action_page_down(self) -> None:
        self.cursor += max(1, self.scrollable_content_region.height - 1)

    def action_first(self) -> None:
        """g / home (the screen's binding, for every list): the first op."""
        self.cursor = 0

    def action_last(self) -> None:
        self.cursor = len(self.rows) - 1

    def on_click(self, event: events.Click) -> None:
        row = event.y + self.scroll_offset.y
        if 0 <= row < len(self.rows):
            self.cursor = row

    def action_activate(self) -> None:
        index = self.selected_index
        if index is not None:
            self.post_message(self.OpActivated(index))
