"""Rule parsers for short VQA answers: yes/no, option letters, and a 0-100 confidence.

Same rule style as :mod:`perceptbench.readouts.parse`: a parser never raises on model text;
an answer it cannot read is a null response (``response=None``), recorded and counted, and
an answer naming several in-set answers is flagged ``ambiguous``.  Both answer parsers return
the one parse-result type (:class:`~perceptbench.readouts.result.ParseResult`) and take the
parser modes of :data:`~perceptbench.readouts.extract.MODES`:

``default``
    :func:`~perceptbench.readouts.extract.extract_answer` first (reasoning blocks removed, an
    unclosed block -> null with ``null_reason="unclosed_reasoning"``, the last answer marker
    -- ``Answer:``, ``\\boxed{}``, ``<answer>`` ... -- delimits the answer, markdown around
    it dropped), then the parser's rules on the answer.
``strict``
    ``default``, and an ambiguous answer is null (``rule="ambiguous"``,
    ``null_reason="ambiguous"``).
``seed``
    Seed 002 publishes no parse rule (appendix A only says unparseable answers are excluded),
    so ``seed`` is the literal reading the project used before the extraction step, over the
    raw output: yes/no = the first standalone word *yes* or *no*; letters = rules 1-2 and 4
    of :func:`parse_letter` with upper-case leading letters only and the markers ``answer
    (is)`` / ``option`` / ``choice``.  Scoring a run under ``--parser seed`` and ``default``
    reports both readings, so the numbers show the gap.

Used by the VSI tasks (seed 002 appendix A: unparseable greedy answers leave only the
accuracy-dependent metrics; verbalised confidence is "the first integer", missing -> dropped).
"""

from __future__ import annotations

import re
from typing import Sequence

from .extract import answer_for_mode
from .parse import negated_at
from .result import ParseResult

__all__ = ["parse_yes_no", "parse_letter", "parse_confidence"]


_YES_NO = re.compile(r"(?<![A-Za-z])(yes|no)(?![A-Za-z])", re.IGNORECASE)
_YES = re.compile(r"(?<![^\W\d_])yes(?![^\W\d_])", re.IGNORECASE)
#: POPE's negative words ("No", "no", "not"; any case here) and the contraction "n't"
_NEGATIVE = re.compile(r"(?<![^\W\d_])(?:no|not)(?![^\W\d_])|n[\'\u2019]t(?![^\W\d_])", re.IGNORECASE)
#: POPE keeps the text before the first "."; here a sentence also ends at "!", "?" or a line break
_FIRST_SENTENCE_END = re.compile(r"[.!?](?=\s|$)|\n")


def _strict(pr: ParseResult, mode: str) -> ParseResult:
    """Strict mode: an ambiguous answer is null."""
    if mode == "strict" and pr.ambiguous:
        return ParseResult(None, True, "ambiguous", pr.mentions, {**pr.meta, "null_reason": "ambiguous"})
    return pr


