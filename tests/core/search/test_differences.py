"""What differs in an op's definition is a code with each side's value: the engine and the views decide by
the kind and slot (a constant input, an op type), and report/reasons.py is the one place that words it."""

from __future__ import annotations

import pickle

from dumptui.core.search.localerror import Difference, DiffKind
from dumptui.report.reasons import difference_words, differences_words


def test_a_difference_is_codes_and_values_and_survives_a_process_boundary():
    d = Difference(DiffKind.CONSTANT, "0.5", "0.25", slot=1)
    back = pickle.loads(pickle.dumps(d))
    assert back == d and (back.kind, back.slot, back.ref, back.target) == (DiffKind.CONSTANT, 1, "0.5", "0.25")
    assert hash(back) == hash(d)  # a value: a reason that rests on it compares and deduplicates


def test_each_kind_of_difference_is_worded_from_its_values():
    assert difference_words(Difference(DiffKind.CONSTANT, "0.5", "500", slot=1)) == "constant input.1: 0.5 vs 500"
    assert difference_words(Difference(DiffKind.OP_TYPE, "Floor", "Trunc")) == "op type Floor vs Trunc"
    attr = Difference(DiffKind.ATTRIBUTE, '"NCHW"', '"NHWC"', name="format")
    assert difference_words(attr) == 'attribute format: "NCHW" vs "NHWC"'
    both = (Difference(DiffKind.OP_TYPE, "Mod", "FloorMod"), attr)
    assert differences_words(both) == 'op type Mod vs FloorMod; attribute format: "NCHW" vs "NHWC"'
