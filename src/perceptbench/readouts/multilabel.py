"""Rule parser for SalBench's multi-label answers (seed 001 §4 "Setting").

The seed's prompts list seven "low-level visual features defined according to feature
integration theory: Orientation, Color, Focus, Shape, Size, Location, Pattern" and ask the
model to "write out all applicable features separated by comma".  :func:`parse_features`
turns such free text into a set of those seven labels.

Rules (documented in docs/salbench.md):

0. The answer is extracted first by :func:`perceptbench.readouts.extract.extract_answer`
   (the step the choice parser shares): reasoning blocks (``<think>…</think>`` and the
   variants listed there) are removed, a block that never closes makes the answer null
   (``meta["null_reason"] == "unclosed_reasoning"``), and when explicit answer markers
   (``Answer:``, ``**Answer:**``, ``Final answer:``, ``the answer is``) are present the
   content of the *last* one is the answer (``meta["multiple_answer_markers"]`` flags
   several).  Lines from one that starts with "Explanation", "Reason(ing)", "Because",
   "Note" or "Justification" on are commentary and dropped.
1. The text is lower-cased, "n't" becomes " not", markdown emphasis is dropped, and a few
   phrases are rewritten to one word ("depth of field" -> focus, "out of focus" -> focus);
   compound object words ("L-shaped", "medium-sized", "red-colored") and the verb "focus on"
   are removed (they name the objects or the task, not a feature).
2. It is cut into items at newlines, commas, semicolons, "/", "|", "&", "+", and the words
   "and", "or", "also", "plus"; bullet marks ("-", "*", "•") and list numbers ("1.", "2)")
   at the start of an item are removed.
3. Each word of an item is looked up in :data:`SYNONYMS` (exact, then with a plural "-s" /
   "-es" removed).  A word preceded within three words (same item) by a negator ("not",
   "no", "without", "neither", "nor", "never", "same", "identical", "similar"; but not
   "not only" / "not just") is ignored, and so is one directly followed by "no", "none",
   "not" or "false" ("Size: no").  A contrast word ("but", "while", "whereas", "however",
   "yet", "except", "unlike") ends a negation's scope.  An item made only of feature words
   (and "the", "its", "in", "of" ...) continues the previous item's negation: "not size or
   orientation" negates both, "same shape and color but a different orientation" keeps
   Orientation only.
4. ``labels`` is the set of labels found, or ``None`` when none was found (null: the
   trial is unparseable).  Items with no recognised word are returned in ``unknown`` and
   otherwise ignored.
5. Whole-set answers (project decision; seed 001 names none): when no feature word is
   recognised and the answer is only a whole-set phrase plus filler words, "All of them",
   "all", "all features", "all of the above", "everything" mean the whole ``label_set``
   ({Orientation, Color, Size} on the synthetic split), "all three"/"all 3" and "all
   seven" likewise when the count equals the label set's size (else null,
   ``null_reason="all_count_mismatch"``); "All of them except size" is the label set less
   the labels after "except"/"but not"/"other than"/"apart from"; "none", "nothing", "no
   difference", "no feature", "they are all the same/identical" mean the empty set.  Both
   are answers (``rule`` ``"all_labels"`` / ``"no_difference"``), not nulls.
6. ``label_set`` is the answer space of the task.  A recognised label outside it (e.g.
   "Shape" on the synthetic split, whose label set is {Orientation, Color, Size}) is NOT
   dropped: it stays in ``labels`` (so the predicted set differs from the truth and exact
   match fails) and is also listed in ``out_of_set``.

Parser modes (as for the choice parser, :data:`perceptbench.readouts.parse.MODES`):
``default`` applies rules 0-6; ``strict`` is the same (a set answer has no "several
options named" ambiguity; kept so every task accepts every mode); ``seed`` applies rules
1-4 and 6 to the raw output (no answer extraction, no commentary cut, no whole-set
phrases).  Seed 001 publishes no parse rule, so ``seed`` is the literal reading of "write
out all applicable features": every feature word in the output.
"""

from __future__ import annotations

import re
from typing import Iterable

from .extract import MODES, answer_for_mode
from .result import ParseResult

__all__ = [
    "SALBENCH_LABELS",
    "SYNONYMS",
    "SYNTHETIC_LABELS",
    "parse_features",
]

#: seed 001 §4 "Setting": the seven features, in the prompts' order (natural split labels)
SALBENCH_LABELS: tuple[str, ...] = ("Orientation", "Color", "Focus", "Shape", "Size", "Location", "Pattern")
#: seed 001 §3.1 / Table A.2: labels of the synthetic split
SYNTHETIC_LABELS: tuple[str, ...] = ("Orientation", "Color", "Size")

