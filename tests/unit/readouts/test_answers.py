"""Known-answer tests of the VSI answer parsers (readouts/answers.py; issue 14).

Each row is a realistic short VQA answer with the parse worked out by hand from the rules in
the parser docstrings; the trailing comment is the derivation.  The YES_NO and LETTERS tables
are the ``seed`` parser mode (the literal reading over the raw output, as the parsers were
before the answer-extraction step); the ``default`` / ``strict`` readings are
tests/unit/readouts/test_answer_reading.py.  Pure functions, no fixtures:
these rows are also what mutation testing (scripts/mutation_report.py) runs against
answers.py.
"""

import pytest

from perceptbench.readouts.answers import parse_confidence, parse_letter, parse_yes_no

ABC = ("A", "B", "C")
SAL = ("Orientation", "Color", "Size")  # SalBench's three option texts, letters A-C
N = None


def _triple(pr):
    return pr.response, pr.rule, pr.ambiguous

YES_NO = [
    # text, response, rule, ambiguous
    ("Yes", "yes", "first_yes_no", False),  # the whole answer is the word
    ("NO.", "no", "first_yes_no", False),  # case-insensitive, punctuation after
    ("**No**, there is no dog.", "no", "first_yes_no", False),  # "no" twice: one distinct answer, not ambiguous
    ("No... wait, yes.", "no", "first_yes_no", True),  # both words: the first counts, flagged
    ("yes/no", "yes", "first_yes_no", True),  # '/' is not a letter: two standalone words
    ("Yesterday I saw one.", N, "none", False),  # "Yes" inside "Yesterday" is no word
    ("Nobody knows.", N, "none", False),  # "No" followed by a letter
    ("I know.", N, "none", False),  # "no" preceded by a letter ("kno")
    ("", N, "none", False),  # empty -> null
    (None, N, "none", False),  # None -> null
]


@pytest.mark.parametrize("text,response,rule,ambiguous", YES_NO)
def test_parse_yes_no_seed_mode_known_answers(text, response, rule, ambiguous):
    assert _triple(parse_yes_no(text, mode="seed")) == (response, rule, ambiguous)


LETTERS = [
    # text, response, rule, ambiguous  (letters A-C, options SAL)
    ("B", "B", "leading_letter", False),  # the letter alone
    ("  (C) Size", "C", "leading_letter", False),  # bracketed, leading space stripped
    ("[A]", "A", "leading_letter", False),  # square brackets
    ("**B**. The target differs in colour.", "B", "leading_letter", False),  # markdown bold before the letter
    ('"C"', "C", "leading_letter", False),  # quoted
    ("A. Orientation", "A", "leading_letter", False),  # letter + full stop
    ("A) orientation", "A", "leading_letter", False),  # closing bracket makes it a letter
    ("A is correct.", "A", "leading_letter", False),  # "is" makes A the subject: the letter
    ("A or B, hard to say.", "A", "leading_letter", False),  # "or" joins letters: the first leading one counts
    ("A", "A", "leading_letter", False),  # "A" alone is the letter, not an article
    ("A\nThe target is tilted.", "A", "leading_letter", False),  # the next word is on another line: the letter
    ("A\tcat", N, "none", False),  # a tab separates an article from its noun like a space
    ("D", N, "none", False),  # not in the letter set, no marker, no option text
    ("Beside the target ...", N, "none", False),  # "B" followed by a letter is a word
    ("a", N, "none", False),  # rule 1 is case-sensitive; no marker
    # --- the defect of issue 14: an article is not an option letter -----------------------------
    ("A cat is on the mat.", N, "none", False),  # "A" + "cat": the article; no marker, no option text
    ("A small red square stands out.", N, "none", False),  # article + adjective: nothing else names an option
    ("A different size.", "C", "option_text", False),  # article; "size" is option C's text (rule 3)
    ("The answer is a.", "A", "marked_letter", False),  # marked letter alone (case-insensitive after a marker)
    ("The answer is a color difference.", "B", "option_text", False),  # article after the marker; "color" = B
    ("I think it is B.", N, "none", False),  # rule 1 does not look past the pronoun; no marker
    # --- rule 2: marked letters ----------------------------------------------------------------
    ("The answer is b", "B", "marked_letter", False),  # marker, lower case read as upper
    ("My choice: (C)", "C", "marked_letter", False),  # "choice" marker, colon and bracket
    ("Looking again, option B.", "B", "marked_letter", False),  # "option" marker mid-text
    ("I pick answer - A", "A", "marked_letter", False),  # hyphen after the marker
    ("Option A, or maybe option C.", "A", "marked_letter", True),  # two marked letters: first counts, flagged
    ("Option b, i.e. option B.", "B", "marked_letter", False),  # same letter in two cases: one distinct answer
    # --- rule 3: option text -------------------------------------------------------------------
    ("Color", "B", "option_text", False),  # equals option B's text
    ("  *size!*  ", "C", "option_text", False),  # case and surrounding punctuation ignored
    ("It differs in   orientation from the others.", "A", "option_text", False),  # one option named
    ("orientation or color", N, "none", True),  # two options named: null, flagged
    ("Colorful.", N, "none", False),  # "Color" inside a longer word is not the option
    ("None", N, "none", False),  # the word "None" is no option text
    ("None of these.", N, "none", False),  # nor does it contain one
    ("blah", N, "none", False),  # nothing
    ("", N, "none", False),  # empty
    (None, N, "none", False),  # None
]


