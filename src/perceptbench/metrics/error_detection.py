"""How well a score ranks errors, and how well a confidence is calibrated (numpy/scipy only).

Each function is one formula over arrays (row by row where it says so, for bootstrap draws);
none knows what the score is.  Used by the VSI analyses (:mod:`perceptbench.vsi.analysis`,
seed 002 §3, §4, B.2, D.2).  Pinned definitions (docs/metrics.md, "VSI analyses", repeats them):

* **Positive class** = per-sample error (the callers pass ``error`` over the answer-parseable
  subset only).
* **AUROC** = P(score of a random error > score of a random correct) + 1/2 P(tie): the
  Mann-Whitney form with average ranks, identical to ``sklearn.metrics.roc_auc_score`` (which
  draws tied scores as one diagonal ROC segment, i.e. counts a tie as 1/2).
* **< 5 samples in a class** (errors or correct answers) -> the value is NaN with a note; never
  0.5.  Inside bootstrap draws a draw is undefined (NaN, dropped and counted) only when a class
  is empty.
* **PRR@80** (seed 002 D.2): with n samples, r = floor(0.2 n) of the highest ranking
  scores are rejected.  ``R0 = mean(error)``, ``R80 = (sum(error) - E_rejected) / (n - r)``,
  ``PRR@80 = (R0 - R80) / R0``.  Scores tied at the rejection threshold are rejected
  fractionally (each tied sample contributes the tie group's mean error), so the value does not
  depend on sample order.  NaN when ``R0 == 0`` or r == 0.
* **ECE** with 10 equal-width bins ``[0, .1), ..., [.9, 1.0]`` (last bin closed; seed 002 B.2):
  ``sum_b (n_b / n) |acc_b - conf_b|``; **Brier** = ``mean((conf - correct)^2)``.
* **Paired bootstrap** (seed 002 D.1: B = 1000): one index matrix from
  :func:`perceptbench.metrics.bootstrap.resample_indices` for both signals; p-value two-sided,
  ``p = min(1, 2 min((#{d <= 0} + 1)/(B + 1), (#{d >= 0} + 1)/(B + 1)))`` over the draws d of
  the difference.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..core.text import counted
from .bootstrap import N_BOOT_B, resample_indices
from .ranks import rankdata  # scipy.stats.rankdata's values without importing scipy.stats (issue 25)

MIN_CLASS = 5
"""Fewer errors or fewer correct answers than this -> NaN row with a note (never 0.5)."""

N_BINS = 10
"""Equal-width calibration bins (seed 002 B.2)."""

REJECT_FRACTION = 0.2
"""PRR@80 rejects the worst-ranked 20% (seed 002 D.2)."""


# ------------------------------------------------------------------ array functions
@dataclass(frozen=True)
class Defined:
    """A value with the reason it is undefined (``note``) when it is NaN."""

    value: float
    note: str = ""


def class_check(error: np.ndarray, min_class: int = MIN_CLASS) -> str:
    """'' if both classes of the bool array ``error`` (n,) have >= ``min_class`` members, else
    the reason (e.g. ``"3 errors < 5"``, ``"1 error < 5"``; ``"no parseable answers"`` when ``error`` is empty:
    every clean answer was null, counted in ``n_parse_null``, so no error count exists)."""
    e = np.asarray(error, bool)
    if e.size == 0:
        return "no parseable answers (all null: see n_parse_null)"
    n_err, n_ok = int(e.sum()), int((~e).sum())
    if n_err < min_class:
        return f"{counted(n_err, 'error')} < {min_class}"
    if n_ok < min_class:
        return f"{counted(n_ok, 'correct answer')} < {min_class}"
    return ""


def auroc_rows(error: np.ndarray, score: np.ndarray) -> np.ndarray:
    """AUROC of ``score`` for the positive class ``error``, row by row.

    ``error``: bool (d, n); ``score``: float (d, n), higher = more likely an error.
    Returns float64 (d,): Mann-Whitney U / (n_pos n_neg) with average ranks, so a tie counts
    1/2 (as ``sklearn.metrics.roc_auc_score``); NaN in rows where a class is empty.
    Seed 002 D.2 (AUROC_VSI with error as positive class)."""
    error = np.atleast_2d(np.asarray(error, bool))
    score = np.atleast_2d(np.asarray(score, float))
    ranks = rankdata(score, axis=1)  # average ranks over ties
    n_pos = error.sum(1)
    n_neg = error.shape[1] - n_pos
    u = np.where(error, ranks, 0.0).sum(1) - n_pos * (n_pos + 1) / 2.0
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where((n_pos > 0) & (n_neg > 0), u / (n_pos * n_neg), np.nan)


def auroc_draws(error: np.ndarray, score: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """``auroc_rows(error[idx], score[idx])`` without sorting every draw.

    ``error`` bool (n,), ``score`` float (n,), ``idx`` int (d, n) resample indices.  Each
    draw is summarised by how often it picks each distinct score value among errors and among
    correct answers (one ``bincount``); U = sum over values of n_err(v) (n_ok(< v) + n_ok(v)/2).
    Returns float64 (d,), NaN where a class is empty."""
    error = np.asarray(error, bool)
    score = np.asarray(score, float)
    idx = np.atleast_2d(idx)
    d = idx.shape[0]
    uniq, code = np.unique(score, return_inverse=True)
    k = uniq.size
    flat = (np.arange(d)[:, None] * k + code[idx]).ravel()
    e = error[idx].ravel()
    pos = np.bincount(flat[e], minlength=d * k).reshape(d, k).astype(float)
    neg = np.bincount(flat[~e], minlength=d * k).reshape(d, k).astype(float)
    below = np.cumsum(neg, 1) - neg
    u = (pos * (below + 0.5 * neg)).sum(1)
    n_pos, n_neg = pos.sum(1), neg.sum(1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where((n_pos > 0) & (n_neg > 0), u / (n_pos * n_neg), np.nan)


def auroc(error: np.ndarray, score: np.ndarray, min_class: int = MIN_CLASS) -> Defined:
    """AUROC (see :func:`auroc_rows`) of one sample set; NaN with a note when a class has
    fewer than ``min_class`` members.  ``error`` bool (n,), ``score`` float (n,)."""
    why = class_check(error, min_class)
    if why:
        return Defined(math.nan, why)
    return Defined(float(auroc_rows(error, score)[0]))


def prr_rows(error: np.ndarray, score: np.ndarray, reject: float = REJECT_FRACTION) -> np.ndarray:
    """Prediction-rejection ratio at coverage 1 - ``reject`` (PRR@80 for 0.2), row by row.

    ``error``: bool (d, n); ``score``: float (d, n), higher = rejected first.  Formula (seed
    002 D.2): r = floor(reject n); R0 = mean(error); R_keep = (sum(error) - E_rej) / (n - r);
    PRR = (R0 - R_keep) / R0, with scores tied at the threshold rejected fractionally (each
    contributes its tie group's mean error).  Returns float64 (d,); NaN where R0 = 0 or r = 0."""
    error = np.atleast_2d(np.asarray(error, float))
    score = np.atleast_2d(np.asarray(score, float))
    d, n = score.shape
    r = int(math.floor(reject * n + 1e-9))
    if r == 0 or r >= n:
        return np.full(d, np.nan)
    thr = -np.partition(-score, r - 1, axis=1)[:, r - 1][:, None]  # r-th largest score
    above = score > thr
    tie = score == thr
    n_above = above.sum(1)
    n_tie = tie.sum(1)
    e_rej = (error * above).sum(1) + (r - n_above) * (error * tie).sum(1) / n_tie
    total = error.sum(1)
    r0 = total / n
    r_keep = (total - e_rej) / (n - r)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(r0 > 0, (r0 - r_keep) / r0, np.nan)


def bin_index(conf: np.ndarray, n_bins: int = N_BINS) -> np.ndarray:
    """Equal-width bin of each confidence (float array of any shape, in [0, 1]): b with
    b/n_bins <= conf < (b+1)/n_bins, conf = 1 in the last bin (seed 002 B.2: 10 bins).  Returns
    int of the same shape.  Raises ValueError for confidences outside [0, 1] or not finite."""
    conf = np.asarray(conf, float)
    if np.any((conf < 0) | (conf > 1)) or np.any(~np.isfinite(conf)):
        raise ValueError("confidences must lie in [0, 1]")
    return np.minimum((conf * n_bins).astype(int), n_bins - 1)


def ece_rows(conf: np.ndarray, correct: np.ndarray, n_bins: int = N_BINS) -> np.ndarray:
    """Expected calibration error with ``n_bins`` equal-width bins, row by row.

    ``conf``: float in [0, 1] (d, n); ``correct``: bool (d, n).  Bin b holds
    b/n_bins <= conf < (b+1)/n_bins (conf = 1 in the last bin).  ECE = sum_b (n_b/n)
    |mean(correct in b) - mean(conf in b)| (seed 002 B.2).  Returns float64 (d,).
    Raises ValueError for confidences outside [0, 1]."""
    conf = np.atleast_2d(np.asarray(conf, float))
    correct = np.atleast_2d(np.asarray(correct, float))
    b = bin_index(conf, n_bins)
    d, n = conf.shape
    rows = np.repeat(np.arange(d)[:, None], n, 1)
    gap = np.zeros((d, n_bins))
    np.add.at(gap, (rows, b), correct - conf)  # per bin: sum(correct) - sum(conf)
    return np.abs(gap).sum(1) / n


def ece_draws(conf: np.ndarray, correct: np.ndarray, idx: np.ndarray, n_bins: int = N_BINS) -> np.ndarray:
    """``ece_rows(conf[idx], correct[idx])`` with each sample's bin found once.

    ``conf`` float in [0, 1] (n,), ``correct`` bool (n,), ``idx`` int (d, n) resample indices.
    Each draw's per-bin sums of (correct - conf) are one weighted ``bincount``, which adds the
    terms in the order ``np.add.at`` does in :func:`ece_rows`, so the values are equal bit for
    bit.  Returns float64 (d,).  Raises ValueError for confidences outside [0, 1]."""
    conf = np.asarray(conf, float)
    b = bin_index(conf, n_bins)
    idx = np.atleast_2d(idx)
    d, n = idx.shape
    terms = np.asarray(correct, float) - conf
    gap = np.bincount((np.arange(d)[:, None] * n_bins + b[idx]).ravel(), weights=terms[idx].ravel(),
                      minlength=d * n_bins).reshape(d, n_bins)
    return np.abs(gap).sum(1) / n


def brier_rows(conf: np.ndarray, correct: np.ndarray) -> np.ndarray:
    """Brier score mean((conf - correct)^2), row by row; (d, n) -> (d,) float64."""
    conf = np.atleast_2d(np.asarray(conf, float))
    correct = np.atleast_2d(np.asarray(correct, float))
    return ((conf - correct) ** 2).mean(1)


def quadrant_counts(correct: np.ndarray, high: np.ndarray) -> dict[str, int]:
    """Counts of the four correctness x confidence quadrants (bool (n,) arrays)."""
    c, h = np.asarray(correct, bool), np.asarray(high, bool)
    return {"correct_high": int((c & h).sum()), "correct_low": int((c & ~h).sum()),
            "wrong_high": int((~c & h).sum()), "wrong_low": int((~c & ~h).sum())}


def average_rank_fraction(x: np.ndarray) -> np.ndarray:
    """Average rank / n, in (0, 1], of a float array (n,)."""
    x = np.asarray(x, float)
    return rankdata(x) / max(x.size, 1)


@dataclass(frozen=True)
class PairedDiff:
    """Paired-bootstrap difference a - b of two AUROCs on the same samples."""

    diff: float
    low: float
    high: float
    p: float
    n_draws: int
    n_dropped: int
    seed: int
    note: str = ""


def paired_auroc_diff(error: np.ndarray, score_a: np.ndarray, score_b: np.ndarray, *, seed: int,
                      n_draws: int = N_BOOT_B, min_class: int = MIN_CLASS) -> PairedDiff:
    """AUROC(score_a) - AUROC(score_b) with a paired percentile bootstrap (same resampled
    samples for both; :func:`resample_indices`) and the two-sided bootstrap p-value of
    the module docstring.  Arrays (n,).  NaN fields with a note when a class has fewer
    than ``min_class`` members."""
    error = np.asarray(error, bool)
    why = class_check(error, min_class)
    if why:
        return PairedDiff(math.nan, math.nan, math.nan, math.nan, n_draws, 0, seed, why)
    sa, sb = np.asarray(score_a, float), np.asarray(score_b, float)
    est = float(auroc_rows(error, sa)[0] - auroc_rows(error, sb)[0])
    idx = resample_indices(error.size, n_draws, seed)
    d = auroc_draws(error, sa, idx) - auroc_draws(error, sb, idx)
    ok = np.isfinite(d)
    d = d[ok]
    if d.size == 0:
        return PairedDiff(est, math.nan, math.nan, math.nan, n_draws, n_draws, seed, "every draw undefined")
    lo, hi = np.percentile(d, [2.5, 97.5])
    B = d.size
    p = min(1.0, 2 * min((np.sum(d <= 0) + 1) / (B + 1), (np.sum(d >= 0) + 1) / (B + 1)))
    return PairedDiff(est, float(lo), float(hi), float(p), n_draws, int((~ok).sum()), seed)
