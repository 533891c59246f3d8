"""Trial conditions and the respondent label: how the record ``model`` field names a model
answering under a condition (:func:`respondent_label`), and the one way to read it back
(:func:`parse_respondent_label`).  Here, at the bottom of the import graph, because both the
respondents (which write labels) and the scorers (which pair a condition's records with the
model's own image trials, e.g. the image-withheld VSI cell) need the rule."""

from __future__ import annotations

import re

DEFAULT_CONDITION = "image"
"""The condition every task was designed for: the stimulus image shown with the question."""

_LABEL = re.compile(r"(?P<model>.+)\[(?P<condition>[A-Za-z_][A-Za-z0-9_]*)\]")
"""``{model}[{condition}]``; a condition is a name (letters, digits, ``_``), so a
``[prompt=...]`` suffix of :func:`perceptbench.provenance.split_prompt_versions` is none."""


def respondent_label(model_name: str, condition: str) -> str:
    """The record ``model`` of ``model_name`` answering under ``condition``: the name itself
    under :data:`DEFAULT_CONDITION`, else ``"{name}[{condition}]"`` (scored as its own
    respondent, never pooled with the image trials; the form of
    :func:`perceptbench.provenance.split_prompt_versions`'s ``[prompt=...]``).  Inverse:
    :func:`parse_respondent_label`."""
    return model_name if condition == DEFAULT_CONDITION else f"{model_name}[{condition}]"


def parse_respondent_label(label: str) -> tuple[str, str]:
    """(model name, condition) of a record's ``model`` field, the inverse of
    :func:`respondent_label`: ``"llava[image_withheld]"`` -> ``("llava", "image_withheld")``;
    a label that does not end in ``[condition]`` (``"llava"``, ``"llava[prompt=1a2b3c4d]"``) is
    the model itself under :data:`DEFAULT_CONDITION`.  Exact because no model may be named
    so that it ends in ``[word]``
    (:func:`perceptbench.models.registry.parse_model_arg` refuses such a name)."""
    m = _LABEL.fullmatch(label)
    return (m["model"], m["condition"]) if m else (label, DEFAULT_CONDITION)
