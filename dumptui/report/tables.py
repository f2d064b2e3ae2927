"""Rich renderings for the headless commands. Names are data: always escaped before markup."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from dumptui.core.compare.hints import for_root
from dumptui.core.compare.noise import fmt_rel
from dumptui.core.compare.results import OpResult, TensorResult
from dumptui.core.compare.session import Session
from dumptui.core.compare.verdict import BAD, EQUAL, Verdict
from dumptui.core.graph.pairedby import PairedBy
from dumptui.core.model.dump import Dump, Severity, TensorRef
from dumptui.core.model.reason import Reason
from dumptui.core.search.bisect import (
    Bisection,
    CheckKind,
    CheckStatus,
    InputCheck,
    Mark,
    Root,
    RootKind,
    SearchMode,
    StrategyName,
)
from dumptui.core.search.judgement import NO_JUDGEMENT, RunJudgement
from dumptui.core.search.localerror import LocalError, LocalKind
from dumptui.core.search.replay.precision import RemedyCause
from dumptui.report import fmt
from dumptui.report.cause import fmt_gain, of_what, proof_words, why
from dumptui.report.data import benign_evidence
from dumptui.report.looks import role
from dumptui.report.reasons import difference_words, remedy_sentence, say, say_all
from dumptui.report.selection import counts, reason_text

# verdict role (core/compare/verdict.py) -> rich style
ROLE_STYLE = {
    "ok": "green",
    "close": "cyan",
    "bad": "bold red",
    "one-sided": "yellow",
    "incomparable": "magenta",
    "unreadable": "magenta",
    "muted": "dim",
}


def verdict_style(v: Verdict | None) -> str:
    return ROLE_STYLE.get(role(v), "") if v else ""


def name(s: object) -> str:
    """Text from a file or an engine's reason (worded), for Rich markup (fmt.markup: cleaned, tags escaped)."""
    return fmt.markup(say(s) if isinstance(s, Reason) else s)


def verdict_text(v: Verdict | None) -> Text:
    return Text(v or "-", style=verdict_style(v))


def dump_line(d: Dump) -> str:
    kinds: dict[str, int] = {}
    for op in d.ops:
        kinds[op.kind] = kinds.get(op.kind, 0) + 1
    parts: list[str] = [d.format]
    if d.version:
        parts.append(f"MindSpore {d.version}")
    if d.device:
        parts.append(d.device)
    parts.append(", ".join(f"{n} {k}s" for k, n in kinds.items()))
    return f"{name(d.path)} ({name(', '.join(parts))})"


def _shape_dtype(r: TensorResult) -> Text:
    def side(t: TensorRef | None) -> str:
        return "-" if t is None else f"{fmt.shape(t.shape)} {t.dtype or '?'}"

    a, b = side(r.ref), side(r.target)
    return Text(fmt.clean(a if a == b else f"{a} | {b}"))  # a dtype label may come from a file


def tensor_table(results: list[TensorResult], title: str = "") -> Table:
    """Verdict numbers per tensor, then a table of each side's statistics: fits 80 columns."""
    t = Table(title=title or None, title_justify="left", box=None, pad_edge=False, show_edge=False)
    t.add_column("tensor")
    t.add_column("shape dtype (ref | target)", overflow="fold")
    for col in ("cos", "max abs", "max rel", "rmse"):
        t.add_column(col, justify="right")
    t.add_column("verdict")
    for r in results:
        st = r.stats
        t.add_row(
            r.label,
            _shape_dtype(r),
            fmt.cos(st.cos) if st else "-",
            fmt.g(st.max_abs) if st else "-",
            fmt.g(st.max_rel) if st else "-",
            fmt.g(st.rmse) if st else "-",
            verdict_text(r.verdict),
        )
    return t


