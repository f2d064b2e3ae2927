"""`make check` holds the engine and the presenter to `mypy --strict` (issue 37) through an override section of
pyproject.toml: `strict = true` there would apply to every module, so the section spells out the flags. It must
turn on every flag that --strict turns on in the mypy installed (a newer mypy may add one), for both packages."""

from __future__ import annotations

import sys
from typing import Any

from helpers.common import REPO
from mypy.main import define_options

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

STRICT_PACKAGES = ("dumptui.core.*", "dumptui.present.*")


def _mypy_config() -> dict[str, Any]:
    config: dict[str, Any] = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["mypy"]
    return config


def _as_assignments(section: dict[str, Any]) -> dict[str, bool]:
    """A config section's boolean flags as mypy's option names take them (`no_implicit_reexport = true` is
    `implicit_reexport = false`)."""
    out: dict[str, bool] = {}
    for key, value in section.items():
        if isinstance(value, bool):
            if key.startswith("no_"):
                out[key[3:]] = not value
            else:
                out[key] = value
    return out


def _strict_section() -> dict[str, Any]:
    sections = [s for s in _mypy_config().get("overrides", []) if set(STRICT_PACKAGES) <= set(s.get("module", []))]
    assert len(sections) == 1, f"one [[tool.mypy.overrides]] section for {STRICT_PACKAGES}, found {len(sections)}"
    return sections[0]


def test_the_strict_section_sets_every_flag_of_strict() -> None:
    _parser, _names, strict_assignments = define_options()
    wanted = dict(strict_assignments)
    assert wanted, "mypy names no --strict flags: its API changed"
    have = _as_assignments(_strict_section()) | _as_assignments(_mypy_config())
    missing = {flag: value for flag, value in wanted.items() if have.get(flag) != value}
    assert not missing, f"pyproject.toml's strict section misses --strict's {missing}"


def test_the_strict_section_is_not_strict_true() -> None:
    # `strict = true` in an override would be applied to every module of the package, not to these two
    assert "strict" not in _strict_section()
