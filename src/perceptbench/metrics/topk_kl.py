"""KL divergence between two truncated (top-k) next-token distributions, numpy only.

The one formula behind VSI (:mod:`perceptbench.vsi.samples`: KL(p_clean || p_perturbed) over
the top-50 first-answer tokens, seed 002 §2, D.1); it knows nothing of records or conditions.

Support of truncated distributions (documented in ``docs/metrics.md``): see
:func:`support_distributions` and :func:`kl_topk`.
"""

from __future__ import annotations

from typing import Hashable, Sequence

import numpy as np

__all__ = ["FLOOR", "LOGPROB_TOL", "MASS_TOL", "distribution_problem", "invalid_rows", "kl_topk", "kl_topk_batch",
           "support_distributions"]

FLOOR = 1e-12
"""Smallest probability any support element gets before renormalising (keeps KL finite)."""

LOGPROB_TOL = 1e-6
"""Largest log-probability accepted (nats): 0 plus float rounding of a provider's or a
log-softmax's certain token."""

MASS_TOL = 1e-3
"""Largest excess of a listed distribution's total probability over 1: sum exp(logprobs) <= 1 +
MASS_TOL.  Float32 softmax and providers' rounded logprobs (e.g. 6 decimals, k = 20) stay
orders of magnitude below it; a list that double-counts tokens or is not a distribution does not."""


def distribution_problem(keys: Sequence[Hashable], logprobs: Sequence, k_asked: int | None = None) -> str | None:
    """What makes a listed next-token distribution unusable, in one phrase, or None when it is fine.

    ``keys``: token ids or strings; ``logprobs``: their natural-log probabilities.  Problems (the
    first that applies): not a list of numbers of the keys' length; empty; a duplicate key; a
    non-finite entry (NaN, +-inf, or null as JSON stores them); an entry above
    :data:`LOGPROB_TOL`; a total probability above 1 + :data:`MASS_TOL`.  ``k_asked`` is not
    used in the checks (the list may be shorter than asked).  Never raises."""
    try:
        lp = np.asarray([np.nan if x is None else x for x in logprobs], dtype=np.float64)
        keys = list(keys)
    except (TypeError, ValueError):
        return "log-probabilities are not numbers"
    if lp.ndim != 1 or len(keys) != lp.shape[0]:
        return f"{len(keys)} keys but {lp.size} log-probabilities"
    if not keys:
        return "empty distribution"
    try:
        if len(set(keys)) != len(keys):
            return "duplicate token keys"
    except TypeError:
        return "unhashable token keys"
    bad = ~np.isfinite(lp) | (lp > LOGPROB_TOL)
    if bad.any():
        i = int(np.argmax(bad))
        return f"log-probability {lp[i]:+.6g} at token {keys[i]!r}: log-probabilities must be finite and <= 0"
    mass = float(np.exp(lp).sum())
    if mass > 1.0 + MASS_TOL:
        return f"total probability {mass:.6g} > 1 (tolerance {MASS_TOL:g})"
    return None


def support_distributions(p_keys: Sequence[Hashable], p_logprobs: Sequence[float],
                          q_keys: Sequence[Hashable], q_logprobs: Sequence[float], *,
                          p_complete: bool = False, q_complete: bool = False,
                          floor: float = FLOOR) -> tuple[np.ndarray, np.ndarray, list]:
    """Put two (possibly truncated) next-token distributions on one support.

    Support = union of both key sets (in order of first appearance: P's keys, then Q's new
    ones) plus one ``<rest>`` bucket.  Per side with known probabilities p_t (t in its list)
    and remaining mass r = max(0, 1 - sum p_t): a support token missing from that side's list
    gets ``min(p_min, r / (m + 1))`` where p_min is the side's smallest listed probability
    (a missing token cannot be more probable than the k-th) and m the number of its missing
    support tokens; the rest bucket gets what is left of r.  Every element is then floored at
    ``floor`` and the vector renormalised to sum 1.  A ``complete`` side (the whole vocabulary
    listed) assigns missing tokens the floor only.

    Returns (p, q, support) with p, q float64 arrays of shape (len(support),); the last
    support element is the string ``"<rest>"``.  Raises ValueError naming the side (``p``/``q``)
    and the :func:`distribution_problem` of a list that is not a distribution.
    """
    pk, pl = _check_side(p_keys, p_logprobs, "p")
    qk, ql = _check_side(q_keys, q_logprobs, "q")
    support: list = list(pk)
    seen = set(pk)
    for k in qk:
        if k not in seen:
            support.append(k)
            seen.add(k)
    p = _on_support(pk, pl, support, p_complete, floor)
    q = _on_support(qk, ql, support, q_complete, floor)
    return p, q, support + ["<rest>"]


