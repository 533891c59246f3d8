"""Error consistency kappa (Geirhos, Meding & Wichmann 2020; seed 000 Eq. 2, appendix D.2).

kappa = (c_obs - c_exp) / (1 - c_exp), with c_exp = p_m p_h + (1 - p_m)(1 - p_h).

* pairwise form: both sides are 0/1 correctness vectors (one observer each);
* aggregate form: the human side is the panel's per-stimulus accuracy p_i in [0, 1] and
  c_obs = mean_i [m_i p_i + (1 - m_i)(1 - p_i)], which equals the mean of the pairwise
  c_obs over observers by linearity (seed 000 D.2).

kappa is undefined when c_exp == 1 (both sides always right, or always wrong): it is
returned as NaN, never 1.0, and the caller reports the reason.
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np

from .agreement import _patterns, _wsum, _wsum_by_pattern

UNDEFINED_REASON = "kappa undefined: expected agreement c_exp = 1 (a side is always correct or always wrong)"


def kappa_from_sums(n_v, s_agree, s_m, s_h) -> np.ndarray:
    """kappa from its sums over the valid trials: the one implementation of seed 000 Eq. 2.

    ``n_v``: valid trials; ``s_agree``: sum of m h + (1 - m)(1 - h) (trials where both
    sides agree, for 0/1 sides); ``s_m`` / ``s_h``: sum of each side; float or int arrays
    broadcastable to one shape.  c_obs = s_agree / n_v, p_m = s_m / n_v, p_h = s_h / n_v,
    c_exp = p_m p_h + (1 - p_m)(1 - p_h), kappa = (c_obs - c_exp) / (1 - c_exp).  Returns
    float64, NaN where ``n_v == 0`` or c_exp == 1 within 1e-12 (undefined, never 1.0).
    Every form in this module (gathering, count weights, pairwise, ceilings) only gathers
    these sums and calls this, so a value from one form equals another's whenever their
    sums are equal (always for 0/1 inputs: integer sums are exact in float64)."""
    n_v, s_agree, s_m, s_h = np.broadcast_arrays(*(np.asarray(a, float) for a in (n_v, s_agree, s_m, s_h)))
    shape = n_v.shape
    n_v, s_agree, s_m, s_h = (np.atleast_1d(a) for a in (n_v, s_agree, s_m, s_h))  # in-place ops need arrays
    ok = n_v > 0
    den = np.maximum(n_v, 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        c_obs = s_agree / den
        p_m = s_m / den
        p_h = s_h / den
        if not ok.all():
            bad = ~ok
            c_obs[bad] = np.nan
            p_m[bad] = np.nan
            p_h[bad] = np.nan
        c_exp = p_m * p_h
        q = 1 - p_m
        q *= 1 - p_h
        c_exp += q  # p_m p_h + (1 - p_m)(1 - p_h)
        c_obs -= c_exp
        np.subtract(1, c_exp, out=q)
        c_obs /= q  # (c_obs - c_exp) / (1 - c_exp)
        np.subtract(c_exp, 1.0, out=q)
        np.abs(q, out=q)
        c_obs[q <= 1e-12] = np.nan  # c_exp == 1 (np.isclose(c_exp, 1, rtol=0, atol=1e-12)): undefined
    return c_obs.reshape(shape)


def _agree_from_counts(n_v, s_a, s_b, s_ab):
    """Agreement count of two 0/1 sides from their counts: both 1 (``s_ab``) plus both 0
    (``n_v - s_a - s_b + s_ab``).  Integers: exact in float64 in any order."""
    return 2.0 * np.asarray(s_ab, float) + (np.asarray(n_v, float) - s_a) - s_b


def kappa(m: np.ndarray, h: np.ndarray, valid: np.ndarray | None = None) -> np.ndarray:
    """Cohen-style error consistency over the last axis (gathering form of
    :func:`kappa_from_sums`).

    ``m``: model correctness, 0/1 (..., n).  ``h``: human correctness, 0/1 or panel
    accuracy in [0, 1], broadcastable to ``m``.  ``valid``: bool mask of scored trials
    (e.g. model response not null).  Returns float64 (...,), NaN where c_exp == 1 or no
    trial is valid.
    """
    m = np.asarray(m, dtype=float)
    h = np.asarray(h, dtype=float)
    m, h = np.broadcast_arrays(m, h)
    valid = np.ones(m.shape, bool) if valid is None else np.broadcast_to(np.asarray(valid, bool), m.shape)
    out = kappa_from_sums(valid.sum(-1), np.where(valid, m * h + (1 - m) * (1 - h), 0.0).sum(-1),
                          np.where(valid, m, 0.0).sum(-1), np.where(valid, h, 0.0).sum(-1))
    return out


def kappa_gathered(m: np.ndarray, h: np.ndarray, valid: np.ndarray):
    """``stat(idx) = kappa(m[idx], h[idx], valid[idx])`` for :func:`~perceptbench.metrics.bootstrap.bootstrap`,
    equal to it bit for bit but faster: the per-trial terms of :func:`kappa`'s sums are computed
    once on the n trials and gathered, so each draw gathers four arrays and sums them (the same
    values summed in the same order).  ``m``, ``h``: float (n,); ``valid``: bool (n,); ``idx``:
    int (d, n) -> float64 (d,)."""
    m, h = np.asarray(m, float), np.asarray(h, float)
    valid = np.asarray(valid, bool)
    agree = np.where(valid, m * h + (1 - m) * (1 - h), 0.0)
    s_m, s_h = np.where(valid, m, 0.0), np.where(valid, h, 0.0)

    def stat(idx: np.ndarray) -> np.ndarray:
        return kappa_from_sums(valid[idx].sum(-1), agree[idx].sum(-1), s_m[idx].sum(-1), s_h[idx].sum(-1))
    return stat


def kappa_resampled(m: np.ndarray, h: np.ndarray, valid: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """:func:`kappa_gathered` of M respondents on the draws of one index matrix: ``m`` 0/1
    float (M, n), ``h`` float (n,) (the panel's per-stimulus accuracy, shared), ``valid`` bool
    (M, n), ``idx`` int (d, n) -> float64 (d, M), column j equal to
    ``kappa_gathered(m[j], h, valid[j])(idx)`` bit for bit (seed 000 Eq. 2, D.5).

    The integer sums (valid trials, the model's correct ones) are one product of the
    resample counts (:func:`perceptbench.metrics.bootstrap.resample_counts`) with the
    respondents' 0/1 rows, exact in any order; the non-integer ones (agreement with ``h``, the
    sum of ``h``) are gathered along each draw and summed row by row, numpy's pairwise order
    of :func:`kappa_gathered` (the sum of ``h`` once per distinct valid mask).  ``m`` must be
    0/1 (any other value: ValueError)."""
    from .bootstrap import resample_counts

    m, h = np.asarray(m, float), np.asarray(h, float)
    valid = np.asarray(valid, bool)
    if not _binary(m):
        raise ValueError("kappa_resampled: m must be 0/1 (correctness)")
    idx = np.asarray(idx)
    w = resample_counts(idx)
    n_v = _wsum_by_pattern(w, valid.astype(float))  # (d, M)
    s_m = _wsum(w, np.where(valid, m, 0.0))
    agree = np.where(valid, m * h + (1 - m) * (1 - h), 0.0)  # the per-trial terms of kappa_gathered
    u, inv = _patterns(valid)
    sums = _gathered_row_sums(np.concatenate([agree, np.where(u, h[None], 0.0)]), idx)
    s_agree, s_h = sums[:, :len(agree)], sums[:, len(agree):]
    s_h = s_h if inv is None else s_h[:, inv]
    return kappa_from_sums(n_v, s_agree, s_m, np.broadcast_to(s_h, s_agree.shape))


_DRAW_BLOCK = 100
"""Draws gathered at a time by :func:`_gathered_row_sums` (the block's indices and gathered rows
stay in cache while every row of terms is summed: about 1.4x faster than whole matrices)."""


def _gathered_row_sums(rows: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """``rows[k][idx].sum(-1)`` for every row: ``rows`` float (K, n), ``idx`` int (d, n) ->
    float64 (d, K).  Each value is numpy's pairwise sum of one gathered (draw, stimuli) row of a
    2-D array, so it equals the per-draw form's to the last bit, whatever the block."""
    d = idx.shape[0]
    out = np.empty((d, len(rows)))
    for s in range(0, d, _DRAW_BLOCK):
        block = idx[s:s + _DRAW_BLOCK]
        for k, row in enumerate(rows):
            out[s:s + _DRAW_BLOCK, k] = np.take(row, block).sum(-1)
    return out


def _binary(x: np.ndarray) -> bool:
    return bool(((x == 0) | (x == 1)).all())


def kappa_pairwise_mean(m: np.ndarray, observers: np.ndarray, valid: np.ndarray | None = None) -> np.ndarray:
    """Mean over observers of kappa(m, c_j) (Geirhos et al.'s pairwise form).

    ``m``: (..., n); ``observers``: (J, ..., n) 0/1.  Returns (...,); observers whose kappa
    is undefined are left out of the mean (NaN if all are).  0/1 inputs take a count path
    (one matrix product per side, no (J, ..., n) temporaries) equal to :func:`kappa` to
    the last bit (issue 12); other inputs go through :func:`kappa`."""
    m = np.asarray(m, dtype=float)
    observers = np.asarray(observers, dtype=float)
    if observers.shape[1:] == m.shape and _binary(m) and _binary(observers):
        v = np.ones(m.shape) if valid is None else np.broadcast_to(np.asarray(valid, bool), m.shape).astype(float)
        mv = m * v
        n_v = v.sum(-1)
        s_m = mv.sum(-1)
        s_h = np.einsum("j...n,...n->j...", observers, v)
        s_mh = np.einsum("j...n,...n->j...", observers, mv)
        k = np.ascontiguousarray(kappa_from_sums(n_v[None], _agree_from_counts(n_v[None], s_m[None], s_h, s_mh),
                                                 s_m[None], s_h))
    else:
        k = kappa(m[None], observers, None if valid is None else valid[None])
    with np.errstate(invalid="ignore"):
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return np.nanmean(k, axis=0)


def kappa_pairwise_counts(w: np.ndarray, m: np.ndarray, observers: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """:func:`kappa_pairwise_mean` of M respondents on resamples given as count weights
    (:func:`perceptbench.metrics.bootstrap.resample_counts`): ``w`` float (k, n), ``m`` 0/1
    (M, n), ``observers`` 0/1 (J, n), ``valid`` bool (M, n) -> float64 (k, M).  Every sum in
    kappa is an integer count, one matrix product per side over all respondents and
    observers at once, so the values equal the gathering form bit for bit.  Seed 000 Eq. 2
    and D.5 (kappa recomputed whole on each draw)."""
    v = np.asarray(valid, bool).astype(float)
    mv = np.asarray(m, float) * v
    observers = np.asarray(observers, float)
    M, J = v.shape[0], observers.shape[0]
    n_v = _wsum_by_pattern(w, v)  # (k, M)
    s_m = _wsum(w, mv)
    u, inv = _patterns(v)  # the observers' side depends on the valid mask only
    s_h = _wsum(w, (observers[:, None, :] * u[None]).reshape(J * len(u), -1)).reshape(-1, J, len(u))
    s_h = s_h.transpose(1, 0, 2) if inv is None else s_h.transpose(1, 0, 2)[:, :, inv]
    s_mh = _wsum(w, (observers[:, None, :] * mv[None]).reshape(J * M, -1)).reshape(-1, J, M).transpose(1, 0, 2)
    k = np.ascontiguousarray(kappa_from_sums(n_v[None], _agree_from_counts(n_v[None], s_m[None], s_h, s_mh),
                                                 s_m[None], s_h))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(k, axis=0)


def kappa_counts(w: np.ndarray, m: np.ndarray, h: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """:func:`kappa` (aggregate or pairwise form) of M respondents on resamples given as
    count weights: ``w`` float (k, n), ``m`` 0/1 (M, n), ``h`` in [0, 1] (n,) or (M, n),
    ``valid`` bool (M, n) -> float64 (k, M), NaN where c_exp == 1 or nothing is valid.  Sums
    of a non-integer ``h`` (panel accuracy) are taken in another order than the gathering
    form: equal to it to rounding (~1e-16).  Seed 000 Eq. 2."""
    v = np.asarray(valid, bool).astype(float)
    m = np.asarray(m, float)
    h = np.asarray(h, float)
    n_v = _wsum_by_pattern(w, v)
    if h.ndim == 1:  # one human side for all respondents: its sums depend on the valid mask only
        u, inv = _patterns(v)
        s_h = _wsum(w, h[None] * u)
        s_h = s_h if inv is None else s_h[:, inv]
    else:
        s_h = _wsum(w, h * v)
    hb = np.broadcast_to(h, m.shape)
    return kappa_from_sums(n_v, _wsum(w, (m * hb + (1 - m) * (1 - hb)) * v), _wsum(w, m * v), s_h)


def pairwise_ceiling(observers: np.ndarray) -> np.ndarray:
    """kappa for every observer pair: observers (J, ..., n) 0/1 -> (J(J-1)/2, ...)
    in itertools.combinations order (45 pairs for the 10 silhouette observers).  0/1
    observers take a count path (one Gram matrix per draw) equal to :func:`kappa` to the
    last bit (issue 12)."""
    pairs = list(itertools.combinations(range(observers.shape[0]), 2))
    observers = np.asarray(observers, dtype=float)
    if pairs and _binary(observers):
        ii = np.array([i for i, _ in pairs])
        jj = np.array([j for _, j in pairs])
        s = observers.sum(-1)  # (J, ...)
        gram = np.einsum("i...n,j...n->...ij", observers, observers)  # (..., J, J)
        s_ab = np.moveaxis(gram[..., ii, jj], -1, 0)  # (P, ...)
        n_v = np.full(s_ab.shape, float(observers.shape[-1]))
        return np.ascontiguousarray(kappa_from_sums(n_v, _agree_from_counts(n_v, s[ii], s[jj], s_ab), s[ii], s[jj]))
    a = observers[[i for i, _ in pairs]]
    b = observers[[j for _, j in pairs]]
    return kappa(a, b)


def pairwise_ceiling_counts(w: np.ndarray, observers: np.ndarray) -> np.ndarray:
    """:func:`pairwise_ceiling` on resamples given as count weights: ``w`` (k, n) (rows
    summing to n), ``observers`` 0/1 (J, n) -> float64 (J(J-1)/2, k), pairs in
    itertools.combinations order.  One product gives every draw's Gram matrix; the sums are
    integers, so the values equal ``pairwise_ceiling(observers[:, idx])`` bit for bit."""
    observers = np.asarray(observers, float)
    J, n = observers.shape
    pairs = list(itertools.combinations(range(J), 2))
    ii = np.array([i for i, _ in pairs], int)
    jj = np.array([j for _, j in pairs], int)
    s = _wsum(w, observers).T  # (J, k)
    s_ab = _wsum(w, observers[ii] * observers[jj]).T  # (P, k)
    n_v = np.full(s_ab.shape, float(n))
    return np.ascontiguousarray(kappa_from_sums(n_v, _agree_from_counts(n_v, s[ii], s[jj], s_ab), s[ii], s[jj]))


def leave_one_out_ceiling(observers: np.ndarray) -> np.ndarray:
    """Each observer against the mean accuracy of the other J-1 (aggregate form):
    observers (J, ..., n) 0/1 -> (J, ...)."""
    J = observers.shape[0]
    total = observers.sum(0, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):  # one observer (J = 1): no others, NaN is the answer
        others = (total - observers) / (J - 1)
    return kappa(observers, others)
