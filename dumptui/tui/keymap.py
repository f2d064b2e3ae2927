"""Textual's side of the action table (dumptui/present/keys.py): key bindings, the help screen's sections and
the command palette's commands are derived from it here, never written by hand."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from textual.app import App
from textual.binding import Binding, BindingType

from dumptui.present import keys
from dumptui.present.keys import Action, KeyContext

HelpRow = tuple[str, str, str, bool]  # keys, description, binding id, available now
HelpSection = tuple[str, list[HelpRow]]


def binding(action: Action) -> Binding:
    return Binding(
        action.keys,
        action.action,
        action.label,
        show=action.footer,
        id=action.id,
        tooltip=action.help,
        priority=action.priority,
    )


def bindings(on: str) -> list[BindingType]:
    """The bindings of the main screen (`keys.SCREEN`) or the app (`keys.APP`): the table's actions that
    have keys."""
    return [binding(a) for a in keys.actions_on(on) if a.keys]


def binding_rows(
    app: App, bindings: Iterable[Binding], available: Callable[[Binding], bool] | None = None
) -> list[HelpRow]:
    """One help row per binding id, with all its keys (`up / k`) as the app displays them."""
    rows: dict[str, tuple[list[str], str, str, bool]] = {}
    for b in Binding.make_bindings(bindings):
        shown = app.get_key_display(b)
        row = rows.get(b.id or b.action)
        if row is not None:
            if shown not in row[0]:
                row[0].append(shown)
            continue
        rows[b.id or b.action] = (
            [shown],
            b.tooltip or b.description,
            b.id or "",
            available(b) if available is not None else True,
        )
    return [(" / ".join(k), desc, bid, ok) for k, desc, bid, ok in rows.values()]


def table_sections(app: App, context: KeyContext | None) -> list[HelpSection]:
    """The table's sections; a command not available in `context` is dimmed (None: every one is)."""
    ids = keys.available_now(context) if context is not None else None
    return [
        (title, binding_rows(app, [binding(a) for a in actions if a.keys], lambda b: ids is None or b.id in ids))
        for title, actions in keys.sections()
    ]


def widget_sections(app: App, keyed: Iterable[type]) -> list[HelpSection]:
    """The keys that move inside a widget or dialog, under the section each class names (`HELP_SECTION`);
    classes naming the same section share it."""
    out: dict[str, list[HelpRow]] = {}
    for cls in keyed:
        section: str = getattr(cls, "HELP_SECTION")  # noqa: B009 (any class: typed by what it must name)
        bindings: list[Binding] = getattr(cls, "BINDINGS")  # noqa: B009 (Binding objects only, in ours)
        rows = out.setdefault(section, [])
        for row in binding_rows(app, bindings):
            if not any(row[:2] == seen[:2] for seen in rows):  # the dialogs share `esc Cancel`: listed once
                rows.append(row)
    return list(out.items())
