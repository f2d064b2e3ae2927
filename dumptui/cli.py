"""Command line: `dumptui REF TARGET` opens the terminal app; subcommands work without any UI.

Exit codes: 0 no divergence, 1 a root of divergence found (`bisect` and `compare` alike), 2 bad usage or
unreadable input (also: nothing to compare, damage that hides the answer, and any failure of dumptui itself:
scripts read 1 as "divergence found", so 1 means that and nothing else). Answers go to stdout (never wrapped
when it is not a terminal), progress and chatter to stderr (report/console.py); `--json [FILE]` writes one
versioned document (report/jsonout.py), `-` = stdout.
"""

from __future__ import annotations

import argparse
import os
import sys
from contextlib import nullcontext
from typing import TYPE_CHECKING, Any, ContextManager, Iterable, NoReturn

from dumptui import __version__
from dumptui.core.io.errors import DumptuiError, UsageError
from dumptui.core.io.procs import single_threaded_blas
from dumptui.headless import EXIT_USAGE, fail, open_session, print_compare, verbosity_of, write_csv_output
from dumptui.options.pair import PairOptions

if TYPE_CHECKING:  # rich and the engine are imported by the subcommand that needs them
    from rich.console import Console

    from dumptui.core.model.dump import Dump


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of exiting, so a usage error can be reported as JSON with `--json`."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        raise UsageError(f"{self.prog}: {message}")


SUBCOMMANDS = (
    "bisect",
    "compare",
    "info",
    "inspect",
    "demo",
    "convert",
    "config",
    "open-result",
    "completion",
    "serve",
    "remedy",
)
SHELLS = ("bash", "zsh", "tcsh")
EXIT_OK, EXIT_DIVERGED = 0, 1
ALL = "all"  # --rank all / --step all
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what a shell reports for a tool whose reader closed the pipe


def _dump_options(p: argparse.ArgumentParser, every: bool = False) -> None:
    """`every`: the command takes `all` for --rank and --step (every rank, every step, in one report)."""
    g = p.add_argument_group("dump selection (both sides; --ref-*/--target-* for one side)")
    for opt in ("rank", "graph", "iteration"):
        names = [f"--{opt}"] + (["--step"] if opt == "iteration" else [])
        text = f"{opt} to read when the dump holds several" + ("; --step is the same" if opt == "iteration" else "")
        if every and opt != "graph":
            text += "; 'all': every one, in one report"
        g.add_argument(*names, dest=opt, metavar="N", help=text)
        g.add_argument(f"--ref-{opt}", metavar="N", help=argparse.SUPPRESS)
        g.add_argument(f"--target-{opt}", metavar="N", help=argparse.SUPPRESS)


def _compare_options(p: argparse.ArgumentParser, every: bool = False) -> None:
    _dump_options(p, every)
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


def _output_options(p: argparse.ArgumentParser, json_help: str = "write one JSON document (for scripts)") -> None:
    g = p.add_argument_group("output")
    g.add_argument(
        "--json", nargs="?", const="-", metavar="FILE", help=f"{json_help}; to stdout, or to FILE ('-': stdout)"
    )
    g.add_argument("-q", "--quiet", action="store_true", help="only the answer: no progress, no notes")
    g.add_argument("-v", "--verbose", action="store_true", help="also timings and how the dumps were read (stderr)")


