"""Write the README screenshots: screenshots/*.svg (and .png when cairosvg is installed), at 120x36, of the
app driven by keys on a freshly generated demo pair.

    python tools/screenshots.py [--out screenshots] [--size 120x36]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from typing import Callable

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from textual.pilot import Pilot  # noqa: E402

from dumptui.core.demo import write_demo  # noqa: E402
from dumptui.pairing import PairOptions  # noqa: E402
from dumptui.tui.app import DumpTuiApp  # noqa: E402


async def wait_until(pred: Callable[[], object], timeout: float = 120.0) -> None:
    t0 = time.monotonic()
    while not pred():
        if time.monotonic() - t0 > timeout:
            raise TimeoutError("the app did not settle")
        await asyncio.sleep(0.02)


async def settled(app: DumpTuiApp, pilot: Pilot) -> None:
    await wait_until(lambda: app.main is not None and app.main.bstate is not None and not app.main.bisect_task)
    scr = app.main
    await wait_until(lambda: scr.stats_state == "done")
    await wait_until(
        lambda: (
            scr.detail.result is not None and scr.detail.index == scr.current and scr.detail.tensor_shown is not None
        )
    )
    await pilot.pause()


async def shoot(out: str, size: tuple[int, int]) -> list[str]:
    app = DumpTuiApp(PairOptions("demo/ref", "demo/target"))
    written = []

    def save(name: str) -> None:
        app.save_screenshot(f"{name}.svg", path=out)
        written.append(os.path.join(out, f"{name}.svg"))

    async with app.run_test(size=size) as pilot:
        await settled(app, pilot)
        save("overview")  # the probe, its numbers, the interval before any mark
        await pilot.press("a")
        await wait_until(lambda: app.main.bstate.finished and not app.main.bisect_task)
        await pilot.pause()
        await settled(app, pilot)
        save("converged")  # culprit, proof, hint, history
        await pilot.press("tab")  # into the op detail: scroll to the tensor detail
        for _ in range(12):
            await pilot.press("j")
        await pilot.pause()
        save("culprit-detail")  # worst elements and error histogram of the culprit's output
        await pilot.press("shift+tab", "t", "f")
        await pilot.pause()
        await settled(app, pilot)
        save("flat-only-diverged")  # flat execution-order list, only diverged ops
        await pilot.press("question_mark")
        await pilot.pause()
        save("help")  # every key, generated from the bindings
    return written


def to_png(paths: list[str]) -> list[str]:
    try:
        import cairosvg
    except ImportError:
        print("PNG skipped: cairosvg is not installed (pip install cairosvg to also write .png files)")
        return []
    pngs = []
    for p in paths:
        png = p[:-4] + ".png"
        cairosvg.svg2png(url=p, write_to=png)
        pngs.append(png)
    return pngs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(REPO, "screenshots"))
    ap.add_argument("--size", default="120x36", help="terminal size WIDTHxHEIGHT")
    a = ap.parse_args()
    width, height = (int(v) for v in a.size.lower().split("x"))
    out = os.path.abspath(a.out)
    os.makedirs(out, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="dumptui-shots-") as tmp:
        write_demo(os.path.join(tmp, "demo"))
        cwd = os.getcwd()
        os.chdir(tmp)  # the screen shows demo/ref and demo/target, not a temporary path
        try:
            written = asyncio.run(shoot(out, (width, height)))
        finally:
            os.chdir(cwd)
    for p in written + to_png(written):
        print("wrote", os.path.relpath(p, cwd))
    return 0


if __name__ == "__main__":
    sys.exit(main())