def stats_table(results: list[TensorResult]) -> Table:
    t = Table(box=None, pad_edge=False, show_edge=False)
    for col in ("tensor", "side", "min", "max", "mean", "std", "L2", "nan/inf"):
        t.add_column(col, justify="left" if col in ("tensor", "side", "nan/inf") else "right")
    for r in results:
        st = r.stats
        if st is None:
            continue
        for i, (label, s) in enumerate((("ref", st.ref), ("target", st.target))):
            t.add_row(
                r.label if i == 0 else "",
                label,
                fmt.g(s.min),
                fmt.g(s.max),
                fmt.g(s.mean),
                fmt.g(s.std),
                fmt.g(s.l2),
                fmt.nonfinite(s),
            )
    return t


def reasons(results: list[TensorResult]) -> list[str]:
    out = []
    for r in results:
        if r.verdict in (EQUAL,) and not r.notes:
            continue
        line = f"{r.label}: {r.verdict} - {reason_text(r.reason)}"
        if r.notes:
            line += " [" + "; ".join(say_all(r.notes)) + "]"
        out.append(line)
    return out


def print_root(console: Console, r: Root, session: Session, heading: str, checks: Sequence[InputCheck] = ()) -> None:
    res = r.result or session.op_result(r.pair)
    p = r.pair
    console.print(
        f"[bold]{heading}:[/bold] [bold red]{name(p.label)}[/bold red] ({name(fmt.short_types(p.op_type))}), "
        f"position {p.index + 1} of {len(session.alignment.kernels)} in execution order"
    )
    if p.how is not PairedBy.EXACT:
        console.print(f"  paired by: {name(say(p.how))}")
    console.print(f"  why: {name(fmt.short_types(why(r, checks)))}")
    console.print(tensor_table(res.inputs + res.outputs))
    console.print(stats_table(res.inputs + res.outputs))
    for line in reasons(res.inputs + res.outputs):
        console.print("  " + name(line))
    print_local(console, r.local)
    for c in r.caveats:
        console.print(f"  [yellow]caveat:[/yellow] {name(say(c))}")
    for h in for_root(res.hints, r.local is not None and r.local.is_root, p.op_type):
        console.print(f"  [bold yellow]hint ({name(h.kind)}):[/bold yellow] {name(say(h.reason))}")
    op = p.op
    if op.code:
        console.print(f"  source: {name(op.code[-1])}")


def print_cause(console: Console, session: Session, r: Root) -> None:
    """Precision or semantics (the op at the device's precision from the reference's inputs), when known;
    `dumptui remedy` writes the files."""
    from dumptui.core.search.remedy import remedy_of_root

    if r.kind != RootKind.OUTPUTS:
        return  # an input or weight that differs: the preconditions say what
    rem = remedy_of_root(session, r)
    if rem.cause == RemedyCause.UNKNOWN:
        return
    console.print(f"  [bold yellow]cause:[/bold yellow] {name(remedy_sentence(rem))}")
    if rem.cause == RemedyCause.PRECISION:
        console.print(
            "  remedy: `dumptui remedy REF TARGET -o DIR` writes keep_dtype.cfg, op_precision.ini, converter_ascend.cfg, to_float32.py"
        )


def _resized_words(le: LocalError) -> str:
    """Inputs a flip upstream made of another size on each side: compared by their replay, never by a gain."""
    slots = ", ".join(f"input.{s}" for s in le.resized)
    return f"{slots} of another size on each side (a selection flipped upstream): no gain, its replay decides"


