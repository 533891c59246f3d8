"""Answer extraction: a model's raw output -> the part of it that is the answer.

Seed 000 appendix B parses "the response" by rule ("the first integer ... constrained to
the option set; for text-label choices, the first option mentioned") and D.4 makes an
unparseable answer a null response.  The rule is meant for *the answer*; models that
think aloud print reasoning (which names every option) before it, and models that
correct themselves print several answers.  :func:`extract_answer` is the step every
rule parser of the project runs first (the choice parser :mod:`.parse`, the SalBench
multi-label parser :mod:`.multilabel`, the VSI yes/no and option-letter parsers
:mod:`.answers`; through :func:`answer_for_mode`), except in the ``seed`` parser mode, which
applies the seed's rule to the raw output.

Pure Python (``re`` and ``unicodedata`` only): scoring imports it without torch.

Steps, in order
---------------
1. Text is NFC-normalised.  ``None`` or blank -> null (``null_reason="empty_output"``).
2. Reasoning blocks are removed.  Recognised styles (:data:`REASONING_STYLES`, case
   insensitive): ``<think>…</think>`` (DeepSeek-R1, Qwen3, QwQ, GLM-4.1V), ``<thinking>``,
   ``<reasoning>``, ``<thought>``, ``<seed:think>``, ``◁think▷…◁/think▷`` (Kimi-VL),
   ``[THINK]…[/THINK]`` (Magistral) and ``<|begin_of_thought|>…<|end_of_thought|>``.
   A closing tag with no opening tag before it (a chat template that opens the block in
   the prompt) makes everything before it reasoning.  A block that opens and never closes
   (cut off by the token budget) has no answer: null, ``null_reason="unclosed_reasoning"``
   -- never a number from inside it.  Nothing left after the blocks -> null,
   ``null_reason="empty_after_reasoning"``.
3. Explicit answer markers delimit the answer: ``Answer: X``, ``**Answer:** X``,
   ``Answer**: X``, ``Final answer: X``, ``the (final|correct) answer is X`` / ``would be
   X``, ``<answer>X</answer>``, ``\\boxed{X}`` and GLM's ``<|begin_of_box|>X<|end_of_box|>``.
   A line marker's content is the rest of its line (the next non-empty line when the rest
   is empty), cut at the first sentence end (``.``, ``!``, ``?`` followed by a space) and
   before ``because`` / ``since``; a tag marker's content is what it encloses.  When
   several markers are present the *last* one stands (a model that corrects itself) and
   ``multiple_answer_markers`` is set.  A marker inside another marker's content counts
   once.  An empty last marker -> null, ``null_reason="empty_answer_marker"``.
4. No marker: the answer is the whole remaining text.

The metadata dict (JSON-able, stored in the record's ``run_meta.parse``) has the keys
``reasoning`` (list of the styles removed, ``"<style>:implicit_open"`` for a template-
opened block), ``answer_marker`` (the marker kind that delimited the answer, or None),
``n_answer_markers``, ``multiple_answer_markers`` and ``null_reason`` (None unless the
answer is null).
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["MODES", "REASONING_STYLES", "answer_for_mode", "extract_answer"]

MODES = ("default", "strict", "seed")
"""Parser modes, shared by every parser (choice, multi-label, yes/no, option letter):
``default`` (answer extraction + the parser's rules), ``strict`` (the same, ambiguous answers
-> null), ``seed`` (the seed's literal rule over the raw output: seed 000 appendix B for the
choice parser; the parsers' docstrings say what it is where a seed gives no rule)."""

#: name -> (opening tag regex, closing tag regex)
REASONING_STYLES: dict[str, tuple[str, str]] = {
    "think": (r"<think>", r"</think>"),
    "thinking": (r"<thinking>", r"</thinking>"),
    "reasoning": (r"<reasoning>", r"</reasoning>"),
    "thought": (r"<thought>", r"</thought>"),
    "seed:think": (r"<seed:think>", r"</seed:think>"),
    "kimi": (r"\u25c1think\u25b7", r"\u25c1/think\u25b7"),  # ◁think▷ … ◁/think▷
    "THINK": (r"\[THINK\]", r"\[/THINK\]"),
    "begin_of_thought": (r"<\|begin_of_thought\|>", r"<\|end_of_thought\|>"),
}
_STYLE_RES = {name: (re.compile(o, re.I), re.compile(c, re.I)) for name, (o, c) in REASONING_STYLES.items()}

# Tag markers: (kind, regex with one group = the content).
_TAG_MARKERS = (
    ("<answer>", re.compile(r"<answer>(.*?)(?:</answer>|$)", re.I | re.S)),
    ("boxed", re.compile(r"\\boxed\s*\{([^{}]*)\}")),
    ("begin_of_box", re.compile(r"<\|begin_of_box\|>(.*?)(?:<\|end_of_box\|>|$)", re.S)),
)
# Line markers: the content runs from the match end.
_LINE_MARKER = re.compile(
    r"(?<![^\W_])(?:(?:final|correct)\s+)?answer\s*(?:\*\*|__)?\s*[:\uff1a]"   # Answer: / Answer**: / Final answer:
    r"|(?<![^\W_])(?:(?:the|my)\s+)?(?:(?:final|correct)\s+)?answer\s+(?:is|would\s+be|should\s+be|=)"
    r"(?![^\W_])\s*:?",
    re.I,
)
_SENTENCE_END = re.compile(r"[.!?\u3002](?=\s|$)|\s(?:because|since)\b", re.I)
_TAG = re.compile(r"</?[A-Za-z|][^<>\n]{0,30}>")
_MD = re.compile(r"^[\s*_`#>\-]+|[\s*_`]+$")


def _strip_reasoning(text: str, meta: dict) -> str | None:
    removed: list[str] = []
    for name, (o_re, c_re) in _STYLE_RES.items():
        first_close = c_re.search(text)
        first_open = o_re.search(text)
        if first_close and (first_open is None or first_close.start() < first_open.start()):
            text = text[first_close.end():]  # the block was opened by the chat template
            removed.append(f"{name}:implicit_open")
        while True:
            o = o_re.search(text)
            if o is None:
                break
            c = c_re.search(text, o.end())
            if c is None:
                meta["reasoning"] = removed + [name]
                meta["null_reason"] = "unclosed_reasoning"
                return None
            text = text[:o.start()] + " " + text[c.end():]
            removed.append(name)
        last_close = None
        for last_close in c_re.finditer(text):
            pass
        if last_close is not None:  # a second closing tag: everything before it was reasoning too
            text = text[last_close.end():]
            removed.append(f"{name}:stray_close")
    meta["reasoning"] = removed
    return text


def _line_content(text: str, start: int) -> str:
    rest = text[start:]
    line, _, after = rest.partition("\n")
    if not _MD.sub("", line).strip():
        for nxt in after.split("\n"):
            if _MD.sub("", nxt).strip():
                line = nxt
                break
    m = _SENTENCE_END.search(line)
    if m:
        line = line[:m.start()]
    return line


def extract_answer(text: str | None) -> tuple[str | None, dict]:
    """The answer part of a model's raw output, and how it was found.

    Parameters
    ----------
    text: the raw output (any length) or None.

    Returns
    -------
    (answer, meta): ``answer`` is a str (possibly the whole text) or None when the output
    has no answer (empty, an unclosed reasoning block, nothing after the reasoning, an
    empty answer marker); ``meta`` is the JSON-able dict described in the module
    docstring.  Never raises on model text.

    Source: seed 000 appendix B (rule applies to the answer) and D.4 (nulls); the steps
    and the marker list are this project's (module docstring).
    """
    meta: dict = {"reasoning": [], "answer_marker": None, "n_answer_markers": 0,
                  "multiple_answer_markers": False, "null_reason": None}
    if text is None or not str(text).strip():
        meta["null_reason"] = "empty_output"
        return None, meta
    body = _strip_reasoning(unicodedata.normalize("NFC", str(text)), meta)
    if body is None:
        return None, meta
    if not body.strip():
        meta["null_reason"] = "empty_after_reasoning"
        return None, meta
    # (start, end_of_content_span, kind, content)
    markers: list[tuple[int, int, str, str]] = []
    for kind, rx in _TAG_MARKERS:
        for m in rx.finditer(body):
            markers.append((m.start(), m.end(), kind, m.group(1)))
    for m in _LINE_MARKER.finditer(body):
        content = _line_content(body, m.end())
        kind = "final answer" if "final" in m.group(0).lower() else "answer"  # also "the final answer is"
        markers.append((m.start(), m.end() + len(content), kind, content))
    # a marker inside another marker's span counts once (the inner, later one stands)
    markers.sort()
    outer = [mk for mk in markers
             if not any(o is not mk and o[0] < mk[0] and mk[0] < o[1] for o in markers)]
    meta["n_answer_markers"] = len(outer)
    meta["multiple_answer_markers"] = len(outer) > 1
    if not markers:
        return body, meta
    last = markers[-1]
    meta["answer_marker"] = last[2]
    content = _MD.sub("", _TAG.sub(" ", last[3])).strip()
    if not content:
        meta["null_reason"] = "empty_answer_marker"
        return None, meta
    return content, meta


def answer_for_mode(text: str | None, mode: str) -> tuple[str | None, dict]:
    """The text a parser's rules read under parser ``mode``, and the parse meta so far.

    ``seed``: the raw output itself (``""`` for None; meta ``{"mode": "seed"}``, no
    extraction).  ``default`` / ``strict``: :func:`extract_answer` (None when the output
    has no answer; meta ``{"mode": mode}`` plus the extraction's keys).  Raises ValueError
    for a mode not in :data:`MODES`."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    meta: dict = {"mode": mode}
    if mode == "seed":
        return ("" if text is None else str(text)), meta
    answer, ex = extract_answer(text)
    meta.update(ex)
    return answer, meta
