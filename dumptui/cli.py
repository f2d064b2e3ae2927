"""Command line: `dumptui REF TARGET` opens the terminal app; subcommands work without any UI.

Exit codes: 0 no divergence, 1 divergence found, 2 bad usage or unreadable input.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import TYPE_CHECKING, Iterable

from . import __version__
from .core.errors import DumptuiError, UsageError
from .pairing import PairOptions, make_session, open_pair

if TYPE_CHECKING:  # rich and the engine are imported by the subcommand that needs them
    from rich.console import Console

    from .core.model import Dump

SUBCOMMANDS = ("bisect", "compare", "info", "inspect", "demo", "convert", "config", "serve")
EXIT_OK, EXIT_DIVERGED, EXIT_USAGE = 0, 1, 2


def _dump_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("dump selection (both sides; --ref-*/--target-* for one side)")
    for opt in ("rank", "graph", "iteration"):
        g.add_argument(f"--{opt}", metavar="N", help=f"{opt} to read when the dump holds several")
        g.add_argument(f"--ref-{opt}", metavar="N", help=argparse.SUPPRESS)
        g.add_argument(f"--target-{opt}", metavar="N", help=argparse.SUPPRESS)


def _compare_options(p: argparse.ArgumentParser) -> None:
    _dump_options(p)
    g = p.add_argument_group("verdicts (see README: where the error is born)")
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
    g.add_argument("--map", metavar="FILE", help="CSV ref_name,target_name: force these op pairs")


def build_parser(sub: str | None) -> argparse.ArgumentParser:
    if sub is None:
        p = argparse.ArgumentParser(
            prog="dumptui",
            description="Find the first operator where two tensor dumps diverge "
            "(e.g. Ascend910 vs Ascend310). Opens the terminal app; see the subcommands for headless use.",
            epilog="subcommands: bisect, compare, info, inspect, demo, convert, config, serve "
            "(dumptui SUBCOMMAND --help)",
        )
        p.add_argument("ref", nargs="?", help="reference dump (e.g. the Ascend910 run)")
        p.add_argument("target", nargs="?", help="target dump (e.g. the Ascend310 run)")
        p.add_argument("--demo", action="store_true", help="make a demo pair in a temporary folder and open it")
        p.add_argument("--session", metavar="FILE", help="resume a saved bisection session")
        p.add_argument("--version", action="version", version=f"dumptui {__version__}")
        _compare_options(p)
        return p
    p = argparse.ArgumentParser(prog=f"dumptui {sub}")
    if sub == "bisect":
        p.description = "Bisect automatically to the first op whose inputs agree and outputs diverge."
        p.add_argument("ref")
        p.add_argument("target")
        p.add_argument("--json", action="store_true", help="print one JSON object (for scripts)")
        p.add_argument("--no-graph", action="store_true", help="bisect over the execution order only")
        _compare_options(p)
    elif sub == "compare":
        p.description = "Compare every aligned tensor pair, in execution order."
        p.add_argument("ref")
        p.add_argument("target")
        p.add_argument("--only-diverged", action="store_true", help="only tensors whose verdict is bad")
        p.add_argument("--csv", metavar="FILE", help="write every compared pair as CSV (Ascend tool columns)")
        p.add_argument("--json", action="store_true", help="print JSON instead of a table")
        p.add_argument(
            "--kl",
            action="store_true",
            help="also compute the KL divergence (its logarithms make a compare about 1.5x slower)",
        )
        p.add_argument("--workers", type=int, help="threads (default: the number of CPUs)")
        _compare_options(p)
    elif sub == "info":
        p.description = "What a dump holds: format, version, ranks/graphs/iterations, counts, unreadable files."
        p.add_argument("dump")
        p.add_argument("--json", action="store_true")
        _dump_options(p)
    elif sub == "inspect":
        p.description = "One dump file: the name decoded, the header, statistics and first values."
        p.add_argument("file")
        p.add_argument("-n", "--values", type=int, default=10, help="how many values to print (default 10)")
        p.add_argument("--json", action="store_true")
    elif sub == "serve":
        p.description = "The app in a browser (textual-serve): each tab runs the app on REF and TARGET."
        p.add_argument("ref")
        p.add_argument("target")
        p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
        p.add_argument("--port", type=int, default=8000, help="port (default 8000)")
        p.add_argument("--public-url", dest="public_url", help="the URL browsers reach the server by, if not host:port")
        p.add_argument("--session", metavar="FILE", help="resume a saved bisection session")
        _compare_options(p)
    elif sub == "demo":
        p.description = (
            "Write a demo pair (MindSpore 2.x layout) computed by a small network, with one planted "
            "divergence and one benign fp16 region: DIR/ref and DIR/target."
        )
        p.add_argument("dir")
        p.add_argument("--ops", type=int, default=60, help="number of kernels (default 60)")
        p.add_argument("--size", type=int, default=4096, help="elements per activation tensor (default 4096)")
        p.add_argument("--seed", type=int, default=20261202)
    elif sub == "convert":
        p.description = (
            "CANN raw dump files (Ascend310, or MindSpore on Ascend) to .npy files that np.load reads, "
            "in their original shape; no CANN needed. Exit 2 when some tensor could not be converted."
        )
        p.add_argument("raw", help="the raw dump folder (dump_path, or any folder below it)")
        p.add_argument("-o", "--out", required=True, help="folder for the .npy files (not inside RAW)")
        p.add_argument("--json", action="store_true", help="print the summary as JSON")
        _dump_options(p)
    elif sub == "config":
        p.description = "Write a dump configuration: acl.json for an Ascend310 model, data_dump.json for MindSpore."
        kinds = p.add_subparsers(dest="kind", required=True, metavar="{acl,mindspore}")
        acl = kinds.add_parser("acl", help="acl.json with the model name read from a MindIR file")
        acl.add_argument("--mindir", required=True, help="the .mindir file the 310 model was built from")
        acl.add_argument("--dump-path", required=True, help="absolute folder the device dumps into (must exist)")
        acl.add_argument("--ops", nargs="+", default=[], metavar="OP", help="dump only these ops (default: all)")
        acl.add_argument("--mode", default="all", choices=("all", "input", "output"), help="dump_mode (default all)")
        acl.add_argument("-o", "--out", default="acl.json", help="where to write it (default ./acl.json)")
        ms = kinds.add_parser("mindspore", help="data_dump.json for MINDSPORE_DUMP_CONFIG")
        ms.add_argument("--kernels", nargs="*", default=[], metavar="NAME", help="full names (default: every kernel)")
        ms.add_argument("--path", required=True, help="absolute dump folder")
        ms.add_argument("--net-name", default="Net")
        ms.add_argument("--iteration", default="0", help='"0", "0|5-8" or "all" (default 0)')
        ms.add_argument(
            "--trans-flag",
            default="true",
            choices=("true", "false"),
            help="false keeps device layouts (dumptui reads both; default true)",
        )
        ms.add_argument("-o", "--out", default="data_dump.json", help="where to write it (default ./data_dump.json)")
    return p


def _console() -> Console:
    from rich.console import Console

    return Console(highlight=False, soft_wrap=False)


def cmd_bisect(args: argparse.Namespace) -> int:
    from .core.bisect import Bisection
    from .report.data import bisect_report

    options = PairOptions.from_namespace(args)
    ref, target = open_pair(options)
    session = make_session(options, ref, target, kl=False)
    bi = Bisection(session, use_graph=not args.no_graph)
    bi.check_inputs()
    bi.run()
    culprit = bi.first_root()
    code = EXIT_OK if culprit is None else EXIT_DIVERGED
    if args.json:
        out = bisect_report(bi)
        out["exit"] = code
        print(json.dumps(out, indent=1, allow_nan=False))
    else:
        from .report.tables import print_bisect

        print_bisect(_console(), bi)
    return code


def cmd_compare(args: argparse.Namespace) -> int:
    from .core.verdict import BAD
    from .report import data

    options = PairOptions.from_namespace(args)
    ref, target = open_pair(options)
    session = make_session(options, ref, target, kl=args.kl)
    from .core.compare import compare_pair

    comparison = compare_pair(session, workers=args.workers)
    results = comparison.results
    diverged = bool(comparison.roots)
    if args.csv:
        from .report.csvout import write_csv

        _refuse_inside(args.csv, (ref, target))
        n = write_csv(args.csv, results, only_bad=args.only_diverged, locals_=comparison.locals)
        print(f"wrote {n} rows to {args.csv}", file=sys.stderr)
    if args.json:
        shown = [r for r in results if not args.only_diverged or any(t.verdict in BAD for t in r.inputs + r.outputs)]
        print(
            json.dumps(
                {
                    "ref": data.dump_summary(ref),
                    "target": data.dump_summary(target),
                    "alignment": session.alignment.counts(),
                    "ops": [
                        {**data.op_result(r), "local_error": data.local_error(comparison.locals.get(r.pair.index))}
                        for r in shown
                    ],
                    "roots": [data.root(r, session) for r in comparison.roots],
                    "search": {"kind": comparison.bisection.search, "reason": comparison.bisection.search_reason},
                    "benign": comparison.bisection.benign_evidence(),
                    "damaged_tensors": data.damaged_tensors(session),
                    "tensors_read": session.tensors_read,
                },
                indent=1,
                allow_nan=False,
            )
        )
    elif not args.csv or sys.stdout.isatty():
        from .report.tables import compare_summary, compare_table, dump_line, name

        con = _console()
        con.print(f"[bold]ref[/bold]:    {dump_line(ref)}")
        con.print(f"[bold]target[/bold]: {dump_line(target)}")
        con.print(compare_table(results, only_bad=args.only_diverged, locals_=comparison.locals))
        con.print(compare_summary(results))
        roots = comparison.roots
        if roots:
            con.print(
                "[bold red]Roots of divergence[/bold red] (where error is born, first first): "
                + "; ".join(f"#{r.pair.index + 1} {name(r.pair.label)}" for r in roots)
            )
        else:
            con.print(
                "[bold green]No root of divergence[/bold green]"
                + (
                    ": " + name("; ".join(comparison.bisection.benign_evidence()))
                    if comparison.bisection.benign_evidence()
                    else ""
                )
            )
        damaged = data.damaged_tensors(session)
        for d in damaged:
            from .report.tables import name

            con.print(
                f"[magenta]{'repaired' if d['repaired'] else 'unreadable'}[/magenta] ({d['side']}) "
                f"{name(d['path'])}: {name(d['problem'] or d['repaired'])}"
            )
        if damaged:
            con.print("(* = compared as repaired data: the payload read with the dtype its size implies)")
    return EXIT_DIVERGED if diverged else EXIT_OK


def _refuse_inside(path: str, dumps: Iterable[Dump]) -> None:
    """Dumps are evidence: never write inside one."""
    from .core.redump import inside_any

    root = inside_any(path, list(dumps))
    if root is not None:
        raise UsageError(f"{path}: refusing to write inside the dump folder {root}")


def cmd_info(args: argparse.Namespace) -> int:
    from .core.formats import detect, open_dump
    from .core.model import DumpError
    from .core.survey import survey
    from .report import data, fmt

    fmt_name = detect(args.dump)
    layout = survey(args.dump) if fmt_name in ("mindspore-npy", "mindspore-statistic") else None
    chosen_note = None
    try:
        dump = open_dump(args.dump, rank=args.rank, graph=args.graph, iteration=args.iteration, fmt=fmt_name)
    except DumpError as e:
        if not layout:
            raise
        # Several ranks/iterations: show them all, and count the first choice (saying so).
        rank = args.rank or next(iter(layout))
        graphs = layout.get(rank, {})
        its = sorted({it for g in graphs.values() for it in g}, key=lambda v: (len(v), v))
        iteration = args.iteration or (its[0] if its else None)
        dump = open_dump(
            args.dump, rank=None if rank == "-" else rank, graph=args.graph, iteration=iteration, fmt=fmt_name
        )
        chosen_note = f"{e.reason}; counts below are for rank {rank}, iteration {iteration}"
    unreadable, repaired, total = [], [], 0
    for op in dump.ops:
        for t in op.tensors():
            if not t.has_data:
                continue
            lay = t.layout()
            try:
                total += t.size_on_disk if t.size_on_disk is not None else os.path.getsize(t.path)
            except OSError:
                pass
            if lay.problem:
                unreadable.append((t.path, lay.problem))
            elif lay.repaired:
                repaired.append((t.path, lay.repaired))
    kinds: dict[str, int] = {}
    for op in dump.ops:
        kinds[op.kind] = kinds.get(op.kind, 0) + 1
    if args.json:
        out = data.dump_summary(dump)
        out.update(
            {
                "bytes": total,
                "layout": layout,
                "choice": chosen_note,
                "unreadable": [{"path": p, "reason": r} for p, r in unreadable],
                "repaired": [{"path": p, "reason": r} for p, r in repaired],
            }
        )
        print(json.dumps(out, indent=1, allow_nan=False))
        return EXIT_OK
    from .report.tables import name

    con = _console()
    con.print(f"[bold]{name(dump.path)}[/bold]")
    con.print(f"  format:      {dump.format} ({name(dump.variant)})")
    con.print(
        f"  version:     {('MindSpore ' + dump.version) if dump.version else 'unknown'}"
        f"{'  device: ' + dump.device if dump.device else ''}"
    )
    if layout:
        for rank, graphs in layout.items():
            parts = []
            for g, its in graphs.items():
                parts.append(
                    f"graph {g}: iteration{'s' if len(its) > 1 else ''} "
                    + ", ".join(f"{it} ({n} files)" for it, n in its.items())
                )
            con.print(
                f"  rank {rank}:" + ("\n    " if len(parts) > 1 else " ") + "\n    ".join(parts)
                if parts
                else f"  rank {rank}: no data"
            )
    if chosen_note:
        con.print(f"  [yellow]choose:[/yellow]      {name(chosen_note)}")
    con.print(
        f"  read:        rank {dump.rank or '-'}, graphs {', '.join(dump.graphs) or '-'}, "
        f"iterations {', '.join(f'{g}:{i}' for g, i in dump.iterations.items()) or '-'}"
    )
    con.print("  ops:         " + ", ".join(f"{n} {k}s" for k, n in kinds.items()))
    con.print(f"  tensors:     {dump.tensor_count()} ({fmt.nbytes(total)})")
    con.print(f"  order:       {dump.order_source}; graph: {name(dump.graph_source or 'none')}")
    for n in dump.notes:
        con.print(f"  note:        {name(n)}")
    problems = [(p.path, p.reason) for p in dump.problems if p.severity == "error"] + unreadable
    for path, reason in problems:
        con.print(f"  [magenta]unreadable[/magenta] {name(path)}: {name(reason)}")
    for path, reason in repaired:
        con.print(f"  [yellow]damaged[/yellow] {name(path)}: {name(reason)}")
    for p in dump.problems:
        if p.severity != "error":
            con.print(f"  [dim]warning[/dim] {name(p.path)}: {name(p.reason)}")
    if not problems and not repaired:
        con.print("  every tensor file is readable")
    return EXIT_OK


def cmd_inspect(args: argparse.Namespace) -> int:
    from .core.inspect import inspect_file
    from .report import fmt

    try:
        info = inspect_file(args.file, args.values)
    except OSError as e:
        raise UsageError(f"{args.file}: {e.strerror or e}") from None
    if args.json:
        st = info.stats
        print(
            json.dumps(
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
                    "stats": None if st is None else {k: _jnum(v) for k, v in vars(st).items()},
                    "first_values": [_jnum(float(v)) if isinstance(v, float) else v for v in info.first_values],
                },
                indent=1,
                allow_nan=False,
            )
        )
        return EXIT_OK if not info.problem else EXIT_USAGE
    from .report.tables import name

    con = _console()
    con.print(f"[bold]{name(info.path)}[/bold]")
    con.print(f"  {name(info.kind)}, {fmt.nbytes(info.size_on_disk)}")
    for k, v in info.fields.items():
        con.print(f"  {k:20s} {name(v)}")
    if info.declared:
        con.print(f"  {'header':20s} {name(info.declared)}")
    con.print(f"  {'dtype, shape':20s} {info.dtype or '?'} {fmt.shape(info.shape)}")
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


def _jnum(v: object) -> object:
    from .report.data import num

    return num(v)


def cmd_demo(args: argparse.Namespace) -> int:
    from .core.demo import write_demo

    info = write_demo(args.dir, n_ops=args.ops, size=args.size, seed=args.seed)
    print(f"wrote {info.ref} and {info.target}: {info.n_kernels} kernels, {info.n_files} files per side")
    print(f"planted divergence: {info.planted}")
    print(f"benign fp16 region: {info.fp16_first} .. {info.fp16_last}")
    print(f"try: dumptui {info.ref} {info.target}   or   dumptui bisect {info.ref} {info.target}")
    return EXIT_OK


def cmd_convert(args: argparse.Namespace) -> int:
    from .core.convert import convert

    report = convert(args.raw, args.out, rank=args.rank, graph=args.graph, iteration=args.iteration)
    if args.json:
        print(
            json.dumps(
                {
                    "out": report.out,
                    "written": len(report.written),
                    "layouts": dict(report.layouts),
                    "not_converted": [{"what": w, "reason": r} for w, r in report.not_converted],
                    "overflow": report.overflow,
                },
                indent=1,
            )
        )
    else:
        print("\n".join(report.summary_lines()))
    return EXIT_OK if report.complete else EXIT_USAGE


def cmd_config(args: argparse.Namespace) -> int:
    from .core import dumpconfig

    if args.kind == "acl":
        acl = dumpconfig.acl_config(args.mindir, args.dump_path, args.ops, args.mode)
        path = dumpconfig.write_json(args.out, acl.config)
        print(f"graph name: {acl.graph_name}\nmodel_name: {acl.model_name}\nwrote {path}")
        exists = "exists" if os.path.isdir(args.dump_path) else "does not exist yet: mkdir -p " + args.dump_path
        print(f"warning: {dumpconfig.MISSING_FOLDER} ({args.dump_path} {exists})", file=sys.stderr)
        return EXIT_OK
    config = dumpconfig.mindspore_dump_config(
        args.kernels, args.path, args.net_name, args.iteration, args.trans_flag == "true"
    )
    path = dumpconfig.write_json(args.out, config)
    print(f"wrote {path}\nrun with: export MINDSPORE_DUMP_CONFIG={path}")
    return EXIT_OK


def cmd_app(args: argparse.Namespace) -> int:
    if not args.demo and (not args.ref or not args.target):
        raise UsageError("give REF and TARGET dumps (or --demo); headless: dumptui bisect|compare|info|inspect|demo")
    from .tui.app import end_process, run_app

    if not args.demo:
        end_process(run_app(PairOptions.from_namespace(args), session_file=args.session))
    import shutil
    import tempfile

    from .core.demo import write_demo

    tmp = tempfile.mkdtemp(prefix="dumptui-demo-")
    try:
        info = write_demo(tmp)
        args.ref, args.target = info.ref, info.target
        code = run_app(PairOptions.from_namespace(args), session_file=args.session)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    end_process(code)


def cmd_serve(args: argparse.Namespace) -> int:
    from .tui.web import serve

    return serve(args.ref, args.target, args.argv, args.host, args.port, args.public_url)


def single_threaded_blas() -> None:
    """Our dot products are on 64K-element chunks: BLAS threads only add synchronisation there, and they
    oversubscribe the cores our worker processes use. Must run before numpy is imported."""
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, "1")


def main(argv: list[str] | None = None) -> int:
    single_threaded_blas()
    argv = list(sys.argv[1:] if argv is None else argv)
    sub = argv[0] if argv and argv[0] in SUBCOMMANDS else None
    parser = build_parser(sub)
    args = parser.parse_args(argv[1:] if sub else argv)
    args.argv = argv[1:] if sub else argv  # `serve` passes the options on to the app it runs
    try:
        handler = {
            "bisect": cmd_bisect,
            "compare": cmd_compare,
            "info": cmd_info,
            "inspect": cmd_inspect,
            "demo": cmd_demo,
            "convert": cmd_convert,
            "config": cmd_config,
            "serve": cmd_serve,
            None: cmd_app,
        }[sub]
        return handler(args)
    except DumptuiError as e:
        print(f"dumptui: {e}", file=sys.stderr)
        return EXIT_USAGE
    except (OSError, ValueError) as e:
        print(f"dumptui: {e}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
