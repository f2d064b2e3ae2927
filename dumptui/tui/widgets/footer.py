"""The footer: Textual's, with the keys that must never be cut first (`q` quit and `?` help, which lists every
other key), and compact on a narrow terminal. At 60 columns the keys that do not fit are cut from the right,
so what is cut is what `?` lists anyway."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

from dumptui.present.keys import ALWAYS_SHOWN

COMPACT_BELOW = 100  # columns


class KeysFooter(Footer):
    def compose(self) -> ComposeResult:
        if not self._bindings_ready:
            return
        self.compact = self.app.size.width < COMPACT_BELOW
        active = self.screen.active_bindings
        seen: dict[str, tuple] = {}
        for _node, binding, enabled, tooltip in active.values():
            if binding.show and binding.action not in seen:
                seen[binding.action] = (binding, enabled, tooltip)
        shown = sorted(seen.values(), key=lambda b: b[0].action not in ALWAYS_SHOWN)  # stable: the rest keep order
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

    def on_resize(self) -> None:
        if (self.app.size.width < COMPACT_BELOW) != self.compact:
            self.call_after_refresh(self.recompose)
