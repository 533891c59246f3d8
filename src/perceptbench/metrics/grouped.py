"""Grouped all-correct accuracy and cluster ratios (numpy only).

A grouped accuracy scores a *group* of questions as right only when every question in it is
right: MMVP's pair accuracy (both questions of a CLIP-blind pair, Tong et al. 2024 §3,
``scripts/gpt_grader.py``), HallusionBench's figure accuracy fAcc (every question about one
figure) and question accuracy qAcc (one question across every figure variant; Guan et al.
2024 §4, ``utils.py`` ``get_eval_fig`` / ``get_eval_pair_all``).

Such groups cut across each other (a HallusionBench figure and a question group share
questions), so the bootstrap resamples *clusters* that contain whole groups (MMVP: the pair;
HallusionBench: the question set), and every rate is a ratio of cluster sums:
:func:`ratio_of_sums` gives it for each row of bootstrap weights.
"""

from __future__ import annotations

from typing import Hashable, Sequence

import numpy as np


def all_correct_by_group(correct: np.ndarray, groups: Sequence[Hashable]) -> tuple[list, np.ndarray]:
    """(group labels in first-seen order, bool (G,) whether every question of the group is right).

    ``correct``: bool (n,); ``groups``: one hashable label per question.  Raises ValueError when
    the lengths differ."""
    c = np.asarray(correct, bool)
    if len(groups) != c.size:
        raise ValueError(f"all_correct_by_group: {c.size} answers, {len(groups)} group labels")
    order: dict = {}
    for g, ok in zip(groups, c):
        order[g] = order.get(g, True) and bool(ok)
    return list(order), np.array(list(order.values()), bool)


def ratio_of_sums(w: np.ndarray, num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """``(w @ num) / (w @ den)`` per row of the weights ``w`` (float (d, k), k clusters);
    ``num``/``den``: (k,) per-cluster counts (e.g. groups all right / groups).  float64 (d,),
    NaN where the weighted denominator is 0."""
    w = np.atleast_2d(np.asarray(w, float))
    d = w @ np.asarray(den, float)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(d > 0, (w @ np.asarray(num, float)) / np.where(d > 0, d, 1.0), np.nan)
