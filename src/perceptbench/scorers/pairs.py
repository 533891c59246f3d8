"""Which model pairs a per-pair analysis compares: one rule for the report's paired differences
(:mod:`perceptbench.reports.paired`) and the VSI cross-model analyses
(:mod:`perceptbench.vsi.analysis`, :mod:`perceptbench.vsi.pooled`) (issue 25).

Comparing every pair of N models costs N(N-1)/2 comparisons, so a run's analyses would grow
with the square of its models.  The rule (:func:`select_pairs`, :data:`PAIR_MODES`):

* ``all``: every pair, N(N-1)/2;
* ``neighbours``: each model against the next one in a ranking of the models (best first), N-1;
* ``auto`` (the default): every pair up to :data:`ALL_PAIRS_MAX` models, the ranking
  neighbours above.

Each caller says what its ranking is (the report: each model's own headline score; VSI: each
model's median VSI of the cell, the ``vsi_median`` row) and notes where only neighbours were
compared (:func:`neighbours_note`).
"""

from __future__ import annotations

import itertools
import math
from typing import Callable, Mapping, Sequence

__all__ = ["PAIR_MODES", "ALL_PAIRS_MAX", "check_pairs", "ranking", "select_pairs", "neighbours_note"]

PAIR_MODES = ("auto", "all", "neighbours")
"""Which model pairs a per-pair analysis computes: ``all`` (every pair, N(N-1)/2), ``neighbours``
(each model against the next one in the ranking, N-1 pairs) or ``auto`` (all pairs up to
:data:`ALL_PAIRS_MAX` models, neighbours above)."""

ALL_PAIRS_MAX = 20
"""Most models for which ``auto`` compares every pair (190 pairs); above it, the ranking
neighbours only (400 models would otherwise give 79,800 pairs per comparison, the cost growing
with the square of the number of models, issue 25)."""


def check_pairs(mode: str) -> str:
    """``mode`` when it is one of :data:`PAIR_MODES`; ValueError naming it otherwise."""
    if mode not in PAIR_MODES:
        raise ValueError(f"pairs {mode!r} not in {PAIR_MODES}")
    return mode


def ranking(names: Sequence[str], score: Callable[[str], float] | Mapping[str, float]) -> list[str]:
    """``names`` ranked by ``score`` (a callable or mapping name -> float), highest first; a NaN
    or missing score last; ties by name."""
    get = score if callable(score) else (lambda m: score.get(m, math.nan))

    def key(m):
        v = get(m)
        v = math.nan if v is None else float(v)
        return (0, -v, m) if math.isfinite(v) else (1, 0.0, m)
    return sorted(names, key=key)


def select_pairs(names: Sequence[str], mode: str,
                 score: Callable[[str], float] | Mapping[str, float]) -> tuple[list[tuple[str, str]], bool]:
    """The (a, b) pairs to compare among ``names`` (sorted by name) under ``mode``
    (:data:`PAIR_MODES`), and whether they are the ranking neighbours.

    ``all`` (or ``auto`` with at most :data:`ALL_PAIRS_MAX` names): every pair, a before b by
    name, in :func:`itertools.combinations` order; ``neighbours`` (or ``auto`` above the
    limit): consecutive models of :func:`ranking` by ``score`` (evaluated only then), the
    better-ranked one as ``a``, N-1 pairs in ranking order.  Raises ValueError for an unknown
    mode."""
    check_pairs(mode)
    if mode == "all" or (mode == "auto" and len(names) <= ALL_PAIRS_MAX):
        return list(itertools.combinations(names, 2)), False
    ranked = ranking(names, score)
    return list(zip(ranked, ranked[1:])), True


def neighbours_note(n_models: int, ranked_by: str, flag: str) -> str:
    """The note of a row computed for ranking neighbours only: how many of the pairs, ranked
    by what (``ranked_by``), and how to ask for every pair (``flag``, e.g. ``score --pairs
    all``)."""
    return (f"only the {n_models - 1} neighbours in the ranking by {ranked_by} are compared (not all "
            f"{n_models * (n_models - 1) // 2} pairs of the {n_models} models, more than {ALL_PAIRS_MAX}); "
            f"{flag} compares every pair")
