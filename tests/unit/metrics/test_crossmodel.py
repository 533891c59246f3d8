"""Cross-model statistics (seed 000 §3, D.1) against values worked out by hand."""

import math

import numpy as np
import pytest

from perceptbench.metrics.crossmodel import (ceiling_counts, ci_halfwidth_bound, group_mean, rank_correlation,
                                             rank_discordance)


def test_rank_correlation_is_spearman_by_hand_with_a_seeded_interval_over_models():
    # ranks 1 2 3 4 vs 3 4 1 2: d = -2 -2 2 2, sum d^2 = 16, rho = 1 - 6*16 / (4*15) = -0.6
    x, y = [0.1, 0.3, 0.5, 0.7], [0.6, 0.9, 0.2, 0.4]
    r = rank_correlation(x, y, seed=7)
    assert r.rho == pytest.approx(-0.6) and r.n == 4
    assert r.low <= r.rho <= r.high and -1 <= r.low and r.high <= 1
    assert r.n_draws == 1000 and 0 < r.n_dropped < 1000  # draws of one repeated model are constant: dropped
    assert rank_correlation(x, y, seed=7) == r  # seeded
    assert rank_correlation(x, y, seed=8) != r


def test_bootstrap_draws_are_scipy_spearmanr_of_each_resample():
    from scipy.stats import spearmanr

    from perceptbench.metrics.crossmodel import _spearman_rows

    rng = np.random.default_rng(0)
    x, y = rng.integers(0, 4, (50, 7)).astype(float), rng.random((50, 7))  # ties in x
    want = [spearmanr(a, b).statistic if np.ptp(a) else np.nan for a, b in zip(x, y)]
    np.testing.assert_allclose(_spearman_rows(x, y), want, atol=1e-12)


def test_rank_correlation_undefined_under_three_models_or_a_constant_side():
    assert math.isnan(rank_correlation([1, 2], [2, 1], seed=0).rho)
    r = rank_correlation([1, 2, 3], [5, 5, 5], seed=0)
    assert math.isnan(r.rho) and math.isnan(r.low) and r.n == 3
    with pytest.raises(ValueError, match="one length"):
        rank_correlation([1, 2, 3], [1, 2], seed=0)


def test_rank_discordance_counts_pairs_ordered_oppositely_ties_not_discordant():
    # pairs of (a, b): (1,2) same, (1,3) a up b down: discordant, (2,3) a up b down: discordant,
    # (1,4) a tie: not discordant, (2,4) a down b down: same, (3,4) a down b up: discordant
    a, b = [0.5, 0.6, 0.9, 0.5], [0.1, 0.4, 0.0, 0.3]
    share, pairs = rank_discordance(a, b)
    assert pairs == 6 and share == pytest.approx(3 / 6)
    assert math.isnan(rank_discordance([1.0], [2.0])[0])


def test_ceiling_counts_by_hand():
    # human accuracy 0.70, ceiling 0.50; models: below human accuracy, above & CI reaching the
    # ceiling, above & CI below (kappa 0.30: 0.6 of it), above & CI below (0.40: 0.8), NaN left out
    acc = [0.60, 0.80, 0.90, 0.75, np.nan]
    kappa = [0.45, 0.48, 0.30, 0.40, 0.2]
    high = [0.55, 0.50, 0.45, 0.49, 0.3]
    c = ceiling_counts(acc, kappa, high, human_accuracy=0.70, ceiling=0.50)
    assert (c.n, c.above_human, c.at_ceiling, c.below_ceiling) == (4, 3, 1, 2)
    assert c.median_fraction == pytest.approx((0.6 + 0.8) / 2)
    assert math.isnan(ceiling_counts([0.5], [0.1], [0.2], 0.7, 0.5).median_fraction)
    with pytest.raises(ValueError, match="positive"):
        ceiling_counts(acc, kappa, high, 0.7, 0.0)


def test_group_mean_is_the_mean_with_a_bootstrap_over_the_groups_models():
    g = group_mean([0.2, 0.4, np.nan, 0.9], seed=1, key="ssl")
    assert g.mean == pytest.approx(0.5) and g.n == 3 and g.n_draws == 1000
    assert 0.2 <= g.low < 0.5 < g.high <= 0.9
    one = group_mean([0.3], seed=1)
    assert one.mean == 0.3 and one.n == 1 and math.isnan(one.low)
    v = [0.1, 0.2, 0.35, 0.4, 0.6, 0.9, 0.95, 0.15]
    assert group_mean(v, seed=1, key="a") != group_mean(v, seed=1, key="b")  # groups draw independently


def test_ci_halfwidth_bound_is_1_96_over_2_sqrt_n():
    assert ci_halfwidth_bound(30) == pytest.approx(0.1789, abs=1e-4)  # seed 000 D.1: 0.18 below n = 30
    assert ci_halfwidth_bound(80) == pytest.approx(1.96 / (2 * math.sqrt(80)))
    assert math.isnan(ci_halfwidth_bound(0))
