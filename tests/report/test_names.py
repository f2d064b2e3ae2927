"""The one rule for names shown in fewer columns than they have (report/names.py): cut in the middle with `…`,
the op's own name kept, every piece shown found in the real name."""

from __future__ import annotations

import pytest

from dumptui.report.names import ELLIPSIS, cut_long_words, cut_name, cut_pair, cut_word, is_shown_from

MS = "Default/stage0-Stage/block6-ResidualBlock/Add-op0"
DEEP = "Default/network-WithLossCell/_backbone-Net/mixer-Mixer/quant-FakeQuantPerLayer/Floor-op0"
MSPROBE = ("Functional.conv2d.3.forward", "Tensor.__add__.0.forward", "Torch.matmul.12.backward")
NAMES = (MS, DEEP, *MSPROBE, "block12-ResidualBlock", "Conv2D-op12", "Default/Add-op0", "x" * 30)


@pytest.mark.parametrize(
    "name,width,shown",
    [
        (MS, 60, MS),  # fits: unchanged
        (MS, len(MS), MS),
        (MS, 40, "Default/st…/block6-ResidualBlock/Add-op0"),  # whole scopes before the op, the start after
        (MS, 30, "…/block6-ResidualBlock/Add-op0"),
        (MS, 24, "Default/stage0-…/Add-op0"),
        (MS, 8, "…Add-op0"),
        (DEEP, 50, "Def…/mixer-Mixer/quant-FakeQuantPerLayer/Floor-op0"),
        ("Functional.conv2d.3.forward", 24, "Functi….conv2d.3.forward"),  # the family gives way, not the API
        ("Functional.conv2d.3.forward", 17, "…conv2d.3.forward"),
        ("Functional.conv2d.3.forward", 16, "conv2d…3.forward"),  # the API and its index around the cut
        ("Functional.conv2d.3.forward", 20, "Fu….conv2d.3.forward"),
        ("Functional.conv2d.3.forward", 15, "conv2d….forward"),
        ("Tensor.__add__.0.forward", 20, "T….__add__.0.forward"),
        ("Tensor.__add__.0.forward", 19, "….__add__.0.forward"),
        ("Tensor.__add__.0.forward", 16, "__add__….forward"),
        ("Functional.scaled_dot_product_attention.0.forward", 27, "scaled_dot_produ….0.forward"),  # index whole
        ("Conv2D-op12", 8, "Conv2D…2"),  # the own name longer than the room: its type, its index's end
        ("Conv2D-op12", 7, "Con…p12"),  # less room: 3 of the index, the rest of the type
        ("block12-ResidualBlock", 12, "block12…lock"),  # a scope: its own name before its class
    ],
)
def test_examples(name, width, shown):
    assert cut_name(name, width) == shown


def test_short_names_are_unchanged_and_tiny_widths_still_say_there_is_a_cut():
    for name in NAMES:
        assert cut_name(name, len(name)) == name and cut_name(name, 500) == name
        assert cut_name(name, 1) == ELLIPSIS and cut_name(name, 0) == ""
    assert cut_name("", 3) == ""


@pytest.mark.parametrize("name", NAMES)
def test_every_width_shows_pieces_of_the_real_name_around_one_cut(name):
    for width in range(0, len(name) + 3):
        shown = cut_name(name, width)
        assert len(shown) <= width, (width, shown)
        if width >= 1:
            assert is_shown_from(shown, name), (width, shown)
            assert len(shown) == min(width, len(name))  # the room is used: nothing dropped that fitted


@pytest.mark.parametrize("name", [MS, DEEP])
def test_a_scope_path_keeps_its_op_whole_and_cuts_at_a_scope(name):
    leaf = name.rsplit("/", 1)[1]
    for width in range(len(leaf) + 1, len(name)):
        shown = cut_name(name, width)
        head, tail = shown.split(ELLIPSIS)
        assert name.startswith(head) and name.endswith(tail) and tail.endswith(leaf)
        assert tail == leaf or tail.startswith("/")  # whole scopes only after the cut


