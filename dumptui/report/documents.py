"""The JSON documents of the headless commands that look for roots, each built in one place: a rank-and-step
document is the same whether it is the whole answer (`bisect --json`) or one unit of `--rank all --step all`."""

from __future__ import annotations

from dumptui.core.compare.results import OpResult
from dumptui.core.compare.session import Session
from dumptui.core.compare.verdict import BAD
from dumptui.core.search.bisect import Bisection
from dumptui.core.search.compare_all import Comparison
from dumptui.core.search.remedy import remedies
from dumptui.report import data
from dumptui.report import selection as selection_words
from dumptui.report.reasons import say, say_all
from dumptui.report.remedyfiles import remedy_section

EXIT_OK, EXIT_DIVERGED, EXIT_USAGE = 0, 1, 2


def exit_code(found: bool, incomplete: bool) -> int:
    """The one exit-code rule of every command that looks for roots: 1 when a root of divergence was found,
    else 2 when the answer is incomplete (something on the way could not be read or judged: "no root" would be
    a claim the run cannot make), else 0. (headless.py gives it to the commands; the app's report uses it too.)"""
    return EXIT_DIVERGED if found else EXIT_USAGE if incomplete else EXIT_OK


def compare_code(session: Session, comparison: Comparison) -> int:
    """compare's exit code for this comparison."""
    return exit_code(bool(comparison.roots), incomplete(comparison, compare_skipped(session, comparison)))


def left_unread(skipped: dict) -> bool:
    """Whether a run left tensor pairs or files unread (`data.skipped`): with no root among what could be read,
    the answer is then unknown, not "none" (the incomplete of the exit-code rule, headless.exit_code)."""
    return bool(skipped["tensor_pairs"] or any(skipped["files"].values()))


def incomplete(comparison: Comparison, skipped: dict) -> bool:
    """Something on the way could not be read or judged: with no root the answer is unknown (exit 2); with a
    root it stands (exit 1), but what could not be judged may hold another (the contract: README)."""
    return left_unread(skipped) or bool(comparison.bisection.undecided)


def bisect_document(bi: Bisection) -> dict:
    """`bisect --json`: the bisection, what it could not decide or read, and the remedy of its culprit."""
    skipped = data.skipped(bi.session)
    return {
        **data.bisect_report(bi),
        "undecided": say_all(bi.undecided),
        "incomplete": bool(bi.undecided) or left_unread(skipped),
        "skipped": skipped,
        "remedy": remedy_section(remedies(bi.session, bi.roots()[:1])),
    }


def compare_skipped(session: Session, comparison: Comparison) -> dict:
    return data.skipped(session, [t for r in comparison.results for t in r.inputs + r.outputs])


def compare_document(session: Session, comparison: Comparison, only_diverged: bool = False) -> dict:
    """`compare --json`: every op compared (or only the diverged ones), the roots, the remedy, and whether the
    answer is incomplete."""
    skipped = compare_skipped(session, comparison)
    root_indices = {r.pair.index for r in comparison.roots}

    def shown(r: OpResult) -> bool:
        return not only_diverged or any(t.verdict in BAD for t in r.inputs + r.outputs)

    return {
        "ref": data.dump_summary(session.ref),
        "target": data.dump_summary(session.target),
        "alignment": {say(how): n for how, n in session.alignment.counts().items()},
        "ops": [  # a root's hints as its root entry words them (a discontinuity at a root is never benign)
            {
                **data.op_result(r, is_root=r.pair.index in root_indices),
                "local_error": data.local_error(comparison.locals.get(r.pair.index)),
            }
            for r in comparison.results
            if shown(r)
        ],
        "roots": [data.root(r, session, comparison.bisection.checks or []) for r in comparison.roots],
        "remedy": remedy_section(remedies(session, comparison.roots)),
        "search": {"kind": comparison.bisection.search, "reason": say(comparison.bisection.search_reason)},
        "benign": data.benign_evidence(comparison.bisection),
        "flips": [selection_words.site_json(f) for f in data.flips_of(comparison.bisection)],
        "damaged_tensors": data.damaged_tensors(session),
        "skipped": skipped,
        "undecided": say_all(comparison.bisection.undecided),
        "incomplete": incomplete(comparison, skipped),
        "tensors_read": session.tensors_read,
    }
