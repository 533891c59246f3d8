"""Rule parsers for short VQA answers: yes/no, option letters, and a 0-100 confidence.

Same rule style as :mod:`perceptbench.readouts.parse`: a parser never raises on model text;
an answer it cannot read is a null response (``response=None``), recorded and counted, and
an answer naming several in-set options is flagged ``ambiguous`` (the first one counts).
Self-contained on purpose (so it can later be routed through a shared reasoning-block /
answer-marker pre-processor without changing its rules).

Used by the VSI tasks (seed 002 appendix A: unparseable greedy answers leave only the
accuracy-dependent metrics; verbalised confidence is "the first integer", missing -> dropped).
"""

from __future__ import annotations

import re
from typing import Sequence

from .result import ParseResult

__all__ = ["parse_yes_no", "parse_letter", "parse_confidence"]


_YES_NO = re.compile(r"(?<![A-Za-z])(yes|no)(?![A-Za-z])", re.IGNORECASE)


def parse_yes_no(text: str | None) -> ParseResult:
    """``"yes"``/``"no"`` from an answer: the first standalone word *yes* or *no* (any case,
    punctuation around it allowed: "Yes.", "**No**", "no, there is not").  Null when neither
    word occurs; ``ambiguous`` when both occur."""
    found = [m.group(1).lower() for m in _YES_NO.finditer(text)] if text else []
    if not found:
        return ParseResult(None, False, "none")
    return ParseResult(found[0], len(set(found)) > 1, "first_yes_no")


# One-letter English words that an option letter can be mistaken for (article, pronoun).
_WORD_LETTERS = frozenset({"a", "i"})
#: Words after a leading "A"/"I" that make it the subject of the sentence, i.e. the option
#: letter ("A is correct", "A seems right", "A or B"); no article or the pronoun "I" is
#: followed by them.
_SUBJECT_WORDS = frozenset({"is", "was", "seems", "appears", "looks", "or", "and"})
_NEXT_WORD = re.compile(r"[ \t]+([A-Za-z]+)")  # same line: "A\nThe target is tilted." is the letter A


def _is_word(m: re.Match, text: str) -> bool:
    """True if the letter matched in group 2 (brackets in groups 1 and 3) is the English word
    "a" / "I" rather than an option letter: unbracketed, then a space and a word that is not
    a subject word."""
    if m.group(1) or m.group(3) or m.group(2).lower() not in _WORD_LETTERS:
        return False
    nxt = _NEXT_WORD.match(text, m.end())
    return nxt is not None and nxt.group(1).lower() not in _SUBJECT_WORDS


def parse_letter(text: str | None, letters: Sequence[str] = ("A", "B", "C", "D"),
                 options: Sequence[str] | None = None) -> ParseResult:
    """An option letter from an answer, by the first rule that fires:

    1. ``leading_letter``: the answer starts with a letter in ``letters``, alone or bracketed,
       followed by a non-letter or the end ("B", "(B)", "B.", "B) red", "[B]");
    2. ``marked_letter``: "answer is B", "answer: (B)", "option B", "choice B";
    3. ``option_text``: the text equals one option's text (case and surrounding punctuation
       ignored), or contains exactly one option's text as a whole phrase.

    Letters are matched case-sensitively in rule 1 (so the article "a" is not an answer) and
    case-insensitively after a marker in rule 2.  In rules 1 and 2 a letter that is also an
    English word (``A``/``a``: the article; ``I``: the pronoun), not bracketed and followed by
    a space and a word on the same line, is that word ("A cat is on the mat.", "The answer is a red circle.",
    "I think ...") unless the word is one of :data:`_SUBJECT_WORDS` ("A is correct", "A or B").
    Null when no rule fires."""
    if not text:
        return ParseResult(None, False, "none")
    t = text.strip()
    allowed = [str(x) for x in letters]
    alt = "|".join(re.escape(x) for x in allowed)
    m = re.match(rf"^[\s*_`\"']*([\(\[]?)({alt})([\)\]]?)(?![A-Za-z])", t)
    if m and not _is_word(m, t):
        return ParseResult(m.group(2), False, "leading_letter")
    marked = [mm.group(2) for mm in re.finditer(
        rf"(?:answer(?:\s+is)?|option|choice)\s*[:\-]?\s*([\(\[]?)({alt})([\)\]]?)(?![A-Za-z])", t,
        flags=re.IGNORECASE) if not _is_word(mm, t)]
    if marked:
        up = [x.upper() if x.upper() in allowed else x for x in marked]
        return ParseResult(up[0], len(set(up)) > 1, "marked_letter")
    if options:
        norm = lambda s: re.sub(r"\s+", " ", s.strip().strip(".!*`'\"").strip()).lower()
        nt = norm(t)
        for letter, opt in zip(allowed, options):
            if nt and nt == norm(str(opt)):
                return ParseResult(letter, False, "option_text")
        hits = [letter for letter, opt in zip(allowed, options)
                if norm(str(opt)) and re.search(rf"(?<!\w){re.escape(norm(str(opt)))}(?!\w)", nt)]
        if len(hits) == 1:
            return ParseResult(hits[0], False, "option_text")
        if hits:  # several options named
            return ParseResult(None, True, "none")
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
