"""The engine's vocabularies are typed: every string enum of dumptui is a `Word` (core/io/vocab.py, re-exported by core/model/vocab.py), the one
base that makes a member equal to its text and print as it, and none re-implements `__str__`/`__format__`."""

from __future__ import annotations

import ast
import importlib
import pkgutil
from enum import Enum
from pathlib import Path

import dumptui
from dumptui.core.model.vocab import Word


def _string_enums() -> list[type[Enum]]:
    for info in pkgutil.walk_packages(dumptui.__path__, "dumptui."):
        if ".tui" in info.name or info.name.endswith("__main__"):
            continue  # the textual app's modules hold no vocabulary of their own (and import textual)
        importlib.import_module(info.name)
    seen: list[type[Enum]] = []
    todo: list[type] = [Enum]
    while todo:
        cls = todo.pop()
        for sub in cls.__subclasses__():
            todo.append(sub)
            if issubclass(sub, str) and sub.__module__.startswith("dumptui.") and sub is not Word:
                seen.append(sub)
    return seen


def test_every_string_enum_is_a_word() -> None:
    enums = _string_enums()
    assert len(enums) >= 20  # the walk found them (Verdict, Why, CauseKind...)
    assert [e.__qualname__ for e in enums if not issubclass(e, Word)] == []


def test_no_string_enum_reimplements_its_text() -> None:
    own = [e.__qualname__ for e in _string_enums() if (e.__str__, e.__format__) != (Word.__str__, Word.__format__)]
    assert own == []


def test_a_word_is_its_text() -> None:
    from dumptui.core.compare.verdict import Verdict

    assert f"{Verdict.SHAPE_MISMATCH}|{Verdict.CLOSE:>7}|{Verdict.EQUAL!s}" == "shape mismatch|  close|equal"
    assert Verdict.DIVERGED == "diverged" and Verdict.DIVERGED == "diverged"


def test_the_index_cache_rebuilds_the_models_codes() -> None:
    """A dump's pickled parts hold the model's codes (a problem's severity, a tensor's io...): the cache's
    restricted unpickler must allow each, or every cached dump is refused and indexed again."""
    from dumptui.core.index.restricted import ALLOWED
    from dumptui.core.model import dump

    codes = {(c.__module__, c.__name__) for c in vars(dump).values() if isinstance(c, type) and issubclass(c, Word)}
    codes.discard((Word.__module__, "Word"))  # imported, never pickled: it has no members (defined in io/vocab.py)
    codes.discard(("dumptui.core.model.dump", "Role"))  # made by the search for an op pair, never in an index
    codes.discard(("dumptui.core.model.dump", "PairSide"))  # a side of a compared pair: a dump has no side
    assert ("dumptui.core.model.dump", "Severity") in codes
    assert codes <= ALLOWED


def _enums_of(node: object, key: str) -> list[list[object]]:
    """Every `enum` given to a property named `key` anywhere in a JSON schema."""
    found: list[list[object]] = []
    if isinstance(node, dict):
        prop = node.get("properties", {}).get(key)
        if isinstance(prop, dict) and "enum" in prop:
            found.append(prop["enum"])
        for v in node.values():
            found += _enums_of(v, key)
    elif isinstance(node, list):
        for v in node:
            found += _enums_of(v, key)
    return found


def test_the_schema_lists_the_remedy_codes() -> None:
    """The JSON schema's words for a remedy's cause and fit are the engine's codes, all of them."""
    import json

    from dumptui.core.search.replay.precision import Fit, RemedyCause

    schema = json.loads((Path(dumptui.__file__).parent / "report" / "schemas" / "common.schema.json").read_text())
    causes = [e for e in _enums_of(schema, "cause") if "precision" in e]
    assert causes == [[c.value for c in RemedyCause]]
    fits = [e for e in _enums_of(schema, "how") if "reproduces" in e]
    assert fits == [[f.value for f in Fit if f is not Fit.NONE] + [None]]


