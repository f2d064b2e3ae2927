"""A headless Chromium driven over the DevTools protocol (aiohttp's websocket client, which textual-serve
brings along): load a page, type keys, take a screenshot, let downloads land in a folder. Enough for the
`dumptui serve` test without a browser-automation dependency."""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

CHROMIUM_FLAGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--remote-debugging-port=0",
)


def chromium_path() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


KEYS = {  # key -> (key, code, keyCode, text, modifiers)
    "enter": ("Enter", "Enter", 13, "\r", 0),
    "escape": ("Escape", "Escape", 27, "", 0),
    "tab": ("Tab", "Tab", 9, "", 0),
}


class Browser:
    def __init__(self, width: int = 1280, height: int = 800, frames: bool = False):
        """`frames`: keep the text of every websocket frame the page receives (`wait_for_frame`): what a
        served terminal app draws, which its canvas does not show to `text`."""
        self.width, self.height = width, height
        self.frames: list[str] | None = [] if frames else None
        self.profile = tempfile.mkdtemp(prefix="dumptui-chromium-")
        self.downloads = Path(self.profile) / "downloads"
        self.downloads.mkdir()
        self.proc: subprocess.Popen | None = None
        self._ids = itertools.count(1)

    async def __aenter__(self) -> Browser:
        import aiohttp

        exe = chromium_path()
        assert exe is not None
        self.proc = subprocess.Popen(
            [exe, *CHROMIUM_FLAGS, f"--user-data-dir={self.profile}", f"--window-size={self.width},{self.height}"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        port_file = Path(self.profile) / "DevToolsActivePort"
        t0 = time.monotonic()
        while not port_file.exists() or not port_file.read_text().strip():
            if time.monotonic() - t0 > 30:
                raise TimeoutError("chromium did not start")
            await asyncio.sleep(0.1)
        port, browser_path = port_file.read_text().split("\n")[:2]
        self.http = aiohttp.ClientSession()
        async with self.http.put(f"http://127.0.0.1:{port}/json/new?about:blank") as r:
            page = json.loads(await r.text())
        self.browser_ws = await self.http.ws_connect(f"ws://127.0.0.1:{port}{browser_path}", max_msg_size=0)
        self.page_ws = await self.http.ws_connect(page["webSocketDebuggerUrl"], max_msg_size=0)
        await self.call(
            "Browser.setDownloadBehavior",
            {"behavior": "allow", "downloadPath": str(self.downloads), "eventsEnabled": True},
            browser=True,
        )
        await self.call("Page.enable")
        if self.frames is not None:
            await self.call("Network.enable")
        await self.call(
            "Emulation.setDeviceMetricsOverride",
            {"width": self.width, "height": self.height, "deviceScaleFactor": 1, "mobile": False},
        )
        return self

    async def __aexit__(self, *exc: object) -> None:
        for ws in (getattr(self, "page_ws", None), getattr(self, "browser_ws", None)):
            if ws is not None:
                await ws.close()
        if getattr(self, "http", None) is not None:
            await self.http.close()
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        shutil.rmtree(self.profile, ignore_errors=True)

    async def _page_message(self) -> dict:
        """The page's next DevTools message; a websocket frame it received is kept (when asked) on the way."""
        msg = json.loads((await self.page_ws.receive()).data)
        if self.frames is not None and msg.get("method") == "Network.webSocketFrameReceived":
            r = msg["params"]["response"]
            data = base64.b64decode(r["payloadData"]) if r.get("opcode") == 2 else r["payloadData"].encode()
            self.frames.append(data.decode("utf-8", errors="replace"))
        return msg

    async def call(self, method: str, params: dict | None = None, browser: bool = False) -> dict:
        ws = self.browser_ws if browser else self.page_ws
        mid = next(self._ids)
        await ws.send_str(json.dumps({"id": mid, "method": method, "params": params or {}}))
        while True:
            msg = json.loads((await ws.receive()).data) if browser else await self._page_message()
            if msg.get("id") == mid:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})

    async def goto(self, url: str) -> None:
        """Open `url` and wait for its load event."""
        await self.call("Page.navigate", {"url": url})
        while (await self._page_message()).get("method") != "Page.loadEventFired":
            pass

    async def wait_for_frame(self, needle: str, timeout: float = 60) -> None:
        """Until a websocket frame the page received (a served app's drawing: its text between escape codes)
        holds `needle`; woken by each frame, never by a timer. `timeout` is only how long a broken app is given."""
        assert self.frames is not None, "Browser(frames=True) keeps the frames"
        seen = 0

        async def found() -> None:
            nonlocal seen
            while True:
                if any(needle in f for f in self.frames[seen:]):
                    return
                seen = len(self.frames)
                await self._page_message()

        try:
            await asyncio.wait_for(found(), timeout)
        except asyncio.TimeoutError:
            raise TimeoutError(f"no frame of the page held {needle!r} in {timeout:.0f} s") from None

    async def text(self) -> str:
        """What the page shows as text (the terminal's rows, in xterm's DOM renderer)."""
        r = await self.call("Runtime.evaluate", {"expression": "document.body.innerText", "returnByValue": True})
        return str(r.get("result", {}).get("value", ""))

    async def _wait_in_page(self, condition: str, value: str, what: str, timeout: float) -> str:
        """`value` (a JavaScript expression) once `condition` holds in the page: a MutationObserver resolves the
        wait when the page changes (no polling); `timeout` is only how long a broken page is given."""
        watch = f"""new Promise(resolve => {{
            const done = () => {{ if ({condition}) {{ resolve({value}); return true; }} return false; }};
            if (done()) return;
            const seen = new MutationObserver(() => {{ if (done()) seen.disconnect(); }});
            seen.observe(document.documentElement, {{subtree: true, childList: true, characterData: true}});
        }})"""
        try:
            r = await asyncio.wait_for(
                self.call("Runtime.evaluate", {"expression": watch, "awaitPromise": True, "returnByValue": True}),
                timeout,
            )
        except asyncio.TimeoutError:
            raise TimeoutError(f"{what} never appeared; the page shows: {(await self.text())[-2000:]!r}") from None
        if "exceptionDetails" in r:
            raise RuntimeError(f"waiting for {what} in the page failed: {r['exceptionDetails']}")
        return str(r.get("result", {}).get("value", ""))

    async def wait_for_text(self, needle: str, timeout: float = 60) -> str:
        """The page's text once it holds `needle`."""
        found = f"document.body && document.body.innerText.includes({json.dumps(needle)})"
        return await self._wait_in_page(found, "document.body.innerText", repr(needle), timeout)

    async def focus(self, selector: str, timeout: float = 60) -> None:
        """Once an element matching `selector` exists, give it the keyboard focus."""
        element = f"document.querySelector({json.dumps(selector)})"
        await self._wait_in_page(f"{element} !== null", f"{element}.focus()", selector, timeout)

    async def press(self, *keys: str) -> None:
        for k in keys:
            if k in KEYS:
                key, code, vk, text, mods = KEYS[k]
            else:
                key, code, vk, text = k, f"Key{k.upper()}" if k.isalpha() else "", ord(k.upper()), k
                mods = 8 if k.isupper() else 0
            down = {"type": "keyDown", "key": key, "code": code, "windowsVirtualKeyCode": vk, "modifiers": mods}
            if text:
                down["text"] = text
            await self.call("Input.dispatchKeyEvent", down)
            await self.call("Input.dispatchKeyEvent", {**down, "type": "keyUp", "text": ""})
            await asyncio.sleep(0.15)

    async def click(self, x: int, y: int) -> None:
        for kind in ("mousePressed", "mouseReleased"):
            await self.call(
                "Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1}
            )

    async def screenshot(self, path: str | os.PathLike) -> str:
        r = await self.call("Page.captureScreenshot", {"format": "png"})
        Path(path).write_bytes(base64.b64decode(r["data"]))
        return str(path)

    async def wait_for_download(self, name: str, timeout: float = 60) -> Path:
        """The downloaded file, once the browser says its download of `name` completed (the browser's own
        download events; `timeout` is only how long a broken page is given)."""
        names: dict[str, str] = {}  # download guid -> suggested file name

        async def completed() -> Path:
            while True:
                msg = json.loads((await self.browser_ws.receive()).data)
                params = msg.get("params", {})
                if msg.get("method") == "Browser.downloadWillBegin":
                    names[params["guid"]] = params.get("suggestedFilename", "")
                elif msg.get("method") == "Browser.downloadProgress" and names.get(params.get("guid")) == name:
                    if params.get("state") == "completed":
                        return self.downloads / name
                    if params.get("state") == "canceled":
                        raise AssertionError(f"the browser cancelled the download of {name}")

        try:
            return await asyncio.wait_for(completed(), timeout)
        except asyncio.TimeoutError:
            raise TimeoutError(f"{name} was not downloaded; the folder holds {os.listdir(self.downloads)}") from None
