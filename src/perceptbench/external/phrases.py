"""The object phrase of a question, for the grounding step (seed 002 appendix A: "parses the
question's principal noun phrase").

The seed does not name its parser.  perceptbench uses a documented closed-class rule, with no
language model and no downloaded tagger, so that the phrase is reproducible and can be read
in the records:

1. A benchmark template wins where it exists (POPE: ``Is there a <object> in the image?``,
   :func:`perceptbench.external.pope.object_phrase`).
2. Otherwise the first noun phrase opened by a determiner (``the a an this that these those``)
   or a possessive (``his her their its``) that follows the question's opening words:
   the words after the determiner up to, not including, the first closed-class word
   (auxiliary, preposition, conjunction, determiner, comparative, wh-word, negation), a word
   ending in ``-ing``, a later word ending in ``-ed`` followed by a closed-class word or punctuation (a
   participle: "the bus *parked* near"; "the *striped* shirt" is kept), or
   punctuation; at most :data:`MAX_WORDS` words; a leading ordinal / side word (``left right
   top bottom first second ...``) is kept as part of the phrase.  A phrase that only names
   the picture itself (``image``, ``picture``, ``chart``, ``figure``, ...; see
   :data:`PICTURE_WORDS`) is skipped and the search goes on.
3. No such phrase -> None; the stimulus is then perturbed as a whole image and the region
   recorded as ``"fallback_whole"`` with reason ``"no object phrase"``.
"""

from __future__ import annotations

import re

__all__ = ["MAX_WORDS", "PICTURE_WORDS", "principal_noun_phrase"]

MAX_WORDS = 4

_OPENERS = {"the", "a", "an", "this", "that", "these", "those", "his", "her", "their", "its"}
_STOP = {
    # auxiliaries / copulas / modals
    "is", "are", "was", "were", "be", "been", "being", "am", "do", "does", "did", "has", "have", "had",
    "can", "could", "will", "would", "shall", "should", "may", "might", "must",
    # prepositions and particles
    "in", "on", "at", "of", "to", "from", "with", "without", "by", "for", "into", "onto", "over",
    "under", "above", "below", "behind", "beside", "between", "near", "inside", "outside", "through",
    "across", "along", "around", "toward", "towards", "up", "down", "off", "out", "as", "than", "like",
    # conjunctions, determiners, wh-words, negation, pronouns
    "and", "or", "but", "nor", "so", "if", "whether", "the", "a", "an", "this", "that", "these", "those",
    "what", "which", "who", "whom", "whose", "where", "when", "why", "how", "not", "no", "it", "they",
    "there", "here", "its", "their", "his", "her",
    # comparatives / quantity words that open the predicate
    "same", "more", "less", "larger", "smaller", "bigger", "longer", "shorter", "taller", "higher",
    "lower", "greater", "fewer", "most", "least", "visible", "present", "shown", "seen", "facing",
    "pointing", "open", "closed", "left", "right", "closer", "farther", "further", "any", "some",
}
#: nouns that name the picture as a whole, not an object in it
PICTURE_WORDS = frozenset({"image", "picture", "photo", "photograph", "figure", "chart", "graph",
                           "diagram", "table", "plot", "map", "scene", "screenshot", "illustration"})
_KEEP_FIRST = {"left", "right", "top", "bottom", "upper", "lower", "front", "back", "first", "second",
               "third", "middle", "center", "centre"}
_WORD = re.compile(r"[A-Za-z][A-Za-z'\-]*|[^\sA-Za-z]")


def principal_noun_phrase(question: str) -> str | None:
    """The question's object phrase by the rule in the module docstring, lower-cased, or None.

    >>> principal_noun_phrase("Is the right orange circle the same size as the left one?")
    'right orange circle'
    >>> principal_noun_phrase("Are the butterfly's wings closer to being open or closed?")
    "butterfly's wings"
    >>> principal_noun_phrase("How many apples?") is None
    True
    """
    tokens = _WORD.findall(question or "")
    for i, tok in enumerate(tokens):
        if tok.lower() not in _OPENERS:
            continue
        words: list[str] = []
        rest = tokens[i + 1:]
        for j, t in enumerate(rest):
            low = t.lower()
            if not t[0].isalpha():
                break
            if low in _KEEP_FIRST and not words:
                words.append(low)
                continue
            if low in _STOP or (low.endswith("ing") and len(low) > 4):
                break
            nxt = rest[j + 1].lower() if j + 1 < len(rest) else "?"
            if words and low.endswith("ed") and len(low) > 3 and (nxt in _STOP or not nxt[0].isalpha()):
                break
            words.append(low)
            if len(words) == MAX_WORDS:
                break
        if words and not (len(words) == 1 and words[0] in _KEEP_FIRST) and words[-1] not in PICTURE_WORDS:
            return " ".join(words)
    return None
