"""Which two dumps to compare and how: the options both the command line and the terminal app open a pair
with, and the two calls that do it (`open_pair`, `make_session`).

It sits between the engine and its two front ends: it imports the engine only (never the CLI, textual or
rich), so the app can open dumps without importing the CLI that starts it.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

from dumptui.core.io.errors import DumptuiError

if TYPE_CHECKING:  # the engine's heavier modules are imported when a pair is opened, not before
    from dumptui.core.compare.session import Session
    from dumptui.core.formats.indexproc import IndexingReport
    from dumptui.core.io.executor import Executor
    from dumptui.core.model.dump import Dump
    from dumptui.core.ranks.units import Unit
    from dumptui.core.search.bisect import Root

SIDES = ("ref", "target")
ALL = "all"  # --rank all: every rank
# From this many files in a dump, a cold index is made in processes of their own, both dumps at once: below
# it, starting the processes costs more than it saves (docs/speed.md, measurements behind the design)
INDEX_IN_PROCESSES_FROM_FILES = 10_000
T = TypeVar("T")


class OptionFileError(DumptuiError):
    """A file given with an option (`--map`, `--ignore-file`) that cannot be read: its path and why."""


@dataclass(frozen=True)
class DumpSelection:
    """Which part of a dump to read when it holds several (None: the only one there is)."""

    rank: str | None = None
    graph: str | None = None
    iteration: str | None = None


@dataclass
class PairOptions:
    """The two dumps and every option that changes how they are read, paired and judged. The field names
    are the command line's option names (`--ref-rank` -> `ref_rank`), which saved sessions record."""

    ref: str
    target: str
    # dump selection: for both sides, or one side (`ref_*`, `target_*` win over the shared value)
    rank: str | None = None
    graph: str | None = None
    iteration: str | None = None
    ref_rank: str | None = None
    ref_graph: str | None = None
    ref_iteration: str | None = None
    target_rank: str | None = None
    target_graph: str | None = None
    target_iteration: str | None = None
    # verdicts (None: the engine's default)
    gain: float | None = None
    floor: list[str] = field(default_factory=list)  # DTYPE=E items
    floor_scale: float | None = None
    max_off: float | None = None
    cos: float | None = None
    no_replay: bool = False
    ignore: list[str] = field(default_factory=list)
    ignore_file: str | None = None
    # pairing
    map: str | None = None  # CSV ref_name,target_name, or an msprobe mapping yaml (options/mapfiles.py)

    @classmethod
    def from_namespace(cls, namespace: object) -> PairOptions:
        """From parsed command-line arguments (an `argparse.Namespace`); options it lacks keep their default."""
        given = {f.name: getattr(namespace, f.name) for f in fields(cls) if hasattr(namespace, f.name)}
        given["ref"], given["target"] = str(given["ref"]), str(given["target"])
        given["ignore"] = list(given.get("ignore") or [])
        given["floor"] = list(given.get("floor") or [])
        return cls(**given)

    def selection(self, side: str) -> DumpSelection:
        """The rank, graph and iteration to read on one side."""

        def pick(opt: str) -> str | None:
            own = getattr(self, f"{side}_{opt}")
            return own if own is not None else getattr(self, opt)

        return DumpSelection(pick("rank"), pick("graph"), pick("iteration"))

    def path(self, side: str) -> str:
        return self.ref if side == "ref" else self.target


def many_files(path: str, at_least: int | None = None) -> bool:
    """Whether the folder `path` holds at least `at_least` (INDEX_IN_PROCESSES_FROM_FILES) entries, its
    subfolders included; the count stops there (a look at the folders' entries, no file is opened; links are not followed, so it never leaves
    `path`)."""
    limit = INDEX_IN_PROCESSES_FROM_FILES if at_least is None else at_least
    seen = 0
    folders = [path]
    while folders:
        try:
            with os.scandir(folders.pop()) as it:
                for entry in it:
                    seen += 1
                    if seen >= limit:
                        return True
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            folders.append(entry.path)
                    except OSError:
                        pass
        except OSError:  # unreadable or gone: the indexing reports it
            continue
    return False


