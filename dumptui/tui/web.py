"""`dumptui serve REF TARGET`: the same app in a browser, for people without SSH (textual-serve, an optional
extra: `pip install dumptui[serve]`). Each browser tab runs `python -m dumptui REF TARGET [options]` as its
own process on this machine; exports reach the browser user as downloads (screens/exports.py)."""

from __future__ import annotations

import os
import shlex
import sys
from typing import Any

from dumptui.present.types import UsageError

SERVE_ONLY = (
    "--host",
    "--port",
    "--public-url",
    "--allow-origin",
    "--max-sessions",
)  # options of `serve` itself, not of the app it runs


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


TOKEN_COOKIE = "dumptui_token"
LOOPBACK = ("127.0.0.1", "::1", "localhost")


def origin_allowed(origin: str | None, host: str | None, allowed: list[str]) -> bool:
    """Whether a websocket from a page at `origin` may drive the app: the page this server served (same
    host and port as the request's Host), or an origin named with --allow-origin. A browser always sends
    Origin with a websocket; a client without one (a script, no browser) is let through to the token check."""
    if origin is None:
        return True
    from urllib.parse import urlsplit

    parts = urlsplit(origin)
    if host is not None and parts.netloc == host and parts.scheme in ("http", "https"):
        return True
    return origin.rstrip("/") in {a.rstrip("/") for a in allowed}


DEFAULT_MAX_SESSIONS = 4  # each browser tab runs the app as its own processes (~60 MB and a worker pool each)


def guarded_server(
    command: str,
    host: str,
    port: int,
    public_url: str | None,
    allowed: list[str],
    token: str,
    max_sessions: int = DEFAULT_MAX_SESSIONS,
) -> Any:
    """textual-serve's Server with the doors closed: every page, websocket and download needs the token
    (from the URL printed at start, then a same-site cookie), a websocket from another origin is refused,
    /static/ lists no folder, and at most `max_sessions` apps run at once (a tab more is told why)."""
    import secrets

    from aiohttp import web
    from textual_serve.server import Server

    @web.middleware
    async def guard(request: web.Request, handler):  # type: ignore[no-untyped-def]
        if request.path.startswith("/static/") and not request.path.endswith("/"):
            return await handler(request)  # the page's own scripts and fonts: nothing of the dumps
        given = request.query.get("token") or request.cookies.get(TOKEN_COOKIE) or ""
        if not secrets.compare_digest(given, token):
            raise web.HTTPForbidden(
                text="dumptui serve: open the URL printed when the server started (it holds the token)"
            )
        if request.path == "/ws" and not origin_allowed(request.headers.get("Origin"), request.host, allowed):
            raise web.HTTPForbidden(
                text="dumptui serve: a page from another origin may not open the app (--allow-origin)"
            )
        response = await handler(request)
        if request.path == "/" and request.query.get("token"):
            response.set_cookie(TOKEN_COOKIE, token, httponly=True, samesite="Strict")
        return response

    class GuardedServer(Server):
        open_sessions = 0

        async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
            if self.open_sessions >= max_sessions:
                raise web.HTTPServiceUnavailable(
                    text=f"dumptui serve: {max_sessions} sessions are open already (each runs the app as its own "
                    "processes): close a tab, or start the server with a larger --max-sessions"
                )
            self.open_sessions += 1
            try:
                return await super().handle_websocket(request)
            finally:
                self.open_sessions -= 1

        async def _make_app(self) -> web.Application:
            import aiohttp_jinja2
            import jinja2

            app = web.Application(middlewares=[guard])
            aiohttp_jinja2.setup(app, loader=jinja2.FileSystemLoader(self.templates_path))
            app.add_routes(
                [
                    web.get("/", self.handle_index, name="index"),
                    web.get("/ws", self.handle_websocket, name="websocket"),
                    web.get("/download/{key}", self.handle_download, name="download"),
                    web.static("/static", self.statics_path, show_index=False, name="static"),
                ]
            )
            app.on_startup.append(self.on_startup)
            app.on_shutdown.append(self.on_shutdown)
            return app

        async def on_startup(self, app: web.Application) -> None:
            pass  # the URL with its token is said once the server listens (announce)

        def serve(self, debug: bool = False) -> None:
            import asyncio
            import signal

            self.debug = debug
            self.initialize_logging()
            loop = asyncio.new_event_loop()
            try:
                loop.add_signal_handler(signal.SIGINT, self.request_exit)
                loop.add_signal_handler(signal.SIGTERM, self.request_exit)
            except NotImplementedError:
                pass
            web.run_app(
                self._make_app(), host=self.host, port=self.port, handle_signals=False, loop=loop, print=announce
            )

    def announce(*_args: object) -> None:
        # printed after the socket listens: a script (or a test) waiting for this line can open it at once
        print(f"dumptui serve: open {server.public_url}/?token={token}", flush=True)
        print("  (the token keeps other local users and web pages out; Ctrl+C stops the server)", flush=True)

    server = GuardedServer(command, host=host, port=port, title="dumptui", public_url=public_url)
    return server


def serve(
    ref: str,
    target: str,
    argv: list[str],
    host: str,
    port: int,
    public_url: str | None,
    allow_origin: list[str] | None = None,
    max_sessions: int = DEFAULT_MAX_SESSIONS,
) -> int:
    import secrets

    for path in (ref, target):
        if not os.path.exists(path):
            raise UsageError(f"{path}: no such dump folder")
    try:
        import textual_serve.server  # noqa: F401
    except ImportError:
        raise UsageError(
            "dumptui serve needs textual-serve: pip install 'dumptui[serve]' (or pip install textual-serve)"
        ) from None
    if host not in LOOPBACK:
        print(
            f"dumptui serve: WARNING: listening on {host}, not only this machine: anyone who can reach it and has "
            "the URL with its token can read these dumps' names and values",
            file=sys.stderr,
            flush=True,
        )
    token = secrets.token_urlsafe(24)
    if max_sessions < 1:
        raise UsageError(f"--max-sessions {max_sessions}: at least one session")
    command = app_command(ref, target, argv)
    server = guarded_server(command, host, port, public_url, list(allow_origin or []), token, max_sessions)
    server.serve()
    return 0