def build_parser(sub: str | None) -> argparse.ArgumentParser:
    if sub is None:
        p = _Parser(
            prog="dumptui",
            description="Find the first operator where two tensor dumps diverge "
            "(e.g. Ascend910 vs Ascend310). Opens the terminal app; see the subcommands for headless use.",
            epilog="subcommands: bisect, compare, remedy, info, inspect, demo, convert, config, open-result, completion, "
            "serve "
            "(dumptui SUBCOMMAND --help)",
        )
        p.add_argument("ref", nargs="?", help="reference dump (e.g. the Ascend910 run)")
        p.add_argument("target", nargs="?", help="target dump (e.g. the Ascend310 run)")
        p.add_argument("--demo", action="store_true", help="make a demo pair in a temporary folder and open it")
        p.add_argument("--session", metavar="FILE", help="resume a saved bisection session")
        p.add_argument("--version", action="version", version=f"dumptui {__version__}")
        _compare_options(p)
        return p
    p = _Parser(prog=f"dumptui {sub}")
    if sub == "bisect":
        p.description = "Bisect automatically to the first op whose inputs agree and outputs diverge."
        p.add_argument("ref")
        p.add_argument("target")
        p.add_argument("--no-graph", action="store_true", help="bisect over the execution order only")
        _output_options(p)
        _compare_options(p, every=True)
    elif sub == "compare":
        p.description = "Compare every aligned tensor pair, in execution order."
        p.add_argument("ref")
        p.add_argument("target")
        p.add_argument("--only-diverged", action="store_true", help="only tensors whose verdict is bad")
        p.add_argument(
            "--csv",
            metavar="FILE",
            help="write every compared tensor pair as CSV ('-': stdout): msprobe's columns, then dumptui's",
        )
        p.add_argument(
            "--csv-profile",
            choices=("msprobe", "full"),
            default="msprobe",
            help="msprobe: msprobe 26.x's columns, order and meanings (default); full: dumptui's own richer table",
        )
        p.add_argument(
            "--xlsx", metavar="FILE", help="msprobe's table as .xlsx with its red/yellow rows (needs dumptui[xlsx])"
        )
        _output_options(p)
        p.add_argument(
            "--kl",
            action="store_true",
            help="also compute the KL divergence (its logarithms make a compare about 1.5x slower)",
        )
        p.add_argument("--workers", type=int, help="worker processes (default: the number of CPUs)")
        p.add_argument(
            "--dask",
            metavar="SCHEDULER",
            help="compute the tensor pairs as Dask distributed tasks: a scheduler address (tcp://host:8786) "
            "or local:N for N local worker processes (needs: pip install 'dumptui[dask]')",
        )
        p.add_argument(
            "--worker-path",
            action="append",
            default=[],
            metavar="LOCAL=REMOTE",
            help="with --dask: files under LOCAL here are under REMOTE on the workers (repeatable)",
        )
        _compare_options(p, every=True)
    elif sub == "remedy":
        p.description = (
            "For each culprit: precision (the op at the device's precision, from the reference's inputs, gives the "
            "target's output) or semantics (another function), and the files that keep it in float32: ATC "
            "--keep_dtype, the MindSpore Lite converter's [ascend_context], MindSpore's to_float."
        )
        p.add_argument("ref")
        p.add_argument("target")
        p.add_argument("-o", "--out", metavar="DIR", help="write the remedy files into DIR (not inside a dump)")
        _output_options(p)
        _compare_options(p)
    elif sub == "info":
        p.description = "What a dump holds: format, version, ranks/graphs/iterations, counts, unreadable files."
        p.add_argument("dump")
        _output_options(p)
        _dump_options(p)
    elif sub == "inspect":
        p.description = "One dump file: the name decoded, the header, statistics and first values."
        p.add_argument("file")
        p.add_argument("-n", "--values", type=int, default=10, help="how many values to print (default 10)")
        _output_options(p)
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
        p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    elif sub == "convert":
        p.description = (
            "CANN raw dump files (Ascend310, or MindSpore on Ascend) to .npy files that np.load reads, "
            "in their original shape; no CANN needed. Exit 2 when some tensor could not be converted."
        )
        p.add_argument("raw", help="the raw dump folder (dump_path, or any folder below it)")
        p.add_argument("-o", "--out", required=True, help="folder for the .npy files (not inside RAW)")
        _output_options(p, "the summary as JSON")
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
    elif sub == "open-result":
        p.description = (
            "Open a result msprobe wrote (compare_result_*.csv or .xlsx) in the terminal app: its rows as a tree "
            "by name, sortable, with the first failing row in execution order."
        )
        p.add_argument("result", help="msprobe's compare_result_*.csv or .xlsx")
        p.add_argument("--dump", metavar="DIR", help="the NPU dump, to order API rows by its dump.json")
    elif sub == "completion":
        p.description = 'Print a shell completion script: eval "$(dumptui completion bash)" (or zsh, tcsh).'
        p.add_argument("shell", choices=SHELLS)
    return p


def completion_parser() -> argparse.ArgumentParser:
    """One parser with every subcommand, for shtab: the real parsers are built one at a time (`build_parser`),
    so `dumptui REF TARGET` needs no subcommand; completion sees them all."""
    p = build_parser(None)
    subs = p.add_subparsers(dest="subcommand", metavar="SUBCOMMAND")
    for sub in SUBCOMMANDS:
        one = build_parser(sub)
        subs.add_parser(sub, help=one.description, parents=[one], add_help=False, conflict_handler="resolve")
    return p


