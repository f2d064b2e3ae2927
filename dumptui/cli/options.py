"""The option groups several commands share: which rank/graph/step of each dump, the verdict thresholds and
rules, and the output (--json, -q, -v)."""

from __future__ import annotations

import argparse


def dump_options(p: argparse.ArgumentParser, every: bool = False) -> None:
    """`every`: the command takes `all` for --rank and --step (every rank, every step, in one report)."""
    g = p.add_argument_group("dump selection (both sides; --ref-*/--target-* for one side)")
    for opt in ("rank", "graph", "iteration"):
        # --step first (what usage shows): the one word for msprobe steps and MindSpore iterations alike
        names = ["--step", "--iteration"] if opt == "iteration" else [f"--{opt}"]
        noun = "step (iteration)" if opt == "iteration" else opt
        text = f"{noun} to read when the dump holds several" + (
            "; --iteration is the same" if opt == "iteration" else ""
        )
        if every and opt != "graph":
            text += "; 'all': every one, in one report"
        g.add_argument(*names, dest=opt, metavar="N", help=text)
        g.add_argument(f"--ref-{opt}", metavar="N", help=argparse.SUPPRESS)
        g.add_argument(f"--target-{opt}", metavar="N", help=argparse.SUPPRESS)


def compare_options(p: argparse.ArgumentParser, every: bool = False) -> None:
    dump_options(p, every)
    g = p.add_argument_group("verdicts (see docs/workflow.md: where the error is born)")
    g.add_argument(
        "--gain", type=float, metavar="G", help="a root creates G times the error its inputs carry (default 10)"
    )
    g.add_argument(
        "--floor",
        action="append",
        default=[],
        metavar="DTYPE=E",
        help="noise floor of a dtype, as error over the tensor's RMS (defaults float32=2^-13, "
        "float16=2^-10, bfloat16=2^-7); repeatable",
    )
    g.add_argument("--floor-scale", type=float, dest="floor_scale", metavar="K", help="multiply every floor by K")
    g.add_argument(
        "--max-off",
        type=float,
        dest="max_off",
        help="diverged when more than this share of elements is off by over 10x the floor (default 0.10)",
    )
    g.add_argument(
        "--cos", type=float, metavar="C", help="also call a pair diverged below this cosine (off by default)"
    )
    g.add_argument(
        "--no-replay",
        action="store_true",
        dest="no_replay",
        help="do not recompute ops to prove roots: the gain rule decides alone",
    )
    g.add_argument(
        "--ignore",
        action="append",
        default=[],
        metavar="GLOB[:io.slot]",
        help="ignore tensors of ops matching GLOB (repeatable), e.g. '*Dropout*' or '*BatchNorm*:output.1'",
    )
    g.add_argument("--ignore-file", metavar="FILE", help="file of --ignore patterns, one per line")
    g.add_argument(
        "--map",
        metavar="FILE",
        help="force these op pairs: CSV ref_name,target_name, or an msprobe data/api/cell mapping .yaml",
    )
    g.add_argument(
        "--no-config",
        action="store_true",
        help="ignore the config file (~/.config/dumptui/config.toml, or $DUMPTUI_CONFIG)",
    )


def output_options(p: argparse.ArgumentParser, json_help: str = "write one JSON document (for scripts)") -> None:
    g = p.add_argument_group("output")
    g.add_argument(
        "--json", nargs="?", const="-", metavar="FILE", help=f"{json_help}; to stdout, or to FILE ('-': stdout)"
    )
    g.add_argument("-q", "--quiet", action="store_true", help="only the answer: no progress, no notes")
    g.add_argument("-v", "--verbose", action="store_true", help="also timings and how the dumps were read (stderr)")


def worker_count(text: str) -> int:
    """`--workers N`: at least 1, at most this machine's CPUs (a process per CPU is what helps; 10,000 forked
    processes hung `compare` past a minute): a larger count is capped, and said on stderr."""
    import argparse
    import os
    import sys

    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of worker processes") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"{n}: at least 1 worker process")
    cpus = os.cpu_count() or 1
    if n > cpus:
        print(f"dumptui: --workers {n}: capped at {cpus}, the CPUs of this machine", file=sys.stderr)
        return cpus
    return n


REF_HELP = "the reference dump: the run whose numbers are right (e.g. Ascend910), a folder"
TARGET_HELP = "the target dump: the run that differs (e.g. Ascend310), a folder"
