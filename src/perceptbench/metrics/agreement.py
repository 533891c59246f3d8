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
    return mean_from_sums(np.where(valid, x, 0.0).sum(-1), valid.sum(-1))


def mean_from_sums(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """``num / den`` with NaN where ``den == 0``: the one implementation of a proportion or
    mean over valid trials (B, accuracy; seed 000 D.1), whichever form gathered the sums
    (:func:`masked_mean` over gathered trials, :func:`masked_mean_counts` over count
    weights).  ``num``, ``den``: arrays of one shape -> float64 of that shape."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.maximum(den, 1), np.nan)


def _wsum(w: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Weighted sums over stimuli: ``w`` (k, n), ``x`` (M, n) -> float64 (k, M), ``[d, m] =
    sum_i w[d, i] x[m, i]`` (one matrix product).  float32 ``w`` are resample counts
    (integers summing to n per row, :func:`perceptbench.metrics.bootstrap.resample_counts`):
    with an integer-valued ``x`` and ``n * max |x| < 2**24`` every partial sum is an integer
    below 2**24, exact in float32 whatever the order, so the product is taken in float32 and
    equals the float64 product bit for bit at half the cost.  Any other input: float64."""
    x = np.asarray(x, float)
    with _one_blas_thread():
        if w.dtype == np.float32 and x.size and w.shape[1] * float(np.abs(x).max()) < 2 ** 24 \
                and (x == np.round(x)).all():
            return (x.astype(np.float32) @ w.T).T.astype(float)
        return (x @ np.asarray(w, float).T).T


_BLAS = None


def _one_blas_thread():
    """Context limiting numpy's BLAS to one thread (threadpoolctl; ~6 us).  The count
    products are small to medium matrices; on a shared 2-core machine OpenBLAS's worker
    threads contend with other processes and one (10, 120) x (120, 2000) product took
    11-120 ms on two threads against 0.7-1.3 ms on one (load average 14)."""
    global _BLAS
    if _BLAS is None:
        from threadpoolctl import ThreadpoolController

        _BLAS = ThreadpoolController()
    return _BLAS.limit(limits=1, user_api="blas")


def _patterns(v: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """Distinct rows of ``v`` (M, n) and the row of each (None: all rows equal the first)."""
    if (v == v[:1]).all():
        return v[:1], None
    u, inv = np.unique(v, axis=0, return_inverse=True)
    return u, inv.ravel()


def _wsum_by_pattern(w: np.ndarray, v: np.ndarray) -> np.ndarray:
    """:func:`_wsum` of rows ``v`` (M, n) computed once per distinct row (respondents mostly
    share their valid mask: every encoder trial is parseable) -> (k, M)."""
    u, inv = _patterns(v)
    s = _wsum(w, u)
    return np.broadcast_to(s, (s.shape[0], v.shape[0])) if inv is None else s[:, inv]


def masked_mean_counts(w: np.ndarray, x: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """:func:`masked_mean` of several respondents on resamples given as count weights:
    ``w`` float (k, n) (how often each stimulus is in each resample, see
    :func:`perceptbench.metrics.bootstrap.resample_counts`), ``x`` (M, n), ``valid`` bool
    (M, n) -> float64 (k, M); NaN where nothing is valid.  Equals
    ``masked_mean(x[idx], valid[idx])`` per respondent; bit for bit when ``x`` is
    integer-valued (every sum is then an exact integer)."""
    v = np.asarray(valid, bool).astype(float)
    return mean_from_sums(_wsum(w, np.asarray(x, float) * v), _wsum_by_pattern(w, v))


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


def pairwise_agreement(answers: np.ndarray) -> np.ndarray:
    """Per item, the fraction of observer pairs giving the same answer (the human–human
    agreement on each item; 1/3 expected for three-way guessing, 1 when all agree).

    ``answers``: int array (J, n), J >= 2 observers' answer codes on n items (every observer
    answered every item).  Returns float64 (n,): sum_a C(c_a, 2) / C(J, 2), c_a the number of
    observers giving answer a.  Raises ValueError for fewer than two observers."""
    answers = np.asarray(answers)
    J = answers.shape[0]
    if J < 2:
        raise ValueError(f"pairwise agreement needs two or more observers, got {J}")
    same = sum((answers[a][None] == answers[a + 1:]).sum(0) for a in range(J - 1))
    return same / (J * (J - 1) / 2)
