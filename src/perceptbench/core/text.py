"""Text a model returns, made storable: one normalisation for every answer, token and cache entry;
and :func:`counted`, the one way a note says "1 error" / "3 errors".

A Python ``str`` decoded from JSON may hold *lone surrogates* (code points U+D800-U+DFFF that are
not half of a pair), e.g. ``"\\ud83d"`` when a streaming server split an emoji between two chunks
and escaped each half.  UTF-8 cannot encode them ("surrogates not allowed"), so such a text
could be neither written to ``records.jsonl`` nor to the response cache.
"""

from __future__ import annotations

__all__ = ["counted", "model_text"]


def model_text(text: str) -> str:
    """``text`` in a form UTF-8 can encode, changed only where it could not be.

    The normalisation (documented in README, "Any text a model returns is stored"): a
    surrogate *pair* written as two code points (high U+D800-U+DBFF then low U+DC00-U+DFFF) is
    joined into the one character it encodes (UTF-16, RFC 2781 §2.2); every other surrogate, a
    lone half, becomes U+FFFD REPLACEMENT CHARACTER (one per surrogate).  Every other character
    is kept as it is (no Unicode normalisation form, no stripping).  A text without surrogates
    is returned unchanged (the same object).  Raises ``TypeError`` for a non-``str``.
    """
    if not isinstance(text, str):
        raise TypeError(f"model text must be str, got {type(text).__name__}")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and ``noun`` in the number ``n`` calls for: ``counted(1, "error")`` -> ``"1 error"``,
    ``counted(3, "error")`` -> ``"3 errors"``, ``counted(0, "error")`` -> ``"0 errors"`` (English:
    singular for exactly one).  ``plural``: the plural when it is not ``noun + "s"``
    (``counted(2, "correct answer")`` -> ``"2 correct answers"``; ``counted(2, "stimulus",
    "stimuli")`` -> ``"2 stimuli"``).  ``n``: an int (a float that is a whole number is printed
    without decimals)."""
    k = int(n) if float(n).is_integer() else n
    return f"{k} {noun if k == 1 else (plural or noun + 's')}"
