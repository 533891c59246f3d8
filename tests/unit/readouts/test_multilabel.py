"""Table-driven tests for the SalBench multi-label answer parser."""

from __future__ import annotations

import pytest

from perceptbench.readouts.result import ParseResult
from perceptbench.readouts.multilabel import (
    SALBENCH_LABELS,
    SYNTHETIC_LABELS,
    parse_features,
)

NAT = SALBENCH_LABELS
SYN = SYNTHETIC_LABELS

# (text, label_set, expected labels or None)
CASES = [
    # shapes of real VLM answers found in review: negation scope, commentary, object words
    ("same shape and color but a different orientation", SYN, ["Orientation"]),
    ("It is not different in size or orientation; it differs in color.", SYN, ["Color"]),
    ("The L-shaped object is rotated", SYN, ["Orientation"]),
    ("Answer: Color\nExplanation: the object has the same size and orientation", SYN, ["Color"]),
    ("Focus on the red box: the object is larger", NAT, ["Size"]),
    ("Size: no\nColor: yes", SYN, ["Color"]),
    ("The object located at the top differs in color", NAT, ["Color"]),
    ("neither size nor shape, only color", NAT, ["Color"]),
    ("Color", NAT, {"Color"}),
    ("Color, Shape", NAT, {"Color", "Shape"}),
    ("color,shape,pattern", NAT, {"Color", "Shape", "Pattern"}),
    ("Color and Size", NAT, {"Color", "Size"}),
    ("Color & Size", NAT, {"Color", "Size"}),
    ("Color\nShape\nFocus", NAT, {"Color", "Shape", "Focus"}),
    ("- Color\n- Pattern", NAT, {"Color", "Pattern"}),
    ("* Orientation\n* Location", NAT, {"Orientation", "Location"}),
    ("• Size", NAT, {"Size"}),
    ("1. Color\n2. Shape", NAT, {"Color", "Shape"}),
    ("1) Focus 2) Size", NAT, {"Focus", "Size"}),
    ("COLOR, SIZE", NAT, {"Color", "Size"}),
    ("colours", NAT, {"Color"}),
    ("Colour", NAT, {"Color"}),
    ("sizes and shapes", NAT, {"Size", "Shape"}),
    ("Textures", NAT, {"Pattern"}),
    ("texture", NAT, {"Pattern"}),
    ("rotation", NAT, {"Orientation"}),
    ("The angle is different", NAT, {"Orientation"}),
    ("it is tilted", NAT, {"Orientation"}),
    ("blur", NAT, {"Focus"}),
    ("The target is out of focus", NAT, {"Focus"}),
    ("sharpness", NAT, {"Focus"}),
    ("depth of field", NAT, {"Focus"}),
    ("position", NAT, {"Location"}),
    ("Placement, hue", NAT, {"Location", "Color"}),
    ("scale", NAT, {"Size"}),
    ("It is larger than the others", NAT, {"Size"}),
    ("form and contour", NAT, {"Shape"}),
    ("[Color, Orientation]", NAT, {"Color", "Orientation"}),
    ("**Color**, **Size**", NAT, {"Color", "Size"}),
    ("Answer: Color.", NAT, {"Color"}),
    ("The special object differs in color and pattern.", NAT, {"Color", "Pattern"}),
    ("Color, not size", NAT, {"Color"}),
    ("It isn't the size; it is the colour", NAT, {"Color"}),
    ("not only the color but also the shape", NAT, {"Color", "Shape"}),
    ("Color, brightness", NAT, {"Color"}),
    ("Brightness", NAT, None),
    ("I cannot tell.", NAT, None),
    ("", NAT, None),
    ("   ", NAT, None),
    ("none", NAT, set()),  # "no difference" is an answer, the empty set (issue 7 item 1)
    # synthetic split: another of the seven breaks exact match (kept, not dropped)
    ("Shape", SYN, {"Shape"}),
    ("Color, Shape", SYN, {"Color", "Shape"}),
    ("Orientation", SYN, {"Orientation"}),
    ("Focus and size", SYN, {"Focus", "Size"}),
]


