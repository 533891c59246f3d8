"""Plain-loop restatements of the metrics' formulas and shared test data, for tests that compare the
package's vectorised forms against them (seed 000 Eq. 2), and the Hypothesis settings of the property tests."""

import math

import numpy as np
from hypothesis import HealthCheck, settings, strategies as st
from hypothesis.extra.numpy import arrays


N, D = 17, 40  # stimuli, draws


def kappa_by_hand(m, h, valid=None) -> float:
    """Seed 000 Eq. 2 by plain loops: c_obs, p_m, p_h over the valid trials; NaN when none
    is valid or c_exp == 1 (to 1e-12)."""
    rows = [(float(a), float(b)) for a, b, ok in zip(m, h, [True] * len(m) if valid is None else valid) if ok]
    if not rows:
        return float("nan")
    n = len(rows)
    c_obs = sum(a * b + (1 - a) * (1 - b) for a, b in rows) / n
    p_m = sum(a for a, _ in rows) / n
    p_h = sum(b for _, b in rows) / n
    c_exp = p_m * p_h + (1 - p_m) * (1 - p_h)
    return float("nan") if abs(c_exp - 1) <= 1e-12 else (c_obs - c_exp) / (1 - c_exp)


def pairwise_mean_by_hand(m, observers, valid=None) -> float:
    """The mean of :func:`kappa_by_hand` against each observer, undefined kappas left out; NaN if none."""
    ks = [kappa_by_hand(m, o, valid) for o in observers]
    ks = [k for k in ks if not np.isnan(k)]
    return float(np.mean(ks)) if ks else float("nan")


def assert_same(a, b):
    """Assert ``a`` and ``b`` equal element for element as float64 arrays (bit for bit; NaN equals NaN)."""
    np.testing.assert_array_equal(np.asarray(a, float), np.asarray(b, float))


SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


binary = st.integers(2, 40).flatmap(
    lambda n: st.tuples(arrays(np.int8, n, elements=st.integers(0, 1)),
                        arrays(np.int8, n, elements=st.integers(0, 1))))


# 56 cosines with many exact ties, a pattern on which numpy's default (unstable) sort
# does not return tied entries in index order; digits d -> cosine -d / 10
TIE_PATTERN = "11000000212112211120220121022200201001110000211012112221"


def support_probs(keys, logprobs, complete, support, floor=1e-12):
    """One side on the shared support, as docs/metrics.md words the rule: listed tokens keep
    their probability; a support token missing from the list gets min(smallest listed
    probability, remaining mass / (missing + 1)) (nothing when the list is complete); the rest
    bucket what is left; each element floored, then renormalised."""
    prob = {k: math.exp(lp) for k, lp in zip(keys, logprobs)}
    rest = max(0.0, 1.0 - sum(prob.values()))
    missing = [k for k in support if k not in prob]
    share = 0.0 if complete else min(min(prob.values()), rest / (len(missing) + 1))
    vec = [prob.get(k, share) for k in support] + [max(0.0, rest - share * len(missing))]
    vec = [max(x, floor) for x in vec]
    total = sum(vec)
    return [x / total for x in vec]


def kl_by_hand(clean: dict, withheld: dict) -> float:
    """KL(p_clean || p_withheld) in nats of two ``run_meta.vsi`` distributions, by the rule of
    :func:`support_probs` on their shared support (docs/metrics.md)."""
    def keys(v):
        return v["token_ids"] if v["token_ids"] is not None else v["tokens"]

    support = list(dict.fromkeys(list(keys(clean)) + list(keys(withheld))))
    p = support_probs(keys(clean), clean["logprobs"], clean["complete"], support)
    q = support_probs(keys(withheld), withheld["logprobs"], withheld["complete"], support)
    return sum(a * (math.log(a) - math.log(b)) for a, b in zip(p, q))


def percentile(xs, f):
    """The ``f`` quantile of ``xs`` by linear interpolation (numpy's default method)."""
    xs = sorted(xs)
    pos = f * (len(xs) - 1)
    lo = math.floor(pos)
    return xs[lo] + (pos - lo) * (xs[min(lo + 1, len(xs) - 1)] - xs[lo])
