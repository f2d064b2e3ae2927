"""`dumptui serve`: the app in a browser."""

from __future__ import annotations

import argparse

from dumptui.cli.options import compare_options, whole_number
from dumptui.tui.web import DEFAULT_MAX_SESSIONS

NAME = "serve"
DESCRIPTION = "The app in a browser (textual-serve): each tab runs the app on REF and TARGET."


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("ref")
    p.add_argument("target")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=whole_number(1, 65535, what="a TCP port"), default=8000, help="port (default 8000)")
    p.add_argument("--public-url", dest="public_url", help="the URL browsers reach the server by, if not host:port")
    p.add_argument(
        "--allow-origin",
        dest="allow_origin",
        action="append",
        default=[],
        metavar="URL",
        help="also let pages from this origin open the app (e.g. a proxy's https://host); repeatable",
    )
    p.add_argument(
        "--max-sessions",
        dest="max_sessions",
        type=int,
        default=DEFAULT_MAX_SESSIONS,
        metavar="N",
        help="at most N browser tabs at once, each running the app as its own processes (default 4)",
    )
    p.add_argument("--session", metavar="FILE", help="resume a saved bisection session")
    compare_options(p)


def run(args: argparse.Namespace) -> int:
    from dumptui.tui.web import serve

    return serve(
        args.ref, args.target, args.argv, args.host, args.port, args.public_url, args.allow_origin, args.max_sessions
    )