def print_local(console: Console, le: LocalError | None) -> None:
    """The local error of a root: the numbers of the rule, and the replay proof where there is one."""
    if le is None or le.out is None:
        return
    ins = (
        "inputs agree exactly"
        if le.data_in is None or le.data_in.worst_rel == 0
        else f"inputs carry {fmt_rel(le.data_in.worst_rel)}"
    )
    if le.resized:  # never compared: no gain can be said
        console.print(
            f"  local error: output {fmt_rel(le.out_rel or 0.0)} {of_what(le)} ({name(le.floor_dtype)} floor "
            f"{fmt_rel(le.floor)}), {_resized_words(le)}"
        )
        ins = ""
    if ins:
        console.print(
            f"  local error: output {fmt_rel(le.out_rel or 0.0)} {of_what(le)} ({name(le.floor_dtype)} floor "
            f"{fmt_rel(le.floor)}), {ins}: gain x{fmt_gain(le.gain_rel)} (absolute x{fmt_gain(le.gain_abs)})"
        )
    if le.replay is not None:
        console.print(f"  [bold]proof (replay):[/bold] {name(proof_words(le))}")
    elif le.replay_note:
        console.print(f"  proof: {name(proof_words(le))}")
    for d in le.differs:
        console.print(f"  differs: {name(fmt.short_types(difference_words(d)))}")


def print_checks(console: Console, checks: list[InputCheck]) -> None:
    if not checks:
        console.print("Preconditions: no parameters or network inputs dumped on both sides (not checked)")
        return
    console.print("[bold]Preconditions[/bold] (the field guide: same network input, same weights):")
    for kind in (CheckKind.NETWORK_INPUT, CheckKind.PARAMETER):
        cs = [c for c in checks if c.kind == kind]
        if not cs:
            continue
        label = "network input" if kind == CheckKind.NETWORK_INPUT else "weights"
        counts: dict[str, int] = {}
        for c in cs:
            counts[c.status] = counts.get(c.status, 0) + 1
        summary = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
        ok = all(c.status == CheckStatus.EQUAL for c in cs)
        console.print(f"  {label}: {len(cs)} checked: [{'green' if ok else 'yellow'}]{summary}[/]")
        for c in cs:
            if c.status == CheckStatus.EQUAL:
                continue
            style = {"differs": "bold red", "benign": "cyan", "updated": "cyan"}.get(c.status, "yellow")
            console.print(f"    [{style}]{c.status}[/] {name(c.name)}: {name(say(c.detail))}")


def print_bisect(console: Console, bi: Bisection) -> None:
    _print_pairing(console, bi.session)
    print_checks(console, bi.checks or [])
    _print_steps(console, bi)
    _print_answer(console, bi)
    _print_afterword(console, bi)


def _print_pairing(console: Console, s: Session) -> None:
    """The two dumps, how their ops paired, and the files that could not be read."""
    console.print(f"[bold]ref[/bold]:    {dump_line(s.ref)}")
    console.print(f"[bold]target[/bold]: {dump_line(s.target)}")
    counts = s.alignment.counts()
    console.print("alignment: " + ", ".join(f"{n} {name(say(k))}" for k, n in counts.items()))
    for p in s.alignment.pairs:
        if p.ref is not None and p.target is not None and p.how is not PairedBy.EXACT:
            console.print(f"  {name(p.ref.name)} ↔ {name(p.target.name)}: {name(say(p.how))}")
    unpaired = s.alignment.unpaired()
    if unpaired:
        shown = ", ".join(name(p.name) for p in unpaired[:6])
        more = f" and {len(unpaired) - 6} more" if len(unpaired) > 6 else ""
        console.print(f"  unpaired: {shown}{more}")
    for d in (s.ref, s.target):
        for problem in d.problems:
            if problem.severity == Severity.ERROR:
                console.print(f"  [magenta]unreadable[/magenta] {name(problem.path)}: {name(say(problem.reason))}")


def _print_steps(console: Console, bi: Bisection) -> None:
    """How the search went: the kind of search, then each step."""
    if bi.search == SearchMode.SCAN:
        console.print(
            f"[bold]Local-error scan[/bold] of {len(bi.order)} ops paired on both sides "
            f"({name(bi.search_reason)}); then bisection over the judged verdicts "
            f"({'graph-aware' if bi.mode == StrategyName.GRAPH else 'over the execution order'}):"
        )
    else:
        console.print(
            f"[bold]Bisection[/bold] ({'graph-aware' if bi.mode == StrategyName.GRAPH else 'over the execution order'}, "
            f"{len(bi.order)} ops paired on both sides; {name(bi.search_reason)}):"
        )
    for i, st in enumerate(bi.history, 1):
        style = "red" if st.mark == Mark.BAD else ("green" if st.mark == Mark.GOOD else "yellow")
        console.print(
            f"  {i:2d}. [{st.candidates_before} candidates] #{bi.order[st.position].index + 1} "
            f"{name(bi.order[st.position].name)}: [{style}]{st.mark}[/{style}] - {name(say(st.detail))}"
        )