def _console() -> Console:
    from dumptui.report.console import stdout_console

    return stdout_console()


def cmd_bisect(args: argparse.Namespace) -> int:
    import time

    from dumptui.core.search.bisect import Bisection
    from dumptui.report import jsonout
    from dumptui.report.console import detail, progress_bar
    from dumptui.report.data import bisect_report, skipped

    verbosity = verbosity_of(args)
    options = PairOptions.from_namespace(args)
    if ALL in (options.rank, options.iteration):
        return _every_unit(args, options, "bisect")
    ref, target, session = open_session(args, kl=False)
    if args.json not in (None, jsonout.STDOUT):
        _refuse_inside(args.json, (ref, target))
    bi = Bisection(session, use_graph=not args.no_graph)
    t0 = time.perf_counter()
    with progress_bar("judging every op", verbosity) as progress:
        bi.prepare(progress)
    bi.run()
    detail(f"bisected in {time.perf_counter() - t0:.2f} s, {session.tensors_read} tensor pairs read", verbosity)
    culprit = bi.first_root()
    code = EXIT_DIVERGED if culprit is not None else EXIT_USAGE if bi.undecided else EXIT_OK
    if args.json is not None:
        from dumptui.report.remedy import remedies, remedy_section

        body = {
            **bisect_report(bi),
            "undecided": list(bi.undecided),
            "skipped": skipped(bi.session),
            "remedy": remedy_section(remedies(session, bi.roots()[:1])),
        }
        jsonout.write(jsonout.document("bisect", body, code), args.json)
    if args.json == jsonout.STDOUT:
        return code
    con = _console()
    if verbosity.quiet:
        from dumptui.report.tables import name

        con.print(
            f"culprit: #{culprit.pair.index + 1} {name(culprit.pair.label)} ({name(culprit.pair.op_type)})"
            if culprit is not None
            else "undecided: " + name("; ".join(bi.undecided))
            if bi.undecided
            else "no root of divergence"
        )
    else:
        from dumptui.report.tables import print_bisect

        print_bisect(con, bi)
    return code


def cmd_remedy(args: argparse.Namespace) -> int:
    from dumptui.core.search.bisect import Bisection
    from dumptui.report import jsonout
    from dumptui.report.remedy import print_remedies, remedies, remedy_section, write_files

    ref, target, session = open_session(args, kl=False)
    for path in (args.out, args.json):
        if path not in (None, jsonout.STDOUT):
            _refuse_inside(path, (ref, target))
    bi = Bisection(session)
    bi.run()
    found = remedies(session, bi.roots())
    written = write_files(args.out, found) if args.out else []
    code = EXIT_DIVERGED if found else EXIT_USAGE if bi.undecided else EXIT_OK
    if args.json is not None:
        jsonout.write(
            jsonout.document("remedy", {"remedy": remedy_section(found), "written": written}, code), args.json
        )
    if args.json != jsonout.STDOUT:
        print_remedies(_console(), found, written)
    return code


def cmd_compare(args: argparse.Namespace) -> int:
    options = PairOptions.from_namespace(args)
    with _executor(args) as executor:
        if ALL in (options.rank, options.iteration):
            return _every_unit(args, options, "compare", executor)
        return _compare_one(args, executor)


def _executor(args: argparse.Namespace) -> ContextManager[Any]:
    """The Dask executor `--dask` asks for (closed at the end), or nothing."""
    if not args.dask:
        if args.worker_path:
            raise UsageError("--worker-path goes with --dask")
        return nullcontext()
    from dumptui.core.compare.daskexec import DaskExecutor, parse_path_map

    return DaskExecutor(args.dask, parse_path_map(args.worker_path))


