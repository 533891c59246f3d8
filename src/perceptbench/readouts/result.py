"""The one parse-result type every answer parser returns (choice, multi-label, yes/no, letter).

Pure Python (``dataclasses`` only): scoring imports it without torch."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["ParseResult"]


@dataclass(frozen=True)
class ParseResult:
    """The parsed response of one model answer.

    Attributes
    ----------
    response:
        The answer in the task's response space, or ``None`` (a null response: unparseable,
        or ambiguous under ``mode="strict"``): an option of the option set (choice parser,
        :func:`~perceptbench.readouts.parse.parse_choice`), ``"yes"``/``"no"``
        (:func:`~perceptbench.readouts.answers.parse_yes_no`), an option letter
        (:func:`~perceptbench.readouts.answers.parse_letter`) or a frozenset of feature
        labels (:func:`~perceptbench.readouts.multilabel.parse_features`; the empty set is
        the answer "no difference").
    ambiguous:
        True when the answer names more than one distinct in-set answer.
    rule:
        Which rule produced ``response`` (each parser's docstring lists its rules);
        ``"ambiguous"`` when strict mode nulled an ambiguous answer, ``"none"`` when there
        is no answer (see ``meta["null_reason"]``).
    mentions:
        The distinct in-set options the answer names (negated ones excluded), in order of
        first mention (choice parser; empty for the others).
    meta:
        JSON-able parse metadata: ``mode``, the answer extraction's keys
        (:func:`~perceptbench.readouts.extract.extract_answer`; absent in ``seed`` mode),
        the parser's own keys and ``null_reason`` (None when the response is not null).
    unknown:
        Multi-label parser: the answer's items in which no feature word was found.
    out_of_set:
        Multi-label parser: recognised labels outside the task's label set (also in
        ``response``).
    """

    response: Any
    ambiguous: bool = False
    rule: str = "none"
    mentions: tuple = ()
    meta: dict = field(default_factory=dict, compare=False)
    unknown: tuple = ()
    out_of_set: frozenset = frozenset()

    @property
    def labels(self) -> Any:
        """The response under the multi-label parser's name (a frozenset of labels or None)."""
        return self.response

    def record_meta(self, mode: str, rule: str | None = None, **extra: Any) -> dict:
        """The record's ``run_meta.parse`` dict: ``rule`` (``rule`` overrides this result's),
        ``ambiguous``, the parser's meta, ``mode``, then ``extra`` (JSON-able values)."""
        return {"rule": self.rule if rule is None else rule, "ambiguous": self.ambiguous, **self.meta,
                "mode": mode, **extra}
