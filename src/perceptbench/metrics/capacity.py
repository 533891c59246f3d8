"""Effect replication a(k) for series counting (seed 000 §2.3 "Behavioral Effect Replication").

a(k) = accuracy on stimuli rendered with k series.  The capacity estimate is the smallest
rendered k at which a(k) falls below half of the baseline, the mean of a(k) over k <= 4
(perceptbench's operationalisation, issue 2).  The effect replicates when the capacity
lies in the human categorical-colour band 6-12 (Healey 1996; Ware 2013; seed 000 §2.1).
"""

from __future__ import annotations

import numpy as np

HUMAN_BAND = (6, 12)
BASELINE_MAX_K = 4
THRESHOLD_FRACTION = 0.5
"""capacity_k is the first k where a(k) falls below this fraction of the baseline (issue 2)."""
CAPACITY_RULE = (f"capacity_k = the smallest k with a(k) below {THRESHOLD_FRACTION:g} x the model's mean "
                 f"a(k \u2264 {BASELINE_MAX_K})")
"""The capacity_k rule in words, for figures and tables (:func:`capacity_k`)."""


def capacity_threshold(a_k: dict[int, float]) -> float:
    """The a(k) level capacity_k is read at: :data:`THRESHOLD_FRACTION` x the mean of the finite
    a(k) over k <= :data:`BASELINE_MAX_K` (``a_k``: {k: a(k)}, proportions); NaN without such a
    level.  The same baseline as :func:`capacity_k`."""
    base = [v for k, v in a_k.items() if k <= BASELINE_MAX_K and np.isfinite(v)]
    return THRESHOLD_FRACTION * float(np.mean(base)) if base else float("nan")


def accuracy_by_k(correct: np.ndarray, valid: np.ndarray, k: np.ndarray, levels: np.ndarray) -> np.ndarray:
    """a(k) for each level: correct/valid/k (..., n) (k ints), levels (L,) ->
    (..., L) float64, NaN for a level with no valid trial."""
    correct = np.asarray(correct, float)
    valid = np.asarray(valid, bool)
    onehot = (np.asarray(k)[..., :, None] == np.asarray(levels)).astype(float)  # (..., n, L)
    num = np.einsum("...n,...nl->...l", np.where(valid, correct, 0.0), onehot)
    den = np.einsum("...n,...nl->...l", valid.astype(float), onehot)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.maximum(den, 1), np.nan)


def capacity_k(a: np.ndarray, levels: np.ndarray) -> np.ndarray:
    """Smallest level with a(k) < 0.5 * mean(a(k <= 4)).

    ``a``: (..., L) from :func:`accuracy_by_k`; returns (...,) float64, NaN when a(k)
    never falls below the threshold within the rendered range or the baseline is 0/NaN.
    """
    levels = np.asarray(levels)
    base_mask = levels <= BASELINE_MAX_K
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        base = np.nanmean(np.where(base_mask, a, np.nan), axis=-1)
    thresh = THRESHOLD_FRACTION * base
    below = a < thresh[..., None]  # NaN compares False
    any_below = below.any(-1)
    first = np.argmax(below, axis=-1)
    out = np.where(any_below & (base > 0), levels[first].astype(float), np.nan)
    return out