def parse_yes_no(text: str | None, mode: str = "default") -> ParseResult:
    """``"yes"``/``"no"`` from an answer, read by POPE's own rule.

    Source: POPE's evaluation script (Li et al. 2023, github.com/RUCAIBox/POPE
    ``evaluate.py``; copied into LLaVA's ``llava/eval/eval_pope.py``): keep the text before
    the first ``"."``, drop commas, split on spaces; the answer is *no* if a word is ``No``,
    ``no`` or ``not``, else *yes*.  Rules here (``default`` / ``strict``, on the extracted
    answer, module docstring):

    1. The first sentence of the answer is read (POPE; a sentence also ends at ``!``, ``?``
       followed by a space, or a line break).
    2. A negative word -- ``no`` or ``not`` in any case, or the contraction ``n't`` (POPE's
       space split misses "isn't"; a project extension) -- makes the answer *no*
       (``rule="negation"``): "The image does not contain a dog." is no.
    3. Otherwise the word ``yes`` makes it *yes* (``rule="yes_word"``).
    4. Neither: null (``null_reason="no_option"``).  POPE reads every such answer as *yes*;
       here an answer that says neither is not a yes (seed 002 appendix A, and the project's
       rule that an unreadable answer is a null response).
    5. An answer that says *yes* and also a negative word ("yes or no", "I can't say yes or
       no", "Yes, there is no dog") names both answers: ``ambiguous`` (as VLMEvalKit's
       ``YOrN_Extraction`` returns "Unknown" when both words occur).  ``default`` keeps POPE's
       reading (*no*, never a yes); ``strict`` makes it null.

    ``seed``: the first standalone word *yes* or *no* of the raw output (``rule=
    "first_yes_no"``), ambiguous when both occur.  Never raises on model text; ValueError for
    a bad ``mode``."""
    answer, meta = answer_for_mode(text, mode)
    if mode == "seed":
        found = [m.group(1).lower() for m in _YES_NO.finditer(answer)]
        if not found:
            return ParseResult(None, False, "none", (), {**meta, "null_reason": "no_option"})
        return ParseResult(found[0], len(set(found)) > 1, "first_yes_no", tuple(dict.fromkeys(found)),
                           {**meta, "null_reason": None})
    if answer is None:
        return ParseResult(None, False, "none", (), meta)
    stripped = answer.strip()
    end = _FIRST_SENTENCE_END.search(stripped)
    sentence = stripped[:end.start()] if end else stripped
    neg, yes = _NEGATIVE.search(sentence), _YES.search(sentence)
    if neg:
        pr = ParseResult("no", bool(yes), "negation", ("yes", "no") if yes else ("no",), meta)
    elif yes:
        pr = ParseResult("yes", False, "yes_word", ("yes",), meta)
    else:
        return ParseResult(None, False, "none", (), {**meta, "null_reason": "no_option"})
    return _strict(pr, mode)


# One-letter English words that an option letter can be mistaken for (article, pronoun).
_WORD_LETTERS = frozenset({"a", "i"})
#: Words after a leading "A"/"I" that make it the subject of the sentence, i.e. the option
#: letter ("A is correct", "A seems right", "A or B"); no article or the pronoun "I" is
#: followed by them.
_SUBJECT_WORDS = frozenset({"is", "was", "seems", "appears", "looks", "or", "and"})
_NEXT_WORD = re.compile(r"[ \t]+([A-Za-z]+)")  # same line: "A\nThe target is tilted." is the letter A
#: markers before a letter (rule 2); ``default`` adds choice verbs ("I'd pick B", "I would choose C")
_SEED_MARKERS = r"answer(?:\s+is)?|option|choice"
_MARKERS = _SEED_MARKERS + r"|pick|picks|picked|choose|chooses|chose|select|selects|selected|go\s+with|going\s+with"
#: VLMEvalKit ``can_infer_option``: these characters are spaces before the answer is split into tokens
_VLMEVAL_PUNCT = re.compile(r"[.()\[\],:;!*#{}]")


def _is_word(m: re.Match, text: str) -> bool:
    """True if the letter matched in group 2 (brackets in groups 1 and 3) is an English word
    rather than an option letter: unbracketed, an ``A``/``a``/``I``/``i`` (the article, the
    pronoun), then a space and a word on the same line that is not a subject word.  Other
    letters are never words ("I'd pick b because it is red" is B)."""
    letter = m.group(2)
    if m.group(1) or m.group(3) or letter.lower() not in _WORD_LETTERS:
        return False
    nxt = _NEXT_WORD.match(text, m.end())
    return nxt is not None and nxt.group(1).lower() not in _SUBJECT_WORDS


#: "B or C", "B and C", "B/C", "B, C": a letter followed by another one that it is offered beside
_ALTERNATIVE = r"[*_`]*\s*(?:or|and|/|,)\s*[*_`]*([\(\[]?)({alt})([\)\]]?)(?![A-Za-z])"