def open_pair(
    options: PairOptions,
    cache: bool = True,
    in_processes: bool = False,
    progress: Callable[[str], object] | None = None,
    indexing: IndexingReport | None = None,
    share_text: bool = False,
) -> tuple[Dump, Dump]:
    """Index both dumps (file names only), one after the other; from the index cache when `cache` and the
    dump is unchanged. `--rank all`: every rank of both, each side merged into one dump (core/ranks/merge.py).
    Raises DumpError with the path and the reason.

    `in_processes` (the app on big dumps): a dump missing from the cache is first indexed into it by a
    process of its own, both at once (core/formats/indexproc.py), so this process's heap never holds the transient
    structures of indexing; any failure there only means it is indexed here as usual.

    `indexing`: told (side, stage, done, total) as the indexing of each dump goes on, in processes or here.

    `share_text` (the app, which keeps both indexes for its session): the two dumps, when loaded from the
    index cache, share the strings of the names they spell alike (index/codec.py `decode`).

    Not in two threads: parsing takes turns on the GIL, so two threads were no faster, but both sides'
    transient indexing structures were alive at once, a higher peak (docs/speed.md, measurements behind the
    design)."""
    from dumptui.core.formats import open_dump
    from dumptui.core.index.cache import protect
    from dumptui.core.model.dump import no_cyclic_gc

    protect(options.path("ref"), options.path("target"))  # no cache entry of either is written inside the other
    if ALL in (options.rank, options.iteration):
        return _open_every_rank(options, cache, progress)

    from dumptui.core.io.indexing_progress import reporting

    texts: dict[str, str] | None = {} if share_text else None

    def one(side: str) -> Dump:
        chosen = options.selection(side)
        with reporting(partial(indexing, side) if indexing is not None else None):
            return open_dump(
                options.path(side),
                rank=chosen.rank,
                graph=chosen.graph,
                iteration=chosen.iteration,
                cache=cache,
                texts=texts,
            )

    if in_processes and cache:
        from dumptui.core.formats.indexproc import index_into_cache

        side_of = {options.path(s): s for s in reversed(SIDES)}  # the same folder twice: "ref"
        index_into_cache(
            [(options.path(s), c.rank, c.graph, c.iteration, None) for s in SIDES for c in [options.selection(s)]],
            (lambda path, *rest: indexing(side_of[path], *rest)) if indexing is not None else None,
        )
    with no_cyclic_gc():
        dumps = one("ref"), one("target")
    # The indexes live as long as the process: out of the cyclic GC's sight, its first collection does not
    # walk their hundreds of thousands of objects.
    gc.freeze()
    return dumps


def first_diverged_step(
    options: PairOptions, cache: bool, progress: Callable[[str], object] | None = None
) -> tuple[str | None, str]:
    """The app's `--rank all --step all`: every rank of every step searched as `bisect --rank all --step all`
    does (core/ranks/allunits.py, each step's weights judged against the step before), and the first step in
    which a rank diverged opened; (that step, the sentence that says why). None diverged: the last step."""
    from dumptui.core.ranks.allunits import run_units
    from dumptui.core.ranks.units import pair_units, units

    common, _only_ref, _only_target = pair_units(units(options.ref, ALL, ALL), units(options.target, ALL, ALL))
    if not common:
        from dumptui.core.io.errors import DumpError

        raise DumpError(options.target, "no rank and step is in both dumps")

    def run(unit, carried):  # type: ignore[no-untyped-def]
        session, _bi, roots = search_unit(options, unit, carried, "bisect", cache=cache)
        return session, roots

    done = [0]

    def counted(unit, _session, _roots) -> None:  # type: ignore[no-untyped-def]
        done[0] += 1
        if progress is not None:
            progress(f"searching every rank and step: {done[0]} of {len(common)} ({unit.label})")

    result = run_units(common, run, counted)
    steps = list(dict.fromkeys(u.step for u in common))
    first = result.first
    if first is not None:
        ranks = ", ".join(str(r) for r in first.cross.first) if first.cross is not None else "?"
        before = (
            f"; steps {', '.join(s or '-' for s in steps[: steps.index(first.step)])} had none"
            if steps.index(first.step)
            else ""
        )
        return first.step, f"--step all: step {first.step} is the first with a divergence (rank {ranks}){before}"
    return steps[-1], f"--step all: no step has a divergence on any rank; showing the last step, {steps[-1]}"


