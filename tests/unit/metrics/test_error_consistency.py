import numpy as np
import pytest

from perceptbench.metrics.agreement import agreement_b, null_bracket, position_floor
from perceptbench.metrics.bootstrap import bootstrap, ci_halfwidth_bound, resample_counts, resample_indices
from perceptbench.metrics.capacity import accuracy_by_k, capacity_k
from perceptbench.metrics.error_consistency import (
    kappa, kappa_pairwise_mean, leave_one_out_ceiling, pairwise_ceiling)


def test_kappa_matches_hand_computation():
    m = np.array([1, 1, 0, 0, 1, 0, 1, 1])
    h = np.array([1, 0, 0, 1, 1, 0, 1, 1])
    c_obs = 6 / 8
    pm, ph = 5 / 8, 5 / 8
    c_exp = pm * ph + (1 - pm) * (1 - ph)
    assert kappa(m, h) == pytest.approx((c_obs - c_exp) / (1 - c_exp))


def test_kappa_undefined_is_nan_not_one():
    assert np.isnan(kappa(np.ones(5), np.ones(5)))
    assert np.isnan(kappa(np.zeros(5), np.zeros(5)))


def test_aggregate_cobs_equals_mean_pairwise_cobs():
    rng = np.random.default_rng(1)
    obs = rng.integers(0, 2, (10, 50)).astype(float)
    m = rng.integers(0, 2, 50).astype(float)
    p = obs.mean(0)
    agg_cobs = np.mean(m * p + (1 - m) * (1 - p))
    pw_cobs = np.mean([(m == o).mean() for o in obs])
    assert agg_cobs == pytest.approx(pw_cobs)
    # the two kappa forms differ only through the chance correction (seed 000 D.2)
    assert abs(kappa(m, p) - kappa_pairwise_mean(m, obs)) < 0.05


def test_ceilings_shapes_and_values():
    obs = np.array([[1, 0, 1, 1], [1, 0, 0, 1], [0, 1, 1, 1]], float)
    pw = pairwise_ceiling(obs)
    assert pw.shape == (3,)
    assert pw[0] == pytest.approx(kappa(obs[0], obs[1]))
    loo = leave_one_out_ceiling(obs)
    assert loo[2] == pytest.approx(kappa(obs[2], obs[:2].mean(0)))


def test_agreement_floor_bracket():
    assert agreement_b(np.array([1, 0, 1, 1]), np.array([1, 1, 1, 0])) == pytest.approx(2 / 3)
    assert position_floor(np.array([1, 2, 2, 3, 2])) == pytest.approx(0.6)
    assert null_bracket(0.5, 0.1) == pytest.approx((0.45, 0.55))


def test_bootstrap_seeded_paired_and_vectorised():
    x = np.random.default_rng(0).integers(0, 2, 80).astype(float)
    calls = []

    def stat(idx):
        calls.append(idx.shape)
        return x[idx].mean(1)

    a = bootstrap(stat, 80, n_draws=1000, seed=3)
    b = bootstrap(stat, 80, n_draws=1000, seed=3)
    c = bootstrap(stat, 80, n_draws=1000, seed=4)
    assert (a.low, a.high) == (b.low, b.high)
    assert (a.low, a.high) != (c.low, c.high)
    assert calls == [(1, 80), (1000, 80)] * 3  # one vectorised call per bootstrap
    assert a.low <= a.estimate <= a.high
    assert a.high - a.low <= 2 * ci_halfwidth_bound(80) + 0.02


def test_bootstrap_drops_and_counts_undefined_draws():
    m = np.array([1, 1, 1, 1, 0], float)
    h = np.array([1, 1, 1, 1, 1], float)
    r = bootstrap(lambda i: kappa(m[i], h[i]), 5, n_draws=500, seed=0)
    assert r.estimate == 0.0  # c_exp = p_m < 1: defined
    idx = resample_indices(5, 500, 0)
    assert r.n_dropped == int((m[idx] == 1).all(1).sum()) > 0  # draws without the error: c_exp = 1
    both = bootstrap(lambda i: kappa(h[i], h[i]), 5, n_draws=200, seed=0)
    assert np.isnan(both.estimate) and both.n_dropped == 200 and np.isnan(both.low)


def test_stratified_resampling_keeps_counts():
    strata = np.repeat(np.arange(3), [2, 3, 5])
    idx = resample_indices(10, 50, 0, strata)
    assert all((np.bincount(strata[row], minlength=3) == [2, 3, 5]).all() for row in idx)


@pytest.mark.parametrize("ci_n, bound", [(80, 0.110), (120, 0.089), (40, 0.155), (500, 0.044)])
def test_ci_halfwidth_bounds_of_seed(ci_n, bound):
    assert round(ci_halfwidth_bound(ci_n), 3) == bound


def test_capacity():
    levels = np.arange(2, 9)
    k = np.repeat(levels, 2)
    correct = np.array([1, 1, 1, 1, 1, 0, 1, 1, 0, 1, 0, 0, 0, 0], float)
    a = accuracy_by_k(correct, np.ones_like(correct, bool), k, levels)
    assert a.tolist() == [1, 1, 0.5, 1, 0.5, 0, 0]
    # baseline mean a(k<=4) = 5/6; threshold 5/12; first k below: 7
    assert capacity_k(a, levels) == 7
    assert np.isnan(capacity_k(np.ones(7), levels))


def test_binary_count_path_of_pairwise_kappa_equals_the_generic_kappa_bit_for_bit():
    """Issue 12: 0/1 inputs take a count path in kappa_pairwise_mean and pairwise_ceiling;
    it must give kappa()'s float64 values exactly (undefined pairs, all-null draws included)."""
    import itertools
    import warnings

    from perceptbench.metrics import error_consistency as ec

    rng = np.random.default_rng(7)
    obs = (rng.random((6, 50)) < 0.7).astype(float)
    obs[2] = obs[3] = 1.0  # two observers always right: their pair kappa is undefined
    m = (rng.random(50) < 0.6).astype(float)
    valid = rng.random(50) < 0.85
    idx = rng.integers(0, 50, (300, 50))
    idx[0] = 0  # a draw of one repeated stimulus
    pairs = list(itertools.combinations(range(6), 2))
    for o, mm, v in ((obs, m, valid), (obs[:, idx], m[idx], valid[idx]), (obs, m, np.zeros(50, bool))):
        ref_pw = ec.kappa(o[[i for i, _ in pairs]], o[[j for _, j in pairs]])
        assert np.array_equal(ec.pairwise_ceiling(o), ref_pw, equal_nan=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            ref_pm = np.nanmean(ec.kappa(mm[None], o, v[None]), axis=0)
        assert np.array_equal(ec.kappa_pairwise_mean(mm, o, v), ref_pm, equal_nan=True)
    # the count-matrix form the scorer bootstraps with, on the draws and on the identity
    for v in (valid, np.zeros(50, bool), None):
        for i in (idx, np.arange(50)[None]):
            ref = ec.kappa_pairwise_mean(m[i], obs[:, i], None if v is None else v[i])
            mask = np.ones(50, bool) if v is None else v
            got = ec.kappa_pairwise_counts(resample_counts(i), m[None], obs, mask[None])[:, 0]
            assert np.array_equal(got, ref, equal_nan=True)
    assert np.isnan(ec.pairwise_ceiling(obs)).sum() > 0
    # non-binary input (panel accuracy) still goes through kappa()
    p = obs.mean(0)
    assert np.array_equal(ec.kappa_pairwise_mean(m, p[None], valid), ec.kappa(m, p, valid), equal_nan=True)
