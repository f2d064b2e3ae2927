"""`dumptui serve REF TARGET`: the app in a browser. The server is started on a loopback port, a headless
Chromium loads the page (its screenshot is kept in the test's output folder), and two exports reach the
browser as downloads: the session (`S`) and the comparison as CSV (`x`)."""

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
def server(demo_pair, tmp_path):
    pytest.importorskip("textual_serve", reason="textual-serve not installed (pip install 'dumptui[serve]')")
    if chromium_path() is None:
        pytest.skip("no Chromium on this machine (apt-get install chromium): the browser test is skipped")
    port = free_port()
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.Popen(
        [sys.executable, "-m", "dumptui", "serve", demo_pair.ref, demo_pair.target, "--port", str(port)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its app processes end with it
    )
    url = f"http://127.0.0.1:{port}/"
    t0 = time.monotonic()
    while True:
        try:
            urllib.request.urlopen(url, timeout=2).read()
            break
        except OSError:
            if proc.poll() is not None or time.monotonic() - t0 > 30:
                out = proc.stdout.read().decode() if proc.stdout else ""
                proc.kill()
                raise AssertionError(f"dumptui serve did not start: {out[-2000:]}") from None
            time.sleep(0.2)
    yield url
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)


async def download(b: Browser, keys: tuple[str, ...], name: str, tries: int = 8):
    """Press `keys` until the export arrives (the app is ready when it does: its first tensors are read)."""
    for _ in range(tries):
        await b.press(*keys)
        try:
            return await b.wait_for_download(name, timeout=6)
        except TimeoutError:
            await b.press("escape")
    raise AssertionError(f"{name} never downloaded after pressing {keys}")


def test_serve_opens_the_app_in_a_browser_and_exports_are_downloads(server, demo_pair, tmp_path):
    shot = tmp_path / "dumptui-serve.png"

    async def go():
        async with Browser(1280, 800) as b:
            await b.goto(server)
            await asyncio.sleep(3)
            await b.click(640, 300)  # the terminal takes the keys
            session = await download(b, ("S", "enter"), "dumptui-session.json")
            data = json.loads(session.read_text())
            assert data["dumptui_session"] == 1 and data["dumps"]["ref"] == os.path.abspath(demo_pair.ref)
            rows = await download(b, ("x", "enter"), "dumptui-compare.csv")
            await b.screenshot(shot)
            return rows.read_text()

    table = list(csv.DictReader(asyncio.run(go()).splitlines()))
    # every tensor pair of the pair: one .npy file per tensor on the reference side, plus the target's only
    ref_files = sum(len(fs) for _r, _d, fs in os.walk(demo_pair.ref) if any(f.endswith(".npy") for f in fs))
    assert len(table) >= ref_files - 1 and "Cosine" in table[0]
    assert shot.stat().st_size > 10_000  # a real page was drawn
    print(f"screenshot of the served app: {shot}")
    # nothing was written on the server's side: the exports went to the browser only
    assert not list(tmp_path.glob("dumptui-*.json")) and not list(tmp_path.glob("*.csv"))