def _open_every_rank(
    options: PairOptions, cache: bool, progress: Callable[[str], object] | None = None
) -> tuple[Dump, Dump]:
    """Every rank of one step of both dumps, each side as one dump whose ops are named `rank_R/...`."""
    from dumptui.core.formats import open_dump
    from dumptui.core.io.errors import DumpError
    from dumptui.core.ranks.merge import merge_ranks
    from dumptui.core.ranks.units import pair_units, units

    note = ""
    if options.iteration == ALL:
        step, note = first_diverged_step(options, cache, progress)
        options = replace(options, iteration=step)
    common, only_ref, only_target = pair_units(
        units(options.ref, ALL, options.iteration), units(options.target, ALL, options.iteration)
    )
    if not common:
        raise DumpError(options.target, "no rank is in both dumps")
    merged = []
    for side in SIDES:
        graph = options.selection(side).graph
        dumps = {u.rank or "0": open_dump(options.path(side), u.rank, graph, u.step, cache=cache) for u in common}
        merged.append(merge_ranks(dumps, options.path(side)))
        merged[-1].selection_note = note
    for side, missing in (("reference", only_ref), ("target", only_target)):
        if missing:
            merged[0].notes.append(f"only in the {side}, not shown: " + "; ".join(u.label for u in missing))
    return merged[0], merged[1]


def _read_option_file(path: str, read: Callable[[str], T]) -> T:
    try:
        return read(path)
    except OSError as e:
        raise OptionFileError(path, e.strerror or str(e)) from None
    except ValueError as e:  # undecodable text, a malformed line
        raise OptionFileError(path, str(e)) from None


CARRIED_UNKNOWN = ("?", -1.0)  # make_session's default: the step before is looked for (step_before)
SEARCHES = ("bisect", "compare")


def search_unit(
    options: PairOptions,
    unit: Unit,
    carried: tuple[str, float] | None,
    command: str,
    cache: bool = True,
    kl: bool = False,
    use_graph: bool = True,
    executor: Executor | None = None,
) -> tuple[Session, Any, list[Root]]:
    """One (rank, step) searched as `command` searches it, told what its rank's step before carried: its
    session, its Bisection (bisect) or Comparison (compare), its roots. The every-unit table, the app's first
    diverged step and a single unit's step before all run this one search, so they agree."""
    chosen = replace(options, rank=unit.rank, iteration=unit.step)
    session = make_session(chosen, *open_pair(chosen, cache), kl=kl, carried_from_step=carried, executor=executor)
    if command == "bisect":
        from dumptui.core.search.bisect import Bisection

        bi = Bisection(session, use_graph=use_graph)
        bi.prepare()
        bi.run()
        bi.first_root()
        return session, bi, bi.roots()
    from dumptui.core.search.compare_all import compare_pair

    comparison = compare_pair(session)
    return session, comparison, comparison.roots


def step_before(
    options: PairOptions, command: str = "bisect", executor: Executor | None = None
) -> tuple[str, float] | None:
    """A single training step chosen (`--step S`): its rank's earlier steps searched as the every-unit run
    searches them, and what the last one carries into S — (that step, the largest error it saw) when it
    differed, else None. So `--step S` alone says "carried from step S-1" where `--step all` does, never
    "check the checkpoint" for weights the optimizer updated with the earlier step's error."""
    from dumptui.core.io.errors import DumptuiError
    from dumptui.core.ranks.allunits import run_units
    from dumptui.core.ranks.units import Unit, pair_units, units

    if options.iteration in (None, ALL) or options.rank == ALL:
        return None
    try:
        common, _r, _t = pair_units(units(options.ref, options.rank, ALL), units(options.target, options.rank, ALL))
    except DumptuiError:
        return None  # no step level to read: nothing before
    chosen = Unit(options.rank, options.iteration)
    earlier = [u for u in common if u.rank == chosen.rank and u.sort_key() < chosen.sort_key()]
    if not earlier:
        return None

    def run(unit: Unit, carried: tuple[str, float] | None) -> tuple[Session, list[Root]]:
        session, _search, roots = search_unit(options, unit, carried, command, executor=executor)
        return session, roots

    return run_units(earlier, run).carried.get(chosen.rank)


