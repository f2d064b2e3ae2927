"""Command line: `dumptui REF TARGET` opens the terminal app; subcommands work without any UI.

Exit codes: 0 no divergence, 1 a root of divergence found (`bisect` and `compare` alike), 2 bad usage or
unreadable input (also: nothing to compare, damage that hides the answer, and any failure of dumptui itself:
scripts read 1 as "divergence found", so 1 means that and nothing else). Answers go to stdout (never wrapped
when it is not a terminal), progress and chatter to stderr (report/console.py); `--json [FILE]` writes one
versioned document (report/jsonout.py), `-` = stdout.

One module per subcommand (`NAME`, `DESCRIPTION`, `add_arguments`, `run`), the parsers in parser.py, `main` in
main.py; the exit-code rule and what the headless commands share in ../headless.py.
"""

from dumptui.cli.main import main
from dumptui.cli.parser import build_parser

__all__ = ["build_parser", "main"]
