"""Marks say whose they are and what is inside: a folder is `<`/`>` (in one dump only) only when every op in it
is, else the worst verdict of its paired ops; a conflict made by the user's own `b` says it is the user's mark
(and that `u` undoes it), never that the dumps are missing or unreadable."""

from __future__ import annotations

from dumptui.core.compare.verdict import CLOSE, DIVERGED, ONLY_REF, ONLY_TARGET, PENDING
from dumptui.core.formats import open_dump
from dumptui.core.graph.align import OpPair
from dumptui.core.model.dump import KERNEL, Op
from dumptui.core.search.bisect import Bisection
from dumptui.options.pair import PairOptions, make_session
from dumptui.present import tree
from dumptui.report.reasons import say_all


def pairs_of(names: list[str]) -> list[OpPair]:
    """Kernels paired by name, in execution order (their verdicts are set by the test)."""
    out = []
    for i, n in enumerate(names):
        op = Op(n, n.rsplit("/", 1)[-1].split("-")[0], kind=KERNEL)
        out.append(OpPair(op, op, "exact name", index=i))
    return out


NAMES = ["Default/fc1-Linear/Cast-op4", "Default/fc1-Linear/MatMul-op0", "Default/fc2-Linear/Cast-op5"]


def test_a_folder_is_one_sided_only_when_every_op_inside_is():
    m = tree.OpTreeModel(pairs_of(NAMES))
    fc1 = m.folder_of[0]
    m.set_verdicts({0: ONLY_TARGET})
    assert fc1.verdict == PENDING  # the MatMul is not known yet: never "only in target" meanwhile
    m.set_verdicts({1: CLOSE})
    assert fc1.verdict == CLOSE  # was `>` (only in target) around a paired close MatMul
    m.set_verdicts({1: DIVERGED})
    assert fc1.verdict == DIVERGED
    fc2 = m.folder_of[2]
    m.set_verdicts({2: ONLY_REF})
    assert fc2.verdict == ONLY_REF  # every op inside on one side only
    assert m.root.verdict == DIVERGED


def test_a_conflict_of_the_users_own_mark_says_it_is_theirs(demo_pair):
    options = PairOptions(ref=demo_pair.ref, target=demo_pair.target)
    session = make_session(options, open_dump(demo_pair.ref), open_dump(demo_pair.target))
    bi = Bisection(session)
    bi.start()
    # the first op whose outputs agree: the user says bad, then accepts every computed verdict to the end
    agreeing = next(i for i in range(len(bi.order)) if bi.computed_verdict(i)[0] == "good")
    bi.mark(agreeing, "bad", "user", "marked by the user")
    bi.run()
    said = " ".join(say_all(bi.undecided))
    assert "marked bad by you" in said and "u undoes it" in said, said
    assert "missing, unreadable" not in said
    assert bi.undo()  # the mark is the user's to take back: the search then finds the planted root
    bi.run()
    assert bi.first_root() is not None and bi.first_root().pair.name == demo_pair.planted