def make_session(
    options: PairOptions,
    ref: Dump,
    target: Dump,
    kl: bool = True,
    carried_from_step: tuple[str, float] | None = CARRIED_UNKNOWN,
    command: str = "bisect",
    executor: Executor | None = None,
) -> Session:
    """Align the two dumps with the thresholds, ignore rules and forced pairs of `options`. A training step
    is told what the step before it on its rank carried (`carried_from_step`; by default looked for with
    `step_before`, searching the earlier steps as `command` does). `executor`: where the session's work runs
    (the earlier steps' searches too); None: here."""
    from dumptui.core.compare.session import Session
    from dumptui.core.compare.verdict import (
        Thresholds,
        parse_floors,
        parse_user_ignore,
        read_ignore_file,
        with_overrides,
    )
    from dumptui.options.mapfiles import read_pairs

    validate_thresholds(options)
    th = with_overrides(
        Thresholds(),
        cos=options.cos,
        gain=options.gain,
        max_off=options.max_off,
        floor_scale=options.floor_scale,
        floors=parse_floors(options.floor) or None,
        replay=False if options.no_replay else None,
    )
    ignores = [parse_user_ignore(s) for s in options.ignore]
    if options.ignore_file:
        ignores += _read_option_file(options.ignore_file, read_ignore_file)
    forced = _read_option_file(options.map, lambda path: read_pairs(path, ref, target)) if options.map else None
    session = Session(ref, target, th, ignores, forced, kl=kl, remember_same_files=True)
    if executor is not None:
        session.executor = executor
    if os.path.realpath(options.path("ref")) == os.path.realpath(options.path("target")):
        # "no divergence" of one dump with itself says nothing of two devices: said with the answer
        session.alignment.warnings.append(
            f"ref and target are the same folder ({os.path.realpath(options.path('ref'))}): the dump is "
            "compared with itself"
        )
    session.carried_from_step = (
        step_before(options, command, executor) if carried_from_step == CARRIED_UNKNOWN else carried_from_step
    )
    require_pairs(session)
    return session


# (option, lowest, highest, whether the lowest itself is allowed): beyond these a verdict means nothing (a gain of
# 0 or less makes every op a root, NaN compares false with everything; a floor of 1 calls any tensor close)
LIMITS = {
    "gain": (0.0, 1e6, False),
    "floor_scale": (0.0, 1e3, False),
    "max_off": (0.0, 1.0, False),
    "cos": (-1.0, 1.0, True),
}
FLOOR_LIMITS = (0.0, 1.0)  # a dtype's floor: error over the tensor's RMS, above 0 and below 1


def validate_thresholds(options: PairOptions) -> None:
    """UsageError (exit 2) for a threshold that is not a finite number in its range, from the flags or the
    config file alike: NaN compares false with everything and would silently turn verdicts around."""
    import math

    from dumptui.core.compare.verdict import parse_floors
    from dumptui.core.io.errors import UsageError

    for name, (low, high, low_ok) in LIMITS.items():
        value = getattr(options, name)
        if value is None:
            continue
        ok = math.isfinite(value) and (low <= value if low_ok else low < value) and value <= high
        if not ok:
            lower = "at least" if low_ok else "above"
            raise UsageError(
                f"--{name.replace('_', '-')} {value!r}: must be a finite number {lower} {low:g} and at most {high:g}"
            )
    try:
        floors = parse_floors(options.floor)
    except ValueError as e:
        raise UsageError(str(e)) from None
    for dtype, value in floors:
        if not (math.isfinite(value) and FLOOR_LIMITS[0] < value < FLOOR_LIMITS[1]):
            raise UsageError(f"--floor {dtype}={value!r}: a floor must be a finite number above 0 and below 1")


def require_pairs(session: Session) -> None:
    """DumpError "nothing to compare" when no op of one dump pairs with an op of the other: then there is no
    verdict to give, and "no divergence" would be a wrong answer."""
    if any(p.paired for p in session.alignment.pairs):
        return
    from dumptui.core.io.errors import DumpError

    def holds(side: str, dump: Dump) -> str:
        return f"the {side} ({dump.format}) holds {len(dump.ops)} op{'s' if len(dump.ops) != 1 else ''}"

    ref, target = session.ref, session.target
    raise DumpError(
        f"{ref.path} vs {target.path}",
        f"nothing to compare: no op of one dump pairs with an op of the other; "
        f"{holds('reference', ref)}, {holds('target', target)}",
    )
