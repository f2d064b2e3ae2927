"""No English in the engine: dumptui/core hands out codes and numbers, report/ words them.

The engine decides once and says *which* rule decided with *which* numbers (core/model/reason.py); a reader
says in the same way why a file cannot be read (core/io/fault.py's `Fault`) and how a dump spells things
(`Dump.variant`, a reason of the readers' codes). dumptui/report/reasons.py is the one place a code becomes a
sentence. A sentence built in the engine is a second place that can disagree with the decision (and a view
tempted to parse it), so this test holds every engine module to no English string literal at all: a new
sentence in the engine fails, whichever module builds it (a reader's message about bad input included).

Counted: string literals and f-strings of three words or more, outside docstrings, bare expression strings
and `raise` statements (an exception's message about unreadable input is addressed to the user as an error,
with its path, and is not a judgement; nor is an exception made to be raised later, nor a name that only
reaches such a message, listed in EXCEPTION_WORDS). Not English either: an `assert`'s message (to the
maintainer), a pattern given to `re.compile`, what `__repr__` returns, a run of upper-case tokens (opcode
names), and a format's own words spelled as it spells them (FORMAT_WORDS).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from dumptui.core.model.reason import Why

CORE = Path(__file__).resolve().parent.parent / "dumptui" / "core"
WORD = re.compile(r"[A-Za-z]{2,}")

# A format's own words, spelled as the format spells them: msprobe's CSV headings and error messages (its
# Err_message column, verbatim), MindSpore statistic.csv's column names. Data to match, not dumptui's sentences.
FORMAT_WORDS = {
    "compare/msprobe_metrics": {
        "Dump file is not ndarray.\n",
        "This is empty data, can not compare.\n",
        "This is type of scalar data, can not compare.\n",
        "Shape of NPU and bench Tensor do not match.\n",
        "Dtype of NPU and bench Tensor do not match. Skipped.\n",
        "The position of inf or nan in NPU and bench Tensor do not match.\n",
        "Cannot compare by Cosine Similarity, All the data is Zero in npu dump data.",
        "Cannot compare by Cosine Similarity, All the data is Zero in Bench dump data.",
        "Cannot compare by Cosine Similarity, the dump data has NaN.",
        "This is a 1-d tensor of length 1.",
        "Cannot compare by MaxRelativeError, the data contains nan in dump data.",
    },
    "compare/metrictable": {"One Thousandth Err Ratio", "Five Thousandths Err Ratio"},
    "formats/statistic_csv": {"negative zero count", "positive zero count", "negative inf count", "positive inf count"},
    "formats/irtext": {"# Fullname with scope:"},  # the line of a MindSpore IR file that names a node's scope
}

# Names that only reach an exception's message (what a replay refuses, and why; which value of a file a reader
# refuses): the budget's items, the axes a replay checks, the value a BadValue names. An exception's text is
# exempt (see the docstring); these are its parts.
EXCEPTION_WORDS = {
    "formats/mindspore_bin": {"shape in the file name"},  # what limits.shape's BadValue names
    "search/replay/conv": {"padded input elements"},
    "search/replay/norm": {"LayerNorm begin_norm_axis", "LayerNorm begin_params_axis"},
}


def english_literals(source: str) -> list[tuple[int, str]]:
    """(line, text) of every English literal of `source` that counts (see the module's docstring)."""
    tree = ast.parse(source)
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            skip.add(id(node.value))  # docstrings and bare strings
        if isinstance(node, ast.Raise | ast.Assert):
            skip.update(id(n) for n in ast.walk(node))
        if isinstance(node, ast.FunctionDef) and node.name == "__repr__":
            skip.update(id(n) for n in ast.walk(node))
        if isinstance(node, ast.Call) and (_is_re_compile(node.func) or _is_exception(node.func)):
            skip.update(id(n) for n in ast.walk(node))
        if isinstance(node, ast.JoinedStr):
            skip.update(id(n) for n in ast.walk(node) if n is not node)  # counted once, as the f-string
    found = []
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
        elif isinstance(node, ast.JoinedStr):
            literal = "".join(v.value for v in node.values if isinstance(v, ast.Constant))
            if " " not in literal:
                continue  # a name made of parts (`graph_{g}.csv`), not a sentence
            text = "".join(v.value if isinstance(v, ast.Constant) else " X " for v in node.values)
        else:
            continue
        if " " in text and len(WORD.findall(text)) >= 3 and not _code(text) and not _tokens(text):
            found.append((node.lineno, text))
    return found


def _is_re_compile(func: ast.expr) -> bool:
    return isinstance(func, ast.Attribute) and func.attr == "compile" and getattr(func.value, "id", "") == "re"


def _is_exception(func: ast.expr) -> bool:
    """A call that makes an exception to raise later (`ReplayUnsupported(...)`, `DumpError(...)`)."""
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    return name.endswith(("Error", "Unsupported", "Exception"))


def _tokens(text: str) -> bool:
    """Upper-case names separated by spaces (`PROTO FRAME STOP`): a list of identifiers, not a sentence."""
    return all(w.isupper() or w.isdigit() for w in text.split())


def _code(text: str) -> bool:
    """A string that is Python, not English (a type annotation in quotes: `list[Rule] | tuple[Rule, ...]`)."""
    try:
        ast.parse(text, mode="eval")
    except SyntaxError:
        return False
    return True


def _modules() -> dict[str, list[tuple[int, str]]]:
    out = {}
    for path in sorted(CORE.rglob("*.py")):
        name = path.relative_to(CORE).with_suffix("").as_posix()
        if name.startswith("demo/"):
            continue  # the demo generators write dumps (names, not judgements) and stand apart (import contract)
        allowed = FORMAT_WORDS.get(name, set()) | EXCEPTION_WORDS.get(name, set())
        out[name] = [
            (line, text) for line, text in english_literals(path.read_text(encoding="utf-8")) if text not in allowed
        ]
    return out


def test_the_engine_holds_no_english():
    english = {name: found for name, found in _modules().items() if found}
    assert not english, (
        "English in the engine (module: [(line, text)]): hand out a code (a Why of core/model/reason.py, a Flaw "
        f"of core/io/fault.py, a Word of the module's own) and word it in dumptui/report/reasons.py: {english}"
    )


def test_the_count_sees_every_engine_module():
    modules = _modules()
    assert len(modules) > 100 and {"model/reason", "search/scan", "formats/cann", "io/jsonstream"} <= set(modules)


def test_the_count_sees_a_sentence_and_leaves_docstrings_and_errors_alone():
    planted = """
def f(x):
    \"\"\"A docstring of many words is not counted.\"\"\"
    if x:
        raise ValueError(f"the file {x} is unreadable here")
    label = "op name"
    return f"error is born here: {x} grows"
"""
    assert [text for _, text in english_literals(planted.replace("\\", ""))] == ["error is born here:  X  grows"]


def test_the_count_leaves_asserts_patterns_reprs_and_token_lists_alone():
    planted = """
import re
PATTERN = re.compile(r"the name of the op here")
OPS = "PROTO FRAME STOP MARK".split()
class A:
    def __repr__(self):
        return f"A of many words {self}"
def f(x):
    assert x, "x must hold something"
    return "but this one counts"
"""
    assert [text for _, text in english_literals(planted)] == ["but this one counts"]


def test_an_exception_made_to_raise_later_is_not_counted():
    planted = """
def f(x):
    e = ValueError(f"the file {x} is unreadable here")
    return e, "but this one counts"
"""
    assert [text for _, text in english_literals(planted)] == ["but this one counts"]


def test_every_reason_code_has_words():
    from dumptui.report.reasons import _WORDS

    assert set(Why) == set(_WORDS), set(Why) ^ set(_WORDS)


@pytest.mark.parametrize("name", sorted(FORMAT_WORDS | EXCEPTION_WORDS))
def test_every_allowed_word_is_still_there(name):
    """A word the module no longer holds leaves its list: a list never allows more than it must."""
    held = {text for _, text in english_literals((CORE / f"{name}.py").read_text(encoding="utf-8"))}
    allowed = FORMAT_WORDS.get(name, set()) | EXCEPTION_WORDS.get(name, set())
    assert allowed <= held, allowed - held