def _compare_one(args: argparse.Namespace, executor: Any) -> int:
    import time

    from dumptui.core.compare.verdict import BAD
    from dumptui.core.search.compare_all import compare_pair
    from dumptui.report import data, jsonout
    from dumptui.report.console import detail, note, progress_bar
    from dumptui.report.remedy import remedies, remedy_section

    verbosity = verbosity_of(args)
    if args.csv == jsonout.STDOUT and args.json == jsonout.STDOUT:
        raise UsageError("--csv - and --json - both want stdout: send one of them to a file")
    if args.xlsx:
        from dumptui.report.msprobe_xlsx import require_openpyxl

        require_openpyxl(args.xlsx)  # before the compare, not after minutes of it
    ref, target, session = open_session(args, kl=args.kl)
    session.executor = executor
    for path in (args.csv, args.json, args.xlsx):
        if path not in (None, jsonout.STDOUT):
            _refuse_inside(path, (ref, target))
    t0 = time.perf_counter()
    with progress_bar("comparing", verbosity) as progress:
        comparison = compare_pair(session, workers=args.workers, progress=progress)
    detail(f"compared in {time.perf_counter() - t0:.2f} s, {session.tensors_read} tensor pairs read", verbosity)
    results = comparison.results
    diverged = bool(comparison.roots)
    every = [t for r in results for t in r.inputs + r.outputs]
    skipped = data.skipped(session, every)
    # no root among what could be read, but something could not be read: the answer is unknown, not "none"
    incomplete = not diverged and bool(skipped["tensor_pairs"] or any(skipped["files"].values()))
    code = EXIT_DIVERGED if diverged else EXIT_USAGE if incomplete else EXIT_OK
    table = None
    if args.csv or args.xlsx:
        from dumptui.report.msprobe_csv import build_table

        if args.xlsx or args.csv_profile == "msprobe":
            with progress_bar("computing msprobe's columns", verbosity) as progress:
                table = build_table(ref, target, results, comparison.locals, args.only_diverged, progress)
    if args.csv:
        n = write_csv_output(args.csv, args.csv_profile, results, comparison, table, args.only_diverged)
        where = "stdout" if args.csv == jsonout.STDOUT else args.csv
        mode = f", msprobe mode {table.mode}" if table is not None and args.csv_profile == "msprobe" else ""
        note(f"wrote {n} rows ({args.csv_profile} profile{mode}) to {where}", verbosity)
    if args.xlsx:
        from dumptui.report.msprobe_xlsx import write_xlsx

        assert table is not None
        hl = write_xlsx(table, args.xlsx)
        note(f"wrote {len(table.rows)} rows to {args.xlsx} ({len(hl.red)} red, {len(hl.yellow)} yellow)", verbosity)
    if args.json is not None:
        shown = [r for r in results if not args.only_diverged or any(t.verdict in BAD for t in r.inputs + r.outputs)]
        body = {
            "ref": data.dump_summary(ref),
            "target": data.dump_summary(target),
            "alignment": session.alignment.counts(),
            "ops": [
                {**data.op_result(r), "local_error": data.local_error(comparison.locals.get(r.pair.index))}
                for r in shown
            ],
            "roots": [data.root(r, session) for r in comparison.roots],
            "remedy": remedy_section(remedies(session, comparison.roots)),
            "search": {"kind": comparison.bisection.search, "reason": comparison.bisection.search_reason},
            "benign": comparison.bisection.benign_evidence(),
            "damaged_tensors": data.damaged_tensors(session),
            "skipped": skipped,
            "incomplete": incomplete,
            "tensors_read": session.tensors_read,
        }
        jsonout.write(jsonout.document("compare", body, code), args.json)
    if jsonout.STDOUT in (args.csv, args.json):
        return code  # stdout carries the CSV or the JSON
    print_compare(_console(), ref, target, session, comparison, verbosity, args.only_diverged, incomplete)
    return code