def _check_side(keys, logprobs, name) -> tuple[list, np.ndarray]:
    keys = list(keys)
    problem = distribution_problem(keys, logprobs)
    if problem is not None:
        raise ValueError(f"{name}: {problem}")
    return keys, np.asarray(logprobs, dtype=np.float64)


def _on_support(keys: list, lp: np.ndarray, support: list, complete: bool, floor: float) -> np.ndarray:
    probs = np.exp(np.minimum(lp, 0.0))
    known = dict(zip(keys, probs))
    rest = max(0.0, 1.0 - float(probs.sum()))
    missing = [k for k in support if k not in known]
    out = np.empty(len(support) + 1, dtype=np.float64)
    share = 0.0 if complete else min(float(probs.min()), rest / (len(missing) + 1))
    for i, k in enumerate(support):
        out[i] = known.get(k, share)
    out[-1] = max(0.0, rest - share * len(missing))
    out = np.maximum(out, floor)
    return out / out.sum()


def kl_topk(p_keys: Sequence[Hashable], p_logprobs: Sequence[float], q_keys: Sequence[Hashable],
            q_logprobs: Sequence[float], *, p_complete: bool = False, q_complete: bool = False,
            floor: float = FLOOR) -> float:
    """KL(P || Q) in nats between two top-k next-token distributions (seed 002 §2: VSI).

    ``*_keys``: token ids (local models) or token strings (API providers), length k;
    ``*_logprobs``: their natural-log probabilities (float, <= 0).  The two lists are put on
    one support by :func:`support_distributions` (union of both top-k sets + one remaining-mass
    bucket; a token missing on one side gets min(its k-th probability, remaining mass / (m+1)),
    floored at 1e-12), then KL = sum_t p_t (ln p_t - ln q_t).  Returns a float >= 0; exactly 0
    for identical inputs.  Raises ValueError as :func:`support_distributions`.
    """
    p, q, _ = support_distributions(p_keys, p_logprobs, q_keys, q_logprobs, p_complete=p_complete,
                                    q_complete=q_complete, floor=floor)
    return float(max(0.0, np.sum(p * (np.log(p) - np.log(q)))))


def invalid_rows(keys: np.ndarray, logprobs: np.ndarray) -> np.ndarray:
    """Which of many equal-length distributions :func:`distribution_problem` rejects, bool (m,):
    ``keys`` int (m, k) codes (equal exactly when the tokens are equal), ``logprobs`` float64
    (m, k); a row is invalid when it holds a duplicate key, a non-finite entry, an entry above
    :data:`LOGPROB_TOL`, or a total probability above 1 + :data:`MASS_TOL` (each row's total
    summed as :func:`distribution_problem` sums one list, so the verdicts are the same).  k >= 1."""
    keys, lp = np.asarray(keys), np.asarray(logprobs, dtype=np.float64)
    dup = (np.diff(np.sort(keys, axis=1), axis=1) == 0).any(1) if keys.shape[1] > 1 else np.zeros(len(keys), bool)
    bad = (~np.isfinite(lp) | (lp > LOGPROB_TOL)).any(1)
    with np.errstate(over="ignore", invalid="ignore"):
        mass = np.exp(lp).sum(1)
    return dup | bad | (mass > 1.0 + MASS_TOL)


