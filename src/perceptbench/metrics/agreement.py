"""Behavioural agreement B, accuracy, the position floor and the null bracket
(seed 000 appendix D.1, D.3, D.4).  All functions are vectorised over leading axes."""

from __future__ import annotations

import numpy as np


def masked_mean(x: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """Mean of ``x`` over the last axis where ``valid``; NaN where nothing is valid.

    ``x``, ``valid``: arrays of the same shape (..., n); returns shape (...,) float64.
    """
    x = np.asarray(x, dtype=float)
    valid = np.asarray(valid, dtype=bool)
    num = np.where(valid, x, 0.0).sum(-1)
    den = valid.sum(-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.maximum(den, 1), np.nan)


def _wsum(w: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Weighted sums over stimuli: ``w`` (k, n), ``x`` (M, n) -> float64 (k, M), ``[d, m] =
    sum_i w[d, i] x[m, i]`` (one matrix product).  When both are integer-valued and no sum
    can pass 2**24 (counts summing to n per row times ``max |x|``), the product is taken in
    float32: every partial sum is then an integer below 2**24, exact in float32 whatever
    the order, so the result equals the float64 product bit for bit at half the cost."""
    x = np.asarray(x, float)
    if x.size and w.size and _small_ints(x) and _small_ints(w) \
            and float(np.abs(w).sum(1).max()) * float(np.abs(x).max()) < 2 ** 24:
        return (x.astype(np.float32) @ w.astype(np.float32).T).T.astype(float)
    return (x @ w.T).T


def _small_ints(a: np.ndarray) -> bool:
    return bool((a == np.round(a)).all())


def _wsum_by_pattern(w: np.ndarray, v: np.ndarray) -> np.ndarray:
    """:func:`_wsum` of 0/1 rows ``v`` (M, n) computed once per distinct row (respondents
    mostly share their valid mask: every encoder trial is parseable) -> (k, M)."""
    u, inv = np.unique(v, axis=0, return_inverse=True)
    s = _wsum(w, u)
    return np.broadcast_to(s, (s.shape[0], v.shape[0])) if len(u) == 1 else s[:, inv.ravel()]


def masked_mean_counts(w: np.ndarray, x: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """:func:`masked_mean` of several respondents on resamples given as count weights:
    ``w`` float (k, n) (how often each stimulus is in each resample, see
    :func:`perceptbench.metrics.bootstrap.resample_counts`), ``x`` (M, n), ``valid`` bool
    (M, n) -> float64 (k, M); NaN where nothing is valid.  Equals
    ``masked_mean(x[idx], valid[idx])`` per respondent; bit for bit when ``x`` is
    integer-valued (every sum is then an exact integer)."""
    v = np.asarray(valid, bool).astype(float)
    num = _wsum(w, np.asarray(x, float) * v)
    den = _wsum_by_pattern(w, v)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.maximum(den, 1), np.nan)


def agreement_b_resampled(match: np.ndarray, valid: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """``agreement_b(match[idx], valid[idx])`` from the resample count matrix of ``idx``
    (one matrix-vector product per side, no gathered (d, n) arrays): ``match``, ``valid``
    bool (n,), ``idx`` int (d, n) -> float64 (d,), equal bit for bit (seed 000 D.1, D.5)."""
    from .bootstrap import resample_counts

    return masked_mean_counts(resample_counts(idx), np.asarray(match)[None], np.asarray(valid)[None])[:, 0]


def agreement_b(match: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """B = (1/n) sum_i 1[r_i ~ h_i] over parseable trials with a human target
    (seed 000 D.1).  ``match``: bool (..., n); ``valid``: bool (..., n)."""
    return masked_mean(match, valid)


def position_floor(targets: np.ndarray, k: int = 3) -> float:
    """Position-guessing floor max_k f_k, f_k = (1/n) sum_i 1[h_i = k] (seed 000 D.3).

    ``targets``: int array (n,) of target positions 1..k.  Raises ValueError if empty.
    """
    targets = np.asarray(targets)
    if targets.size == 0:
        raise ValueError("no targets")
    freqs = np.array([(targets == j).mean() for j in range(1, k + 1)])
    return float(freqs.max())


def null_bracket(b: float, nu: float) -> tuple[float, float]:
    """Bracket of the fully scored value: (1-nu) B <= B_full <= (1-nu) B + nu
    (seed 000 D.4), ``nu`` = null fraction in [0, 1]."""
    return (1 - nu) * b, (1 - nu) * b + nu
