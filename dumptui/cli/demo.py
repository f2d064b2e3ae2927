"""`dumptui demo`: write a demo pair."""

from __future__ import annotations

import argparse

from dumptui.cli.options import whole_number
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
    p.add_argument("--ops", type=whole_number(1), default=60, help="number of kernels (default 60)")
    p.add_argument(
        "--size",
        # 8 channels: with one, the planted op's transposed layout is the same values and nothing diverges
        type=whole_number(8, step=8, what="the activations have 8 channels"),
        default=4096,
        help="elements per activation tensor, a multiple of 8 (default 4096)",
    )
    p.add_argument("--seed", type=int, default=20261202)
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")


BYTES_PER_ELEMENT_WRITTEN = 4 * 2.5  # float32, and about 2.5 tensors of `size` per kernel (inputs, outputs, weights)
BYTES_PER_FILE = 1024  # npy header and file-system slack, per kernel


def estimated_bytes(ops: int, size: int) -> int:
    """About what a demo pair of `ops` kernels and `size` elements per activation writes, both sides
    (measured: within 10 % from 60 kernels x 4096 to 400 x 1000)."""
    return int(2 * ops * (size * BYTES_PER_ELEMENT_WRITTEN + BYTES_PER_FILE))


def run(args: argparse.Namespace) -> int:
    import os
    import shutil
    import sys

    from dumptui.core.demo.residual import write_demo
    from dumptui.core.io.errors import UsageError
    from dumptui.report.console import progress_bar
    from dumptui.report.fmt import nbytes

    need = estimated_bytes(args.ops, args.size)
    parent = os.path.dirname(os.path.abspath(args.dir)) or "."
    try:
        free = shutil.disk_usage(parent).free
    except OSError:
        free = None
    if free is not None and need > free:
        raise UsageError(f"{args.dir}: the demo pair needs about {nbytes(need)} and {parent} has {nbytes(free)} free")
    if not args.quiet:  # said before writing: --ops 20000 is gigabytes
        print(
            f"writing about {nbytes(need)} to {args.dir} ({args.ops} kernels, {args.size} elements each)",
            file=sys.stderr,
        )

    with progress_bar("writing the demo pair", verbosity_of(args)) as progress:
        info = write_demo(args.dir, n_ops=args.ops, size=args.size, seed=args.seed, progress=progress)
    print(f"wrote {info.ref} and {info.target}: {info.n_kernels} kernels, {info.n_files} files per side")
    print(f"planted divergence: {info.planted}")
    print(f"benign fp16 region: {info.fp16_first} .. {info.fp16_last}")
    print(f"try: dumptui {info.ref} {info.target}   or   dumptui bisect {info.ref} {info.target}")
    return EXIT_OK