#: word -> label.  Project decisions (seed 001 gives none): texture -> Pattern;
#: rotation/angle/tilt/direction -> Orientation; blur/sharpness -> Focus;
#: position/placement -> Location; hue/colour -> Color; scale/dimension and the comparatives
#: larger/bigger/smaller -> Size; form/contour/outline/silhouette -> Shape.  Brightness,
#: intensity, luminance and contrast are deliberately NOT mapped (none of the seven names
#: them; mapping them to Color would invent agreement).
SYNONYMS: dict[str, str] = {
    **dict.fromkeys(
        ["orientation", "orient", "oriented", "rotation", "rotate", "rotated", "rotational",
         "angle", "angled", "angular", "tilt", "tilted", "slant", "slanted", "direction",
         "directional"], "Orientation"),
    **dict.fromkeys(
        ["color", "colour", "colored", "coloured", "coloring", "colouring", "hue", "tint",
         "tinted", "chroma", "chromatic"], "Color"),
    **dict.fromkeys(
        ["focus", "focused", "focussed", "unfocused", "defocus", "defocused", "blur",
         "blurred", "blurry", "blurriness", "sharp", "sharpness", "sharper", "depthoffield"],
        "Focus"),
    **dict.fromkeys(["shape", "shaped", "form", "contour", "outline", "silhouette"], "Shape"),
    **dict.fromkeys(
        ["size", "sized", "scale", "scaled", "dimension", "larger", "bigger", "smaller"], "Size"),
    **dict.fromkeys(
        ["location", "position", "positioning", "placement", "spatial"], "Location"),
    **dict.fromkeys(["pattern", "patterned", "texture", "textured", "textural"], "Pattern"),
}

_NEGATORS = frozenset({"not", "no", "without", "neither", "nor", "never", "same", "identical", "similar"})
#: words that end a negation's scope inside an item ("same shape but a different color")
_CONTRAST = frozenset({"but", "while", "whereas", "however", "yet", "except", "unlike"})
#: a feature word directly followed by one of these is negated ("Size: no")
_POST_NEGATORS = frozenset({"no", "none", "not", "false"})
_FILLERS = frozenset({"the", "its", "their", "in", "of", "a", "an", "either"})
#: text after a line that starts with one of these is commentary, not the answer
_COMMENTARY = re.compile(r"\n\s*(?:explanation|reason|reasoning|because|note|justification)\b.*", re.S)
_NEGATION_EXCEPTIONS = frozenset({"only", "just", "merely"})  # "not only color but ..."
_PHRASES = (
    (re.compile(r"depth\s+of\s+field"), " depthoffield "),
    (re.compile(r"out\s+of\s+focus"), " focus "),
    (re.compile(r"n't\b"), " not"),
    (re.compile(r"\b[a-z]+-(?:shaped|sized|colou?red)\b"), " "),  # "L-shaped": an object, not the feature
    (re.compile(r"\bfocus(?:ing|ed)?\s+on\b"), " "),  # "focus on the red box": the verb
    (re.compile(r"[*_`#]+"), " "),
)
_ITEM_SPLIT = re.compile(r"[\n\r,;/|&+]|\b(?:and|or|also|plus)\b")
_BULLET = re.compile(r"^\s*(?:[-*\u2022\u2023\u25e6]+|\(?\d+[.)]|\(?[a-g][.)](?=\s))\s*")
_WORD = re.compile(r"[a-z]+")


def _canonical_label_set(label_set: Iterable[str]) -> frozenset[str]:
    if isinstance(label_set, str):
        raise ValueError(f"label_set must be a collection of labels, got the string {label_set!r}")
    by_lower = {lab.lower(): lab for lab in SALBENCH_LABELS}
    out = set()
    for lab in label_set:
        key = str(lab).strip().lower()
        if key not in by_lower:
            raise ValueError(f"label {lab!r} is not one of the SalBench features {SALBENCH_LABELS}")
        out.add(by_lower[key])
    if not out:
        raise ValueError("label_set is empty")
    return frozenset(out)


def _lookup(word: str) -> str | None:
    if word in SYNONYMS:
        return SYNONYMS[word]
    if word.endswith("es") and word[:-2] in SYNONYMS:
        return SYNONYMS[word[:-2]]
    if word.endswith("s") and word[:-1] in SYNONYMS:
        return SYNONYMS[word[:-1]]
    return None


#: words that may surround a whole-set phrase ("It differs in all of them.")
_WHOLE_FILLERS = frozenset(
    "it its is are they them the these those this object objects target special one differs differ "
    "different differences in of on from all every everything feature features way ways respect respects "
    "aspect aspects category categories listed above three seven answer final a an and attribute attributes "
    "property properties rest others other".split())
_NONE_WORDS = frozenset(
    "none nothing no there difference differences visible obvious notable salient noticeable apparent "
    "identical same alike look looks seem seems to be".split())
_ALL_EXCEPT = re.compile(
    r"\b(?:all(?:\s+of\s+them|\s+three|\s+seven|\s+features|\s+the\s+features)?|everything)\s*,?\s*"
    r"(?:except(?:\s+for)?|but\s+not|other\s+than|apart\s+from|besides)\s+(.*)", re.S)
_ALL_COUNT = re.compile(r"\ball\s+(?:(three|3)|(seven|7))\b")