def kl_topk_batch(p_keys: np.ndarray, p_logprobs: np.ndarray, q_keys: np.ndarray, q_logprobs: np.ndarray, *,
                  p_complete: np.ndarray | bool = False, q_complete: np.ndarray | bool = False,
                  floor: float = FLOOR, chunk: int = 2048) -> np.ndarray:
    """:func:`kl_topk` of m pairs at once, float64 (m,) in nats, equal to it bit for bit.

    ``p_keys`` int (m, kp) and ``q_keys`` int (m, kq): the lists' keys as integer codes, equal
    exactly when the tokens (or token ids) are equal; ``p_logprobs`` (m, kp), ``q_logprobs``
    (m, kq): natural-log probabilities; ``p_complete``/``q_complete``: bool (m,) or one bool.
    Every P list has one length and every Q list one length (group pairs by their lengths).
    The support, the missing-token shares, the floor and the renormalisation are those of
    :func:`support_distributions` (seed 002 §2, D.1), computed with the same operations in the
    same order: each pair's vectors are built in :func:`support_distributions`' element order
    (P's keys, then Q's keys not in P, then the rest bucket) and summed as one row of pairs with
    the same support size, which numpy sums as it sums a lone vector, so no value moves
    (tests/unit/metrics/test_topk_kl.py compares the two on random distributions).  Raises
    ValueError naming the first pair whose P or Q list is not a distribution
    (:func:`invalid_rows`)."""
    pk, qk = np.asarray(p_keys), np.asarray(q_keys)
    plp, qlp = np.asarray(p_logprobs, dtype=np.float64), np.asarray(q_logprobs, dtype=np.float64)
    if pk.ndim != 2 or pk.shape != plp.shape or qk.ndim != 2 or qk.shape != qlp.shape or len(pk) != len(qk):
        raise ValueError(f"keys and log-probabilities must be (m, k) arrays of one m, got {pk.shape}, {plp.shape}, "
                         f"{qk.shape}, {qlp.shape}")
    m = len(pk)
    if m and (pk.shape[1] == 0 or qk.shape[1] == 0):
        raise ValueError("empty distribution")
    for side, k, lp in (("p", pk, plp), ("q", qk, qlp)):
        bad = invalid_rows(k, lp) if m else np.zeros(0, bool)
        if bad.any():
            i = int(np.argmax(bad))
            raise ValueError(f"pair {i}, {side}: not a distribution "
                             f"({distribution_problem(k[i].tolist(), lp[i].tolist())})")
    pc = np.broadcast_to(np.asarray(p_complete, bool), (m,))
    qc = np.broadcast_to(np.asarray(q_complete, bool), (m,))
    out = np.empty(m, dtype=np.float64)
    for s in range(0, m, chunk):  # bounds the (chunk, kq, kp) key comparison
        e = min(m, s + chunk)
        out[s:e] = _kl_block(pk[s:e], plp[s:e], qk[s:e], qlp[s:e], pc[s:e], qc[s:e], floor)
    return out


def _pos(x: np.ndarray) -> np.ndarray:
    """``max(0.0, x)`` elementwise as Python's ``max`` gives it (x when x > 0, else 0.0)."""
    return np.where(x > 0.0, x, 0.0)


def _side(probs: np.ndarray, n_missing: np.ndarray, complete: np.ndarray):
    """Per row, what :func:`_on_support` computes of one side before the support: (share of a
    missing token, rest bucket before the floor)."""
    rest = _pos(1.0 - probs.sum(1))
    lo, even = probs.min(1), rest / (n_missing + 1)
    share = np.where(complete, 0.0, np.where(even < lo, even, lo))  # min(lo, even) as Python's min
    return share, _pos(rest - share * n_missing)


def _kl_block(pk, plp, qk, qlp, pc, qc, floor) -> np.ndarray:
    m, kp = pk.shape
    pp, qp = np.exp(np.minimum(plp, 0.0)), np.exp(np.minimum(qlp, 0.0))
    eq = qk[:, :, None] == pk[:, None, :]  # (m, kq, kp): Q's key j is P's key i
    q_new = ~eq.any(2)  # Q's keys not in P's list, in Q's order
    p_in_q = eq.any(1)
    q_at = np.take_along_axis(qp, eq.argmax(1), axis=1)  # Q's probability of P's key i (where p_in_q)
    n_new = q_new.sum(1)
    share_p, last_p = _side(pp, n_new, pc)
    share_q, last_q = _side(qp, kp - p_in_q.sum(1), qc)
    q_on_p = np.where(p_in_q, q_at, share_q[:, None])
    out = np.empty(m, dtype=np.float64)
    for n in np.unique(n_new):  # one support size s = kp + n per group: rows of one length
        rows = np.flatnonzero(n_new == n)
        g, s = len(rows), kp + int(n)
        p = np.empty((g, s + 1))
        q = np.empty((g, s + 1))
        p[:, :kp], p[:, kp:s], p[:, s] = pp[rows], share_p[rows, None], last_p[rows]
        q[:, :kp], q[:, s] = q_on_p[rows], last_q[rows]
        q[:, kp:s] = qp[rows][q_new[rows]].reshape(g, s - kp)
        p = np.maximum(p, floor)
        q = np.maximum(q, floor)
        p = p / p.sum(1, keepdims=True)
        q = q / q.sum(1, keepdims=True)
        out[rows] = _pos((p * (np.log(p) - np.log(q))).sum(1))
    return out
