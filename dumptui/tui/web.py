"""`dumptui serve REF TARGET`: the same app in a browser, for people without SSH (textual-serve, an optional
extra: `pip install dumptui[serve]`). Each browser tab runs `python -m dumptui REF TARGET [options]` as its
own process on this machine; exports reach the browser user as downloads (screens/exports.py)."""

from __future__ import annotations

import os
import shlex
import sys

from dumptui.core.io.errors import UsageError

SERVE_ONLY = ("--host", "--port", "--public-url")  # options of `serve` itself, not of the app it runs


def app_command(ref: str, target: str, argv: list[str]) -> str:
    """The command each browser session runs: this Python, `-m dumptui`, the dumps (absolute: the server may
    be started elsewhere than the user's shell) and every option of the command line but `serve`'s own."""
    rest: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg in SERVE_ONLY:
            skip = True
        elif not any(arg.startswith(o + "=") for o in SERVE_ONLY):
            rest.append(arg)
    for positional in (ref, target):  # the dumps as given; they are put first, absolute
        if positional in rest:
            rest.remove(positional)
    return shlex.join([sys.executable, "-m", "dumptui", os.path.abspath(ref), os.path.abspath(target), *rest])


def serve(ref: str, target: str, argv: list[str], host: str, port: int, public_url: str | None) -> int:
    for path in (ref, target):
        if not os.path.exists(path):
            raise UsageError(f"{path}: no such dump folder")
    try:
        from textual_serve.server import Server
    except ImportError:
        raise UsageError(
            "dumptui serve needs textual-serve: pip install 'dumptui[serve]' (or pip install textual-serve)"
        ) from None
    server = Server(app_command(ref, target, argv), host=host, port=port, title="dumptui", public_url=public_url)
    server.serve()
    return 0
