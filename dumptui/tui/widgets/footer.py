"""The footer: Textual's, with the keys that must never be cut first (`q` quit and `?` help, which lists every
other key), then the keys of the moment (a search's n / N / escape), and compact on a narrow terminal. At 60 columns the keys that do not fit are cut from the right,
so what is cut is what `?` lists anyway."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.keys import key_to_character
from textual.widget import Widget
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

from dumptui.present.keys import footer_rank

COMPACT_BELOW = 100  # columns
UNNAMED_CHARACTERS = {"plus": "+", "minus": "-"}  # keys of ours whose character textual.keys cannot find


class KeysFooter(Footer):
    def compose(self) -> ComposeResult:
        if not self._bindings_ready:
            return
        self.compact = self.app.size.width < COMPACT_BELOW
        active = self.screen.active_bindings
        focused = self.screen.focused
        seen: dict[str, tuple] = {}
        for _node, binding, enabled, tooltip in active.values():
            if binding.show and binding.action not in seen and not self._typed(focused, binding):
                seen[binding.action] = (binding, enabled, tooltip)
        shown = sorted(seen.values(), key=lambda b: footer_rank(b[0].action))  # stable: the rest keep order
        self.styles.grid_size_columns = len(shown)
        for binding, enabled, tooltip in shown:
            yield FooterKey(
                binding.key,
                self.app.get_key_display(binding),
                binding.description,
                binding.action,
                disabled=not enabled,
                tooltip=tooltip,
            ).data_bind(compact=Footer.compact)

    def _typed(self, focused: Widget | None, binding: Binding) -> bool:
        """The key is a character the focused widget takes (`+` typed into the search box): not a command
        then. Textual drops those it can name (`q`, `?`); `plus` and `minus` it cannot."""
        if focused is None:
            return False
        character = key_to_character(binding.key) or UNNAMED_CHARACTERS.get(binding.key)
        return focused.check_consume_key(binding.key, character)

    def on_resize(self) -> None:
        if (self.app.size.width < COMPACT_BELOW) != self.compact:
            self.call_after_refresh(self.recompose)
