"""The package declares what it ships: the license file matches the metadata, the schemas are package data."""

from __future__ import annotations

import sys

from helpers.common import REPO

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib


def test_license_file_matches_metadata():
    meta = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert meta["license"] == {"text": "Apache-2.0"}
    text = (REPO / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text and "END OF TERMS AND CONDITIONS" in text


def test_schemas_and_extras_are_declared():
    doc = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert "schemas/*.json" in doc["tool"]["setuptools"]["package-data"]["dumptui.report"]
    assert any(d.startswith("openpyxl") for d in doc["project"]["optional-dependencies"]["xlsx"])
    assert (REPO / "dumptui" / "report" / "schemas" / "compare.schema.json").is_file()