def _every_unit(args: argparse.Namespace, options: PairOptions, command: str, executor: Any = None) -> int:
    """`--rank all` / `--step all`: every (rank, step) searched on its own, one report, and where the
    divergence was born first across ranks (ordered by their communication ops) and steps."""
    from dataclasses import replace

    from dumptui.core.compare.session import Session
    from dumptui.core.ranks.allunits import run_units
    from dumptui.core.ranks.units import pair_units, units
    from dumptui.core.search.bisect import Bisection, Root
    from dumptui.options.pair import make_session, open_pair
    from dumptui.report import data, jsonout
    from dumptui.report.ranks import allranks_json, print_allranks

    if getattr(args, "csv", None) or getattr(args, "xlsx", None):
        raise UsageError("--csv and --xlsx write one rank and step: choose them with --rank N --step N")
    common, only_ref, only_target = pair_units(
        units(options.ref, options.rank, options.iteration), units(options.target, options.rank, options.iteration)
    )
    reports: dict = {}
    reads: dict = {}
    undecided: set = set()  # units where damage hides the answer: exit 2 unless another unit diverged

    def run(unit):
        chosen = replace(options, rank=unit.rank, iteration=unit.step)
        ref, target = open_pair(chosen)
        session = make_session(chosen, ref, target, kl=getattr(args, "kl", False))
        session.executor = executor
        if command == "bisect":
            bi = Bisection(session, use_graph=not args.no_graph)
            bi.prepare()
            bi.run()
            bi.first_root()
            roots = bi.roots()
            reports[unit] = data.bisect_report(bi)
            if bi.undecided and not roots:
                undecided.add(unit)
        else:
            from dumptui.core.search.compare_all import compare_pair

            comparison = compare_pair(session, workers=args.workers)
            roots = comparison.roots
            skipped = data.skipped(session, [t for r in comparison.results for t in r.inputs + r.outputs])
            if not roots and (skipped["tensor_pairs"] or any(skipped["files"].values())):
                undecided.add(unit)
            reports[unit] = {
                "alignment": session.alignment.counts(),
                "roots": [data.root(r, session) for r in roots],
                "search": {"kind": comparison.bisection.search, "reason": comparison.bisection.search_reason},
                "damaged_tensors": data.damaged_tensors(session),
                "tensors_read": session.tensors_read,
            }
        return session, roots

    def seen(unit, session: Session, roots: list[Root]) -> None:
        reads[unit] = session.tensors_read

    result = run_units(common, run, seen)
    result.only_ref, result.only_target = only_ref, only_target
    diverged = result.first is not None
    code = EXIT_DIVERGED if diverged else (EXIT_USAGE if result.errors or undecided or not common else EXIT_OK)
    if args.json is not None:
        jsonout.write(jsonout.document(command, allranks_json(result, reports), code), args.json)
        if args.json == jsonout.STDOUT:
            return code
    con = _console()
    if not common:
        con.print("no rank and step is in both dumps")
    print_allranks(con, result, reads)
    return code


def _refuse_inside(path: str, dumps: Iterable[Dump]) -> None:
    """Dumps are evidence: never write inside one."""
    from dumptui.core.tools.redump import inside_any

    root = inside_any(path, list(dumps))
    if root is not None:
        raise UsageError(f"{path}: refusing to write inside the dump folder {root}")


def cmd_info(args: argparse.Namespace) -> int:
    from dumptui.core.formats import detect, open_dump
    from dumptui.core.formats.survey import survey
    from dumptui.core.io.safeio import regular_size
    from dumptui.core.model.dump import DumpError
    from dumptui.report import data, fmt

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
                total += t.size_on_disk if t.size_on_disk is not None else regular_size(t.path)
            except OSError:
                pass
            if lay.problem:
                unreadable.append((t.path, lay.problem))
            elif lay.repaired:
                repaired.append((t.path, lay.repaired))
    unreadable = list(dict.fromkeys(unreadable))  # several tensors of one raw file share its problem
    repaired = list(dict.fromkeys(repaired))
    kinds: dict[str, int] = {}
    for op in dump.ops:
        kinds[op.kind] = kinds.get(op.kind, 0) + 1
    if args.json is not None:
        from dumptui.report import jsonout

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
        jsonout.write(jsonout.document("info", out, EXIT_OK), args.json)
        return EXIT_OK
    from dumptui.report.tables import name

    con = _console()
    con.print(f"[bold]{name(dump.path)}[/bold]")
    con.print(f"  format:      {dump.format} ({name(dump.variant)})")
    con.print(
        f"  version:     {name('MindSpore ' + dump.version) if dump.version else 'unknown'}"
        f"{'  device: ' + name(dump.device) if dump.device else ''}"
    )
    if layout:
        for rank, graphs in layout.items():
            parts = []
            for g, its in graphs.items():
                parts.append(
                    f"graph {name(g)}: iteration{'s' if len(its) > 1 else ''} "
                    + ", ".join(f"{name(it)} ({n} files)" for it, n in its.items())
                )
            con.print(
                f"  rank {name(rank)}:" + ("\n    " if len(parts) > 1 else " ") + "\n    ".join(parts)
                if parts
                else f"  rank {name(rank)}: no data"
            )
    if chosen_note:
        con.print(f"  [yellow]choose:[/yellow]      {name(chosen_note)}")
    con.print(
        f"  read:        rank {name(dump.rank or '-')}, graphs {name(', '.join(dump.graphs) or '-')}, "
        f"iterations {name(', '.join(f'{g}:{i}' for g, i in dump.iterations.items()) or '-')}"
    )
    con.print("  ops:         " + ", ".join(f"{n} {k}s" for k, n in kinds.items()))
    con.print(f"  tensors:     {dump.tensor_count()} ({fmt.nbytes(total)})")
    con.print(f"  order:       {dump.order_source}; graph: {name(dump.graph_source or 'none')}")
    for n in dump.notes:
        con.print(f"  note:        {name(n)}")
    problems = list(dict.fromkeys([(p.path, p.reason) for p in dump.problems if p.severity == "error"] + unreadable))
    for path, reason in problems:
        con.print(f"  [magenta]unreadable[/magenta] {name(path)}: {name(reason)}")
    for path, reason in repaired:
        con.print(f"  [yellow]damaged[/yellow] {name(path)}: {name(reason)}")
    for p in dump.problems:
        if p.severity != "error":
            con.print(f"  [dim]warning[/dim] {name(p.path)}: {name(p.reason)}")
    if problems:
        files = len({path for path, _reason in problems})
        con.print(f"  [magenta]{files} file{'s' if files != 1 else ''} unreadable[/magenta] (listed above)")
    elif not repaired:
        con.print("  every tensor file is readable")
    return EXIT_OK


