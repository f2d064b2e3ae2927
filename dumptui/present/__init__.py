"""What the terminal app shows and decides, without any UI import: every decision is unit-tested here
(tests/test_present.py), the widgets in dumptui/tui only render it.

Layers, imports pointing down only: dumptui.core (the engine) <- dumptui.options.pair <- dumptui.present <-
dumptui.tui <- dumptui.cli. Neither textual nor rich is imported here; the engine never imports this.

- `tree`: the op tree model (folders from scopes, verdict counts) and the flat execution-order rows
- `search`: name search and next/previous diverged op
- `bisection`: the app's handle on a Bisection (`BisectDriver`) and the snapshots it renders (`BisectState`)
- `bars`: the bisection interval and the error histogram drawn as characters
- `relations`: an op's producers and consumers from the dataflow graph
- `detail`: which tensor pair of an op to detail first, and whether its elements can be shown
- `progress`: the background work in words, and the batches of the full compare
- `columns`: aligned text columns and left-elided names
- `paths`: where files go by default, which paths are refused (saved sessions: core/bisect/sessionfile.py)
- `keys`: the one table of actions (keys, help, palette, when each is available)
- `failures`: an exception as the path and reason the user is shown
"""