# Issue 7 item 1: answers that think aloud, mark or correct their answer, or name the whole
# set.  (text, label_set, seed-mode labels, default-mode labels); None = null.  Every row is
# parsed differently by the old parser, checked against the seed mode (no extraction, no
# whole-set phrases) and, for the "Answer:"-line rows, stated in the comment.
NEW_CASES = [
    # reasoning blocks are not the answer
    ("<think>Maybe the size, maybe the colour.</think> Color", SYN, {"Size", "Color"}, {"Color"}),
    ("<thinking>orientation looks the same, size too</thinking>\nColor", SYN,
     {"Orientation", "Color", "Size"}, {"Color"}),
    ("◁think▷shape? size?◁/think▷Orientation", NAT, {"Shape", "Size", "Orientation"}, {"Orientation"}),
    ("[THINK]color[/THINK]Size", SYN, {"Color", "Size"}, {"Size"}),
    ("the target is bigger... </think> Color", SYN, {"Size", "Color"}, {"Color"}),  # template-opened
    # an unclosed block (token budget): null, never a label from inside it
    ("<think>The target seems larger, maybe its color", SYN, {"Size", "Color"}, None),
    ("<reasoning>orientation", NAT, {"Orientation"}, None),
    # explicit answer markers; the last one stands (old code took the first "Answer:" line)
    ("Answer: Color\nHmm, looking again.\nAnswer: Size", SYN, {"Color", "Size"}, {"Size"}),
    ("Answer: Size\nFinal answer: Color, Orientation", SYN, {"Size", "Color", "Orientation"},
     {"Color", "Orientation"}),
    ("The shape is odd. **The answer is** color", NAT, {"Shape", "Color"}, {"Color"}),
    ("The tilt caught my eye, but the answer is color.", SYN, {"Orientation", "Color"}, {"Color"}),
    # whole-set answers are answers, not nulls
    ("All of them", SYN, None, {"Orientation", "Color", "Size"}),
    ("all three", SYN, None, {"Orientation", "Color", "Size"}),
    ("It differs in all three features.", SYN, None, {"Orientation", "Color", "Size"}),
    ("All.", SYN, None, {"Orientation", "Color", "Size"}),
    ("All of the above", NAT, None, set(SALBENCH_LABELS)),
    ("Answer: all of them", SYN, None, {"Orientation", "Color", "Size"}),
    ("All of them except size", SYN, {"Size"}, {"Orientation", "Color"}),
    ("None", SYN, None, set()),
    ("No difference.", SYN, None, set()),
    ("There is no difference.", NAT, None, set()),
    ("Nothing", SYN, None, set()),
    ("They are all identical.", SYN, None, set()),
    ("<think>color? size?</think>None of them.", SYN, {"Color", "Size"}, set()),
]

# Neighbours the new rules must leave alone.
GUARD_CASES = [
    ("all three", NAT, None, None),  # "three" is not the natural label set (seven)
    ("All of them look alike except the one in the corner.", SYN, None, None),  # a description
    ("Color, and none of the rest", SYN, {"Color"}, {"Color"}),  # a label found: no whole-set reading
    ("Color, all of it", SYN, {"Color"}, {"Color"}),
    ("No idea", NAT, None, None),
]


@pytest.mark.parametrize("text,label_set,seed,default", NEW_CASES + GUARD_CASES)
def test_parse_table_modes(text, label_set, seed, default):
    d = parse_features(text, label_set)
    s = parse_features(text, label_set, mode="seed")
    assert (None if d.labels is None else set(d.labels)) == default, (text, d)
    assert (None if s.labels is None else set(s.labels)) == seed, (text, s)
    assert parse_features(text, label_set, mode="strict").labels == d.labels


@pytest.mark.parametrize("text,label_set,seed,default", NEW_CASES)
def test_new_cases_differ_from_the_seed_mode(text, label_set, seed, default):
    assert seed != default


def test_unclosed_reasoning_and_markers_in_meta():
    r = parse_features("<think>The target seems larger", SYN)
    assert r.labels is None and r.rule == "none" and r.meta["null_reason"] == "unclosed_reasoning"
    r = parse_features("Answer: Color\nAnswer: Size", SYN)
    assert r.meta["multiple_answer_markers"] and r.meta["n_answer_markers"] == 2
    assert parse_features("All of them", SYN).rule == "all_labels"
    assert parse_features("none", SYN).rule == "no_difference"
    assert parse_features("all three", NAT).meta["null_reason"] == "all_count_mismatch"
    with pytest.raises(ValueError, match="mode"):
        parse_features("Color", SYN, mode="lenient")


@pytest.mark.parametrize("text,label_set,expected", CASES)
def test_parse_table(text, label_set, expected):
    res = parse_features(text, label_set)
    assert isinstance(res, ParseResult)
    if expected is None:
        assert res.labels is None and res.meta["null_reason"]
    else:
        assert res.labels == frozenset(expected)


def test_at_least_thirty_cases():
    assert len(CASES) >= 30


def test_out_of_set_reported_for_synthetic():
    res = parse_features("Color, Shape, Pattern", SYN)
    assert res.labels == frozenset({"Color", "Shape", "Pattern"})
    assert res.out_of_set == frozenset({"Shape", "Pattern"})
    assert parse_features("Color, Shape", NAT).out_of_set == frozenset()


def test_unknown_items_are_reported_and_ignored():
    res = parse_features("Color, brightness, luminance", NAT)
    assert res.labels == frozenset({"Color"})
    assert res.unknown == ("brightness", "luminance")
    assert parse_features("no idea", NAT).unknown == ("no idea",)


def test_none_text_is_null():
    assert parse_features(None, NAT).labels is None


def test_label_set_validation_names_bad_label():
    with pytest.raises(ValueError, match="'Texture'"):
        parse_features("color", ["Color", "Texture"])
    with pytest.raises(ValueError, match="empty"):
        parse_features("color", [])
    with pytest.raises(ValueError, match="string"):
        parse_features("color", "Color")
    # case-insensitive label set
    assert parse_features("size", ["color", "SIZE"]).labels == frozenset({"Size"})


def test_non_string_text_raises():
    with pytest.raises(TypeError, match="42"):
        parse_features(42, NAT)  # type: ignore[arg-type]


def test_result_is_frozen():
    res = parse_features("Color", NAT)
    with pytest.raises(Exception):
        res.labels = None  # type: ignore[misc]