def _alternatives(t: str, end: int, allowed: Sequence[str], alt: str) -> list[str]:
    """The letters offered beside the letter that ends at ``end`` ("B or C", "B, C or D"), in
    order, as spelled in ``allowed``; empty when the letter stands alone.  An article or pronoun
    is no letter ("B, a red circle" is B alone)."""
    found, pat = [], re.compile(_ALTERNATIVE.format(alt=alt), re.IGNORECASE)
    m = pat.match(t, end)
    while m and not _is_word(m, t):
        found.append(_in_set(m.group(2), allowed))
        m = pat.match(t, m.end())
    return found


def _in_set(letter: str, allowed: Sequence[str]) -> str:
    """The letter as spelled in the letter set (a lower-case answer to upper-case letters)."""
    if letter in allowed:
        return letter
    return letter.swapcase() if letter.swapcase() in allowed else letter


def parse_letter(text: str | None, letters: Sequence[str] = ("A", "B", "C", "D"),
                 options: Sequence[str] | None = None, mode: str = "default") -> ParseResult:
    """An option letter from an answer, by the first rule that fires (``default`` /
    ``strict``: on the extracted answer, module docstring):

    1. ``leading_letter``: the answer starts with a letter in ``letters``, alone or bracketed,
       followed by a non-letter or the end ("B", "(B)", "B.", "B) red", "[B]", "**(B)**");
       in either case ("b", "(c)").
    2. ``marked_letter``: a letter after a marker, in either case and through markdown:
       "answer is B", "answer: (B)", "option B", "choice B", and the choice verbs "I'd pick
       B", "I would choose **C**", "I'll go with (b)", "I select D".
    3. ``standalone_letter``: VLMEvalKit's ``can_infer_option`` (MMStar's evaluation code,
       github.com/open-compass/VLMEvalKit ``vlmeval/utils/matching_util.py``): the
       characters ``.()[],:;!*#{}`` become spaces, the answer is split on whitespace, and
       exactly one distinct upper-case letter of ``letters`` occurs as a whole token ("It
       is B.", "Answer - B").  A letter named in negation ("not A", parse.negated_at) does
       not count; several distinct letters: null, ``ambiguous``.
    4. ``option_text``: the text equals one option's text (case and surrounding punctuation
       ignored), or contains exactly one option's text as a whole phrase (several: null,
       ``ambiguous``).

    A letter that is also an English word (``A``/``a``: the article; ``I``/``i``: the
    pronoun), not bracketed and followed by a space and a word on the same line, is that word
    ("A cat is on the mat." and "I think so." are null, "The answer is a red circle." is no
    letter) unless the word is one of :data:`_SUBJECT_WORDS` ("A is correct").  Other letters
    are letters in either case ("I'd pick b because it is red" is B); in rules 1-2 a
    lower-case letter followed by a full stop and a letter is an abbreviation ("e.g. the red
    one" is no E).  A letter offered beside others ("B or C", "B/C", "B, C or D") chooses
    none: rule 1 reads it as null, ``ambiguous``, naming every letter (as rule 3 reads "It is B
    or C."); rule 2 counts every letter named.  In ``default`` an ambiguous rule-2 answer
    keeps the first letter; ``strict`` makes every ambiguous answer null.

    ``seed``: rules 1 (upper case only), 2 (markers ``answer (is)`` / ``option`` /
    ``choice``) and 4 on the raw output.  Null when no rule fires.  Never raises on model
    text; ValueError for a bad ``mode``."""
    answer, meta = answer_for_mode(text, mode)
    if answer is None:
        return ParseResult(None, False, "none", (), meta)
    pr = _letter_rules(answer.strip(), [str(x) for x in letters], options, extended=mode != "seed")
    meta = {**meta, "null_reason": None if pr.response is not None else "no_option"}
    return _strict(ParseResult(pr.response, pr.ambiguous, pr.rule, pr.mentions, meta), mode)