def _print_answer(console: Console, bi: Bisection) -> None:
    """The culprit and the other roots, or why there is none (undecided, benign, no divergence)."""
    s = bi.session
    culprit = bi.first_root()
    benign = benign_evidence(bi) if culprit is None else []
    if culprit is None and bi.undecided:
        console.print(
            "[bold magenta]Undecided[/bold magenta] (exit code 2): what could not be read or judged hides the answer:"
        )
        for line in bi.undecided:
            console.print(f"  - {name(say(line))}")
    elif culprit is None and benign:
        console.print("[bold green]Benign[/bold green]: no op creates error beyond what precision explains:")
        for line in benign:
            console.print(f"  - {name(line)}")
    elif culprit is None:
        console.print(
            "[bold green]No divergence[/bold green]: the outputs agree within the noise floor"
            + (" and the weights and inputs agree" if bi.checks else "")
        )
    else:
        print_root(console, culprit, s, "Culprit", bi.checks or [])
        print_cause(console, s, culprit)
        others = [r for r in bi.roots() if r.pair.key != culprit.pair.key]
        if others:
            console.print("[bold]Other roots of divergence[/bold] (in execution order):")
            for r in others:
                console.print(f"  {name(r.pair.label)} ({name(r.pair.op_type)}): {name(why(r, bi.checks or []))}")
                print_local(console, r.local)
        else:
            console.print("Other roots of divergence: none found")
        if bi.undecided:  # the answer stands, but it is incomplete: what could not be judged is said with it
            console.print(
                "[bold magenta]Incomplete[/bold magenta]: what could not be read or judged (a root may lie there too):"
            )
            for line in bi.undecided:
                console.print(f"  - {name(line)}")


def _print_afterword(console: Console, bi: Bisection) -> None:
    """Where error grows, notes, damaged and skipped files, what was read."""
    s = bi.session
    sources = bi.error_sources()
    if sources:
        console.print(
            "Where error grows most: "
            + "; ".join(f"{name(le.pair.label)} x{fmt_gain(le.gain_rel)} ({le.kind})" for le in sources)
        )
    for n in [*bi.notes, *s.alignment.warnings]:
        console.print(f"note: {name(say(n))}")
    damaged = [
        t for r in s.results() for t in (r.ref, r.target) if t is not None and t.has_data and (t.problem or t.repaired)
    ]
    for t in dict.fromkeys(damaged):
        console.print(f"[magenta]damaged file[/magenta] {name(t.path)}: {name(say(t.problem or t.repaired))}")
    print_skipped(console, s)
    console.print(f"Tensor pairs read: {s.ledger.summary()}")


def print_skipped(console: Console, session: Session, results: list[TensorResult] | None = None) -> None:
    """One line saying how much could not be read (nothing when everything could)."""
    from dumptui.report.data import skipped

    counts = skipped(session, results)
    parts = [f"{n} file{'s' if n != 1 else ''} of the {side} dump" for side, n in counts["files"].items() if n]
    if counts["tensor_pairs"]:
        n = counts["tensor_pairs"]
        parts.append(f"{n} tensor pair{'s' if n != 1 else ''} not compared")
    if parts:
        console.print(f"[magenta]skipped[/magenta] (unreadable, listed above): {', '.join(parts)}")


_SHORT_DTYPE = {
    "float32": "f32",
    "float16": "f16",
    "bfloat16": "bf16",
    "float64": "f64",
    "int64": "i64",
    "int32": "i32",
    "int16": "i16",
    "int8": "i8",
    "uint8": "u8",
    "bool": "bool",
}


