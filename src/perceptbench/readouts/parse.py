"""Rule parser: a VLM's free-text answer -> one option of the task's option set, or null.

Source: seed ``000_cccc7bb43380c6ae.txt`` appendix B ("Answers are parsed by rule: for
choices and counts, the first integer in the response (spelled-out number words
accepted, e.g. "One." -> 1), constrained to the option set; for text-label choices, the
first option mentioned. Anything else is recorded as null") and appendix D.4 (an
unparseable answer is a null response, excluded from scores, never an error).

Pure Python (``re`` and ``unicodedata`` only), so the scoring side can import it
without torch.

Rules, in the order they are applied
------------------------------------
Integer options (every option is an ``int``, e.g. ``(1, 2, 3)`` or ``range(1, 21)``):

* Number mentions are collected left to right:

  - runs of Unicode decimal digits (``unicodedata`` category Nd: ASCII, full-width
    ``"２"``, Arabic-Indic ``"٣"``, Devanagari ...), converted with ``int()``; a run that is
    part of a decimal number (``"2.5"``) is not an integer and is skipped;
  - circled / parenthesised digits (``"①"``, ``"⑵"``), via ``unicodedata.numeric``;
  - English number words ``zero`` .. ``ninety-nine`` (``"twenty one"``, ``"twenty-one"``),
    case-insensitive, on word boundaries (so ``"someone"``, ``"anyone"``, ``"none"``
    contain no number).

* A number *word* used as a pronoun is not a number: ``"odd one out"`` / ``"odd one"``,
  ``"one of ..."``, and a word right after a determiner (``the``, ``this``, ``that``,
  ``these``, ``those``, ``which``, ``each``, ``every``, ``any``, ``no``, ``other``,
  ``another``, ``a``, ``an``), directly or through one adjective (``"the blue one"``,
  ``"the other two"``) unless that word is a label such as ``number``/``option``/``mark``
  (``"the number two"`` is 2).  A digit run right after ``other`` (``"the other 2"``) is
  skipped as well.
* The first mention whose value is in the option set is the response (integers outside
  the set are skipped, e.g. ``"12"`` for options 1..3 is skipped).

Label options (anything else, e.g. the 16 silhouette classes):

* Each option is matched case-insensitively on word boundaries, with simple plurals
  (``s``, ``es``, ``y -> ies``, ``f(e) -> ves``) and flexible whitespace/hyphens inside
  multi-word options; ``"car"`` does not match ``"cardigan"`` or ``"scar"``.  Where options
  overlap (``"truck"`` inside ``"fire truck"``), the longest match at a position wins.
* The first option mentioned is the response.

Both kinds:

* An answer that names more than one *distinct* in-set option (``"1 or 2"``,
  ``"not 1, it's 3"``, ``"either a cat or a dog"``) is ``ambiguous``.  ``mode="default"``
  (the seed's rule) still returns the first one; ``mode="strict"`` returns ``None``.
* Empty or ``None`` text, refusals, and answers with nothing recognised give
  ``response=None`` with ``rule="none"``.  The parser never raises on model text.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

__all__ = ["ParseResult", "parse_choice", "MODES"]

MODES = ("default", "strict")

_UNITS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
    "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17,
    "eighteen": 18, "nineteen": 19,
}
_TENS = {
    "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60,
    "seventy": 70, "eighty": 80, "ninety": 90,
}
_ONES_1_9 = "one|two|three|four|five|six|seven|eight|nine"
_TENS_ALT = "|".join(_TENS)
_UNITS_ALT = "|".join(sorted(_UNITS, key=len, reverse=True))
# Longest alternatives first: "twenty-one" before "twenty", "seventeen" before "seven".
_NUMBER_WORD_RE = re.compile(
    rf"(?<![^\W_])(?:(?P<tens>{_TENS_ALT})(?:[\s\-]+(?P<ones>{_ONES_1_9}))?|(?P<unit>{_UNITS_ALT}))(?![^\W_])",
    re.IGNORECASE,
)
# A run of Unicode decimal digits (str patterns: \d == category Nd).
_DIGITS_RE = re.compile(r"\d+")

_DETERMINERS = frozenset(
    "the this that these those which each every any no other another a an".split()
)
# Words between a determiner and a number word that keep it a number ("the number two").
_NUMERIC_LABELS = frozenset(
    "number no num option options mark marks item items choice answer image digit "
    "panel figure position count total".split()
)
_WORD_BEFORE_RE = re.compile(r"([^\W\d_]+)[^\w]*$")  # last word in a prefix
_TWO_WORDS_BEFORE_RE = re.compile(r"([^\W\d_]+)\s+([^\W\d_]+)\s*$")


@dataclass(frozen=True)
class ParseResult:
    """The parsed response of one answer.

    Attributes
    ----------
    response:
        The option (an element of ``options``, same type) or ``None`` (null response:
        unparseable, or ambiguous under ``mode="strict"``).
    ambiguous:
        True when the answer names more than one distinct in-set option.
    rule:
        Which rule produced ``response``: ``"first_integer"`` (a digit run, any script),
        ``"number_word"`` (a spelled-out number), ``"first_label"`` (a label option),
        ``"ambiguous"`` (strict mode nulled an ambiguous answer) or ``"none"``
        (nothing recognised).
    mentions:
        The distinct in-set options named by the answer, in order of first mention.
    """

    response: Any
    ambiguous: bool
    rule: str
    mentions: tuple = ()


def _is_int_option(o: Any) -> bool:
    return isinstance(o, int) and not isinstance(o, bool)


def _prefix_blocks_number(prefix: str) -> bool:
    """True if the text just before a number word makes it a pronoun ("the other two")."""
    m = _WORD_BEFORE_RE.search(prefix)
    if not m:
        return False
    # only whitespace may separate the determiner from the number word
    gap = prefix[m.end(1):]
    if gap.strip():
        return False
    w1 = m.group(1).lower()
    if w1 in _DETERMINERS:
        return True
    if w1 in _NUMERIC_LABELS:
        return False
    m2 = _TWO_WORDS_BEFORE_RE.search(prefix)
    if m2 and m2.group(1).lower() in _DETERMINERS and m2.group(2).lower() not in _NUMERIC_LABELS:
        # determiner + one adjective + number word: "the blue one", "the other two"
        return True
    return False


def _integer_mentions(text: str) -> list[tuple[int, int, str]]:
    """All integer mentions as (start, value, rule), in text order."""
    found: list[tuple[int, int, str]] = []
    for m in _DIGITS_RE.finditer(text):
        s, e = m.start(), m.end()
        # part of a decimal number such as 2.5 -> not an integer
        if s >= 2 and text[s - 1] == "." and text[s - 2].isdecimal():
            continue
        if e + 1 < len(text) and text[e] == "." and text[e + 1].isdecimal():
            continue
        before = _WORD_BEFORE_RE.search(text[:s])
        if before and before.group(1).lower() == "other" and not text[before.end(1):s].strip():
            continue
        try:
            value = int(m.group(0))
        except ValueError:  # pragma: no cover - \d+ is always int()-able
            continue
        found.append((s, value, "first_integer"))
    for i, ch in enumerate(text):
        if ch.isdecimal() or not ch.isnumeric():
            continue
        name = unicodedata.name(ch, "")
        if "CIRCLED" in name or "PARENTHESIZED" in name or "FULL STOP" in name:
            v = unicodedata.numeric(ch, None)
            if v is not None and float(v).is_integer():
                found.append((i, int(v), "first_integer"))
    for m in _NUMBER_WORD_RE.finditer(text):
        if m.group("unit"):
            value = _UNITS[m.group("unit").lower()]
        else:
            value = _TENS[m.group("tens").lower()]
            if m.group("ones"):
                value += _UNITS[m.group("ones").lower()]
        word = m.group(0).lower()
        after = text[m.end():]
        if word == "one":
            if re.search(r"(?<![^\W_])odd[\s\-]*$", text[: m.start()], re.IGNORECASE):
                continue  # "odd one out", "odd-one-out"
            if re.match(r"\s+(of|another)\b", after, re.IGNORECASE):
                continue  # "one of them"
        if _prefix_blocks_number(text[: m.start()]):
            continue
        found.append((m.start(), value, "number_word"))
    found.sort(key=lambda t: t[0])
    return found


def _label_pattern(option: str) -> re.Pattern:
    words = option.strip().split()
    core = r"[\s\-_]+".join(re.escape(w) for w in words)
    last = words[-1].lower() if words else ""
    alts = [core + r"(?:s|es)?"]
    head = r"[\s\-_]+".join(re.escape(w) for w in words[:-1])
    head = head + r"[\s\-_]+" if head else ""
    if last.endswith("y") and len(last) > 1:
        alts.append(head + re.escape(words[-1][:-1]) + "ies")
    if last.endswith("fe"):
        alts.append(head + re.escape(words[-1][:-2]) + "ves")
    elif last.endswith("f"):
        alts.append(head + re.escape(words[-1][:-1]) + "ves")
    return re.compile(r"(?<![^\W_])(?:" + "|".join(alts) + r")(?![^\W_])", re.IGNORECASE)


def _label_mentions(text: str, options: Sequence[str]) -> list[tuple[int, Any]]:
    """(start, option) for each label mention, longest match winning on overlaps."""
    cands: list[tuple[int, int, int, Any]] = []  # (start, -length, index, option)
    for idx, opt in enumerate(options):
        if not str(opt).strip():
            continue
        for m in _label_pattern(str(opt)).finditer(text):
            cands.append((m.start(), -(m.end() - m.start()), idx, opt))
    cands.sort()
    out: list[tuple[int, Any]] = []
    covered_until = -1
    for start, neg_len, _idx, opt in cands:
        if start < covered_until:
            continue  # inside a longer option already taken ("truck" in "fire truck")
        out.append((start, opt))
        covered_until = start - neg_len
    return out


def parse_choice(text: str | None, options: Iterable[Any], mode: str = "default") -> ParseResult:
    """Parse a free-text answer into one option of ``options``.

    Parameters
    ----------
    text:
        The model's raw answer (any length; ``None`` is treated as empty).
    options:
        The task's option set, in any order: all ``int`` for choice/count tasks
        (e.g. ``(1, 2, 3)``, ``range(1, 21)``), otherwise label strings (e.g. the 16
        silhouette classes).  The returned response is the option object itself.
    mode:
        ``"default"``: the seed's rule (first in-set option wins, ambiguous answers
        flagged but kept); ``"strict"``: ambiguous answers become null.

    Returns
    -------
    ParseResult
        Never raises on model text; raises ``ValueError`` only for a bad ``mode`` or an
        empty option set (programming errors).

    Source: seed 000 appendix B (parse rule) and D.4 (nulls).  See the module
    docstring for the exact rules.
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    opts = list(options)
    if not opts:
        raise ValueError("options must not be empty")
    if text is None:
        text = ""
    text = unicodedata.normalize("NFC", str(text))
    if all(_is_int_option(o) for o in opts):
        allowed = set(opts)
        mentions = [(v, rule) for _s, v, rule in _integer_mentions(text) if v in allowed]
        ordered: list[Any] = []
        for v, _ in mentions:
            if v not in ordered:
                ordered.append(v)
        if not mentions:
            return ParseResult(None, False, "none", ())
        first, rule = mentions[0]
    else:
        found = _label_mentions(text, [str(o) for o in opts])
        # map back to the caller's option objects
        by_str = {str(o): o for o in opts}
        ordered = []
        for _s, o in found:
            obj = by_str[o]
            if obj not in ordered:
                ordered.append(obj)
        if not found:
            return ParseResult(None, False, "none", ())
        first, rule = by_str[found[0][1]], "first_label"
    ambiguous = len(ordered) > 1
    if ambiguous and mode == "strict":
        return ParseResult(None, True, "ambiguous", tuple(ordered))
    return ParseResult(first, ambiguous, rule, tuple(ordered))