def cmd_inspect(args: argparse.Namespace) -> int:
    from dumptui.core.tools.inspect_file import inspect_file
    from dumptui.report import fmt

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
                    "stats": None if st is None else {k: _jnum(v) for k, v in st.to_dict().items()},
                    "first_values": [_jnum(float(v)) if isinstance(v, float) else v for v in info.first_values],
                },
                code,
            ),
            args.json,
        )
        return code
    from dumptui.report.tables import name

    con = _console()
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


def _jnum(v: object) -> object:
    from dumptui.report.data import num

    return num(v)


def cmd_demo(args: argparse.Namespace) -> int:
    from dumptui.core.demo.residual import write_demo
    from dumptui.report.console import progress_bar

    with progress_bar("writing the demo pair", verbosity_of(args)) as progress:
        info = write_demo(args.dir, n_ops=args.ops, size=args.size, seed=args.seed, progress=progress)
    print(f"wrote {info.ref} and {info.target}: {info.n_kernels} kernels, {info.n_files} files per side")
    print(f"planted divergence: {info.planted}")
    print(f"benign fp16 region: {info.fp16_first} .. {info.fp16_last}")
    print(f"try: dumptui {info.ref} {info.target}   or   dumptui bisect {info.ref} {info.target}")
    return EXIT_OK


def cmd_convert(args: argparse.Namespace) -> int:
    from dumptui.core.tools.convert import convert

    report = convert(args.raw, args.out, rank=args.rank, graph=args.graph, iteration=args.iteration)
    code = EXIT_OK if report.complete else EXIT_USAGE
    if args.json is not None:
        from dumptui.report import jsonout

        body = {
            "out": report.out,
            "written": len(report.written),
            "layouts": dict(report.layouts),
            "not_converted": [{"what": w, "reason": r} for w, r in report.not_converted],
            "overflow": report.overflow,
        }
        jsonout.write(jsonout.document("convert", body, code), args.json)
    else:
        from dumptui.report.fmt import clean

        print("\n".join(clean(line) for line in report.summary_lines()))
    return EXIT_OK if report.complete else EXIT_USAGE


def cmd_config(args: argparse.Namespace) -> int:
    from dumptui.core.tools import dumpconfig
    from dumptui.report.fmt import clean

    if args.kind == "acl":
        acl = dumpconfig.acl_config(args.mindir, args.dump_path, args.ops, args.mode)
        path = dumpconfig.write_json(args.out, acl.config)
        print(f"graph name: {clean(acl.graph_name)}\nmodel_name: {clean(acl.model_name)}\nwrote {clean(path)}")
        exists = "exists" if os.path.isdir(args.dump_path) else "does not exist yet: mkdir -p " + args.dump_path
        print(f"warning: {dumpconfig.MISSING_FOLDER} ({args.dump_path} {exists})", file=sys.stderr)
        return EXIT_OK
    config = dumpconfig.mindspore_dump_config(
        args.kernels, args.path, args.net_name, args.iteration, args.trans_flag == "true"
    )
    path = dumpconfig.write_json(args.out, config)
    print(f"wrote {path}\nrun with: export MINDSPORE_DUMP_CONFIG={path}")
    return EXIT_OK


