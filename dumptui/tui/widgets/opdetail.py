"""The centre pane: the selected op's matched inputs and outputs, how it was paired, its hints, the detail of
one tensor pair (worst elements, error histogram), and its producers and consumers."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.reactive import var
from textual.widgets import DataTable, OptionList, Static
from textual.widgets.option_list import Option

from dumptui.present.bars import histogram_bar
from dumptui.present.columns import fit_name, format_columns
from dumptui.present.detail import (
    STATS_COLUMNS,
    TENSOR_COLUMNS,
    default_row,
    side_stats_cells,
    stats_columns,
    tensor_columns,
    tensor_row,
)
from dumptui.present.relations import Relation
from dumptui.present.tree import OpTreeModel
from dumptui.present.types import EXACT, KERNEL, OpPair, OpResult, TensorResult, Verdict, WorstElement, for_root
from dumptui.present.words import kl_words, paired_words
from dumptui.report import fmt
from dumptui.report.names import cut_long_words
from dumptui.report.reasons import say
from dumptui.report.selection import reason_text
from dumptui.tui.messages import OpMessage
from dumptui.tui.styles import ThemeStyles, labelled, name_text


class TensorTable(DataTable, inherit_bindings=False):
    HELP_SECTION = "Tensor table (centre)"
    BINDINGS = [
        Binding("up,k", "cursor_up", "Previous tensor", id="tensors.up", show=False),
        Binding("down,j", "cursor_down", "Next tensor", id="tensors.down", show=False),
        Binding("left", "cursor_left", "Scroll left", id="tensors.left", show=False),
        Binding("right", "cursor_right", "Scroll right", id="tensors.right", show=False),
        Binding("enter", "select_cursor", "Show this tensor's detail", id="tensors.enter", show=False),
    ]

    def action_first(self) -> None:
        """g / home (the screen's binding, for every list): the first tensor."""
        if self.row_count:
            self.move_cursor(row=0)

    def action_last(self) -> None:
        """G / end: the last tensor."""
        if self.row_count:
            self.move_cursor(row=self.row_count - 1)


class RelationList(OptionList, inherit_bindings=False):
    """An op's producers and consumers; `enter` on one posts `Chosen` with its pair index."""

    class Chosen(OpMessage):
        """`enter` on a producer or consumer: go to that op."""

    HELP_SECTION = "Producers / consumers (centre)"
    BINDINGS = [
        Binding("up,k", "cursor_up", "Previous neighbour", id="relations.up", show=False),
        Binding("down,j", "cursor_down", "Next neighbour", id="relations.down", show=False),
        Binding("enter", "select", "Go to this producer / consumer", id="relations.enter", show=False),
    ]
    OP_PREFIX = "op-"  # an option's id: the pair index of the op it leads to

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        oid = event.option.id or ""
        if oid.startswith(self.OP_PREFIX):
            self.post_message(self.Chosen(int(oid[len(self.OP_PREFIX) :])))


def tensor_cells(r: TensorResult, st: ThemeStyles, keys: list[str]) -> list:
    row = tensor_row(r, fmt.g)
    return [st.verdict_text(r.verdict) if k == "verdict" else name_text(row[k]) for k in keys]


def lines_text(lines: list[Text]) -> Text:
    """One Text for many lines: cheaper to measure and draw than a Group of renderables."""
    return Text("\n").join(lines)


def tensor_summary(r: TensorResult, st: ThemeStyles, width: int = 80, rows_out: list[str] | None = None) -> list[Text]:
    """What is known about one tensor pair without reading it again; its statistics table keeps the columns
    that fit `width` (never wraps its own columns)."""
    lines = [
        Text.assemble(
            (f"{r.label}: ", "bold"),
            st.verdict_text(r.verdict),
            " - ",
            name_text(cut_long_words(reason_text(r.reason), width - 2)),
        )
    ]
    s = r.stats
    rows = []
    for side, t, ss in (("ref", r.ref, s.ref if s else None), ("target", r.target, s.target if s else None)):
        shape = fmt.clean("-" if t is None else f"{fmt.shape(t.shape)} {t.dtype or '?'}")
        rows.append([side, shape, *side_stats_cells(ss)])
    cols = stats_columns(rows, width - 2)
    table = format_columns(
        [[STATS_COLUMNS[i][0] for i in cols]] + [[row[i] for i in cols] for row in rows],
        [STATS_COLUMNS[i][2] for i in cols],
    )
    if rows_out is not None:
        rows_out[:] = ["  " + line for line in table]
    lines.append(Text("  " + table[0], style="bold", no_wrap=True, overflow="ellipsis"))
    lines += [Text("  " + line, no_wrap=True, overflow="ellipsis") for line in table[1:]]
    if s is not None:
        kl = kl_words(s, fmt.g(s.kl))
        lines.append(
            Text(
                f"  {s.n_diff} of {s.n} elements differ, {s.n_off} outside tolerance;"
                f" rel. euclid {fmt.g(s.rel_euclid)}, mean abs {fmt.g(s.mean_abs)}, KL {kl}"
                + (f"; max |diff| at {list(s.max_abs_index)}" if s.max_abs_index else "")
            )
        )
        for metric, why in sorted(s.undefined.items()):
            lines.append(Text(f"  {metric} undefined: {fmt.clean(say(why))}", style=st.muted))
    if r.stat_rel:
        lines.append(Text("  relative differences: " + ", ".join(f"{k} {fmt.g(v)}" for k, v in r.stat_rel.items())))
    for n in r.notes:
        lines.append(labelled("  note: ", "bold", cut_long_words(reason_text(n), width - 2)))
    return lines


class OpDetail(VerticalScroll, inherit_bindings=False):
    # Not the scroll container's home / end: those of the tensor table and the producers / consumers inside
    # it go on to the screen's g / G binding (their own first and last line), not to this pane's scroll.
    BINDINGS = [
        Binding("up,k", "scroll_up", "Scroll up", id="detail.up", show=False),
        Binding("down,j", "scroll_down", "Scroll down", id="detail.down", show=False),
        Binding("pageup", "page_up", "Page up", id="detail.page_up", show=False),
        Binding("pagedown", "page_down", "Page down", id="detail.page_down", show=False),
    ]

    def action_first(self) -> None:
        """g (the screen's binding, for every list and pane; home does the same here): the op's header."""
        self.scroll_home(animate=False)

    def action_last(self) -> None:
        self.scroll_end(animate=False)

    # Bound to the main screen's (`data_bind`): the theme's styles; the op tree's model (the neighbours' verdicts);
    # the ops the bisection named roots of divergence: a root's discontinuity hint says "not benign"
    # (core/compare/hints.py `for_root`), never "tiny benign input noise" beside the culprit's proof.
    theme_styles: var[ThemeStyles] = var(ThemeStyles({}), init=False)
    model: var[OpTreeModel | None] = var(None, init=False)
    roots: var[frozenset[int]] = var(frozenset(), init=False)
    # selection ops (TopK, NMS...) judged by their own inputs, in words: compared as selections, not elements
    selection_words: var[dict[int, str]] = var(dict, init=False)

    def __init__(self, *, id: str | None = None):
        super().__init__(id=id)
        self.index: int | None = None
        self.result: OpResult | None = None
        self.relations: list[Relation] = []
        self.tensor_shown: str | None = None  # the tensor whose element detail is on screen
        self.tensor_detail: tuple = (None, None, None, False)  # what show_tensor drew it with (redrawn on resize)
        self.kernels = 0
        self.stats_rows: list[str] = []  # the statistics table's lines of the tensor shown (never wider than the pane)

    def compose(self) -> ComposeResult:
        yield Static(Text("opening the dumps…"), id="op-title")
        yield Static("", id="op-info")
        yield TensorTable(id="tensors", cursor_type="row", zebra_stripes=False)
        yield Static("", id="op-source")
        yield Static("", id="tensor-detail")
        yield Static(Text("producers ← / consumers →", style="bold"), id="relations-title")
        yield RelationList(id="relations")

    def on_mount(self) -> None:
        table = self.query_one(TensorTable)
        for key, label, _priority in TENSOR_COLUMNS:
            table.add_column(label, key=key, width=len(label))

    def on_resize(self) -> None:
        self._redraw()  # the columns that fit, and the names elided for the new width

    def watch_theme_styles(self) -> None:
        self._redraw()

    def watch_roots(self) -> None:
        self._redraw()  # the hints follow the roots found

    def watch_selection_words(self) -> None:
        self._redraw()

    def _redraw(self) -> None:
        if self.result is not None:
            self.show_result(self.result, self.relations, self.kernels)
            if self.tensor_shown is not None:
                self.show_tensor(self.tensor_shown, *self.tensor_detail)

    def _verdict(self, index: int) -> Verdict | None:
        return self.model.verdict(index) if self.model is not None else None

    @property
    def text_width(self) -> int:
        """The width lines are laid out for (a column kept for the scrollbar)."""
        region = self.scrollable_content_region.width or (self.size.width - 4) or 60
        return max(20, region - (0 if self.show_vertical_scrollbar else 1))

    # ------------------------------------------------------------------ content
    def _title(self, pair: OpPair, verdict: Verdict | None, kernels: int) -> Text:
        """The op's leaf name, type (left out when the name says it and room is short), number and verdict; then
        its full name (both sides' names, each on a line, when the pairing renamed it); names cut by the one rule
        of names, never wrapped mid-word."""
        st = self.theme_styles
        width = self.text_width
        leaf = fmt.clean(pair.name.rsplit("/", 1)[-1])
        where = f"  #{pair.index + 1} of {kernels}  " if pair.kind == KERNEL else f"  {pair.kind}  "
        kind = f" ({fmt.clean(fmt.short_types(pair.op_type))})"
        verdict_text = st.verdict_text(verdict)
        room = width - 2 - len(kind) - len(where) - verdict_text.cell_len
        if room < len(leaf) and fmt.clean(pair.op_type) in leaf:  # the type is in the name (msprobe's API): once
            room += len(kind)
            kind = ""
        head = Text.assemble(
            st.mark(verdict),
            " ",
            (fit_name(leaf, max(room, min(len(leaf), 16))), "bold"),  # the rest gives way first, at the right
            kind,
            (where, st.muted),
            verdict_text,
            no_wrap=True,
            overflow="ellipsis",
        )
        lines = [head]
        if pair.ref is not None and pair.target is not None and pair.ref.name != pair.target.name:
            for side, name in (("ref    ", pair.ref.name), ("target ", pair.target.name)):
                lines.append(
                    Text.assemble((side, st.muted), fit_name(fmt.clean(name), width - len(side)), no_wrap=True)
                )
        else:
            lines.append(Text(fit_name(fmt.clean(pair.name), width), style=st.muted, no_wrap=True))
        return lines_text(lines)

    def show_no_op(self, text: str) -> None:
        """No op shown yet (the cursor on a folder): what the pane says instead of an op."""
        if self.index is None:
            self.query_one("#op-title", Static).update(Text(text, style=self.theme_styles.muted))

    def show_pending(self, pair: OpPair, verdict: Verdict | None, kernels: int) -> None:
        """At once, before its tensors are read: the name, and the table emptied; a new op opens at its header
        (the last op's scroll would show the middle of statistics with the name off screen)."""
        if pair.index != self.index:
            self.scroll_home(animate=False)
        self.index = pair.index
        self.result = None
        self.query_one("#op-title", Static).update(self._title(pair, verdict, kernels))
        self.query_one("#op-info", Static).update(Text("reading its tensors…", style=self.theme_styles.muted))
        self.query_one("#op-source", Static).update("")
        self.query_one(TensorTable).clear()
        self.query_one("#tensor-detail", Static).update("")
        self.query_one(RelationList).clear_options()
        self.relations = []
        self.tensor_shown = None

    def show_result(self, res: OpResult, relations: list[Relation], kernels: int) -> None:
        st = self.theme_styles
        self.kernels = kernels
        pair = res.pair
        same_op = self.result is not None and self.result.pair is pair
        if pair.index != self.index:
            self.scroll_home(animate=False)  # a new op at its header; the same op's new numbers keep the place
        self.index = pair.index
        self.result = res
        self.query_one("#op-title", Static).update(self._title(pair, res.verdict, kernels))
        info: list[Text] = []
        line = Text()
        if res.input_verdict is not None:
            line = Text.assemble(
                ("inputs ", "bold"),
                st.verdict_text(res.input_verdict),
                ("  outputs ", "bold"),
                st.verdict_text(res.verdict),
                "  ",
            )
        line.append(paired_words(pair.how), style=st.muted if pair.how == EXACT else st.variable("warning", True))
        info.append(line)
        said = self.selection_words.get(pair.index)
        if said:
            info.append(Text.assemble(("selection: ", "bold"), name_text(cut_long_words(said, self.text_width))))
        for h in for_root(res.hints, pair.index in self.roots, pair.op_type):
            info.append(
                Text.assemble(
                    (f"hint ({fmt.clean(h.kind)}): ", st.variable("warning", True)),
                    name_text(cut_long_words(reason_text(h.reason), self.text_width)),
                )
            )
        self.query_one("#op-info", Static).update(lines_text(info))
        op = pair.op
        source = self.query_one("#op-source", Static)
        source.update(labelled("source: ", "bold", op.code[-1].strip()) if op.code else "")
        self._fill_table(res, keep=same_op)
        self.relations = list(relations)
        self._fill_relations(self.relations)

    def _fill_table(self, res: OpResult, keep: bool) -> None:
        """Rows keyed by tensor label, updated in place when the same op gets new numbers. The columns are
        those that fit the pane (present/detail.py drops them by priority); their widths are computed here and
        fixed: DataTable's own measuring happens later, on idle, and a repaint before it would cut cells to
        the previous op's widths."""
        table = self.query_one(TensorTable)
        rows = res.inputs + res.outputs
        columns = tensor_columns([tensor_row(r, fmt.g) for r in rows], self.text_width, pad=2 * table.cell_padding)
        keys = [k for k, _label, _w in columns]
        cells = [tensor_cells(r, self.theme_styles, keys) for r in rows]
        widths = [w for _k, _label, w in columns]
        current = [str(k.value) for k in table.rows]
        same_columns = [(str(c.key.value), c.width) for c in table.ordered_columns] == list(zip(keys, widths))
        if keep and same_columns and current == [r.label for r in rows]:
            for r, row in zip(rows, cells):
                for col, cell in zip(keys, row):
                    table.update_cell(r.label, col, cell)
            return
        table.clear(columns=True)
        for key, label, width in columns:
            table.add_column(label, key=key, width=width)
        for r, row in zip(rows, cells):
            table.add_row(*row, key=r.label)
        if rows:
            table.move_cursor(row=default_row(res), animate=False)

    def _fill_relations(self, relations: list[Relation]) -> None:
        lst = self.query_one(RelationList)
        lst.clear_options()
        width = max(20, (self.size.width or 60) - 6)
        options = []
        for rel in relations:
            arrow = f"← in.{rel.slot} " if rel.direction == "producer" else "→ "
            if rel.index is not None:
                v = self._verdict(rel.index)
                prompt = Text.assemble(
                    arrow,
                    self.theme_styles.mark(v),
                    f" #{rel.index + 1} ",
                    fit_name(fmt.clean(rel.name), width - len(arrow) - 8),
                )
                options.append(Option(prompt, id=f"{RelationList.OP_PREFIX}{rel.index}"))
            else:
                prompt = Text.assemble(
                    arrow, (fit_name(fmt.clean(rel.name), width - len(arrow)), self.theme_styles.muted)
                )
                options.append(Option(prompt, disabled=True))
        if not options:
            options.append(
                Option(Text("no graph: producers and consumers unknown", style=self.theme_styles.muted), disabled=True)
            )
        lst.add_options(options)

    def tensor_result(self, label: str) -> TensorResult | None:
        if self.result is None:
            return None
        return next((r for r in self.result.inputs + self.result.outputs if r.label == label), None)

    @property
    def highlighted_label(self) -> str | None:
        table = self.query_one(TensorTable)
        if not table.row_count:
            return None
        return str(table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value)

    def show_tensor(
        self,
        label: str,
        worst: list[WorstElement] | None = None,
        histogram: tuple[list[int], int, int] | None = None,
        problem: str | None = None,
        loading: bool = False,
    ) -> None:
        st = self.theme_styles
        r = self.tensor_result(label)
        if r is None:
            return
        self.tensor_shown = None if loading else label
        self.tensor_detail = (worst, histogram, problem, loading)
        parts = tensor_summary(r, st, self.text_width, self.stats_rows)
        if loading:
            parts.append(Text("  reading the worst elements…", style=st.muted))
        elif problem:
            parts.append(Text(f"  no element detail: {fmt.clean(problem)}", style=st.muted))
        else:
            if worst:
                parts.append(Text("  worst elements", style="bold"))
                table = format_columns(
                    [["index", "ref", "target", "diff"]]
                    + [[str(list(w.index)), fmt.g(w.ref), fmt.g(w.target), fmt.g(w.diff)] for w in worst],
                    [False, True, True, True],
                )
                parts.append(Text("  " + table[0], style=st.muted))
                parts += [Text("  " + line) for line in table[1:]]
            elif worst is not None:
                parts.append(Text("  every element is equal", style=st.muted))
            if histogram is not None:
                parts.append(self._histogram(*histogram))
        self.query_one("#tensor-detail", Static).update(lines_text(parts))

    def _histogram(self, counts: list[int], e0: int, zeros: int) -> Text:
        st = self.theme_styles
        if not counts:
            return Text(f"  |diff| histogram: every element equal ({zeros} zeros)", style=st.muted)
        width = max(8, (self.size.width or 60) - 30)
        bar, merge = histogram_bar(counts, width)
        last = e0 + len(counts) - 1
        line = Text.assemble(("  |diff| per power of two: ", "bold"), f"2^{e0} ")
        line.append(bar, style=st.verdict(Verdict.DIVERGED))
        line.append(f" 2^{last + 1}" + (f" ({merge} bins/char)" if merge > 1 else "") + f"  equal: {zeros}")
        return line

    def refresh_relations(self, changed: set[int]) -> None:
        """Neighbour marks follow the verdicts as the statistics arrive (the highlight is kept)."""
        if self.result is None or not any(rel.index in changed for rel in self.relations):
            return
        lst = self.query_one(RelationList)
        keep = lst.highlighted
        self._fill_relations(self.relations)
        if keep is not None and keep < lst.option_count:
            lst.highlighted = keep
