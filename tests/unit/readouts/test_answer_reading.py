"""How yes/no and option-letter answers are read (issue 19 item 4): the answer-extraction
step, POPE's yes/no rule, VLMEvalKit-style letter matching and the parser modes.

Each row is (text, default, strict, ambiguous) with the reading worked out by hand from the
rules in :mod:`perceptbench.readouts.answers`; the trailing comment is the derivation.
``*_NEW`` rows are readings that changed in issue 19 (each one fails on the parsers before
it); ``*_GUARD`` rows are neighbours whose reading did not change and must not (an article,
a pronoun, a sentence that names no answer).
"""

import pytest

from perceptbench.readouts.answers import parse_letter, parse_yes_no

N = None

YES_NO_NEW = [
    ("The image does not contain a dog.", "no", "no", False),  # POPE: "not" is a word -> no
    ("There isn't a dog in the image.", "no", "no", False),  # "n't" is "not" (POPE's split misses it)
    ("It is not there.", "no", "no", False),  # negative sentence, no word "no"
    ("Not sure.", "no", "no", False),  # POPE reads any "not" as no
    ("yes or no", "no", N, True),  # names both answers: ambiguous, POPE's no, never a yes
    ("I can't say yes or no.", "no", N, True),  # both named, nothing chosen
    ("Yes or no? Hard to tell.", "no", N, True),  # first sentence names both
    ("Yes, there is no dog.", "no", N, True),  # says yes and no: POPE's no, strict null
    ("yes/no", "no", N, True),  # '/' joins the two answers
    ("No... wait, yes.", "no", "no", False),  # first sentence ("No..") only, as POPE keeps it
    ("<think>No, wait.</think> Yes.", "yes", "yes", False),  # reasoning block removed
    ("<think>Is there a dog? yes", N, N, False),  # block never closed: null, never a yes
    ("Answer: no\nAnswer: yes", "yes", "yes", False),  # the last answer marker stands
]
YES_NO_GUARD = [
    ("Yes.", "yes", "yes", False),  # the word yes
    ("No.", "no", "no", False),  # the word no
    ("**No**, there is no dog.", "no", "no", False),  # markdown; "no" twice is one answer
    ("Yes. It is not red.", "yes", "yes", False),  # the second sentence is not read (POPE)
    ("Answer: \\boxed{yes}", "yes", "yes", False),  # boxed answer
    ("There is a dog.", N, N, False),  # neither word: null (POPE would say yes)
    ("Yesterday I saw one.", N, N, False),  # "Yes" inside a word
    ("I know.", N, N, False),  # "no" inside "know"
    ("Nobody knows.", N, N, False),  # "No" inside "Nobody"
    ("", N, N, False),  # empty
]


@pytest.mark.parametrize("text,default,strict,ambiguous", YES_NO_NEW + YES_NO_GUARD)
def test_yes_no_default_reading(text, default, strict, ambiguous):
    pr = parse_yes_no(text)
    assert (pr.response, pr.ambiguous) == (default, ambiguous)
    if default is None:
        assert pr.meta["null_reason"]


@pytest.mark.parametrize("text,default,strict,ambiguous", YES_NO_NEW + YES_NO_GUARD)
def test_yes_no_strict_reading(text, default, strict, ambiguous):
    pr = parse_yes_no(text, mode="strict")
    assert (pr.response, pr.ambiguous) == (strict, ambiguous)
    if ambiguous:
        assert pr.rule == "ambiguous" and pr.meta["null_reason"] == "ambiguous"


ABCD = ("A", "B", "C", "D")

LETTER_NEW = [
    ("b", "B", "B", False),  # lower case alone
    ("b.", "B", "B", False),  # lower case + full stop
    ("(c)", "C", "C", False),  # lower case in parentheses
    ("I'd pick B", "B", "B", False),  # choice verb as a marker
    ("I would choose C.", "C", "C", False),  # choice verb
    ("I'll go with (b).", "B", "B", False),  # "go with", bracketed lower case
    ("I pick **C**", "C", "C", False),  # markdown around the letter after a marker
    ("Answer: **D**", "D", "D", False),  # markdown inside an answer marker
    ("**Answer:** (b)", "B", "B", False),  # bold marker, bracketed lower case
    ("It is not A, it is B.", "B", "B", False),  # negated letter does not count; B standalone
    ("I think it is B.", "B", "B", False),  # "I think" is the pronoun; B standalone
    ("<think>A seems right... no.</think> C", "C", "C", False),  # reasoning block removed
    ("Answer: B\nAnswer: C", "C", "C", False),  # the last answer marker stands
    ("Between B and C I cannot decide.", N, N, True),  # two standalone letters: null, flagged
    ("a", "A", "A", False),  # lower-case a alone is the letter
]
LETTER_GUARD = [
    ("(C)", "C", "C", False),  # parentheses
    ("**(B)**", "B", "B", False),  # markdown around a bracketed letter
    ("My answer is b.", "B", "B", False),  # "answer is" marker, lower case
    ("A cat is on the mat.", N, N, False),  # the article A + a word is a word
    ("a cat is on the mat.", N, N, False),  # the article a
    ("I think so.", N, N, False),  # the pronoun I is no letter (and not in A-D)
    ("I'd pick a red one.", N, N, False),  # article after a choice verb
    ("The answer is a red circle.", N, N, False),  # article after an answer marker
    ("Option A, or maybe option C.", "A", N, True),  # two marked letters: first kept, strict null
    ("A is correct.", "A", "A", False),  # subject word: the letter
    ("E", N, N, False),  # not in the letter set
]


