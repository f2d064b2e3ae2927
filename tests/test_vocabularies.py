"""The engine's vocabularies are typed: every string enum of dumptui is a `Word` (core/model/vocab.py), the one
base that makes a member equal to its text and print as it, and none re-implements `__str__`/`__format__`."""

from __future__ import annotations

import importlib
import pkgutil
from enum import Enum

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
    codes.discard(("dumptui.core.model.vocab", "Word"))  # imported, never pickled: it has no members
    codes.discard(("dumptui.core.model.dump", "Role"))  # made by the search for an op pair, never in an index
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
    from pathlib import Path

    from dumptui.core.search.replay.precision import Fit, RemedyCause

    schema = json.loads((Path(dumptui.__file__).parent / "report" / "schemas" / "common.schema.json").read_text())
    causes = [e for e in _enums_of(schema, "cause") if "precision" in e]
    assert causes == [[c.value for c in RemedyCause]]
    fits = [e for e in _enums_of(schema, "how") if "reproduces" in e]
    assert fits == [[f.value for f in Fit if f is not Fit.NONE] + [None]]
