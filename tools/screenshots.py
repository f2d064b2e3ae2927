"""Write the README screenshots: screenshots/*.svg (Textual's `save_screenshot`), and a .png of each rendered
by a real browser (headless Chromium, when it is installed: fonts as a browser draws them, no spacing
glitches of an SVG converter).

    python tools/screenshots.py [--out screenshots]      (make screenshots)

Pairs, all generated here except the last: the demo pair (`dumptui demo`); a real-layout MindSpore pair with
fp16 noise and a planted bug (core/demo/noisy.py: the error plot and the replay proof); and, when
../shared/fixtures is present, the real MindSpore 2.10 dumps A vs B_mod (ops.Mod renamed from FloorMod). Sizes
80x24 and 160x48; plus the help with the marks legend, the cross-rank story of a generated 4-rank pair
(`--rank all --step 1`, 100x30), and the headless `dumptui bisect` output (A vs B_mod, or the noisy pair
without the fixtures).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from textual.pilot import Pilot  # noqa: E402

from dumptui.core.demo.noisy import write_noisy_demo  # noqa: E402
from dumptui.core.demo.ranks import write_ranks_demo  # noqa: E402
from dumptui.core.demo.residual import write_demo  # noqa: E402
from dumptui.options.pair import PairOptions  # noqa: E402
from dumptui.tui.app import DumpTuiApp  # noqa: E402

MOD_FIXTURE = os.path.join(REPO, "..", "shared", "fixtures", "mindspore-2.10-cpu", "dumps")
CHROMIUM_FLAGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
)


async def wait_until(pred: Callable[[], object], timeout: float = 300.0) -> None:
    t0 = time.monotonic()
    while not pred():
        if time.monotonic() - t0 > timeout:
            raise TimeoutError("the app did not settle")
        await asyncio.sleep(0.02)


async def settled(app: DumpTuiApp, pilot: Pilot) -> None:
    await wait_until(lambda: app.main is not None and app.main.bstate is not None and not app.main.bisect_task)
    scr = app.main
    await wait_until(lambda: scr.stats_state == "done")
    await wait_until(lambda: scr.detail.result is not None and scr.detail.index == scr.current)
    await pilot.pause()


SCRATCH: list[str] = []  # the run's temporary folder (main)


def fresh_state() -> None:
    """Each shot its own state and config folders: no resume offer from the shot before (the app autosaves
    every bisection), the default theme whatever the user chose, nothing written to the user's folders."""
    root = tempfile.mkdtemp(prefix="xdg-", dir=SCRATCH[0])
    os.environ["XDG_STATE_HOME"] = os.path.join(root, "state")
    os.environ["XDG_CONFIG_HOME"] = os.path.join(root, "config")


async def shoot(
    ref: str, target: str, size: tuple[int, int], out: str, name: str, converge: bool = True, **selection: str
) -> str:
    fresh_state()
    app = DumpTuiApp(PairOptions(ref, target, **selection))
    async with app.run_test(size=size) as pilot:
        await settled(app, pilot)
        if converge:
            await pilot.press("a")
            await wait_until(lambda: app.main.bstate.finished and not app.main.bisect_task)
            await settled(app, pilot)
            await pilot.pause(0.3)
        app.save_screenshot(f"{name}.svg", path=out)
    return os.path.join(out, f"{name}.svg")


async def shoot_help(ref: str, target: str, out: str) -> str:
    fresh_state()
    app = DumpTuiApp(PairOptions(ref, target))
    async with app.run_test(size=(100, 48)) as pilot:
        await settled(app, pilot)
        await pilot.press("question_mark")
        await pilot.pause(0.3)
        app.screen.query_one("#help-body").scroll_end(animate=False)  # the marks legend ends the help
        await pilot.pause(0.3)
        app.save_screenshot("help-marks.svg", path=out)
    return os.path.join(out, "help-marks.svg")


async def shoot_picker(ref: str, target: str, out: str, name: str = "ranks-picker-80x24") -> str:
    """The picker of a pair of several ranks and steps, every unit searched, at 80x24."""
    from dumptui.tui.screens.picker import PickerScreen

    fresh_state()
    app = DumpTuiApp(PairOptions(ref, target))
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(lambda: isinstance(app.screen, PickerScreen) and app.screen.picker.complete)
        await pilot.pause(0.3)
        app.save_screenshot(f"{name}.svg", path=out)
    return os.path.join(out, f"{name}.svg")