@pytest.mark.parametrize("text,default,strict,ambiguous", LETTER_NEW + LETTER_GUARD)
def test_letter_default_reading(text, default, strict, ambiguous):
    pr = parse_letter(text, ABCD)
    assert (pr.response, pr.ambiguous) == (default, ambiguous)


@pytest.mark.parametrize("text,default,strict,ambiguous", LETTER_NEW + LETTER_GUARD)
def test_letter_strict_reading(text, default, strict, ambiguous):
    pr = parse_letter(text, ABCD, mode="strict")
    assert (pr.response, pr.ambiguous) == (strict, ambiguous)


def test_letter_reading_keeps_option_texts():
    # rule 4 after extraction: the marker's content is compared with the option texts
    sal = ("Orientation", "Color", "Size")
    assert parse_letter("Final answer: color.", ("A", "B", "C"), sal).response == "B"
    assert parse_letter("<think>size?</think> Orientation", ("A", "B", "C"), sal).response == "A"


def test_seed_mode_reads_the_raw_output():
    # seed: the literal reading over the raw output (no extraction step, no extraction meta)
    yn = parse_yes_no("<think>No, wait.</think> Yes.", mode="seed")
    assert yn.response == "no" and yn.ambiguous and "reasoning" not in yn.meta
    assert parse_letter("The answer is B because no, C", ABCD, mode="seed").response == "B"
    assert parse_letter("b", ABCD, mode="seed").response is None  # upper-case leading letters only
    assert parse_yes_no("The image does not contain a dog.", mode="seed").response is None


def test_unknown_mode_is_a_value_error():
    with pytest.raises(ValueError, match="mode"):
        parse_yes_no("yes", mode="lenient")
    with pytest.raises(ValueError, match="mode"):
        parse_letter("B", mode="lenient")