def _dt(v: str | None) -> str:
    return _SHORT_DTYPE.get(v or "", v or "?")


def compare_table(results: list[OpResult], only_bad: bool = False, judgement: RunJudgement = NO_JUDGEMENT) -> Group:
    """Per op a heading line (with its local error and gain), then one line per tensor: readable at 80
    columns, wider ones just have room."""
    lines: list[Text] = []
    head = Text(f"  {'tensor':9} {'shape dtype':22} {'cos':>9} {'max abs':>9} {'max rel':>9} verdict", style="bold")
    lines.append(head)
    for res in results:
        p = res.pair
        is_root = judgement.is_root(p.index)
        rows = [r for r in res.inputs + res.outputs if not only_bad or r.verdict in BAD or is_root]
        if not rows:
            continue
        title = Text(f"#{p.index + 1} ", style="bold")
        title.append(fmt.clean(p.label))
        title.append(f" ({fmt.clean(p.op_type)})", style="dim")
        if not p.paired:
            title.append(f"  {fmt.clean(say(p.how))}, {len(rows)} tensors", style="yellow")
            lines.append(title)
            continue
        if p.how is not PairedBy.EXACT:
            title.append(f"  paired by {fmt.clean(say(p.how))}", style="dim")
        le = judgement.local_of(p.index)
        if le is not None and le.selection is not None and le.selection.conclusive:
            # a selection is compared as selections: its gain says nothing
            title.append(f"  {counts(le.selection)}", style="bold red" if is_root else "dim")
        elif le is not None and le.out is not None and le.kind != LocalKind.CLEAN:
            gain = _resized_words(le) if le.resized else f"gain x{fmt_gain(le.gain_rel)}"
            title.append(f"  local err {fmt_rel(le.out_rel or 0.0)} {gain}", style="bold red" if is_root else "dim")
        if is_root:
            title.append("  ROOT", style="bold red")
        lines.append(title)
        for r in rows:
            st = r.stats
            t = r.ref or r.target
            assert t is not None  # a result has a tensor on one side at least
            sh = fmt.shape(t.shape)
            if r.ref is not None and r.target is not None and r.ref.shape != r.target.shape:
                sh = f"{fmt.shape(r.ref.shape)}|{fmt.shape(r.target.shape)}"
            dt = _dt(t.dtype)
            if r.ref is not None and r.target is not None and r.ref.dtype != r.target.dtype:
                dt = f"{_dt(r.ref.dtype)}|{_dt(r.target.dtype)}"
            repaired = any(x is not None and x.has_data and x.repaired for x in (r.ref, r.target))
            label = r.label + ("*" if repaired else "")
            line = Text(fmt.clean(f"  {label:9} {sh + ' ' + dt:22} "))
            if st is not None and not st.bitwise_equal:
                line.append(f"{fmt.cos(st.cos):>9} {fmt.g(st.max_abs):>9} {fmt.g(st.max_rel):>9} ")
            else:
                line.append(f"{'':>9} {'':>9} {'':>9} ")
            line.append(r.verdict, style=verdict_style(r.verdict))
            if st is not None:
                a, b = fmt.nonfinite(st.ref), fmt.nonfinite(st.target)
                if a != "-" or b != "-":
                    line.append(f"  nan/inf ref {a}, target {b}", style="magenta")
            lines.append(line)
    return Group(*lines)


def compare_summary(results: list[OpResult]) -> Group:
    counts: dict[Verdict, int] = {}
    for res in results:
        for r in res.inputs + res.outputs:
            counts[r.verdict] = counts.get(r.verdict, 0) + 1
    line = Text("tensor pairs: ")
    for i, (k, n) in enumerate(sorted(counts.items(), key=lambda kv: -kv[1])):
        if i:
            line.append(", ")
        line.append(f"{n} {k}", style=verdict_style(k))
    return Group(line)
