"""Table-driven tests of the rule parser (seed 000 appendix B and D.4).

Each row: (answer text, option set, expected response in default mode, expected
response in strict mode, expected ambiguous flag).  The rows are realistic answer shapes
of open and closed VLMs to the four verbatim prompts of appendix B.
"""

import pytest

from perceptbench.readouts.parse import ParseResult, parse_choice

OOO = (1, 2, 3)  # mark-color and object odd-one-out
COUNT = tuple(range(1, 21))  # series counting
SILH = (
    "airplane", "bear", "bicycle", "bird", "boat", "bottle", "car", "cat", "chair",
    "clock", "dog", "elephant", "keyboard", "knife", "oven", "truck",
)

N = None
CASES = [
    # --- odd-one-out, digits --------------------------------------------------------
    ("The odd one out is 2.", OOO, 2, 2, False),
    ("odd one out is 3", OOO, 3, 3, False),  # "one" in "odd one out" is not 1
    ("The odd-one-out is mark 1.", OOO, 1, 1, False),
    ("**3**", OOO, 3, 3, False),
    ("Option (1)", OOO, 1, 1, False),
    ("#2", OOO, 2, 2, False),
    ("3", OOO, 3, 3, False),
    ("2.", OOO, 2, 2, False),
    ("Answer: 1", OOO, 1, 1, False),
    ("The answer is **2** because it is blue while the others are orange.", OOO, 2, 2, False),
    ("1 or 2", OOO, 1, N, True),
    ("not 1, it's 3", OOO, 1, N, True),
    ("Answer 1, 2, or 3.", OOO, 1, N, True),  # echoes the prompt
    ("Mark 3 is the odd one out; marks 1 and 2 are both shades of green.", OOO, 3, N, True),
    ("The other two are similar, so 1 is the odd one out.", OOO, 1, 1, False),
    ("The other 2 marks are red; 3 differs.", OOO, 3, 3, False),
    ("4", OOO, N, N, False),  # out of the option set
    ("Mark 7 is odd, I mean 2", OOO, 2, 2, False),  # first *in-set* integer wins
    ("2.5", OOO, N, N, False),  # a decimal is not an integer
    # --- odd-one-out, number words ---------------------------------------------------
    ("One.", OOO, 1, 1, False),
    ("three", OOO, 3, 3, False),
    ("THREE", OOO, 3, 3, False),
    ("I think it's number two", OOO, 2, 2, False),
    ("The blue one is the odd one out: two.", OOO, 2, 2, False),
    ("The one on the left is different, number three.", OOO, 3, 3, False),
    ("Someone might say none of them.", OOO, N, N, False),
    ("Anyone can see it.", OOO, N, N, False),
    ("One of them is different: 2", OOO, 2, 2, False),
    ("Which one? Number 3.", OOO, 3, 3, False),
    ("two or three", OOO, 2, N, True),
    # --- Unicode digits ---------------------------------------------------------------
    ("２", OOO, 2, 2, False),  # full-width
    ("٣", OOO, 3, 3, False),  # Arabic-Indic
    ("答案是３。", OOO, 3, 3, False),
    ("उत्तर २ है", OOO, 2, 2, False),  # Devanagari two
    ("①", OOO, 1, 1, False),  # circled digit
    # --- nulls ------------------------------------------------------------------------
    ("", OOO, N, N, False),
    (None, OOO, N, N, False),
    ("I can't help with that.", OOO, N, N, False),
    ("I'm sorry, but I cannot determine which mark is different.", OOO, N, N, False),
    ("   \n\t ", OOO, N, N, False),
    ("The odd one out is the blue one.", OOO, N, N, False),
    # --- series counting --------------------------------------------------------------
    ("There are 12 series.", COUNT, 12, 12, False),
    ("12", COUNT, 12, 12, False),
    ("I count seven distinct colors.", COUNT, 7, 7, False),
    ("Twenty.", COUNT, 20, 20, False),
    ("There are eleven series.", COUNT, 11, 11, False),
    ("seventeen", COUNT, 17, 17, False),  # not "seven"
    ("There are 25 series, no wait, about 8 or 9.", COUNT, 8, N, True),
    ("There is only one series.", COUNT, 1, 1, False),
    ("0", COUNT, N, N, False),
    ("The scatterplot shows 6 color series (groups of same-colored points).", COUNT, 6, 6, False),
    ("There are ten groups; I see 10.", COUNT, 10, 10, False),  # same option twice
    ("fourteen or fifteen", COUNT, 14, N, True),
    # --- silhouette labels ------------------------------------------------------------
    ("car", SILH, "car", "car", False),
    ("Car.", SILH, "car", "car", False),
    ("This is a cardigan.", SILH, N, N, False),  # "car" is not in "cardigan"
    ("It looks like a scar.", SILH, N, N, False),
    ("cars", SILH, "car", "car", False),  # simple plural
    ("Two knives.", SILH, "knife", "knife", False),
    ("The black silhouette shows an **Airplane**.", SILH, "airplane", "airplane", False),
    ("either a cat or a dog", SILH, "cat", N, True),
    ("It is a dog, not a cat.", SILH, "dog", N, True),
    ("I can't tell what object this is.", SILH, N, N, False),
    ("The object shown is an elephant.", SILH, "elephant", "elephant", False),
    ("A bird (possibly a plane).", SILH, "bird", "bird", False),
]


def test_table_has_at_least_40_cases():
    assert len(CASES) >= 40


@pytest.mark.parametrize("text,options,default,strict,ambiguous", CASES)
def test_parse_table(text, options, default, strict, ambiguous):
    d = parse_choice(text, options)
    s = parse_choice(text, options, mode="strict")
    assert isinstance(d, ParseResult)
    assert d.response == default, (text, d)
    assert s.response == strict, (text, s)
    assert d.ambiguous is ambiguous and s.ambiguous is ambiguous, (text, d, s)
    if default is None:
        assert d.rule == "none"
    if ambiguous:
        assert s.rule == "ambiguous" and len(d.mentions) >= 2


def test_rule_names():
    assert parse_choice("2", OOO).rule == "first_integer"
    assert parse_choice("two", OOO).rule == "number_word"
    assert parse_choice("a bear", SILH).rule == "first_label"
    assert parse_choice("nothing", SILH).rule == "none"


def test_returns_caller_option_objects_and_types():
    r = parse_choice("number 2", (1, 2, 3))
    assert r.response == 2 and type(r.response) is int
    r = parse_choice("fire trucks everywhere", ("truck", "fire truck"))
    assert r.response == "fire truck" and not r.ambiguous  # longest overlapping option


def test_mentions_in_order():
    assert parse_choice("3, no, 1, no, 3", OOO).mentions == (3, 1)


def test_bad_mode_and_empty_options_raise():
    with pytest.raises(ValueError):
        parse_choice("1", OOO, mode="lenient")
    with pytest.raises(ValueError):
        parse_choice("1", ())


@pytest.mark.parametrize(
    "junk",
    ["\x00\x01", "🙂" * 50, "9" * 5000, "one " * 2000, "\u0663\u0662\u0661", "<think></think>"],
)
def test_never_raises_on_junk(junk):
    for mode in ("default", "strict"):
        r = parse_choice(junk, OOO, mode=mode)
        assert r.response in (None, 1, 2, 3)
        r = parse_choice(junk, SILH, mode=mode)
        assert r.response is None or r.response in SILH