# Every field of the parse result, as records keep it (run_meta.parse: rule, mentions, ambiguous,
# null_reason) and scoring counts it: (text, mode) -> (response, ambiguous, rule, mentions,
# null_reason), each worked out from the rules of parse_yes_no / parse_letter.
YES_NO_RESULTS = [
    (("Yes.", "default"), ("yes", False, "yes_word", ("yes",), None)),  # rule 3
    (("No.", "default"), ("no", False, "negation", ("no",), None)),  # rule 2
    (("no no", "default"), ("no", False, "negation", ("no",), None)),  # one answer named twice
    (("Yes, no dog.", "default"), ("no", True, "negation", ("yes", "no"), None)),  # rule 5: POPE's no
    (("Yes, no dog.", "strict"), (None, True, "ambiguous", ("yes", "no"), "ambiguous")),  # rule 5, strict
    (("There is a dog.", "strict"), (None, False, "none", (), "no_option")),  # rule 4
    (("Is it? yes", "default"), (None, False, "none", (), "no_option")),  # rule 1: "Is it?" only
    (("<think>x", "default"), (None, False, "none", (), "unclosed_reasoning")),  # extraction: no answer
    ((None, "strict"), (None, False, "none", (), "empty_output")),
    (("Is it? yes", "seed"), ("yes", False, "first_yes_no", ("yes",), None)),  # seed: first word anywhere
    (("yes or no", "seed"), ("yes", True, "first_yes_no", ("yes", "no"), None)),
    (("There is a dog.", "seed"), (None, False, "none", (), "no_option")),
]
OPTIONS = ("red", "green", "blue", "pink")
LETTER_RESULTS = [
    (("(c)", "default"), ("C", False, "leading_letter", ("C",), None)),  # rule 1, lower case
    (("I'd pick b", "default"), ("B", False, "marked_letter", ("B",), None)),  # rule 2, choice verb
    (("option A or option B", "default"), ("A", True, "marked_letter", ("A", "B"), None)),  # rule 2, first kept
    (("option A or option B", "strict"), (None, True, "ambiguous", ("A", "B"), "ambiguous")),
    (("It is B.", "default"), ("B", False, "standalone_letter", ("B",), None)),  # rule 3
    (("It is B or C.", "default"), (None, True, "none", ("B", "C"), "no_option")),  # rule 3: two letters
    (("It is B or C.", "strict"), (None, True, "ambiguous", ("B", "C"), "ambiguous")),
    (("green", "default"), ("B", False, "option_text", ("B",), None)),  # rule 4
    (("A cat is on the mat.", "default"), (None, False, "none", (), "no_option")),  # the article
    (("", "default"), (None, False, "none", (), "empty_output")),
    (("(c)", "seed"), (None, False, "none", (), "no_option")),  # seed: upper-case leading letters only
    (("The answer is B.", "seed"), ("B", False, "marked_letter", ("B",), None)),  # seed rule 2 on the raw text
    (("I'd pick **c**", "default"), ("C", False, "marked_letter", ("C",), None)),  # rule 2 through markdown
    (("d then nothing", "default"), ("D", False, "leading_letter", ("D",), None)),  # only a/i are words
    (("I'd pick b because it is red", "default"), ("B", False, "marked_letter", ("B",), None)),  # b is no word
    (("The answer is a red circle.", "default"), ("A", False, "option_text", ("A",), None)),  # "a": the article; "red": A
    (("The answer is B or C.", "default"), (None, True, "none", ("B", "C"), "no_option")),  # offered, not chosen
    (("The answer is B or C.", "strict"), (None, True, "ambiguous", ("B", "C"), "ambiguous")),
    (("The answer is B or C.", "seed"), ("B", False, "marked_letter", ("B",), None)),  # seed: the literal rule
    (("b/c", "default"), (None, True, "none", ("B", "C"), "no_option")),  # rule 1: any joiner, either case
    (("B, C or D", "default"), (None, True, "none", ("B", "C", "D"), "no_option")),  # a list of three
    (("B or B", "default"), ("B", False, "leading_letter", ("B",), None)),  # one letter named twice
    (("B, a red circle", "default"), ("B", False, "leading_letter", ("B",), None)),  # the article is no letter
    (("B, because it is red", "default"), ("B", False, "leading_letter", ("B",), None)),  # a word after the comma
    (("I'd pick B or (C)", "default"), ("B", True, "marked_letter", ("B", "C"), None)),  # rule 2 counts both
    (("I'd pick B or (C)", "strict"), (None, True, "ambiguous", ("B", "C"), "ambiguous")),
    (("Answer: **B** and **C**", "default"), (None, True, "none", ("B", "C"), "no_option")),  # through markdown
    (("e.g. the green one", "default"), ("B", False, "option_text", ("B",), None)),  # no E: an abbreviation
    (("not A, it is B", "default"), ("B", False, "standalone_letter", ("B",), None)),  # rule 3: negated A not counted
    (("not B, it is C", "default"), ("C", False, "standalone_letter", ("C",), None)),  # negation read before the letter
    (("I think it is green.", "default"), ("B", False, "option_text", ("B",), None)),  # rule 4: one phrase
    (("green or blue", "default"), (None, True, "none", ("B", "C"), "no_option")),  # rule 4: two phrases
    (("option **B**", "seed"), (None, False, "none", (), "no_option")),  # seed: no markdown after a marker
    (("I'd pick B", "seed"), (None, False, "none", (), "no_option")),  # seed: no choice verbs
    (("The answer is b because", "seed"), ("B", False, "marked_letter", ("B",), None)),  # seed: any letter after a marker
    (("adoption B", "seed"), ("B", False, "marked_letter", ("B",), None)),  # seed: the marker may end a word (literal rule)
    (("B.Because", "seed"), ("B", False, "leading_letter", ("B",), None)),  # seed: no abbreviation rule after a letter
    (("B.Because", "default"), ("B", False, "standalone_letter", ("B",), None)),  # default: "B." read as a letter by rule 3
    (("BOTH look alike", "seed"), (None, False, "none", (), "no_option")),  # seed: a capital word is no letter
]


@pytest.mark.parametrize("args, want", YES_NO_RESULTS)
def test_yes_no_parse_result_fields(args, want):
    p = parse_yes_no(*args)
    assert (p.response, p.ambiguous, p.rule, p.mentions, p.meta["null_reason"]) == want
    assert p.meta["mode"] == args[1]


@pytest.mark.parametrize("args, want", LETTER_RESULTS)
def test_letter_parse_result_fields(args, want):
    text, mode = args
    p = parse_letter(text, ("A", "B", "C", "D", "E"), options=OPTIONS, mode=mode)
    assert (p.response, p.ambiguous, p.rule, p.mentions, p.meta["null_reason"]) == want
    assert p.meta["mode"] == mode
