"""KL divergence between two truncated (top-k) next-token distributions, numpy only.

The one formula behind VSI (:mod:`perceptbench.vsi.samples`: KL(p_clean || p_perturbed) over
the top-50 first-answer tokens, seed 002 §2, D.1); it knows nothing of records or conditions.

Support of truncated distributions (documented in ``docs/metrics.md``): see
:func:`support_distributions` and :func:`kl_topk`.
"""

from __future__ import annotations

from typing import Hashable, Sequence

import numpy as np

__all__ = ["FLOOR", "LOGPROB_TOL", "MASS_TOL", "distribution_problem", "kl_topk", "support_distributions"]

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
