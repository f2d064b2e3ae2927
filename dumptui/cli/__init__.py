"""Command line: `dumptui REF TARGET` opens the terminal app; subcommands work without any UI.

Exit codes: 0 no divergence, 1 a root of divergence found (`bisect` and `compare` alike), 2 bad usage or
unreadable input (also: nothing to compare, damage that hides the answer, and any failure of dumptui itself:
scripts read 1 as "divergence found", so 1 means that and nothing else). Answers go to stdout (never wrapped
when it is not a terminal), progress and chatter to stderr (report/console.py); `--json [FILE]` writes one
versioned document (report/jsonout.py), `-` = stdout.

One module per subcommand (`NAME`, `DESCRIPTION`, `add_arguments`, `run`), the parsers in parser.py, `main` in
main.py; the exit-code rule and what the headless commands share in ../headless.py.
"""

import atexit
import contextlib

from dumptui.core.io.procs import single_threaded_blas, steady_heap

# Before anything imports numpy: OpenBLAS reads its thread count once, when it loads. Called from main() it
# came too late (the imports below load numpy), and the CLI process ran a BLAS thread per core that spun
# between our small dot products: 45 % of a --workers 1 compare's CPU samples, a core taken from the workers.
single_threaded_blas()
steady_heap()

import os  # noqa: E402
import sys  # noqa: E402

from dumptui.cli.main import main  # noqa: E402
from dumptui.cli.parser import build_parser  # noqa: E402
from dumptui.headless import EXIT_INTERRUPTED  # noqa: E402

__all__ = ["build_parser", "command_line", "main"]


def command_line() -> None:
    """The `dumptui` program: `main` on sys.argv, then exit with its code, without the interpreter's teardown.

    After ctrl+c the process ends at once: the interpreter's exit joins the threads of every process pool it
    ever made, and one still waiting on a worker (or on a lock ctrl+c left taken) would keep the shell waiting;
    the workers are killed already. Otherwise the exit handlers run (temporary folders, pools, a coverage
    run's data), and then the process ends without freeing every module and object one by one: nothing is
    left to write by then, and that teardown was 15 ms of a 0.7 s compare (a 20,000-op session's, more)."""
    code = main()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError, AttributeError):  # closed, or None: nothing of ours to write
            stream.flush()
    if code != EXIT_INTERRUPTED:
        atexit._run_exitfuncs()
    os._exit(code)