def headless_bisect(ref: str, target: str, out: str) -> str:
    """`dumptui bisect REF TARGET` itself (a subprocess, colours forced), as a terminal 100 columns wide
    shows it: its ANSI output drawn to SVG by rich."""
    from rich.console import Console
    from rich.text import Text

    env = dict(os.environ, FORCE_COLOR="1", COLUMNS="100", PYTHONPATH=REPO, TERM="xterm-256color")
    env.pop("NO_COLOR", None)
    done = subprocess.run(
        [sys.executable, "-m", "dumptui", "bisect", ref, target],
        check=False,  # exit 1 is an answer (divergence found); the code is checked below
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    if done.returncode not in (0, 1):
        raise RuntimeError(f"dumptui bisect failed ({done.returncode}): {done.stderr[-2000:]}")
    path = os.path.join(out, "bisect-headless.svg")
    with open(os.devnull, "w") as sink:  # recorded for the SVG, not shown
        console = Console(record=True, width=100, force_terminal=True, color_system="truecolor", file=sink)
        console.print(Text(f"$ dumptui bisect {ref} {target}", style="bold"))
        console.print(Text.from_ansi(done.stdout.rstrip("\n")), soft_wrap=True)
        console.print(Text(f"$ echo $?\n{done.returncode}", style="dim"))
        console.save_svg(path, title="dumptui bisect")
    return path


def svg_size(path: str) -> tuple[int, int]:
    with open(path, encoding="utf-8") as fh:
        head = fh.read(4000)
    m = re.search(r'viewBox="0 0 ([\d.]+) ([\d.]+)"', head)
    if not m:
        return 1200, 800
    return int(float(m.group(1))) + 1, int(float(m.group(2))) + 1


def to_png(paths: list[str]) -> list[str]:
    exe = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)
    if exe is None:
        print("PNG skipped: no Chromium (apt-get install chromium) to render the SVGs as a browser does")
        return []
    pngs = []
    with tempfile.TemporaryDirectory(prefix="dumptui-shots-chromium-") as profile:
        for p in paths:
            w, h = svg_size(p)
            png = p[:-4] + ".png"
            subprocess.run(
                [
                    exe,
                    *CHROMIUM_FLAGS,
                    f"--user-data-dir={profile}",
                    f"--window-size={w},{h}",
                    f"--screenshot={png}",
                    "file://" + os.path.abspath(p),
                ],
                check=True,
                capture_output=True,
                timeout=120,
            )
            pngs.append(png)
    return pngs


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--out", default=os.path.join(REPO, "screenshots"))
    a = ap.parse_args()
    out = os.path.abspath(a.out)
    os.makedirs(out, exist_ok=True)
    written: list[str] = []
    cwd = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="dumptui-shots-") as tmp:
        SCRATCH[:] = [tmp]
        write_demo(os.path.join(tmp, "demo"))
        write_noisy_demo(os.path.join(tmp, "noisy"), "fp16", "main")
        ranks = write_ranks_demo(os.path.join(tmp, "ranks"))
        os.chdir(tmp)  # the screen shows demo/ref and noisy/ref, not a temporary path
        try:
            written.append(asyncio.run(shoot("demo/ref", "demo/target", (80, 24), out, "probe-80x24", converge=False)))
            written.append(asyncio.run(shoot("noisy/ref", "noisy/target", (80, 24), out, "noisy-culprit-80x24")))
            written.append(asyncio.run(shoot("noisy/ref", "noisy/target", (160, 48), out, "noisy-culprit-160x48")))
            written.append(asyncio.run(shoot_help("demo/ref", "demo/target", out)))
            # every rank of one step: the rank that diverged first and the ranks its divergence reached
            step = str(ranks.bug_step)
            shot = shoot(
                "ranks/ref", "ranks/target", (100, 30), out, "ranks-culprit-100x30", rank="all", iteration=step
            )
            written.append(asyncio.run(shot))
            written.append(asyncio.run(shoot_picker("ranks/ref", "ranks/target", out)))  # no --rank / --step
            if os.path.isdir(MOD_FIXTURE):
                os.chdir(MOD_FIXTURE)  # A and B_mod as the user types them
                written.append(asyncio.run(shoot("A", "B_mod", (80, 24), out, "mod-culprit-80x24")))
                written.append(asyncio.run(shoot("A", "B_mod", (160, 48), out, "mod-culprit-160x48")))
                written.append(headless_bisect("A", "B_mod", out))
            else:  # the generated noisy pair instead (its report lists every fp16-rounded weight: longer)
                print(f"A vs B_mod skipped: {MOD_FIXTURE} not found")
                written.append(headless_bisect("noisy/ref", "noisy/target", out))
        finally:
            os.chdir(cwd)
    for p in written + to_png(written):
        print("wrote", os.path.relpath(p, cwd))
    return 0


if __name__ == "__main__":
    sys.exit(main())