def test_the_schema_lists_the_read_purposes() -> None:
    """`reads_by_purpose`'s keys in bisect --json are the ledger's purposes, all of them."""
    import json

    from dumptui.core.compare.ledger import Purpose

    schema = json.loads((Path(dumptui.__file__).parent / "report" / "schemas" / "bisect.schema.json").read_text())
    [prop] = [n["reads_by_purpose"] for n in _nodes(schema) if isinstance(n.get("reads_by_purpose"), dict)]
    assert prop["propertyNames"]["enum"] == [p.value for p in Purpose]


def _nodes(node: object) -> list[dict[str, object]]:
    """Every object of a JSON document, depth first."""
    if isinstance(node, dict):
        return [node] + [d for v in node.values() for d in _nodes(v)]
    if isinstance(node, list):
        return [d for v in node for d in _nodes(v)]
    return []


# --- the ratchet on string comparisons in the engine ---------------------------------------------------------
#
# A comparison of a value with a string literal (`x == "op"`, `x != "scan"`, `x in ("a", "b")`) in dumptui/core is
# a vocabulary spelled as text: a typo in it is silent and mypy cannot follow it. The engine's vocabularies are
# Words (InOut, SourceKind, Role, Severity, OpKind, FormatName, Verdict, RemedyCause, OriginKind, CommKind,
# HintKind, SearchMode, PairSide, ArgKind...): compare their members. What remains below is text that is not dumptui's own
# vocabulary, each module with why; a module may only lose comparisons (lower its number when it does), and a
# module not listed may have none.
FORMAT_TEXT = "a vendor file's or a user option's own text, matched as the format writes it"
OP_TYPES = "framework op type names (an open set: every vendor kernel has its own)"
DTYPES = "dtype names and numpy's dtype.kind letters (numpy's vocabulary, not dumptui's)"
DEMO = "the demo generators' knobs: a synthetic network's variant names and which side it writes"
SIDES = "'ref'/'target' as the statistics record's column prefixes"
ALLOWED_COMPARISONS: dict[str, tuple[int, str]] = {
    "compare/daskexec": (1, FORMAT_TEXT),  # --scheduler local
    "compare/elements": (1, DTYPES),
    "compare/hints": (2, OP_TYPES),
    "compare/metrics": (5, DTYPES + "; a printed cosine '1.000000'"),
    "compare/msprobe_metrics": (3, DTYPES + "; msprobe's own cell text 'shape unmatched'"),
    "compare/pairstats": (3, SIDES + "; a metric's key"),
    "compare/smallpairs": (1, DTYPES),
    "compare/spread": (1, "io == 'input': an InOut equals its text; left to the parallel plumbing's rewrite"),
    "compare/verdict": (1, FORMAT_TEXT),  # an ignore rule's `:input.*`
    "demo/compiled": (11, DEMO),
    "demo/detector": (10, DEMO),
    "demo/msprobe_block": (3, DEMO),
    "demo/msprobe_selection": (5, DEMO),
    "demo/noisy": (19, DEMO),
    "demo/quantised": (17, DEMO),
    "demo/ranks": (1, DEMO),
    "demo/residual": (2, DEMO),
    "formats/anf_pb": (8, FORMAT_TEXT),
    "formats/cann": (3, FORMAT_TEXT),
    "formats/cann_file": (1, DTYPES),
    "formats/ge_graph": (11, FORMAT_TEXT),
    "formats/irtext": (3, FORMAT_TEXT),
    "formats/mindspore": (1, OP_TYPES),
    "formats/mindspore_bin": (1, DTYPES),
    "formats/msprobe": (8, FORMAT_TEXT),
    "formats/msprobe_records": (1, FORMAT_TEXT),
    "formats/protoschema": (2, FORMAT_TEXT),
    "formats/statistic_csv": (4, FORMAT_TEXT),
    "formats/torchpt": (11, FORMAT_TEXT),
    "graph/build": (1, OP_TYPES),
    "io/devicelayout": (12, FORMAT_TEXT + " (CANN's device layout names)"),
    "io/dtypes": (2, DTYPES),
    "io/jsonstream": (6, FORMAT_TEXT + " (JSON punctuation)"),
    "io/npy": (2, FORMAT_TEXT + " (the npy header) and " + DTYPES),
    "search/bisect/preconditions": (1, FORMAT_TEXT + " (the IR's is_weight attribute)"),
    "search/bisect/transformed": (4, OP_TYPES + " and " + DTYPES),
    "search/measure": (1, DTYPES),
    "search/remedy": (1, FORMAT_TEXT + " (MindSpore's top scopes Default, Gradients)"),
    "search/replay/args": (1, FORMAT_TEXT + " (an IR attribute's 'None')"),
    "search/replay/conv": (5, FORMAT_TEXT + " (the pad_mode attribute)"),
    "search/replay/elementwise": (3, DTYPES + " and data format names"),
    "search/replay/irvalues": (25, FORMAT_TEXT + " (the IR value parser's tokens)"),
    "search/replay/precision": (7, OP_TYPES + " and " + DTYPES),
    "search/replay/reduce": (4, OP_TYPES),
    "search/replay/selection": (27, OP_TYPES + " and their attributes' text"),
    "search/replay/torchcalls": (2, OP_TYPES),
    "search/replay/torchfunctional": (5, FORMAT_TEXT + " (PyTorch's words: gelu's approximate, conv2d's padding)"),
    "search/replays": (5, DTYPES),
    "search/scan": (1, DTYPES),
    "search/selection": (5, OP_TYPES),
    "tools/convert": (1, DTYPES),
}


