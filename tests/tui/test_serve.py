"""`dumptui serve REF TARGET`: the app in a browser. The server is started on a loopback port, a headless
Chromium loads the page (its screenshot is kept in the test's output folder), and two exports reach the
browser as downloads: the session (`S`), the comparison as CSV (`x`) and the report to share (`W`)."""

from __future__ import annotations

import asyncio
import csv
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest
from helpers.browser import Browser, chromium_path
from helpers.common import REPO

from dumptui.tui.web import app_command


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_app_command_passes_the_options_on():
    cmd = app_command("a", "b", ["--no-replay", "a", "b", "--port", "9", "--host=0.0.0.0", "--gain", "5"])
    assert cmd.endswith(f"-m dumptui {os.path.abspath('a')} {os.path.abspath('b')} --no-replay --gain 5")


@pytest.fixture
def serving(demo_pair, tmp_path):
    """`dumptui serve` on a free loopback port: (the URL it printed, with its token; the base URL)."""
    yield from serve_process(demo_pair, tmp_path)


def serve_process(demo_pair, tmp_path, *extra: str):
    """`dumptui serve ... EXTRA` running until the generator is closed. Waits on the line the server prints
    once its socket listens, never on polling."""
    pytest.importorskip("textual_serve", reason="textual-serve not installed (pip install 'dumptui[serve]')")
    port = free_port()
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.Popen(
        [sys.executable, "-m", "dumptui", "serve", demo_pair.ref, demo_pair.target, "--port", str(port), *extra],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its app processes end with it
    )
    lines = []
    assert proc.stdout is not None
    for line in proc.stdout:  # blocks until the server says where it is, or ends
        lines.append(line)
        if line.startswith("dumptui serve: open "):
            break
    else:
        proc.wait(15)
        raise AssertionError(f"dumptui serve did not start: {''.join(lines)[-2000:]}")
    url = line.split("open ", 1)[1].strip()
    try:
        yield url, f"http://127.0.0.1:{port}"
    finally:  # also when the generator is closed (GeneratorExit at the yield): the server never outlives a test
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)


@pytest.fixture
def server(serving):
    if chromium_path() is None:
        pytest.skip("no Chromium on this machine (apt-get install chromium): the browser test is skipped")
    return serving[0]


def http_status(url: str, headers: dict | None = None) -> tuple[int, str]:
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=30) as r:
            return r.status, r.read().decode(errors="replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")


def websocket_handshake(base: str, query: str, origin: str | None, cookie: str | None = None) -> int:
    """The status of a websocket upgrade request to /ws (101: the app would start), as a browser sends it."""
    status, conn = open_websocket(base, query, origin, cookie)
    conn.close()
    return status


def open_websocket(base: str, query: str, origin: str | None, cookie: str | None = None):
    """A websocket upgrade request to /ws, its connection left open: (status, connection)."""
    import base64
    import http.client
    from urllib.parse import urlsplit

    parts = urlsplit(base)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    headers = {
        "Upgrade": "websocket",
        "Connection": "Upgrade",
        "Sec-WebSocket-Key": base64.b64encode(os.urandom(16)).decode(),
        "Sec-WebSocket-Version": "13",
    }
    if origin is not None:
        headers["Origin"] = origin
    if cookie is not None:
        headers["Cookie"] = cookie
    conn.request("GET", "/ws" + query, headers=headers)
    return conn.getresponse().status, conn


def test_serve_runs_at_most_max_sessions_apps(demo_pair, tmp_path):
    """Each tab runs the app as its own processes: a tab beyond --max-sessions is refused (503, saying why)
    instead of starting more (issue 23.8: 12 tabs were 24 processes and 716 MB)."""
    serving = serve_process(demo_pair, tmp_path, "--max-sessions", "1")
    url, base = next(serving)
    token = url.split("token=", 1)[1]
    first, held = open_websocket(base, f"?token={token}", origin=base)
    try:
        assert first == 101  # its app runs while the connection is open
        assert websocket_handshake(base, f"?token={token}", origin=base) == 503
    finally:
        held.close()
        serving.close()