@pytest.mark.parametrize("name", MSPROBE)
def test_an_msprobe_name_keeps_its_api_and_call_index(name):
    family, own = name.split(".", 1)
    api = own.split(".")[0]
    for width in range(len(own) + 1, len(name)):
        shown = cut_name(name, width)
        assert shown.endswith(own), shown  # `Functio….forward` never: the API is what tells calls apart
    for width in range(len(api) + 4, len(own) + 1):
        assert cut_name(name, width).startswith(api)  # narrower: the API first, 3 of the end after it


def test_the_own_name_longer_than_the_room():
    assert cut_name("Default/Conv2D-op12", 8) == "Conv2D…2"
    assert is_shown_from("Conv2D…2", "Default/Conv2D-op12")


def test_a_rename_cuts_each_side_alone():
    assert cut_pair("FloorMod-op0", "Mod-op0", 40) == "FloorMod-op0 ↔ Mod-op0"
    shown = cut_pair("Default/a-A/FloorMod-op0", "Default/b-B/Mod-op0", 30)
    a, b = shown.split(" ↔ ")
    assert len(shown) <= 30 and is_shown_from(a, "Default/a-A/FloorMod-op0") and is_shown_from(b, "Default/b-B/Mod-op0")
    assert cut_pair("FloorMod-op0", "Mod-op0", 9) == cut_name("FloorMod-op0", 9)  # no room for both
    # two op names that end alike keep their starts, where they differ (the op types), each a real piece
    assert cut_pair("FloorMod-op0", "Mod-op0", 19) == "FloorMod… ↔ Mod-op0"
    assert cut_pair("FloorMod-op0", "Mod-op0", 13) == "Floor… ↔ Mod…"  # the target cut: its type, the rest to the ref
    for width in range(11, 23):
        a, b = cut_pair("FloorMod-op0", "Mod-op0", width).split(" ↔ ")
        assert is_shown_from(a, "FloorMod-op0") and is_shown_from(b, "Mod-op0") and len(a) + 3 + len(b) <= width


def test_what_the_check_refuses():
    assert not is_shown_from("Default/stage0/block6-ResidualBlock/Add-op0", MS)  # a path in no dump
    assert not is_shown_from("…t/mixer/quant/Floor-op0", DEEP)
    assert is_shown_from("Functio…", "Functional.conv2d.3.forward")  # a real cut (if a poor one) is one
    assert not is_shown_from("Add-op0…Default", MS)  # the pieces out of order
    assert not is_shown_from("a…b…c", "a-b-c")


def test_a_word_of_running_text_keeps_its_punctuation_and_spaces():
    shown = cut_word(f"({DEEP}), ", 30)
    assert shown.startswith("(") and shown.endswith("), ") and len(shown.rstrip()) == 30
    assert is_shown_from(shown.rstrip()[1:-2], DEEP)
    assert cut_word("(Add-op0) ", 30) == "(Add-op0) "


def test_the_bisection_pane_wrap_cuts_a_long_name_by_the_rule_never_folds_it():
    from dumptui.present.panel import plain, wrap

    lines = [plain(x) for x in wrap((("why: ", "bold"), (f"error comes in from ({DEEP}) through it", "")), 50)]
    assert all(len(line) <= 50 for line in lines), lines
    words = [w.strip("()") for line in lines for w in line.split() if "/" in w]
    assert len(words) == 1 and is_shown_from(words[0], DEEP) and words[0].endswith("/Floor-op0"), lines


def test_running_text_keeps_its_words_and_cuts_only_names_longer_than_a_line():
    text = f"error comes in from {DEEP} through input.0"
    assert cut_long_words(text, 200) == text
    shown = cut_long_words(text, 40)
    words = shown.split()
    assert words[:3] == ["error", "comes", "in"] and words[-2:] == ["through", "input.0"]
    assert all(len(w) <= 40 for w in words) and is_shown_from(words[4], DEEP)
