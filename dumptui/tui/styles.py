"""Styles for data rendered as rich Text (tree labels, the interval bar), taken from the current Textual
theme's variables so that verdict colours follow the theme; names from files are cleaned here."""

from __future__ import annotations

from rich.style import Style
from rich.text import Text
from textual.color import Color, ColorParseError

from dumptui.present.types import Verdict
from dumptui.report import fmt
from dumptui.report.looks import mark as verdict_mark
from dumptui.report.looks import role

# verdict role (core/compare/verdict.py) -> (theme variable, bold); "muted" is dim
ROLE_VARIABLE = {
    "ok": ("success", False),
    "close": ("primary-lighten-2", False),
    "bad": ("error", True),
    "one-sided": ("warning", False),
    "incomparable": ("secondary-lighten-2", False),
    "unreadable": ("error-lighten-2", False),
}
BAR_VARIABLE = {
    "clear": "success",
    "suspect": "warning",
    "after": "error",
    "good": "success",
    "bad": "error",
    "probe": "accent",
    "culprit": "error",
    "unknown": "",
}


def name_text(name: str, style: Style | str = "") -> Text:
    """A name from a file as Text: control characters stripped, never interpreted as markup."""
    return Text(fmt.clean(name), style=style)


def labelled(label: str, label_style: Style | str, text: str, text_style: Style | str = "") -> Text:
    """`label: text` with the label styled alone (a Text's own style would colour the whole line); the text
    comes from files, so it is cleaned."""
    return Text.assemble((label, label_style), (fmt.clean(text), text_style))


class ThemeStyles:
    """Rich styles resolved from a theme's CSS variables (`App.get_css_variables()`)."""

    def __init__(self, variables: dict[str, str]):
        self.variables = variables
        self._cache: dict[str, Style] = {}

    def _color(self, variable: str) -> str | None:
        value = self.variables.get(variable)
        if not value:
            return None
        try:
            return Color.parse(value.split()[0]).rich_color.name
        except (ColorParseError, ValueError, AttributeError):
            return None

    def variable(self, variable: str, bold: bool = False) -> Style:
        key = f"{variable}:{bold}"
        if key not in self._cache:
            color = self._color(variable) if variable else None
            self._cache[key] = Style(color=color, bold=bold or None, dim=None if color or not variable else True)
        return self._cache[key]

    def verdict(self, verdict: Verdict | None) -> Style:
        spec = ROLE_VARIABLE.get(role(verdict)) if verdict else None
        if spec is None:
            return Style(dim=True)
        return self.variable(*spec)

    def mark(self, verdict: Verdict | None) -> Text:
        return Text(verdict_mark(verdict), style=self.verdict(verdict))

    def verdict_text(self, verdict: Verdict | None) -> Text:
        return Text(verdict or "not computed", style=self.verdict(verdict))

    def bar(self, kind: str) -> Style:
        return self.variable(BAR_VARIABLE.get(kind, ""), bold=kind in ("probe", "culprit", "good", "bad"))

    def role(self, role: str) -> Style | str:
        """The style of a role that present/ gives a span: "verdict:diverged", "bar:probe", "bold", "muted",
        "error", "warning", "success", "accent" ("" for plain text)."""
        kind, _, arg = role.partition(":")
        if kind == "verdict":
            return self.verdict(Verdict.of(arg or None))
        if kind == "bar":
            return self.bar(arg)
        fixed: dict[str, Style | str] = {
            "bold": "bold",
            "muted": self.muted,
            "error": self.error,
            "warning": self.variable("warning", True),
            "success": self.variable("success", True),
            "accent": self.accent,
        }
        return fixed.get(kind, "")

    @property
    def muted(self) -> Style:
        return Style(dim=True)

    @property
    def accent(self) -> Style:
        return self.variable("accent", bold=True)

    @property
    def error(self) -> Style:
        return self.variable("error", bold=True)