def test_serve_lets_only_the_token_holder_and_its_own_page_in(serving):
    """Every page and the websocket need the token printed at start; a websocket from a page of another
    origin is refused even with it; /static/ lists no folder; the page sets the token as a same-site cookie."""
    url, base = serving
    token = url.split("token=", 1)[1]
    assert http_status(base + "/")[0] == 403
    assert http_status(base + "/?token=wrong")[0] == 403
    status, page = http_status(url)
    assert status == 200 and "/ws" in page
    with urllib.request.urlopen(url, timeout=30) as r:
        cookie = r.headers.get("Set-Cookie", "")
    assert f"dumptui_token={token}" in cookie and "HttpOnly" in cookie and "SameSite=Strict" in cookie
    assert http_status(base + "/static/")[0] in (403, 404)
    assert http_status(base + f"/static/?token={token}")[0] in (403, 404)  # no listing, token or not
    assert http_status(base + "/download/anything")[0] == 403
    assert websocket_handshake(base, "", origin=base) == 403  # no token
    assert websocket_handshake(base, f"?token={token}", origin="http://evil.example") == 403
    assert websocket_handshake(base, "", origin="http://evil.example", cookie=f"dumptui_token={token}") == 403
    assert websocket_handshake(base, "", origin=base, cookie=f"dumptui_token={token}") == 101


def test_origins_allowed():
    from dumptui.tui.web import origin_allowed

    assert origin_allowed("http://127.0.0.1:8000", "127.0.0.1:8000", [])
    assert not origin_allowed("http://127.0.0.1:8001", "127.0.0.1:8000", [])
    assert not origin_allowed("https://evil.example", "127.0.0.1:8000", [])
    assert origin_allowed("https://proxy.example", "127.0.0.1:8000", ["https://proxy.example/"])
    assert origin_allowed(None, "127.0.0.1:8000", [])  # no browser: the token decides


async def download(b: Browser, keys: tuple[str, ...], name: str, within: float = 240):
    """Press `keys` until the browser's download of `name` completes. The test presses them once the app has
    drawn its bisection (`wait_for_frame`); should keys still be refused by the app (the export needs the
    bisection), they are pressed again after each wait (each wait ends on the browser's download events)."""
    deadline = time.monotonic() + within
    while True:
        await b.press(*keys)
        try:
            return await b.wait_for_download(name, timeout=10)
        except TimeoutError:
            if time.monotonic() > deadline:
                raise AssertionError(f"{name} never downloaded after pressing {keys} for {within:.0f} s") from None
            await b.press("escape")


def test_serve_opens_the_app_in_a_browser_and_exports_are_downloads(server, demo_pair, tmp_path):
    shot = tmp_path / "dumptui-serve.png"

    async def go():
        async with Browser(1280, 800, frames=True) as b:
            await b.goto(server)
            await b.focus(".xterm-helper-textarea", timeout=120)  # the terminal, once drawn, takes the keys
            # the exports need the bisection: the app draws its panel's "steps left" once it has started
            await b.wait_for_frame("steps left", timeout=120)
            session = await download(b, ("S", "enter"), "dumptui-session.json")
            data = json.loads(session.read_text())
            assert data["dumptui_session"] == 1 and data["dumps"]["ref"] == os.path.abspath(demo_pair.ref)
            rows = await download(b, ("x", "enter"), "dumptui-compare.csv")
            report = await download(b, ("W", "enter"), "dumptui-report.html")
            await b.screenshot(shot)
            return rows.read_text(), report.read_text()

    text, page = asyncio.run(go())
    table = list(csv.DictReader(text.splitlines()))
    # the report to share, as `dumptui report` writes it
    assert demo_pair.planted in page and "<script" not in page and 'id="plot-error"' in page
    # every tensor pair of the pair: one .npy file per tensor on the reference side, plus the target's only
    ref_files = sum(len(fs) for _r, _d, fs in os.walk(demo_pair.ref) if any(f.endswith(".npy") for f in fs))
    assert len(table) >= ref_files - 1 and "Cosine" in table[0]
    assert shot.stat().st_size > 10_000  # a real page was drawn
    print(f"screenshot of the served app: {shot}")
    # nothing was written on the server's side: the exports went to the browser only
    assert not list(tmp_path.glob("dumptui-*.json")) and not list(tmp_path.glob("*.csv"))
    assert not list(tmp_path.glob("*.html"))


def test_serve_on_another_interface_than_loopback_warns(demo_pair, monkeypatch, capsys):
    """Issue 23.8: `--host 0.0.0.0` lets other machines in (with the token): said on stderr before serving;
    the loopback default says nothing."""
    pytest.importorskip("textual_serve", reason="textual-serve not installed (pip install 'dumptui[serve]')")
    from dumptui.tui import web

    served = []

    class NoServer:
        def serve(self):
            served.append(True)

    monkeypatch.setattr(web, "guarded_server", lambda *args: NoServer())
    assert web.serve(demo_pair.ref, demo_pair.target, [], "0.0.0.0", 9, None) == 0
    assert "WARNING: listening on 0.0.0.0, not only this machine" in capsys.readouterr().err
    assert web.serve(demo_pair.ref, demo_pair.target, [], "127.0.0.1", 9, None) == 0
    assert "WARNING" not in capsys.readouterr().err and served == [True, True]
