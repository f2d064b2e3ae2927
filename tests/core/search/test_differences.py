"""What differs in an op's definition is a code with its words: the engine and the views decide by the kind
and slot (a constant input, an op type), never by parsing the sentence."""

from __future__ import annotations

import pickle

from dumptui.core.search.localerror import Difference, DiffKind


def test_a_difference_is_its_words_and_its_codes_and_survives_a_process_boundary():
    d = Difference("constant input.1: 0.5 vs 0.25", DiffKind.CONSTANT, 1)
    assert d == "constant input.1: 0.5 vs 0.25" and f"{d}" == str(d)  # printed as the words
    back = pickle.loads(pickle.dumps(d))
    assert (str(back), back.kind, back.slot) == (str(d), DiffKind.CONSTANT, 1)
    t = Difference("op type ReduceSum vs Custom_ReduceSum_2cb6", DiffKind.OP_TYPE)
    assert t.kind == DiffKind.OP_TYPE and t.slot is None
