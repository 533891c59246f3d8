"""Rule parser for SalBench's multi-label answers (seed 001 §4 "Setting").

The seed's prompts list seven "low-level visual features defined according to feature
integration theory: Orientation, Color, Focus, Shape, Size, Location, Pattern" and ask the
model to "write out all applicable features separated by comma".  :func:`parse_features`
turns such free text into a set of those seven labels.

Rules (documented in docs/salbench.md):

0. If the text has an "Answer:" line, only that line is parsed; lines from one that starts
   with "Explanation", "Reason(ing)", "Because", "Note" or "Justification" on are commentary
   and dropped.
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
5. ``label_set`` is the answer space of the task.  A recognised label outside it (e.g.
   "Shape" on the synthetic split, whose label set is {Orientation, Color, Size}) is NOT
   dropped: it stays in ``labels`` (so the predicted set differs from the truth and exact
   match fails) and is also listed in ``out_of_set``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable

__all__ = [
    "ParseResultML",
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


@dataclass(frozen=True)
class ParseResultML:
    """Parsed multi-label answer.

    labels: recognised labels (a subset of :data:`SALBENCH_LABELS`), or None when nothing
        was recognised (null response).
    unknown: the items (stripped text) in which no feature word was found, in order.
    out_of_set: recognised labels that are not in the task's label set (they are also in
        ``labels``).
    """

    labels: frozenset[str] | None
    unknown: tuple[str, ...] = ()
    out_of_set: frozenset[str] = field(default_factory=frozenset)


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


def parse_features(text: str | None, label_set: Iterable[str] = SALBENCH_LABELS) -> ParseResultML:
    """Parse a model's answer into SalBench feature labels (rules in the module docstring).

    Parameters
    ----------
    text: the raw model output (None or blank -> null result).
    label_set: the task's answer space, a non-empty subset of :data:`SALBENCH_LABELS`
        (case-insensitive); natural split: all seven, synthetic: :data:`SYNTHETIC_LABELS`.

    Returns a :class:`ParseResultML`.  Raises ValueError for a label_set containing a label
    that is not one of the seven (naming it), or TypeError when ``text`` is not a string.
    """
    allowed = _canonical_label_set(label_set)
    if text is None:
        return ParseResultML(labels=None)
    if not isinstance(text, str):
        raise TypeError(f"text must be a string or None, got {type(text).__name__}: {text!r}")
    norm = text.lower()
    answer = re.search(r"\banswer\s*:\s*([^\n]+)", norm)
    if answer:  # "Answer: Color" -> parse only the answer line
        norm = answer.group(1)
    norm = _COMMENTARY.sub("", norm)
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
    labels = frozenset(found) if found else None
    return ParseResultML(
        labels=labels,
        unknown=tuple(unknown),
        out_of_set=frozenset(found - allowed),
    )
