"""Where headless text goes and how it looks: stdout for answers, stderr for progress and chatter.

On a terminal, rich wraps to the window as usual, and a word longer than the window (an op name: MindSpore scope
names run to hundreds of characters) is cut in the middle by the one rule of names (report/names.py), never
folded over lines. Piped or redirected, nothing is wrapped or cut: a line is as long as it needs to be, so a
script can grep a name whole. Progress bars go to stderr, and only when stderr is a terminal and not `-q`.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, TextIO

from rich.console import Console, ConsoleRenderable, Group, RenderHook, RichCast
from rich.text import Text

from dumptui.core.io.indexing_progress import Stage
from dumptui.report.names import cut_word, word_core
from dumptui.report.reasons import STAGE_WORDS

_WORD = re.compile(r"\S+")

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

# Wide enough that no table or line is ever folded when the output is not a terminal (rich pads nothing:
# tables here are not expanded and text is not justified, so this costs no trailing spaces).
UNWRAPPED_WIDTH = 100_000

QUIET, NORMAL, VERBOSE = 0, 1, 2


@dataclass
class Verbosity:
    level: int = NORMAL

    @property
    def quiet(self) -> bool:
        return self.level <= QUIET

    @property
    def verbose(self) -> bool:
        return self.level >= VERBOSE


def is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def fit_words(text: Text, width: int, console: Console) -> Text:
    """`text` with each word longer than `width` (a name: nothing else is that long) cut in the middle by the
    one rule of names, its punctuation kept around it; a line wrapped at spaces then never folds a name."""
    plain = text.plain
    if width <= 0 or len(plain) <= width:
        return text
    out = Text(end=text.end, justify=text.justify, overflow=text.overflow, no_wrap=text.no_wrap, style=text.style)
    at = 0
    for m in _WORD.finditer(plain):
        if len(m.group()) <= width:
            continue
        left, right = word_core(m.group())
        start, end = m.start() + left, m.start() + right
        shown = cut_word(m.group(), width)
        out.append_text(text[at:start])
        out.append(shown[left : len(shown) - (len(m.group()) - right)], style=text.get_style_at_offset(console, start))
        at = end
    out.append_text(text[at:])
    return out


class FitLongWords(RenderHook):
    """What a terminal console prints, each too-long word cut by `fit_words` to the console's width (text and
    groups of text: the renderables the answers are made of)."""

    def __init__(self, console: Console) -> None:
        self.console = console

    def process_renderables(self, renderables: list[ConsoleRenderable]) -> list[ConsoleRenderable]:
        return [self._fit(r) for r in renderables]

    def _fit(self, r: ConsoleRenderable | RichCast | str) -> ConsoleRenderable:
        if isinstance(r, Text):
            return fit_words(r, self.console.width, self.console)
        if isinstance(r, Group):
            return Group(*(self._fit(x) for x in r.renderables), fit=r.fit)
        return r  # type: ignore[return-value]  # tables fold their own cells


def stdout_console(stream: TextIO | None = None) -> Console:
    """The console for a command's answer: wrapped to the window on a terminal, a name longer than a line cut
    in the middle there; never wrapped nor cut otherwise."""
    stream = sys.stdout if stream is None else stream
    if is_terminal(stream):
        console = Console(file=stream, highlight=False, soft_wrap=False)
        console.push_render_hook(FitLongWords(console))
        return console
    return Console(file=stream, highlight=False, soft_wrap=True, width=UNWRAPPED_WIDTH, color_system=None)


def note(message: str, verbosity: Verbosity) -> None:
    """A line of chatter on stderr (`wrote 80 rows to x.csv`): silent with -q."""
    if not verbosity.quiet:
        print(message, file=sys.stderr)


def detail(message: str, verbosity: Verbosity) -> None:
    """A line on stderr shown only with -v (timings, how the dumps were read)."""
    if verbosity.verbose:
        print(message, file=sys.stderr)


ProgressFn = Callable[[int, int], None]


def _bars() -> Progress:
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        ProgressColumn,
        Task,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    class Rate(ProgressColumn):
        def render(self, task: Task) -> Text:
            return Text(f"{task.speed:,.0f}/s" if task.speed else "", style="progress.data.speed")

    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        Rate(),
        TimeElapsedColumn(),
        TextColumn("left"),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        transient=True,
    )


@contextmanager
def progress_bar(label: str, verbosity: Verbosity) -> Iterator[ProgressFn | None]:
    """A rich progress bar on stderr for a long step, fed with (done, total); None when it would not be seen
    (stderr is not a terminal, or -q), so callers pass it straight to the engine's `progress=` hooks."""
    if verbosity.quiet or not is_terminal(sys.stderr):
        yield None
        return
    with _bars() as bar:
        task = bar.add_task(label, total=None)

        def update(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield update


StageFn = Callable[[str, Stage, int, "int | None"], None]  # (what, stage, done, total or None)


@contextmanager
def stage_bars(label: str, verbosity: Verbosity) -> Iterator[StageFn | None]:
    """Progress on stderr for work that goes through named stages, several things at once (both dumps
    indexed): `label` with no count until the first report, then a bar per thing with its stage and count
    (rate and time left where the stage knows its total). None when it would not be seen."""
    if verbosity.quiet or not is_terminal(sys.stderr):
        yield None
        return
    with _bars() as bar:
        waiting = bar.add_task(label, total=None)
        tasks: dict[str, tuple[TaskID, Stage | None]] = {}  # what -> (its bar, its stage)

        def update(what: str, stage: Stage, done: int, total: int | None) -> None:
            if not tasks:
                bar.remove_task(waiting)
            task, shown = tasks.get(what, (None, None))
            doing = STAGE_WORDS[stage][0]
            if task is None:
                task = bar.add_task(f"{what}: {doing}", total=total)
            elif shown != stage:
                bar.reset(task, description=f"{what}: {doing}")  # its own rate and time left
                for t in bar.tasks:
                    if t.id == task:
                        t.total = total  # rich's update leaves a total of None unchanged: unknown, say so
            tasks[what] = task, stage
            bar.update(task, completed=done, total=total)

        yield update