def _letter_rules(t: str, allowed: list[str], options: Sequence[str] | None, extended: bool) -> ParseResult:
    """Rules 1-4 of :func:`parse_letter` on ``t`` (``extended``: the ``default`` rules; else the
    ``seed`` rules 1, 2 and 4)."""
    if not t:
        return ParseResult(None, False, "none")
    alt = "|".join(re.escape(x) for x in allowed)
    case = re.IGNORECASE if extended else 0
    # extended: a lower-case letter followed by a full stop and a letter is an abbreviation ("e.g.")
    after = r"(?![A-Za-z]|\.[A-Za-z])" if extended else r"(?![A-Za-z])"
    m = re.match(rf"^[\s*_`\"']*([\(\[]?)({alt})([\)\]]?){after}", t, flags=case)
    if m and not _is_word(m, t):
        first = _in_set(m.group(2), allowed)
        others = [x for x in _alternatives(t, m.end(), allowed, alt) if x != first] if extended else []
        if others:  # "B or C": two options offered, none chosen (as rule 3 reads "It is B or C.")
            return ParseResult(None, True, "none", tuple(dict.fromkeys([first, *others])))
        return ParseResult(first, False, "leading_letter", (first,))
    md = r"[*_`]*" if extended else ""
    markers = _MARKERS if extended else _SEED_MARKERS
    marked = [x for mm in re.finditer(
        rf"(?<![A-Za-z])(?:{markers})\s*[:\-]?\s*{md}([\(\[]?)({alt})([\)\]]?){md}{after}", t,
        flags=re.IGNORECASE) if not _is_word(mm, t)
        for x in [mm.group(2), *_alternatives(t, mm.end(), allowed, alt)]] if extended else [
        mm.group(2) for mm in re.finditer(
            rf"(?:{markers})\s*[:\-]?\s*([\(\[]?)({alt})([\)\]]?)(?![A-Za-z])", t, flags=re.IGNORECASE)
        if not _is_word(mm, t)]
    if marked:
        up = list(dict.fromkeys(_in_set(x, allowed) for x in marked))
        return ParseResult(up[0], len(up) > 1, "marked_letter", tuple(up))
    if extended:
        spaced = _VLMEVAL_PUNCT.sub(" ", t)
        found = []
        for mm in re.finditer(rf"(?<!\S)()({alt})()(?!\S)", spaced):
            if mm.group(2) in allowed and not _is_word(mm, spaced) and not negated_at(t, mm.start(2)):
                found.append(mm.group(2))
        found = list(dict.fromkeys(found))
        if len(found) == 1:
            return ParseResult(found[0], False, "standalone_letter", tuple(found))
        if found:
            return ParseResult(None, True, "none", tuple(found))
    if options:
        norm = lambda s: re.sub(r"\s+", " ", s.strip().strip(".!*`'\"").strip()).lower()
        nt = norm(t)
        for letter, opt in zip(allowed, options):
            if nt and nt == norm(str(opt)):
                return ParseResult(letter, False, "option_text", (letter,))
        hits = [letter for letter, opt in zip(allowed, options)
                if norm(str(opt)) and re.search(rf"(?<!\w){re.escape(norm(str(opt)))}(?!\w)", nt)]
        if len(hits) == 1:
            return ParseResult(hits[0], False, "option_text", (hits[0],))
        if hits:  # several options named
            return ParseResult(None, True, "none", tuple(hits))
    return ParseResult(None, False, "none")


_INT = re.compile(r"(?<![\d.])(\d+)(?:\.\d+)?")


def parse_confidence(text: str | None) -> float | None:
    """Verbalised confidence: the first integer in the text (seed 002 appendix A), as a float in
    0..100; None when the text has no integer or the first one exceeds 100 ("85%" -> 85.0,
    "0.9" -> 0.0 is avoided: a decimal's integer part is not taken, it gives None)."""
    if not text:
        return None
    for m in _INT.finditer(text):
        if m.group(0) != m.group(1):  # a decimal number such as 0.9: not an integer
            return None
        v = int(m.group(1))
        return float(v) if v <= 100 else None
    return None
