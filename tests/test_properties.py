"""Property tests (Hypothesis): invariants that must hold for every input, not just the
hand-picked ones (issue 14)."""

import numpy as np
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from perceptbench.metrics.agreement import agreement_b
from perceptbench.metrics.bootstrap import bootstrap
from perceptbench.metrics.error_consistency import kappa, pairwise_ceiling
from perceptbench.readouts.multilabel import parse_features
from perceptbench.readouts.parse import parse_choice

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
binary = st.integers(2, 40).flatmap(
    lambda n: st.tuples(arrays(np.int8, n, elements=st.integers(0, 1)),
                        arrays(np.int8, n, elements=st.integers(0, 1))))


@SETTINGS
@given(binary)
def test_kappa_is_symmetric_in_its_two_respondents(pair):
    a, b = pair
    ka, kb = kappa(a, b), kappa(b, a)
    assert (np.isnan(ka) and np.isnan(kb)) or abs(ka - kb) < 1e-12


@SETTINGS
@given(binary, st.randoms(use_true_random=False))
def test_scores_do_not_depend_on_stimulus_order(pair, rnd):
    a, b = pair
    perm = np.array(rnd.sample(range(len(a)), len(a)))
    k0, k1 = kappa(a, b), kappa(a[perm], b[perm])
    assert (np.isnan(k0) and np.isnan(k1)) or abs(k0 - k1) < 1e-12
    valid = np.ones(len(a), bool)
    assert agreement_b(a == b, valid) == agreement_b((a == b)[perm], valid)


@SETTINGS
@given(st.integers(2, 30).flatmap(lambda n: st.tuples(
    st.lists(st.integers(0, 4), min_size=n, max_size=n), st.lists(st.integers(0, 4), min_size=n, max_size=n))),
    st.permutations(range(5)))
def test_b_is_invariant_under_a_joint_relabelling(pair, relabel):
    r, h = (np.array(x) for x in pair)
    m = np.array(relabel)
    valid = np.ones(len(r), bool)
    assert agreement_b(r == h, valid) == agreement_b(m[r] == m[h], valid)


@SETTINGS
@given(st.integers(3, 40).flatmap(lambda n: st.tuples(
    st.integers(0, 2 ** 16), arrays(np.int8, (3, n), elements=st.integers(0, 1)))))
def test_pairwise_ceiling_is_bounded(seed_obs):
    _, obs = seed_obs
    pw = pairwise_ceiling(obs.astype(float))
    finite = pw[np.isfinite(pw)]
    assert ((finite <= 1 + 1e-12) & (finite >= -1 - 1e-12)).all()


@SETTINGS
@given(arrays(np.float64, st.integers(5, 60), elements=st.floats(-100, 100)), st.integers(0, 1000))
def test_bootstrap_interval_contains_the_estimate_of_the_mean(x, seed):
    assume(np.ptp(x) > 1e-6)  # non-degenerate data
    r = bootstrap(lambda i: x[i].mean(1), len(x), n_draws=400, seed=seed)
    assert r.low <= r.estimate + 1e-9 and r.estimate - 1e-9 <= r.high


@settings(max_examples=400, deadline=None)
@given(st.text())
def test_parsers_never_raise_on_arbitrary_text(text):
    res = parse_choice(text, (1, 2, 3))
    assert res.response in (None, 1, 2, 3)
    parse_choice(text, ("airplane", "bear", "car"))
    ml = parse_features(text)
    assert ml.labels is None or isinstance(ml.labels, frozenset)