def _feature_words(norm: str) -> tuple[set[str], list[str]]:
    """Rules 1-4 on lower-cased text: (labels found, items with no feature word)."""
    for pat, rep in _PHRASES:
        norm = pat.sub(rep, norm)
    found: set[str] = set()
    unknown: list[str] = []
    carry = False  # a negation that continues into the next list item ("not size or orientation")
    for raw_item in _ITEM_SPLIT.split(norm):
        if raw_item is None:
            continue
        item = _BULLET.sub("", raw_item).strip(" \t.:!?()[]{}\"'")
        if not item:
            continue
        words = _WORD.findall(item)
        contrast = next((i for i, w in enumerate(words) if w in _CONTRAST), len(words))
        # an item of bare feature words continues the previous item's negation ("not size or orientation")
        bare = all(_lookup(w) is not None or w in _FILLERS for w in words[:contrast])
        recognised = False
        last_negated = False
        for i, w in enumerate(words):
            lab = _lookup(w)
            if lab is None:
                continue
            recognised = True
            window = words[max(0, i - 3) : i]
            if i > contrast:
                window = words[max(contrast + 1, i - 3) : i]
            negated = any(
                n in _NEGATORS and (j + 1 >= len(window) or window[j + 1] not in _NEGATION_EXCEPTIONS)
                for j, n in enumerate(window)
            )
            negated = negated or (carry and bare and i < contrast) or (i + 1 < len(words) and words[i + 1] in _POST_NEGATORS)
            last_negated = negated and i < contrast if contrast < len(words) else negated
            if not negated:
                found.add(lab)
        carry = recognised and last_negated and contrast == len(words) and len(words) <= 6
        if not recognised:
            unknown.append(item)
    return found, unknown


def _whole_set(norm: str, allowed: frozenset[str], meta: dict) -> tuple[frozenset[str] | None, str]:
    """Rule 5 on an answer with no feature word: (labels or None, rule)."""
    words = _WORD.findall(norm)
    if not words:
        return None, "none"
    if set(words) <= _WHOLE_FILLERS | _NONE_WORDS and (
            {"none", "nothing", "identical", "same", "alike"} & set(words)
            or any(a == "no" and b in ("difference", "differences", "feature", "features")
                   for a, b in zip(words, words[1:]))):
        return frozenset(), "no_difference"
    if set(words) <= _WHOLE_FILLERS and {"all", "every", "everything"} & set(words) and \
            not set(re.findall(r"\d+", norm)) - {"3", "7"}:
        m = _ALL_COUNT.search(norm)
        if m and len(allowed) != (3 if m.group(1) else 7):
            meta["null_reason"] = "all_count_mismatch"
            return None, "none"
        return allowed, "all_labels"
    return None, "none"


def parse_features(text: str | None, label_set: Iterable[str] = SALBENCH_LABELS,
                   mode: str = "default") -> ParseResult:
    """Parse a model's answer into SalBench feature labels (rules in the module docstring).

    Parameters
    ----------
    text: the raw model output (None or blank -> null result).
    label_set: the task's answer space, a non-empty subset of :data:`SALBENCH_LABELS`
        (case-insensitive); natural split: all seven, synthetic: :data:`SYNTHETIC_LABELS`.
        It is the set "all of them" stands for.
    mode: ``"default"``, ``"strict"`` (the same here) or ``"seed"`` (no answer extraction,
        no whole-set phrases; module docstring).

    Returns a :class:`~perceptbench.readouts.result.ParseResult` whose ``response`` (also
    ``labels``) is a frozenset of labels, None = null, an empty frozenset = the answer "no
    difference"; ``unknown`` and ``out_of_set`` as in rules 4 and 6; ``ambiguous`` is False.  Raises ValueError for a bad ``mode`` or a label_set containing a
    label that is not one of the seven (naming it), or TypeError when ``text`` is not a
    string.
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    allowed = _canonical_label_set(label_set)
    if text is not None and not isinstance(text, str):
        raise TypeError(f"text must be a string or None, got {type(text).__name__}: {text!r}")
    answer, meta = answer_for_mode(text, mode)
    if text is None or answer is None:
        return ParseResult(None, rule="none", meta=meta)
    if mode == "seed":
        found, unknown = _feature_words(text.lower())
        return ParseResult(frozenset(found) if found else None, rule="features" if found else "none", meta=meta,
                           unknown=tuple(unknown), out_of_set=frozenset(found - allowed))
    norm = _COMMENTARY.sub("", "\n" + answer.lower()).strip()
    exc = _ALL_EXCEPT.search(norm)
    if exc:  # "all of them except size"
        removed, _ = _feature_words(exc.group(1))
        return ParseResult(frozenset(allowed - removed), rule="all_labels", meta=meta)
    found, unknown = _feature_words(norm)
    if found:
        return ParseResult(frozenset(found), rule="features", meta=meta, unknown=tuple(unknown),
                           out_of_set=frozenset(found - allowed))
    labels, rule = _whole_set(norm, allowed, meta)
    if labels is None and meta.get("null_reason") is None:
        meta["null_reason"] = "no_feature"
    return ParseResult(labels, rule=rule, meta=meta, unknown=() if labels is not None else tuple(unknown))
