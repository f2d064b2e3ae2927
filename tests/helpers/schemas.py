"""The JSON schemas of the headless documents, as validators."""

from __future__ import annotations

import json
import os

import pytest

from dumptui.report.jsonout import SCHEMA_DIR


def validator(command: str):
    jsonschema = pytest.importorskip("jsonschema")
    from referencing import Registry, Resource

    schemas = {}
    for name in os.listdir(SCHEMA_DIR):
        with open(os.path.join(SCHEMA_DIR, name)) as fh:
            doc = json.load(fh)
        schemas[name] = Resource.from_contents(doc)
        schemas[doc["$id"]] = Resource.from_contents(doc)
    registry = Registry().with_resources(schemas.items())
    schema = schemas[f"{command}.schema.json"].contents
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema, registry=registry)
