"""`dumptui demo`: write a demo pair."""

from __future__ import annotations

import argparse

from dumptui.headless import (
    EXIT_OK,
    verbosity_of,
)

NAME = "demo"
DESCRIPTION = (
    "Write a demo pair (MindSpore 2.x layout) computed by a small network, with one planted "
    "divergence and one benign fp16 region: DIR/ref and DIR/target."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("dir")
    p.add_argument("--ops", type=int, default=60, help="number of kernels (default 60)")
    p.add_argument("--size", type=int, default=4096, help="elements per activation tensor (default 4096)")
    p.add_argument("--seed", type=int, default=20261202)
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")


def run(args: argparse.Namespace) -> int:
    from dumptui.core.demo.residual import write_demo
    from dumptui.report.console import progress_bar

    with progress_bar("writing the demo pair", verbosity_of(args)) as progress:
        info = write_demo(args.dir, n_ops=args.ops, size=args.size, seed=args.seed, progress=progress)
    print(f"wrote {info.ref} and {info.target}: {info.n_kernels} kernels, {info.n_files} files per side")
    print(f"planted divergence: {info.planted}")
    print(f"benign fp16 region: {info.fp16_first} .. {info.fp16_last}")
    print(f"try: dumptui {info.ref} {info.target}   or   dumptui bisect {info.ref} {info.target}")
    return EXIT_OK
