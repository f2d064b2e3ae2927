"""`dumptui inspect`: one dump file on its own."""

from __future__ import annotations

import argparse

from dumptui.cli.common import console, jnum
from dumptui.cli.options import output_options, whole_number
from dumptui.core.io.errors import UsageError
from dumptui.headless import (
    EXIT_OK,
    EXIT_USAGE,
)

NAME = "inspect"
DESCRIPTION = "One dump file: the name decoded, the header, statistics and first values."


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("file")
    p.add_argument("-n", "--values", type=whole_number(0), default=10, help="how many values to print (default 10)")
    output_options(p)


def run(args: argparse.Namespace) -> int:
    from dumptui.report import fmt
    from dumptui.report.fileinfo import inspect_file

    try:
        info = inspect_file(args.file, args.values)
    except OSError as e:
        raise UsageError(f"{args.file}: {e.strerror or e}") from None
    if args.json is not None:
        from dumptui.report import jsonout

        st = info.stats
        code = EXIT_OK if not info.problem else EXIT_USAGE
        jsonout.write(
            jsonout.document(
                "inspect",
                {
                    "path": info.path,
                    "kind": info.kind,
                    "fields": info.fields,
                    "dtype": info.dtype,
                    "shape": list(info.shape) if info.shape is not None else None,
                    "bytes": info.size_on_disk,
                    "problem": info.problem,
                    "repaired": info.repaired,
                    "declared": info.declared,
                    "stats": None if st is None else {k: jnum(v) for k, v in st.to_dict().items()},
                    "first_values": [jnum(float(v)) if isinstance(v, float) else v for v in info.first_values],
                },
                code,
            ),
            args.json,
        )
        return code
    from dumptui.report.tables import name

    con = console()
    con.print(f"[bold]{name(info.path)}[/bold]")
    con.print(f"  {name(info.kind)}, {fmt.nbytes(info.size_on_disk)}")
    for k, v in info.fields.items():
        con.print(f"  {k:20s} {name(v)}")
    if info.declared:
        con.print(f"  {'header':20s} {name(info.declared)}")
    con.print(f"  {'dtype, shape':20s} {name(info.dtype or '?')} {fmt.shape(info.shape)}")
    if info.repaired:
        con.print(f"  [yellow]damaged:[/yellow] {name(info.repaired)}")
    if info.problem:
        con.print(f"  [magenta]unreadable:[/magenta] {name(info.problem)}")
        return EXIT_USAGE
    st = info.stats
    if st is not None:
        con.print(f"  {'min / max':20s} {fmt.g(st.min)} / {fmt.g(st.max)}")
        con.print(f"  {'mean / std':20s} {fmt.g(st.mean)} / {fmt.g(st.std)}")
        con.print(f"  {'L2 norm':20s} {fmt.g(st.l2)}")
        con.print(f"  {'zeros / nan / inf':20s} {st.zeros} / {st.nan} / {st.pos_inf + st.neg_inf}")
    con.print(
        f"  first {len(info.first_values)} values: "
        + ", ".join(fmt.g(float(v)) if isinstance(v, float) else str(v) for v in info.first_values)
    )
    return EXIT_OK