def cmd_open_result(args: argparse.Namespace) -> int:
    from dumptui.report.msprobe_read import read_result

    result = read_result(args.result, dump=args.dump)  # bad input: exit 2 before any screen
    from dumptui.tui.result_app import run_result_app

    return run_result_app(result)


def cmd_completion(args: argparse.Namespace) -> int:
    import shtab

    sys.stdout.write(shtab.complete(completion_parser(), shell=args.shell))
    return EXIT_OK


def cmd_app(args: argparse.Namespace) -> int:
    if not args.demo and (not args.ref or not args.target):
        raise UsageError("give REF and TARGET dumps (or --demo); headless: dumptui bisect|compare|info|inspect|demo")
    from dumptui.tui.app import end_process, run_app

    if not args.demo:
        end_process(run_app(PairOptions.from_namespace(args), session_file=args.session))
    import shutil
    import tempfile

    from dumptui.core.demo.residual import write_demo

    tmp = tempfile.mkdtemp(prefix="dumptui-demo-")
    try:
        info = write_demo(tmp)
        args.ref, args.target = info.ref, info.target
        code = run_app(PairOptions.from_namespace(args), session_file=args.session)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    end_process(code)


def cmd_serve(args: argparse.Namespace) -> int:
    from dumptui.tui.web import serve

    return serve(args.ref, args.target, args.argv, args.host, args.port, args.public_url)


def tolerant_output() -> None:
    """Text that still holds bytes a stream's encoding cannot write (a path that is not UTF-8 under a strict
    UTF-8 stdout) is written with backslash escapes, never aborts a command."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            try:
                reconfigure(errors="backslashreplace")
            except (ValueError, OSError):  # a stream already written to in another mode: left as it is
                pass


def _json_before_dumps(rest: list[str]) -> list[str]:
    """`--json` takes an optional FILE; written before the dumps (`bisect --json REF TARGET`) it would swallow
    REF. A folder there is a dump, not an output file: read it as `--json -` followed by that dump."""
    out = list(rest)
    for i, a in enumerate(out[:-1]):
        if a == "--json" and os.path.isdir(out[i + 1]):
            out[i] = "--json=-"
    return out


def main(argv: list[str] | None = None) -> int:
    single_threaded_blas()
    tolerant_output()
    argv = list(sys.argv[1:] if argv is None else argv)
    sub = argv[0] if argv and argv[0] in SUBCOMMANDS else None
    rest = _json_before_dumps(argv[1:] if sub else argv)
    args: argparse.Namespace | None = None
    try:
        parser = build_parser(sub)
        if sub in (None, "bisect", "compare", "remedy") and "--no-config" not in rest:
            from dumptui.options import config

            parser.set_defaults(**config.load())  # flags given on the command line win
        args = parser.parse_args(rest)
        args.argv = rest  # `serve` passes the options on to the app it runs
        handler = {
            "bisect": cmd_bisect,
            "compare": cmd_compare,
            "info": cmd_info,
            "inspect": cmd_inspect,
            "demo": cmd_demo,
            "convert": cmd_convert,
            "config": cmd_config,
            "open-result": cmd_open_result,
            "completion": cmd_completion,
            "serve": cmd_serve,
            "remedy": cmd_remedy,
            None: cmd_app,
        }[sub]
        return handler(args)
    except DumptuiError as e:
        return fail(sub, args, rest, e.path, e.reason, str(e))
    except BrokenPipeError:
        # the reader went away (`| head`): like any Unix tool, stop quietly; stdout to /dev/null so the
        # interpreter's final flush does not complain again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except (OSError, ValueError) as e:
        path = getattr(e, "filename", None) or ""
        reason = getattr(e, "strerror", None) or str(e)
        return fail(sub, args, rest, str(path), reason, f"{path}: {reason}" if path else str(e))
    except KeyboardInterrupt:
        return 130
    except Exception as e:  # a bug: still never exit 1, which scripts read as "divergence found"
        reason = f"internal error ({type(e).__name__}: {e}); please report it (the dumps were not changed)"
        return fail(sub, args, rest, "", reason, reason)


if __name__ == "__main__":
    sys.exit(main())
