"""`dumptui [SUBCOMMAND] ...`: parse, run the command, and turn every failure into exit 2 with the path and
the reason (never 1, which scripts read as "divergence found")."""

from __future__ import annotations

import argparse
import contextlib
import errno
import io
import os
import sys

from dumptui.cli import app
from dumptui.cli.parser import COMMANDS, SUBCOMMANDS, build_parser, completion_parser
from dumptui.core.io.errors import DumptuiError
from dumptui.core.io.procs import CtrlC, ctrl_c_ends_children, single_threaded_blas
from dumptui.headless import EXIT_BROKEN_PIPE, EXIT_INTERRUPTED, fail


def tolerant_output() -> None:
    """Text that still holds bytes a stream's encoding cannot write (a path that is not UTF-8 under a strict
    UTF-8 stdout) is written with backslash escapes, never aborts a command."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            with contextlib.suppress(ValueError, OSError):  # a stream already written to in another mode: left as it is
                reconfigure(errors="backslashreplace")


# errors of writing, never of reading: every file dumptui writes names its path in the error (safeio), so one
# of these without a path comes from standard output (`dumptui bisect A B >/dev/full`)
_WRITE_ERRORS = {errno.ENOSPC, errno.EFBIG, getattr(errno, "EDQUOT", errno.ENOSPC)}


def _stdout_failed(e: OSError) -> bool:
    """Whether `e` is standard output failing; then standard output is silenced (the interpreter's own flush
    at exit, or the error document, would fail again and end with exit 120 or a traceback)."""
    if e.filename or e.errno not in _WRITE_ERRORS:
        return False
    with contextlib.suppress(OSError, ValueError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return True


def _json_before_dumps(rest: list[str]) -> list[str]:
    """`--json` takes an optional FILE; written before the dumps (`bisect --json REF TARGET`) it would swallow
    REF. A folder there is a dump, not an output file: read it as `--json -` followed by that dump."""
    out = list(rest)
    for i, a in enumerate(out[:-1]):
        if a == "--json" and os.path.isdir(out[i + 1]):
            out[i] = "--json=-"
    return out


def _read_config(parser: argparse.ArgumentParser, skip: bool) -> str:
    """The user's config file as the parser's defaults (flags given on the command line win); what was read,
    in words, for -v."""
    from dumptui.options import config

    path = config.config_path()
    if skip:
        return f"config: not read (--no-config; {path})"
    values = config.load()
    parser.set_defaults(**values)
    if not os.path.exists(path):
        return f"config: none ({path} does not exist)"
    return f"config: read {path}: " + (", ".join(f"{k} = {values[k]!r}" for k in sorted(values)) or "no settings")


def _stdout_closed() -> bool:
    """Standard output closed (`dumptui bisect A B >&-`): Python then has no sys.stdout at all."""
    if sys.stdout is None:
        return True
    try:
        fd = sys.stdout.fileno()
    except (io.UnsupportedOperation, AttributeError):  # a stream with no descriptor (a capture): writable
        return False
    except ValueError:  # a file object already closed
        return True
    try:
        os.fstat(fd)
    except OSError:
        return True
    return False


def main(argv: list[str] | None = None) -> int:
    single_threaded_blas()
    if _stdout_closed():
        # nothing could be said where the answer goes: say so where errors go, exit 2 (never 1, "divergence")
        if sys.stderr is not None:
            print(
                "dumptui: standard output is closed: nothing can be written (send it to a file or a pipe)",
                file=sys.stderr,
            )
        return 2
    tolerant_output()
    argv = list(sys.argv[1:] if argv is None else argv)
    sub = argv[0] if argv and argv[0] in SUBCOMMANDS else None
    rest = _json_before_dumps(argv[1:] if sub else argv)
    with ctrl_c_ends_children() as ctrl_c:
        code = _run(sub, rest, ctrl_c)
    return EXIT_INTERRUPTED if ctrl_c.happened else code


def _run(sub: str | None, rest: list[str], ctrl_c: CtrlC) -> int:
    args: argparse.Namespace | None = None
    try:
        try:
            parser = build_parser(sub)
            config_note = ""
            if sub in (None, "bisect", "compare", "remedy"):
                config_note = _read_config(parser, "--no-config" in rest)
            args = parser.parse_args(rest)
            if config_note and getattr(args, "verbose", False) and not getattr(args, "quiet", False):
                print(config_note, file=sys.stderr)  # -v: which settings came from a file
            args.argv = rest  # `serve` passes the options on to the app it runs
            args.every_parser = completion_parser  # what `completion` completes
            code = (COMMANDS[sub] if sub else app).run(args)
            sys.stdout.flush()  # here, not at the interpreter's exit: a full disk under `>` is exit 2, not 120
            return code
        except Exception:
            if ctrl_c.happened:  # a pool whose workers ctrl+c killed (its KeyboardInterrupt swallowed on the way)
                return EXIT_INTERRUPTED
            raise
    except DumptuiError as e:
        return fail(sub, args, rest, e.path, e.reason, str(e))
    except BrokenPipeError:
        # the reader went away (`| head`): like any Unix tool, stop quietly; stdout to /dev/null so the
        # interpreter's final flush does not complain again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except (OSError, ValueError) as e:
        path = getattr(e, "filename", None) or ""
        if isinstance(e, OSError) and _stdout_failed(e):
            path = "standard output"  # `dumptui bisect A B >/dev/full`: the error names where it could not write
        reason = getattr(e, "strerror", None) or str(e)
        return fail(sub, args, rest, str(path), reason, f"{path}: {reason}" if path else str(e))
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except MemoryError:
        # a dump or side file larger than this machine's memory allows: exit 2 with what to do, no traceback
        reason = (
            "out of memory: the dumps (or a side file) need more memory than this process may use; choose one "
            "rank and step (--rank N --step N), filter with --ignore, or run on a machine with more memory "
            "(docs/formats.md#damaged-dumps: Limits)"
        )
        return fail(sub, args, rest, "", reason, reason)
    except Exception as e:  # a bug: still never exit 1, which scripts read as "divergence found"
        reason = f"internal error ({type(e).__name__}: {e}); please report it (the dumps were not changed)"
        return fail(sub, args, rest, "", reason, reason)
