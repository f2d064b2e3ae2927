"""Zooming the main screen's panes (`z`): the focused pane gets the whole screen, `z` again gives the others
back. A screen class (`-zoom-left`...) says which pane; the stylesheet hides the others."""

from __future__ import annotations

from textual.screen import Screen
from textual.widget import Widget

ZOOM_PANES = ("left", "detail", "bisect")  # the ids of the panes `z` can give the whole screen


def zoomed_pane(screen: Screen) -> str | None:
    return next((p for p in ZOOM_PANES if screen.has_class(f"-zoom-{p}")), None)


def pane_of(widget: Widget | None) -> str:
    """The zoomable pane a widget sits in (the op lists when none)."""
    while widget is not None:
        if widget.id in ZOOM_PANES:
            return widget.id or "left"
        widget = widget.parent if isinstance(widget.parent, Widget) else None
    return "left"


def toggle_zoom(screen: Screen) -> None:
    current = zoomed_pane(screen)
    for p in ZOOM_PANES:
        screen.remove_class(f"-zoom-{p}")
    if current is None:
        screen.add_class(f"-zoom-{pane_of(screen.focused)}")


def to_end(screen: Screen, last: bool) -> None:
    """`g` / `G`: the focused list's (or pane's) first or last line: each of them has `action_first` /
    `action_last`."""
    move = getattr(screen.focused, "action_last" if last else "action_first", None)
    if callable(move):
        move()