def _string_comparisons(path: Path) -> int:
    def text(n: ast.AST) -> bool:
        return isinstance(n, ast.Constant) and isinstance(n.value, str)

    def texts(n: ast.AST) -> bool:
        return isinstance(n, (ast.Tuple, ast.Set, ast.List)) and bool(n.elts) and all(text(e) for e in n.elts)

    count = 0
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Compare):
            left = node.left
            for op, right in zip(node.ops, node.comparators, strict=True):
                if (
                    isinstance(op, (ast.Eq, ast.NotEq))
                    and (text(left) or text(right))
                    or isinstance(op, (ast.In, ast.NotIn))
                    and texts(right)
                    and not text(left)
                ):
                    count += 1
                left = right
    return count


def _engine_counts() -> dict[str, int]:
    core = Path(dumptui.__file__).parent / "core"
    counts = {str(p.relative_to(core).with_suffix("")): _string_comparisons(p) for p in sorted(core.rglob("*.py"))}
    return {m: n for m, n in counts.items() if n}


def test_no_new_string_vocabulary_in_the_engine() -> None:
    over = {
        m: (n, ALLOWED_COMPARISONS.get(m, (0, ""))[0])
        for m, n in _engine_counts().items()
        if n > ALLOWED_COMPARISONS.get(m, (0, ""))[0]
    }
    assert over == {}, "string comparisons (found, allowed): compare a Word's members (core/model/vocab.py)"


def test_the_ratchet_is_tight() -> None:
    """A module that lost comparisons lowers its number here, so the ratchet never holds room for new ones."""
    counts = _engine_counts()
    loose = {m: (counts.get(m, 0), n) for m, (n, _why) in ALLOWED_COMPARISONS.items() if counts.get(m, 0) < n}
    assert loose == {}
    assert (
        sum(n for n, _why in ALLOWED_COMPARISONS.values()) == 261
    )  # 326 before the vocabularies were typed; +8 the torch layers' replay and its demo


def test_the_ratchet_counts_what_it_says() -> None:
    import tempfile

    src = 'if a.kind == "op" or "x" != b or c in ("p", "q") or d in (E, "r") or e == F or "s" in t: pass\n'
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "m.py"
        p.write_text(src)
        assert _string_comparisons(p) == 3
