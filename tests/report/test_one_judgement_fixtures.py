"""One judgement, shown the same everywhere, on the shared fixture pairs (when present): the verdict of every
tensor and the set of roots are the same in compare's JSON, both CSV profiles, the xlsx, the Markdown report
and bisect's JSON (whose culprit is the first root). The generated pairs are in test_one_judgement.py (a file
apart so that the two long halves run beside each other under `--dist loadfile`)."""

from __future__ import annotations

import json

import pytest
from helpers.common import SHARED
from helpers.judgement import contradictions, fixture_pairs, views

# many commands run in this process: one pool of worker processes for the module, not one per command
pytestmark = pytest.mark.usefixtures("commands_share_one_pool")


def _pairs() -> list:
    pairs = fixture_pairs()
    if not pairs:
        reason = f"shared fixtures absent ({SHARED} not found): the fixture pairs' views are not checked"
        return [pytest.param("", "", "", marks=pytest.mark.skip(reason=reason), id="no-fixtures")]
    return [pytest.param(*p, id=p[0].replace(" ", "_")) for p in pairs]


@pytest.mark.parametrize("label, ref, target", _pairs())
def test_every_view_of_every_fixture_pair_says_the_same(label, ref, target, tmp_path):
    said = contradictions(views(ref, target, tmp_path / label.replace(" ", "_")))
    assert not said, json.dumps({label: said}, indent=1)