@pytest.mark.parametrize("text,response,rule,ambiguous", LETTERS)
def test_parse_letter_seed_mode_known_answers(text, response, rule, ambiguous):
    assert _triple(parse_letter(text, ABC, SAL, mode="seed")) == (response, rule, ambiguous)


def test_parse_letter_pronoun_i_and_default_letters():
    # nine options A..I: a leading "I" + verb is the pronoun, "I." is the letter
    nine = tuple("ABCDEFGHI")
    assert parse_letter("I think it is B.", nine, mode="seed").response is None  # pronoun; no marker
    assert _triple(parse_letter("I think it is B.", nine)) == ("B", "standalone_letter", False)  # B, not the pronoun
    assert _triple(parse_letter("I.", nine)) == ("I", "leading_letter", False)  # full stop: the letter
    assert _triple(parse_letter("I is the odd one.", nine)) == ("I", "leading_letter", False)  # subject of "is"
    # default letters A-D, no option texts: rule 3 cannot fire
    assert _triple(parse_letter("D")) == ("D", "leading_letter", False)
    assert _triple(parse_letter("Color")) == (None, "none", False)
    # lower-case letter sets keep their case after a marker
    assert _triple(parse_letter("answer: b", ("a", "b"), mode="seed")) == ("b", "marked_letter", False)
    assert _triple(parse_letter("answer: b", ("a", "b"))) == ("b", "leading_letter", False)  # extracted first
    # a blank option text is never "contained" in an answer (an empty pattern would match
    # between " " and "-")
    assert _triple(parse_letter("Red - clearly.", ("A", "B"), ("red", ""))) == ("A", "option_text", False)
    # runs of whitespace are one space on both sides
    assert _triple(parse_letter("Red   circle", ("A", "B"), ("red circle", "blue square"))) == ("A", "option_text", False)
    # only the listed punctuation is stripped: "Big red." equals option B, so the contained
    # "red" (option A) does not make it ambiguous
    assert _triple(parse_letter("Big red.", ("A", "B"), ("red", "big red"))) == ("B", "option_text", False)
    # an option text that is a capital X (shape options X / O) is compared, not stripped
    assert _triple(parse_letter("X.", ("A", "B"), ("X", "O"))) == ("A", "option_text", False)
    # comparison is by str.lower(): "ß" and "ss" are different letters, as are their cases
    assert _triple(parse_letter("STRASSE", ("A", "B"), ("straße", "weg"))) == (None, "none", False)
    # an option text equal to the whole answer wins even if another option's text is inside it
    assert _triple(parse_letter("big red", ("A", "B"), ("red", "big red"))) == ("B", "option_text", False)


CONFIDENCE = [
    ("85", 85.0),  # the first integer
    ("I'd say 70%.", 70.0),  # integer before a percent sign
    ("100", 100.0),  # the upper bound itself is allowed
    ("101", N),  # one above the bound: dropped
    ("0", 0.0),  # the lower bound
    ("Confidence: 90 (out of 100)", 90.0),  # the first of two integers
    ("0.9", N),  # a decimal's integer part is not taken
    ("About 7.5 out of 10", N),  # the first number is a decimal: dropped, later integers not read
    ("v2.0 says 80", N),  # "2.0" is the first number and a decimal
    ("very sure", N),  # no integer
    (None, N),  # None
]


@pytest.mark.parametrize("text,want", CONFIDENCE)
def test_parse_confidence_known_answers(text, want):
    got = parse_confidence(text)
    assert got == want and (got is None or type(got) is float)
