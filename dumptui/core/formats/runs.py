"""Two runs in one iteration folder: a stale run's files left beside the new ones (a job run again into the same
dump path), so that tensors are there twice. Readers make a kernel's second file of a tensor its second call;
pairing the first calls compared one run's copies and left the other run's aside, silently (a good stale run
hid the divergence: exit 0). This module tells two runs from a kernel called twice by the files' times, picks
the run that is whole when one is, and says what it left out, for the MindSpore and CANN raw readers alike.

Two runs are told apart by a time cut that puts copies of the same kernel's tensors on both sides:
- every kernel exactly twice, every first copy older than every second (a kernel truly called twice
  interleaves in time with the others): two whole runs, whatever their times;
- else the largest gap between the files' times, when it is longer than what either side lasts (a run writes
  an iteration's files within its own span; another process starts, compiles and runs before it writes again,
  a kernel called twice in one run is called again within the run's span).

The answer is then incomplete, the problem saying which files are twice: when one side holds every kernel of
the folder and the other only some, the whole side is the run compared (the other side's files left out,
named); when both are whole, which run the dump is cannot be told (the earlier is compared); when neither is,
the copies are compared as calls, as before, and named.
"""

from __future__ import annotations

from dataclasses import dataclass

from dumptui.core.model.dump import KERNEL, Op, Problem
from dumptui.core.model.reason import Why, because

SHOWN = 3  # the copies a problem names one by one


@dataclass(frozen=True)
class _Cut:
    early: list[Op]
    late: list[Op]
    by_order: bool  # every kernel twice, the runs told apart by order alone


def _group(op: Op) -> tuple[str, str]:
    return op.graph, op.file_name or op.name


def _calls(ops: list[Op]) -> dict[tuple[str, str], list[Op]]:
    calls: dict[tuple[str, str], list[Op]] = {}
    for op in ops:
        if op.kind == KERNEL:
            calls.setdefault(_group(op), []).append(op)
    return calls


def _time(op: Op) -> int:
    assert op.timestamp is not None  # (only timed ops are cut)
    return op.timestamp


def _cut(ops: list[Op]) -> _Cut | None:
    timed = [op for op in ops if op.timestamp is not None]
    calls = _calls(timed)
    untimed = any(op.kind == KERNEL and op.timestamp is None for op in ops)
    if len(calls) < 2 or untimed or not any(len(c) > 1 for c in calls.values()):
        return None  # nothing twice, or no times to tell two runs from a kernel called twice
    if all(len(c) == 2 for c in calls.values()):
        first = max(_time(min(c, key=_time)) for c in calls.values())
        second = min(_time(max(c, key=_time)) for c in calls.values())
        if first < second:
            return _Cut([op for op in timed if _time(op) < second], [op for op in timed if _time(op) >= second], True)
    times = sorted({_time(op) for op in timed})
    if len(times) < 3:
        return None
    gap, at = max((times[i + 1] - times[i], i) for i in range(len(times) - 1))
    if gap <= max(times[at] - times[0], times[-1] - times[at + 1]):
        return None  # no pause longer than what either side lasts: one run (a kernel called twice)
    cut = times[at + 1]
    early, late = [op for op in timed if _time(op) < cut], [op for op in timed if _time(op) >= cut]
    early_kernels, late_kernels = set(_calls(early)), set(_calls(late))
    if not early_kernels & late_kernels:
        return None  # nothing on both sides: not the same kernels twice
    return _Cut(early, late, False)


def _stamps(ops: list[Op]) -> tuple[int, int]:
    times = [_time(op) for op in ops]
    return min(times), max(times)


def _named(ops: list[Op]) -> tuple[tuple[str, ...], int]:
    """The first SHOWN kernel names, and how many more there are."""
    names = sorted({op.file_name or op.name for op in ops if op.kind == KERNEL})
    return tuple(names[:SHOWN]), max(len(names) - SHOWN, 0)


def _renumber(ops: list[Op]) -> None:
    """Calls 1, 2... again in time order, per kernel (and per parameter or constant) of the ops kept."""
    groups: dict[tuple[str, str, str], list[Op]] = {}
    for op in ops:
        groups.setdefault((op.kind, *_group(op)), []).append(op)
    for group in groups.values():
        for i, op in enumerate(sorted(group, key=lambda o: (o.timestamp is None, o.timestamp or 0, o.call))):
            op.call = i + 1


def separate_runs(ops: list[Op], folder: str) -> tuple[list[Op], Problem | None]:
    """The ops to compare and, when the folder holds two runs, the problem that says so (see the module)."""
    cut = _cut(ops)
    if cut is None:
        return ops, None
    every = set(_calls(ops))
    early_kernels, late_kernels = set(_calls(cut.early)), set(_calls(cut.late))
    twice = [op for op in cut.early + cut.late if _group(op) in early_kernels & late_kernels]
    head = (len(early_kernels & late_kernels), len(every))
    if early_kernels == every and late_kernels == every:
        return ops, Problem(
            folder, because(Why.TWO_RUNS_UNTOLD, head, _stamps(cut.early), _stamps(cut.late), _named(twice))
        )
    if every in (early_kernels, late_kernels):
        kept, left = (cut.early, cut.late) if early_kernels == every else (cut.late, cut.early)
        dropped = {id(op) for op in left}
        ops = [op for op in ops if id(op) not in dropped]
        _renumber(ops)
        older = left is cut.early
        return ops, Problem(
            folder,
            because(Why.TWO_RUNS_ONE_LEFT_OUT, head, _stamps(left), older, len(left), _named(left), _stamps(kept)),
        )
    return ops, Problem(
        folder, because(Why.TWO_RUNS_NEITHER_WHOLE, head, _stamps(cut.early), _stamps(cut.late), _named(twice))
    )
