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

Look-around windows (bounded, so parsing stays linear in the output length): a determiner
or ``other`` is looked for in the 80 characters before a number, ``of``/``another`` in the
20 after ``one``, a negator in the 60 before a mention.

Both kinds:

* An answer that names more than one *distinct* in-set option (``"1 or 2"``,
  ``"either a cat or a dog"``) is ``ambiguous``.  ``mode="default"`` still returns the
  first one; ``mode="strict"`` returns ``None``.
* Empty or ``None`` text, refusals, and answers with nothing recognised give
  ``response=None`` with ``rule="none"``.  The parser never raises on model text.

Parser modes (:data:`MODES`)
----------------------------
``seed``
    The seed's literal rule over the *raw output*: the rules above and nothing else (no
    reasoning stripping, no answer markers, no negation, a digit run of mixed scripts read
    by ``int()``, so ``"1٣"`` is 13).  This is the parser as it landed before the answer
    extraction step; use it to reproduce the paper's convention.
``default``
    First :func:`perceptbench.readouts.extract.extract_answer` (reasoning blocks removed,
    an unclosed block -> null; the last explicit answer marker delimits the answer), then
    the rules above on the answer, with two more:

    * a *negated* mention is not the answer: an option directly after ``not``, ``n't``,
      ``never``, ``nor``, ``neither``, ``except``, ``rather than``, ``instead of`` or
      ``other than`` (through an article or a label word: ``"not a knife"``, ``"not
      mark 2"``), and the options joined to it by ``or``/``nor``/``and``/commas (``"not 1
      or 2"``).  ``"It is not 2, it is 3."`` -> 3; ``"Not a knife; it's clearly a
      bottle."`` -> bottle.  An answer whose every mention is negated is null
      (``null_reason="only_negated"``);
    * a digit run that mixes scripts (``"1٣"``: ASCII one, Arabic-Indic three) is not
      one number: it is read per script (1 and 3) and the answer is ambiguous.
``strict``
    ``default``, and ambiguous answers become null.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from typing import Any, Iterable, Sequence

from .extract import MODES, answer_for_mode
from .result import ParseResult

__all__ = ["ParseResult", "parse_choice", "negated_at", "MODES"]

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
    # determiner + one adjective + number word: "the blue one", "the other two" (the
    # adjective is w1, already known not to be a label word)
    return bool(m2 and m2.group(1).lower() in _DETERMINERS)


def _digit_script(ch: str) -> str:
    """The script of a decimal digit: ``unicodedata.name`` before " DIGIT" (``""`` = ASCII)."""
    return unicodedata.name(ch).partition("DIGIT")[0].strip()  # every Nd character is named


def _to_int(digits: str) -> int | None:
    """``int()`` of a run of Unicode decimal digits (any script), or None for a run longer
    than Python's int-string limit (4300 digits by default; no option is that long)."""
    try:
        return int(digits)
    except ValueError:
        return None


def _integer_mentions(text: str, split_scripts: bool) -> tuple[list[tuple[int, int, int, str]], bool]:
    """All integer mentions as (start, end, value, rule), in text order, and whether a digit
    run mixed scripts.  With ``split_scripts`` such a run is read per script ("1٣" -> 1, 3);
    without, by ``int()`` (13, the seed-mode reading)."""
    found: list[tuple[int, int, int, str]] = []
    mixed = False
    for m in _DIGITS_RE.finditer(text):
        s, e = m.start(), m.end()
        # part of a decimal number such as 2.5 -> not an integer
        if s >= 2 and text[s - 1] == "." and text[s - 2].isdecimal():
            continue
        if e + 1 < len(text) and text[e] == "." and text[e + 1].isdecimal():
            continue
        pre = text[max(0, s - 80):s]
        before = _WORD_BEFORE_RE.search(pre)
        if before and before.group(1).lower() == "other" and not pre[before.end(1):].strip():
            continue
        run = m.group(0)
        scripts = [_digit_script(c) for c in run]
        if len(set(scripts)) > 1:
            mixed = True
            if split_scripts:
                i = 0
                while i < len(run):
                    j = i
                    while j < len(run) and scripts[j] == scripts[i]:
                        j += 1
                    value = _to_int(run[i:j])
                    if value is not None:
                        found.append((s + i, s + j, value, "first_integer"))
                    i = j
                continue
        value = _to_int(run)
        if value is not None:
            found.append((s, e, value, "first_integer"))
    for i, ch in enumerate(text):
        if ch.isdecimal() or not ch.isnumeric():
            continue
        name = unicodedata.name(ch)  # every numeric character is named and has a value
        if "CIRCLED" in name or "PARENTHESIZED" in name or "FULL STOP" in name:
            v = unicodedata.numeric(ch)
            if float(v).is_integer():
                found.append((i, i + 1, int(v), "first_integer"))
    for m in _NUMBER_WORD_RE.finditer(text):
        if m.group("unit"):
            value = _UNITS[m.group("unit").lower()]
        else:
            value = _TENS[m.group("tens").lower()]
            if m.group("ones"):
                value += _UNITS[m.group("ones").lower()]
        word = m.group(0).lower()
        after = text[m.end():m.end() + 20]
        prefix = text[max(0, m.start() - 80):m.start()]  # bounded: linear time on long outputs
        if word == "one":
            if re.search(r"(?<![^\W_])odd[\s\-]*$", prefix, re.IGNORECASE):
                continue  # "odd one out", "odd-one-out"
            if re.match(r"\s+(of|another)\b", after, re.IGNORECASE):
                continue  # "one of them"
        if _prefix_blocks_number(prefix):
            continue
        found.append((m.start(), m.end(), value, "number_word"))
    found.sort()  # by start: mentions never overlap, so no two share a start
    return found, mixed


# A negator right before a mention, possibly through an article or a label word
# ("not a knife", "isn't mark 2", "rather than the cat", "not #2").
_NEGATED_PREFIX = re.compile(
    r"(?:(?<![^\W_])(?:not|never|nor|neither|except|instead\s+of|rather\s+than|other\s+than)|n't)"
    r"[\s:]*(?:(?:a|an|the|number|no\.?|num|option|mark|choice|item|image|panel|position|"
    r"answer|#)[\s.:#]*){0,2}$",
    re.IGNORECASE,
)
# What joins a mention to a negated one before it, carrying the negation ("not 1 or 2").
_NEGATION_CARRY = re.compile(
    r"^[\s,]*(?:(?:or|nor|and)\s+)?(?:(?:a|an|the|number|option|mark|choice|#)[\s#]*){0,2}$",
    re.IGNORECASE,
)


def negated_at(text: str, start: int) -> bool:
    """True when the mention starting at ``text[start]`` directly follows a negator (``not``,
    ``n't``, ``never``, ``nor``, ``neither``, ``except``, ``rather than``, ``instead of``,
    ``other than``), possibly through an article or a label word ("not a knife", "not
    option B"); the negator is looked for in the 60 characters before ``start``.  Shared
    by the choice and option-letter parsers (module docstring, ``default`` mode)."""
    return bool(_NEGATED_PREFIX.search(text[max(0, start - 60):start]))


def _split_negated(text: str, mentions: list[tuple[int, int, Any, str]]):
    """(kept, negated): mentions named in negation are moved to ``negated``."""
    kept, negated = [], []
    prev_neg_end = None
    for m in mentions:
        start, end = m[0], m[1]
        neg = negated_at(text, start)
        if not neg and prev_neg_end is not None and _NEGATION_CARRY.match(text[prev_neg_end:start]):
            neg = True
        (negated if neg else kept).append(m)
        prev_neg_end = end if neg else None
    return kept, negated


@functools.lru_cache(maxsize=4096)  # one compiled pattern per option label, not one per answer
def _label_pattern(option: str) -> re.Pattern:
    words = option.strip().split()  # non-empty: blank options are skipped by the caller
    core = r"[\s\-_]+".join(re.escape(w) for w in words)
    last = words[-1].lower()
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


def _label_mentions(text: str, options: Sequence[str]) -> list[tuple[int, int, Any]]:
    """(start, end, option) for each label mention, longest match winning on overlaps."""
    cands: list[tuple[int, int, int, Any]] = []  # (start, -length, index, option)
    for idx, opt in enumerate(options):
        if not str(opt).strip():
            continue
        for m in _label_pattern(str(opt)).finditer(text):
            cands.append((m.start(), -(m.end() - m.start()), idx, opt))
    cands.sort()
    out: list[tuple[int, int, Any]] = []
    covered_until = -1
    for start, neg_len, _idx, opt in cands:
        if start < covered_until:
            continue  # inside a longer option already taken ("truck" in "fire truck")
        out.append((start, start - neg_len, opt))
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
        ``"default"``: answer extraction, negation and script rules, then the first
        in-set option wins (ambiguous answers flagged but kept); ``"strict"``: the same,
        ambiguous answers become null; ``"seed"``: seed 000 appendix B's literal rule
        over the raw output.  See the module docstring.

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
    answer, meta = answer_for_mode(text, mode)
    if answer is None:
        return ParseResult(None, False, "none", (), meta)
    answer = unicodedata.normalize("NFC", answer)
    if all(_is_int_option(o) for o in opts):
        allowed = set(opts)
        found, mixed = _integer_mentions(answer, split_scripts=mode != "seed")
        cands = [m for m in found if m[2] in allowed]
        if mode != "seed" and mixed:
            meta["mixed_script_digits"] = True
    else:
        by_str = {str(o): o for o in opts}
        cands = [(s0, e0, by_str[o], "first_label") for s0, e0, o in _label_mentions(answer, [str(o) for o in opts])]
        mixed = False
    if mode != "seed":
        cands, negated = _split_negated(answer, cands)
        if negated:
            meta["negated"] = list(dict.fromkeys(m[2] for m in negated))
        if not cands and negated:
            meta["null_reason"] = "only_negated"
            return ParseResult(None, False, "none", (), meta)
    ordered: list[Any] = []
    for m in cands:
        if m[2] not in ordered:
            ordered.append(m[2])
    if not cands:
        meta["null_reason"] = "no_option"
        return ParseResult(None, False, "none", (), meta)
    first, rule = cands[0][2], cands[0][3]
    ambiguous = len(ordered) > 1 or (mode != "seed" and mixed)
    if ambiguous and mode == "strict":
        meta["null_reason"] = "ambiguous"
        return ParseResult(None, True, "ambiguous", tuple(ordered), meta)
    return ParseResult(first, ambiguous, rule, tuple(ordered), meta)
