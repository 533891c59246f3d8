"""Yes/no classification rates from a 2x2 confusion table, row by row (numpy only).

"Positive" is the answer "yes" (POPE, Li et al. 2023, §4 and its ``evaluate.py``).  Every
function takes bootstrap weights so one call gives the estimate and all draws: ``w`` is a
float (d, n) matrix (row d: how often each question is in resample d; a row of ones is the
sample itself), as :func:`perceptbench.metrics.bootstrap.bootstrap_counts` passes it.

Definitions (AoiDragon/POPE ``evaluate.py``):

* accuracy = (TP + TN) / (TP + FP + TN + FN)
* precision = TP / (TP + FP); recall = TP / (TP + FN)
* F1 = 2 P R / (P + R) = 2 TP / (2 TP + FP + FN)
* yes-ratio = (TP + FP) / N: the fraction of *predicted* "yes" (not of true "yes", which is
  0.5 on POPE's balanced files whatever the model answers)

A rate whose denominator is 0 is NaN (POPE's own script divides by zero there; lmms-eval and
VLMEvalKit return 0).
"""

from __future__ import annotations

import numpy as np

RATES = ("accuracy", "precision", "recall", "f1", "yes_ratio")
"""The rates :func:`binary_rates` returns, in column order."""


def confusion_counts(w: np.ndarray, pred_pos: np.ndarray, truth_pos: np.ndarray) -> np.ndarray:
    """Weighted (TP, FP, TN, FN) per row of ``w``.

    ``w``: float (d, n) weights; ``pred_pos`` / ``truth_pos``: bool (n,), the predicted and
    the true answer is the positive one ("yes").  Returns float64 (d, 4).  Raises ValueError
    when the lengths differ."""
    w = np.atleast_2d(np.asarray(w, float))
    p, t = np.asarray(pred_pos, bool), np.asarray(truth_pos, bool)
    if p.shape != t.shape or w.shape[1] != p.size:
        raise ValueError(f"confusion_counts: weights {w.shape}, predictions {p.shape}, truths {t.shape} differ")
    cells = np.stack([p & t, p & ~t, ~p & ~t, ~p & t], axis=1).astype(float)  # (n, 4)
    return w @ cells


def binary_rates(counts: np.ndarray) -> np.ndarray:
    """accuracy, precision, recall, F1 and yes-ratio (columns in :data:`RATES` order) of
    (TP, FP, TN, FN) rows ``counts`` (float (d, 4)); float64 (d, 5), NaN where a denominator is 0."""
    c = np.atleast_2d(np.asarray(counts, float))
    tp, fp, tn, fn = c.T
    n = tp + fp + tn + fn
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.stack([(tp + tn) / n, tp / (tp + fp), tp / (tp + fn), 2 * tp / (2 * tp + fp + fn), (tp + fp) / n],
                       axis=1)
    return np.where(np.isfinite(out), out, np.nan)
